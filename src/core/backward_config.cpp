#include "core/backward_config.hpp"

#include <regex>

#include <fmt/format.h>

#include "core/config.hpp"
#include "core/problem.hpp"  // invalid_input

namespace attn {

namespace {

const std::regex& name_form() {
  static const std::regex form(R"((wg_)?kv_m(\d+)_n(\d+)_w(\d+)_s(\d+)(_x2)?-(?:q_m(\d+)_n(\d+)_w(\d+)_s(\d+)|(dq_atomic)))");
  return form;
}

}  // namespace

std::string name(const backward_config& c) {
  if (c.atomic_dq)
    return fmt::format("{}kv_m{}_n{}_w{}_s{}{}-dq_atomic", c.wgmma ? "wg_" : "", c.kv_block_m, c.kv_block_n, c.kv_warps,
                       c.kv_stages, c.split_dkdv ? "_x2" : "");
  return fmt::format("{}kv_m{}_n{}_w{}_s{}{}-q_m{}_n{}_w{}_s{}", c.wgmma ? "wg_" : "", c.kv_block_m, c.kv_block_n,
                     c.kv_warps, c.kv_stages, c.split_dkdv ? "_x2" : "", c.q_block_m, c.q_block_n, c.q_warps,
                     c.q_stages);
}

tile_config dkdv_tile(const backward_config& c) {
  tile_config t;
  t.block_m = c.kv_block_m;
  t.block_n = c.kv_block_n;
  t.warps = c.kv_warps;
  t.stages = c.kv_stages;
  return t;
}

bool is_backward_config_name(const std::string& text) {
  return text.size() <= 80 && std::regex_match(text, name_form());
}

backward_config parse_backward_config(const std::string& text) {
  std::smatch m;
  if (text.size() > 80 || !std::regex_match(text, m, name_form()))
    throw invalid_input(
        fmt::format("backward config '{}' is not of the form [wg_]kv_m64_n64_w4_s2[_x2]-q_m64_n64_w4_s2 or "
                    "wg_kv_m64_n128_w8_s2-dq_atomic",
                    text));
  auto at = [&](int i) {
    const std::string digits = m[i].str();
    if (digits.size() > 4) throw invalid_input(fmt::format("backward config '{}': {} is out of range", text, digits));
    return std::stoi(digits);
  };
  if (m[11].matched) return {at(2), at(3), at(4), at(5), 0, 0, 0, 0, m[1].matched, m[6].matched, true};
  return {at(2), at(3), at(4), at(5), at(7), at(8), at(9), at(10), m[1].matched, m[6].matched};
}

std::vector<backward_config> fallback_backwards(int64_t head_dim) {
  const bool wide = head_dim > 128;
  std::vector<backward_config> out;
  for (const char* text : {wide ? "kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1" : "kv_m32_n64_w4_s2-q_m64_n64_w4_s2",
                           wide ? "kv_m16_n64_w4_s1_x2-q_m64_n16_w4_s1" : "kv_m16_n64_w4_s1-q_m64_n32_w4_s1"})
    out.push_back(parse_backward_config(text));
  // A packed batch above 128 refuses one-stage dQ kernels (backward_reject): a two-stage one.
  if (wide) out.push_back(parse_backward_config("kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s2"));
  return out;
}

}  // namespace attn
