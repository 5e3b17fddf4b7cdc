#include "db/entry_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "sweep/sweep_file.hpp"

namespace attn {

namespace {

bool same_text(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string listing(const std::vector<std::pair<device_identity, size_t>>& devices,
                    const std::string& unit) {
  std::string out;
  for (const auto& [d, n] : devices) out += fmt::format("\n  {}: {} {}", describe(d), n, unit);
  return out;
}

}  // namespace

device_identity identity_of(const tuning_key& k) { return {k.device, k.cc, k.sm_count}; }
device_identity identity_of(const device_desc& d) {
  return {d.name, fmt::format("{}.{}", d.cc_major, d.cc_minor), d.sm_count};
}

std::vector<std::pair<device_identity, size_t>> tally(const std::vector<device_identity>& each) {
  std::vector<std::pair<device_identity, size_t>> out;
  for (const auto& d : each) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == d; });
    if (it == out.end())
      out.emplace_back(d, 1);
    else
      ++it->second;
  }
  return out;
}

std::string describe(const device_identity& d) {
  return fmt::format("{} (cc {}, {} SMs)", d.name, d.cc, d.sm_count);
}

std::optional<device_identity> choose_device(
    const std::vector<std::pair<device_identity, size_t>>& devices, const std::string& wanted,
    const std::string& source, const std::string& unit) {
  if (wanted.empty()) {
    if (devices.empty()) return std::nullopt;
    if (devices.size() == 1) return devices.front().first;
    throw invalid_input(
        fmt::format("'{}' holds results of {} devices; one table is for one device: choose one "
                    "with --device-name NAME "
                    "(e.g. --device-name '{}'):{}",
                    source, devices.size(), devices.front().first.name, listing(devices, unit)));
  }
  std::vector<device_identity> named;
  for (const auto& [d, n] : devices)
    if (same_text(wanted, d.name) || same_text(wanted, describe(d))) named.push_back(d);
  if (named.size() == 1) return named.front();
  if (named.empty())
    throw invalid_input(fmt::format(
        "--device-name '{}': '{}' holds no results of such a device; it holds{}", wanted, source,
        devices.empty() ? std::string(" none") : ":" + listing(devices, unit)));
  throw invalid_input(
      fmt::format("--device-name '{}' names {} devices of '{}'; give the whole description, e.g. "
                  "--device-name '{}':{}",
                  wanted, named.size(), source, describe(named.front()), listing(devices, unit)));
}

entry_choice choose_entries(const std::vector<tuning_entry>& entries,
                            const std::string& wanted_device, const std::string& source) {
  std::vector<device_identity> each;
  for (const auto& e : entries) each.push_back(identity_of(e.key));
  const auto devices = tally(each);
  entry_choice out;
  const auto device = choose_device(devices, wanted_device, source);
  if (!device) return out;
  if (devices.size() > 1) {
    const auto mine = std::find_if(devices.begin(), devices.end(),
                                   [&](const auto& p) { return p.first == *device; });
    out.notes.push_back(
        fmt::format("{}: reading the tunings of {}; {} tuning(s) of other devices left out", source,
                    describe(*device), entries.size() - mine->second));
  }
  // Per shape, every tuning of it on this device, oldest first.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const tuning_entry*>> by_shape;
  for (const auto& e : entries) {
    if (identity_of(e.key) != *device) continue;
    const std::string key = problem_key(e.key.shape);
    if (!by_shape.count(key)) order.push_back(key);
    by_shape[key].push_back(&e);
  }
  for (const auto& key : order) {
    auto& all = by_shape[key];
    std::stable_sort(all.begin(), all.end(), [](const tuning_entry* a, const tuning_entry* b) {
      return a->tuned_at != b->tuned_at ? a->tuned_at < b->tuned_at : a->id < b->id;
    });
    const tuning_entry& newest = *all.back();
    out.ids.push_back(newest.id);
    if (all.size() == 1) continue;
    std::string older;
    for (size_t i = 0; i + 1 < all.size(); ++i)
      older += fmt::format("{}entry {} (tuned {}; {})", i ? ", " : "", all[i]->id, all[i]->tuned_at,
                           all[i]->key.space);
    out.notes.push_back(
        fmt::format("{}: {} was tuned {} times on {}: reading entry {}, the newest (tuned {}; {}); "
                    "left out: {}",
                    source, describe(newest.key.shape), all.size(), device->name, newest.id,
                    newest.tuned_at, newest.key.space, older));
  }
  std::sort(out.ids.begin(), out.ids.end());
  return out;
}

}  // namespace attn
