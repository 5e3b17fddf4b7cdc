#include "backend/hip/amdgpu_metadata.hpp"

namespace attn {

namespace {

// A msgpack unsigned integer right after `key` (positive fixint, uint8/16/32); -1 otherwise.
int msgpack_uint_after(const std::string& data, const std::string& key) {
  const auto at = data.find(key);
  if (at == std::string::npos) return -1;
  size_t i = at + key.size();
  if (i >= data.size()) return -1;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(data[k]); };
  const unsigned tag = byte(i);
  if (tag < 0x80) return static_cast<int>(tag);
  int width = tag == 0xcc ? 1 : tag == 0xcd ? 2 : tag == 0xce ? 4 : 0;
  if (width == 0 || i + width >= data.size()) return -1;
  long long value = 0;
  for (int k = 1; k <= width; ++k) value = (value << 8) | byte(i + k);
  return value > 0x7fffffff ? -1 : static_cast<int>(value);
}

}  // namespace

amdgpu_resources parse_amdgpu_resources(const std::string& code_object) {
  amdgpu_resources r;
  r.vgprs = msgpack_uint_after(code_object, ".vgpr_count");
  r.agprs = msgpack_uint_after(code_object, ".agpr_count");
  r.sgprs = msgpack_uint_after(code_object, ".sgpr_count");
  r.vgpr_spills = msgpack_uint_after(code_object, ".vgpr_spill_count");
  r.sgpr_spills = msgpack_uint_after(code_object, ".sgpr_spill_count");
  r.lds_bytes = msgpack_uint_after(code_object, ".group_segment_fixed_size");
  r.scratch_bytes = msgpack_uint_after(code_object, ".private_segment_fixed_size");
  return r;
}

}  // namespace attn
