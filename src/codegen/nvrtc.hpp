#pragma once
// Run-time compilation with NVRTC straight to a cubin for one exact architecture.
#include <string>
#include <vector>

#include "codegen/kernel_sources.hpp"

namespace attn {

struct compile_result {
  bool ok = false;
  std::string cubin;  ///< binary image when ok
  std::string log;    ///< NVRTC log, including ptxas's resource report
  int registers = 0;
  int spill_bytes = 0;  ///< spill stores + spill loads
  int stack_bytes = 0;
  double milliseconds = 0;
};

/// The resource report ptxas writes with -v ("Used 58 registers", "N bytes spill stores", ...).
struct ptxas_report {
  int registers = 0, spill_bytes = 0, stack_bytes = 0;
};
ptxas_report parse_ptxas_report(const std::string& log);
/// Registers and stack frame bytes as the cubin itself records them (EIATTR_REGCOUNT and
/// EIATTR_FRAME_SIZE in its .nv.info section); spill_bytes stays 0, the cubin does not say. All
/// zero for anything that is not such an ELF image (never throws, never reads out of bounds).
ptxas_report cubin_resources(const std::string& cubin);
/// ptxas's report from the log, or, when the log has none, what the cubin records. The log can
/// lack it: with a driver installed, NVRTC answers a compile it has seen before from the driver's
/// compute cache (~/.nv/ComputeCache), ptxas does not run and -v prints nothing.
ptxas_report cuda_resources(const std::string& log, const std::string& cubin);
/// ptxas's "Potential Performance Loss" note, shortened ("ptxas: wgmma.mma_async instructions are
/// serialized due to insufficient register resources"); empty when there is none.
std::string ptxas_performance_warning(const std::string& log);
/// Drops the NUL and newlines run-time compilers leave at the end of their logs.
void trim_log(std::string& log);

/// "major.minor" of the loaded NVRTC library.
std::string nvrtc_version();
/// Whether NVRTC can compile for `arch` ("sm_80", "sm_90a", ...): checks it against
/// nvrtcGetSupportedArchs. Throws invalid_input naming a malformed arch.
bool nvrtc_supports(const std::string& arch);

/// Compiles `source` (which may #include the kernels/ files by their relative names)
/// for `arch`. Compile errors are returned in the result, never thrown.
compile_result compile_cubin(const std::string& source, const std::string& arch,
                             const std::vector<std::string>& extra_options,
                             const kernel_sources& kernels);

/// The full option list compile_cubin passes to NVRTC (part of the cache key).
std::vector<std::string> nvrtc_options(const std::string& arch,
                                       const std::vector<std::string>& extra_options);

}  // namespace attn
