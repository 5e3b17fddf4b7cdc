// hiprtc: compiled only when the HIP headers and libamdhip64 are found (ATTN_TUNE_HAVE_HIP).
#include "codegen/hiprtc.hpp"

#include <hip/hiprtc.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include <fmt/format.h>

#include "backend/hip/amdgpu_metadata.hpp"
#include "codegen/cache.hpp"

namespace attn {

bool hip_available() { return true; }

std::string hiprtc_version() {
  int major = 0, minor = 0;
  if (hiprtcVersion(&major, &minor) != HIPRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> hip_supported_archs() { return {"gfx90a"}; }

std::vector<std::string> hiprtc_options(const std::string& arch, const std::vector<std::string>& extra) {
  std::vector<std::string> options = {"--offload-arch=" + arch, "-O3", "-std=c++17"};
  options.insert(options.end(), extra.begin(), extra.end());
  return options;
}

compile_result compile_code_object(const std::string& source, const std::string& arch,
                                   const std::vector<std::string>& extra_options, const kernel_sources& kernels) {
  const auto start = std::chrono::steady_clock::now();
  compile_result result;
  // This hiprtc aborts the process on a target it does not know, so never hand it one.
  const auto archs = hip_supported_archs();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
    result.log = fmt::format("hiprtc {} cannot compile the mfma family for {} (it can for: {})", hiprtc_version(),
                             arch, fmt::join(archs, ", "));
    return result;
  }
  std::vector<const char*> names, texts;
  for (const auto& f : kernels.files()) {
    names.push_back(f.name.c_str());
    texts.push_back(f.text.c_str());
  }
  hiprtcProgram program = nullptr;
  if (hiprtcCreateProgram(&program, source.c_str(), "attn_tune_variant.hip", static_cast<int>(names.size()),
                          texts.data(), names.data()) != HIPRTC_SUCCESS) {
    result.log = "hiprtcCreateProgram failed";
    return result;
  }
  const auto options = hiprtc_options(arch, extra_options);
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());
  // Serialized: with several threads, Debian's ROCm 5.2 hiprtc failed some compiles with
  // "unable to create target: No available targets are compatible with triple amdgcn-amd-amdhsa"
  // (seen here, 2026-11-30). NVRTC compiles stay parallel.
  static std::mutex hiprtc_mutex;
  hiprtcResult rc;
  {
    std::lock_guard lock(hiprtc_mutex);
    rc = hiprtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  }
  size_t log_size = 0;
  hiprtcGetProgramLogSize(program, &log_size);
  if (log_size > 0) {
    result.log.resize(log_size);
    hiprtcGetProgramLog(program, result.log.data());
    trim_log(result.log);
  }
  if (rc == HIPRTC_SUCCESS) {
    size_t size = 0;
    hiprtcGetCodeSize(program, &size);
    result.cubin.resize(size);
    result.ok = size > 0 && hiprtcGetCode(program, result.cubin.data()) == HIPRTC_SUCCESS;
    if (!result.ok) result.log += "\nno code object produced";
  } else if (result.log.empty()) {
    result.log = hiprtcGetErrorString(rc);
  }
  hiprtcDestroyProgram(&program);
  if (result.ok) {
    read_resources(result, backend::hip);
    const auto r = parse_amdgpu_resources(result.cubin);
    // The report in words too, for people reading the CSV's message or the cache's log.
    result.log += fmt::format("\nresources: {} VGPRs, {} AGPRs, {} SGPRs, {} VGPR and {} SGPR spills, {} bytes LDS, "
                              "{} bytes scratch",
                              r.vgprs, r.agprs, r.sgprs, r.vgpr_spills, r.sgpr_spills, r.lds_bytes, r.scratch_bytes);
  }
  result.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace attn
