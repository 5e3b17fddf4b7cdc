#include "run/nvml.hpp"

#include <dlfcn.h>

#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

// The types and constants come from the toolkit's nvml.h where it is installed; the library itself
// is only ever loaded at run time. Without the header the few values used are the documented ones.
#if __has_include(<nvml.h>)
#include <nvml.h>
#define ATTN_TUNE_HAVE_NVML_H 1
#endif

namespace attn {

namespace {

using nvml_return = int;  // nvmlReturn_t; NVML_SUCCESS = 0
using nvml_device = void*;  // nvmlDevice_t, an opaque handle
constexpr nvml_return nvml_success = 0;
constexpr int nvml_clock_sm = 1;         // NVML_CLOCK_SM
constexpr int nvml_temperature_gpu = 0;  // NVML_TEMPERATURE_GPU
#ifdef ATTN_TUNE_HAVE_NVML_H
static_assert(NVML_SUCCESS == nvml_success && NVML_CLOCK_SM == nvml_clock_sm &&
              NVML_TEMPERATURE_GPU == nvml_temperature_gpu && sizeof(nvmlDevice_t) == sizeof(nvml_device));
#endif

// Throttle (clocks event) reason bits, nvmlClocksThrottleReason*.
constexpr std::array<std::pair<uint64_t, const char*>, 9> reason_names{{
    {0x1, "idle"},
    {0x2, "applications clocks setting"},
    {0x4, "sw power cap"},
    {0x8, "hw slowdown"},
    {0x10, "sync boost"},
    {0x20, "sw thermal slowdown"},
    {0x40, "hw thermal slowdown"},
    {0x80, "hw power brake slowdown"},
    {0x100, "display clock setting"},
}};

template <class F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

}  // namespace

struct nvml_monitor::api {
  void* library = nullptr;
  nvml_device device = nullptr;
  nvml_return (*shutdown)() = nullptr;
  nvml_return (*clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*temperature)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*power)(nvml_device, unsigned*) = nullptr;
  nvml_return (*reasons)(nvml_device, unsigned long long*) = nullptr;
  nvml_return (*energy)(nvml_device, unsigned long long*) = nullptr;  // may be missing (older NVML)
  nvml_return (*power_limit)(nvml_device, unsigned*) = nullptr;        // likewise
  ~api() {
    if (shutdown) shutdown();
    if (library) dlclose(library);
  }
};

nvml_monitor nvml_monitor::open(const std::string& pci_bus_id, int index, const std::string& library) {
  nvml_monitor m;
  auto absent = [&](const std::string& why) {
    m.m_api.reset();
    m.m_note = fmt::format(
        "note: NVML absent ({}): SM clock, temperature, power, energy and throttling are not recorded; measurement "
        "goes on",
        why);
    return std::move(m);
  };
  auto a = std::make_unique<api>();
  a->library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a->library) {
    const char* why = dlerror();
    return absent(fmt::format("{}: {}", library, why ? why : "cannot be loaded"));
  }
  auto init = symbol<nvml_return (*)()>(a->library, "nvmlInit_v2");
  auto by_bus = symbol<nvml_return (*)(const char*, nvml_device*)>(a->library, "nvmlDeviceGetHandleByPciBusId_v2");
  auto by_index = symbol<nvml_return (*)(unsigned, nvml_device*)>(a->library, "nvmlDeviceGetHandleByIndex_v2");
  auto driver = symbol<nvml_return (*)(char*, unsigned)>(a->library, "nvmlSystemGetDriverVersion");
  a->clock = symbol<decltype(a->clock)>(a->library, "nvmlDeviceGetClockInfo");
  a->temperature = symbol<decltype(a->temperature)>(a->library, "nvmlDeviceGetTemperature");
  a->power = symbol<decltype(a->power)>(a->library, "nvmlDeviceGetPowerUsage");
  a->reasons = symbol<decltype(a->reasons)>(a->library, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!a->reasons) a->reasons = symbol<decltype(a->reasons)>(a->library, "nvmlDeviceGetCurrentClocksThrottleReasons");
  a->energy = symbol<decltype(a->energy)>(a->library, "nvmlDeviceGetTotalEnergyConsumption");
  a->power_limit = symbol<decltype(a->power_limit)>(a->library, "nvmlDeviceGetEnforcedPowerLimit");
  if (!init || !by_index || !a->clock || !a->temperature || !a->power || !a->reasons)
    return absent(library + " lacks the functions needed");
  if (const nvml_return rc = init(); rc != nvml_success) return absent(fmt::format("nvmlInit failed with {}", rc));
  a->shutdown = symbol<nvml_return (*)()>(a->library, "nvmlShutdown");
  const bool found = (!pci_bus_id.empty() && by_bus && by_bus(pci_bus_id.c_str(), &a->device) == nvml_success) ||
                     by_index(static_cast<unsigned>(index), &a->device) == nvml_success;
  if (!found) return absent(fmt::format("no NVML device for {} (index {})", pci_bus_id, index));
  char version[96] = {};
  if (driver && driver(version, sizeof version) == nvml_success) m.m_driver = version;
  unsigned long long millijoules = 0;
  const nvml_return energy_rc = a->energy ? a->energy(a->device, &millijoules) : nvml_success;
  if (!a->energy || energy_rc != nvml_success)
    m.m_energy_note = fmt::format(
        "note: NVML's energy counter is not available on this GPU ({}): joules per call and TFLOPS per watt are "
        "not recorded",
        a->energy ? fmt::format("nvmlDeviceGetTotalEnergyConsumption returned {}", energy_rc)
                  : library + " lacks nvmlDeviceGetTotalEnergyConsumption");
  m.m_api = std::move(a);
  return m;
}

