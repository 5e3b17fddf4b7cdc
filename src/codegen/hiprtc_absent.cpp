// Stand-ins for a build without HIP (no libamdhip64-dev): everything says so.
#ifndef ATTN_TUNE_HAVE_HIP
#include "codegen/hiprtc.hpp"

namespace attn {

bool hip_available() { return false; }
std::string hiprtc_version() { return "none"; }
std::vector<std::string> hip_supported_archs() { return {}; }
std::vector<std::string> hiprtc_options(const std::string& arch, const std::vector<std::string>& extra) {
  std::vector<std::string> options = {"--offload-arch=" + arch};
  options.insert(options.end(), extra.begin(), extra.end());
  return options;
}
compile_result compile_code_object(const std::string&, const std::string&, const std::vector<std::string>&,
                                   const kernel_sources&) {
  compile_result r;
  r.log = "this attn-tune was built without HIP (install libamdhip64-dev and libhiprtc-builtins5, then rebuild)";
  return r;
}

}  // namespace attn
#endif
