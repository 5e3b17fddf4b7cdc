#pragma once
// What the hopper tests of the problem options (a window, softcap, a packed batch) share: the
// template arguments an instantiation names, and that every variant of hopper's default space
// that its pruner keeps compiles for sm_90a without spills (the pruner's register margins are
// fitted to exactly this).
#include <gtest/gtest.h>

#include <string>

#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "core/problem.hpp"
#include "run/tuner.hpp"
#include "temp_dir.hpp"

namespace attn::testing {

/// "hopper_config<...": the arguments of hopper_config in c's instantiation for s.
inline std::string hopper_config_args(const tile_config& c, const problem& s) {
  const std::string text = hopper_family().instantiation(c, s);
  const auto at = text.find("hopper_config<");
  return text.substr(at, text.find(">>", at) - at);
}

/// schedule_bits: OR'ed onto every schedule of the space (64: softcap's polynomial).
inline void expect_hopper_space_compiles_without_spills(const problem& s, int schedule_bits = 0) {
  const temp_dir dir("attn-tune-hopper-compile");
  const compile_cache cache(dir.path().string());
  tune_options t;
  t.family = "hopper";
  t.space = hopper_family().default_space;
  for (int& k : t.space.knob) k |= schedule_bits;
  const tune_result r = compile_only(s, "sm_90a", cache, t);
  int compiled = 0;
  for (const auto& rec : r.records) {
    if (rec.status == status::pruned) continue;
    EXPECT_EQ(rec.status, status::compiled) << name(rec.config) << ": " << rec.message;
    EXPECT_EQ(rec.spill_bytes, 0) << name(rec.config) << " spills";
    EXPECT_EQ(rec.message, "") << name(rec.config);  // ptxas's performance warnings (serialized wgmma)
    ++compiled;
  }
  EXPECT_GE(compiled, 2) << r.pruning;
}

}  // namespace attn::testing
