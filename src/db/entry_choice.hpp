#pragma once
// Which tunings export and check read from a database (or which rows from a results CSV): one
// device's, and of each shape only its newest tuning, so a table never mixes two devices, nor two
// tunings of one shape (another space, other kernel sources, another driver).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/tuned_db.hpp"

namespace attn {

/// A device as merge compares them: its name, compute capability and SM count.
struct device_identity {
  std::string name;
  std::string cc;  ///< "9.0"
  int sm_count = 0;
  auto operator<=>(const device_identity&) const = default;
};

/// "NVIDIA H200 (cc 9.0, 132 SMs)"
std::string describe(const device_identity& d);
device_identity identity_of(const device_desc& d);
device_identity identity_of(const tuning_key& k);
/// Each device once, in the order first seen, with how many times it came.
std::vector<std::pair<device_identity, size_t>> tally(const std::vector<device_identity>& each);

/// The device to read, from the devices the input holds (each with how many tunings or rows it
/// has): the one `wanted` names (its name, or describe()'s text, either in any case), else the only
/// one; nullopt when the input has none. Throws invalid_input naming `source` and listing the
/// devices when there are several and none is wanted (with the option that picks one), when
/// `wanted` names none of them, or when it names several (then describe()'s text picks one).
/// `unit` names what was counted in the listing ("tuning(s)", "row(s)").
std::optional<device_identity> choose_device(
    const std::vector<std::pair<device_identity, size_t>>& devices, const std::string& wanted,
    const std::string& source, const std::string& unit = "tuning(s)");

struct entry_choice {
  std::vector<int64_t> ids;        ///< the entries to read, oldest first
  std::vector<std::string> notes;  ///< what was left out and why, one line each
};

/// Of the database's entries (tuned_db::list), those of one device (choose_device) and, of two or
/// more tunings of one shape, the newest (latest tuned_at, then the higher id), each said in a
/// note.
entry_choice choose_entries(const std::vector<tuning_entry>& entries,
                            const std::string& wanted_device, const std::string& source);

}  // namespace attn
