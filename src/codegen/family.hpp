#pragma once
// A kernel family: what it is called, the space it is searched over, its resource model, and how
// a configuration becomes the instantiation that NVRTC compiles. Adding a family means one kernel
// file and one entry here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/params.cuh"  // kernels/common, shared with the device code
#include "core/config.hpp"
#include "core/device.hpp"
#include "core/problem.hpp"

namespace attn {

struct launch_plan;  // codegen/launch_plan.hpp
struct gpu_info;     // backend/runtime.hpp

struct kernel_family {
  std::string name;
  attn::backend backend;
  std::string kernel_symbol;  ///< the extern "C" entry point of the instantiation
  int min_cc_major;           ///< oldest architecture the family runs on
  search_space default_space;
  int64_t (*shared_memory_bytes)(const tile_config&, const problem&);
  int (*threads)(const tile_config&);
  /// Why the kernel cannot express or run this config on this shape/device; nullopt if it can.
  std::optional<std::string> (*reject_reason)(const tile_config&, const problem&,
                                              const resource_limits&);
  /// A translation unit that instantiates the family's template for (config, shape).
  std::string (*instantiation)(const tile_config&, const problem&);
  std::vector<std::string> compile_options;
  /// kernels/ files that make up the family and its verification (their hash is recorded with
  /// every result, so results of other kernel sources are recognized).
  std::vector<std::string> source_files;
  /// Built for an arch-specific target (sm_90a): runs on exactly min_cc_major.0, not newer.
  bool arch_specific = false;
  /// Adjusts the default launch (one block per BLOCK_M rows of each head, `params` as the kernel's
  /// argument) once per problem: its own argument built from `params`, its grid. nullptr keeps
  /// the default. Throws invalid_input.
  void (*plan_launch)(launch_plan&, const tile_config&, const problem&, const attn_k::fwd_params& params,
                      const gpu_info&) = nullptr;
  /// On a device it runs on, a run with the default families searches only the families marked
  /// so (the others never won there: kernels/NOTES.md), unless all of them refuse the shape.
  bool supersedes_others = false;
  /// Split-KV's second kernel (the instantiation defines it when splits > 1); empty: none.
  std::string combine_symbol;
  /// Takes per-sequence K/V lengths (kv_lens) and a paged K/V cache (page_size).
  bool takes_decode_fields = false;
  /// Takes a sliding window (window_left, window_right) and softcap.
  bool takes_variant_fields = false;
  /// The head dims it takes are multiples of this (fa2: 1, its loops pad to 16 and its loads are
  /// predicated where rows are not 16-byte aligned; the others: 16).
  int head_dim_multiple = 16;
  /// Takes V and O with their own head dim (dv != d: head_dim_v).
  bool takes_value_dim = false;
  /// Takes a packed variable-length batch (seqlens, kv_seqlens).
  bool takes_packed = false;
};

/// Why the family cannot take the problem at all (a paged cache, per-sequence lengths, a window,
/// softcap or dv != d it does not have), naming the value and the family that does; nullopt when it can.
std::optional<std::string> problem_refusal(const kernel_family& f, const problem& s);

/// Why the config sets an axis the family lacks (a knob, or the decode axes); nullopt when it does not.
std::optional<std::string> missing_axis(const kernel_family& f, const tile_config& c);
/// Whether the family's kernels run on a device of this compute capability (CUDA families).
bool runs_on(const kernel_family& f, int cc_major, int cc_minor);
/// The families of a backend, in the order a run lists them.
std::vector<const kernel_family*> families_of(backend b);

const kernel_family& fa2_family();
const kernel_family& wgmma_family();   ///< Hopper (sm_90a) only
const kernel_family& hopper_family();  ///< Hopper (sm_90a) only: TMA, persistent
const kernel_family& mfma_family();
/// The family a backend runs when --family is not given: fa2 on CUDA, mfma on HIP.
const kernel_family& default_family(backend b);
/// Throws invalid_input naming the family when it is unknown.
const kernel_family& find_family(const std::string& name);

}  // namespace attn