nvml_monitor::~nvml_monitor() = default;
nvml_monitor::nvml_monitor(nvml_monitor&&) noexcept = default;

std::optional<gpu_state> nvml_monitor::read() const {
  if (!m_api) return std::nullopt;
  unsigned clock = 0, temperature = 0, milliwatts = 0;
  unsigned long long reasons = 0;
  if (m_api->clock(m_api->device, nvml_clock_sm, &clock) != nvml_success ||
      m_api->temperature(m_api->device, nvml_temperature_gpu, &temperature) != nvml_success ||
      m_api->power(m_api->device, &milliwatts) != nvml_success ||
      m_api->reasons(m_api->device, &reasons) != nvml_success)
    return std::nullopt;
  return gpu_state{static_cast<int>(clock), static_cast<int>(temperature), milliwatts / 1000.0,
                   static_cast<uint64_t>(reasons)};
}

std::optional<uint64_t> nvml_monitor::energy_mj() const {
  if (!has_energy()) return std::nullopt;
  unsigned long long millijoules = 0;
  if (m_api->energy(m_api->device, &millijoules) != nvml_success) return std::nullopt;
  return static_cast<uint64_t>(millijoules);
}

std::optional<double> nvml_monitor::power_limit_w() const {
  unsigned milliwatts = 0;
  if (!m_api || !m_api->power_limit || m_api->power_limit(m_api->device, &milliwatts) != nvml_success ||
      milliwatts == 0)
    return std::nullopt;
  return milliwatts / 1000.0;
}

clock_state clocks_of(const gpu_state& before, const gpu_state& after) {
  clock_state c;
  c.sm_clock_before_mhz = before.sm_clock_mhz;
  c.sm_clock_after_mhz = after.sm_clock_mhz;
  c.temperature_c = after.temperature_c;
  c.power_w = after.power_w;
  c.throttle = before.throttle | after.throttle;
  return c;
}

std::string throttle_reasons(uint64_t bits) {
  std::string out;
  for (const auto& [bit, text] : reason_names)
    if (bits & bit) out += fmt::format("{}{}", out.empty() ? "" : ", ", text);
  if (const uint64_t known = 0x1ff; bits & ~known) out += fmt::format("{}0x{:x}", out.empty() ? "" : ", ", bits & ~known);
  return out;
}

bool measured_under_throttling(const clock_state& c) {
  const int before = c.sm_clock_before_mhz, after = c.sm_clock_after_mhz;
  const bool moved = before > 0 && after > 0 && std::abs(after - before) > 0.05 * before;
  return moved || (c.throttle & ~throttle_idle) != 0;
}

std::string throttle_warning(const std::vector<record>& rows) {
  std::vector<std::string> named;
  uint64_t bits = 0;
  for (const record& r : rows) {
    if (r.status != status::ok || !measured_under_throttling(r.clocks)) continue;
    named.push_back(fmt::format("{} {} ({}->{} MHz{}{})", r.family, config_name(r), r.clocks.sm_clock_before_mhz,
                                r.clocks.sm_clock_after_mhz, (r.clocks.throttle & ~throttle_idle) ? ", " : "",
                                throttle_reasons(r.clocks.throttle & ~throttle_idle)));
    bits |= r.clocks.throttle & ~throttle_idle;
  }
  if (named.empty()) return "";
  return fmt::format(
      "warning: {} variant(s) were measured while the SM clock moved by more than 5% or the GPU throttled{}: {}; "
      "their times may be slow (attn-tune never locks clocks: check cooling and power, or run again)",
      named.size(), bits ? fmt::format(" ({})", throttle_reasons(bits)) : "", fmt::join(named, ", "));
}

}  // namespace attn
