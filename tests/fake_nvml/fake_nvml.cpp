// A stand-in for libnvidia-ml.so.1, for CPU tests of what attn-tune reads through NVML
// (tests/cpu/test_nvml.cpp): the functions run/nvml.cpp looks up, with fixed readings.
// FAKE_NVML_ENERGY=unsupported makes the energy counter answer NVML_ERROR_NOT_SUPPORTED (3), as
// on GPUs before Volta; otherwise it counts 250 mJ more at every read.
#include <cstdlib>
#include <cstring>

namespace {
unsigned long long energy_mj = 1000000;
int dummy_device = 0;
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned, void** device) {
  *device = &dummy_device;
  return 0;
}
int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::strncpy(version, "999.1", length);
  return 0;
}
int nvmlDeviceGetClockInfo(void*, int, unsigned* mhz) {
  *mhz = 1980;
  return 0;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  *c = 50;
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* milliwatts) {
  *milliwatts = 500000;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* reasons) {
  *reasons = 0;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* millijoules) {
  const char* mode = std::getenv("FAKE_NVML_ENERGY");
  if (mode && std::strcmp(mode, "unsupported") == 0) return 3;  // NVML_ERROR_NOT_SUPPORTED
  energy_mj += 250;
  *millijoules = energy_mj;
  return 0;
}
}
