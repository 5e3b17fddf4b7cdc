#pragma once
// The GPU's SM clock, temperature, power and throttle reasons through NVML, read before and after
// each variant's timing. libnvidia-ml.so.1 is loaded with dlopen, so attn-tune still starts (and
// measures) without it; clocks are only read, never locked or changed.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"

namespace attn {

struct gpu_state {
  int sm_clock_mhz = 0;
  int temperature_c = 0;
  double power_w = 0;
  uint64_t throttle = 0;  ///< NVML's clocks-event (throttle) reason bits
};

class nvml_monitor {
 public:
  /// Loads `library` and finds the GPU by PCI bus id (else by index). Never throws: without NVML
  /// (no driver, no library, no such GPU) available() is false and note() says so.
  static nvml_monitor open(const std::string& pci_bus_id, int index,
                           const std::string& library = "libnvidia-ml.so.1");
  ~nvml_monitor();
  nvml_monitor(nvml_monitor&&) noexcept;
  nvml_monitor(const nvml_monitor&) = delete;
  nvml_monitor& operator=(const nvml_monitor&) = delete;
  nvml_monitor& operator=(nvml_monitor&&) = delete;

  bool available() const { return m_api != nullptr; }
  /// Why not available: "NVML absent (libnvidia-ml.so.1: ...): SM clock, temperature, power,
  /// energy and throttling are not recorded; measurement goes on".
  const std::string& note() const { return m_note; }
  /// The driver's version ("580.65.06"), or "" without NVML.
  const std::string& driver_version() const { return m_driver; }
  /// nullopt without NVML or when a query fails.
  std::optional<gpu_state> read() const;
  /// Whether NVML's total energy counter (nvmlDeviceGetTotalEnergyConsumption, Volta and newer)
  /// answers on this GPU; asked once, at open.
  bool has_energy() const { return m_api && m_energy_note.empty(); }
  /// Why not, when NVML is there but the counter is not: "note: NVML's energy counter is not
  /// available on this GPU (...): joules per call and TFLOPS per watt are not recorded"; "" when it
  /// is, or when NVML is absent (note() says so).
  const std::string& energy_note() const { return m_energy_note; }
  /// The counter in millijoules since the driver loaded; nullopt without it or when the read fails.
  std::optional<uint64_t> energy_mj() const;
  /// The board's enforced power limit in watts (nvmlDeviceGetEnforcedPowerLimit); nullopt without
  /// it.
  std::optional<double> power_limit_w() const;

  struct api;

 private:
  nvml_monitor() = default;
  std::unique_ptr<api> m_api;
  std::string m_note, m_driver, m_energy_note;
};

/// What a record keeps of the states before and after its timing (the throttle bits of both).
clock_state clocks_of(const gpu_state& before, const gpu_state& after);
/// "sw power cap, hw slowdown" for the bits set (idle included when set); "" for none.
std::string throttle_reasons(uint64_t bits);
/// True when the SM clock moved by more than 5% during the timing or a throttle reason other than
/// idle was set.
bool measured_under_throttling(const clock_state& c);
/// One warning naming the timed variants measured under throttling (measured_under_throttling),
/// or "" when there are none.
std::string throttle_warning(const std::vector<record>& rows);

}  // namespace attn
