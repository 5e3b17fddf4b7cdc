#pragma once
// Run-time compilation for AMD GPUs with hiprtc, to a code object for one exact --offload-arch.
// Built when Debian's ROCm packages (libamdhip64-dev, libhiprtc-builtins5) are found; otherwise
// every call reports that this build has no HIP.
#include <string>
#include <vector>

#include "codegen/kernel_sources.hpp"
#include "codegen/nvrtc.hpp"  // compile_result

namespace attn {

bool hip_available();
/// "major.minor" of hiprtc, or "none".
std::string hiprtc_version();
/// Targets this hiprtc compiles the mfma family for. ROCm 5.2 (Debian 12) knows gfx90a; gfx908
/// lacks the bf16 "_1k" MFMA instructions and gfx94x is newer than this toolchain.
std::vector<std::string> hip_supported_archs();
/// The options compile_code_object passes (part of the cache key).
std::vector<std::string> hiprtc_options(const std::string& arch, const std::vector<std::string>& extra);
/// registers = VGPRs (on gfx90a the unified file, AGPRs included), spill_bytes = 4 x (VGPR + SGPR
/// spills), from the code object's
/// metadata; compile errors come back in the result, never thrown.
compile_result compile_code_object(const std::string& source, const std::string& arch,
                                   const std::vector<std::string>& extra_options, const kernel_sources& kernels);

}  // namespace attn
