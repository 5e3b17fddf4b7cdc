#pragma once
// The resource report of an AMDGPU code object, read from its metadata note (msgpack): the
// counterpart of ptxas's "Used N registers, M bytes spill" for hiprtc, which prints none.
#include <string>

namespace attn {

struct amdgpu_resources {
  int vgprs = -1, agprs = -1, sgprs = -1;
  int vgpr_spills = -1, sgpr_spills = -1;
  int lds_bytes = -1;      ///< .group_segment_fixed_size
  int scratch_bytes = -1;  ///< .private_segment_fixed_size
};

/// Finds each key's unsigned integer in the code object; fields not found stay -1. The code
/// objects attn-tune compiles hold exactly one kernel.
amdgpu_resources parse_amdgpu_resources(const std::string& code_object);

}  // namespace attn
