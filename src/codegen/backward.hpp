#pragma once
// The backward pass's kernels (kernels/fa2_bwd.cuh): a variant's tiles, what it cannot run, the
// translation unit NVRTC compiles, its three launches and their parameter block. Issue 22's first
// family, on mma.sync (sm_80+); the tuner does not search it yet (tests/gpu/test_backward_gpu.cpp and
// bench/backward_bench.cpp run it).
#include <optional>
#include <string>
#include <vector>

#include "backend/resources.hpp"
#include "backend/runtime.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/kernel_args.hpp"  // make_bwd_params
#include "common/bwd_params.cuh"  // kernels/common, shared with the device code
#include "core/backward_config.hpp"
#include "core/device.hpp"
#include "core/problem.hpp"

namespace attn {

/// The variants a backward run tries, two stages each: fa2's tiles at 4 and 8 warps (the dK/dV
/// kernel's 16 or 32 keys a warp, 32 or 64 queries a step; the dQ kernel's 16 rows a warp, 64 or 128
/// keys a step), and wgmma's with one or two warpgroups a kernel (32 or 64 queries a dK/dV step,
/// 64 or 128 keys a dQ step). The pruner keeps those the device and the head dim allow.
/// Above D = 128: split dK/dV kernels and the dQ kernel's narrower steps (and one stage too).
std::vector<backward_config> backward_default_configs(const problem& s);

/// The family a backward variant's record names: "wgmma" for the wgmma kernels, else "fa2" (the
/// forward families whose mma form each backward kernel shares).
const char* backward_family(const backward_config& c);
/// Whether a forward family has backward kernels of its kind (fa2, wgmma).
bool has_backward_kernels(const std::string& family);
/// The kernels/ sources of a backward variant (its record's kernel_hash).
std::vector<std::string> backward_sources(const backward_config& c);

/// The backward's variants of s for a device: their records (s with pass bwd; pruned ones with the
/// reason, as build_variants does) and the others compiled on `jobs` threads through the cache.
/// Throws invalid_input naming why when the backward does not take s, or when every variant is pruned.
std::vector<variant> build_backward_variants(const problem& s, const std::vector<backward_config>& configs,
                                             const device_desc& device, const resource_limits& limits,
                                             const compile_cache& cache, int jobs, const compile_progress& progress,
                                             const compiled_variant& compiled = {});

/// The extern "C" entry points of an instantiation.
inline constexpr const char* backward_delta_symbol = "attn_bwd_delta";
inline constexpr const char* backward_dkdv_symbol = "attn_bwd_dkdv";
inline constexpr const char* backward_dq_symbol = "attn_bwd_dq";
/// split_dkdv's second dK/dV launch (dK; the first, backward_dkdv_symbol, computes dV).
inline constexpr const char* backward_dk_symbol = "attn_bwd_dk";
/// Threads of the delta kernel's blocks (a warp a row).
inline constexpr int backward_delta_threads = 128;

/// Why the variant cannot run problem s on a device with these limits (tiles, shared memory, what
/// the backward does not take yet: windows, softcap, dv != d, kv_lens, pages, packed batches, head
/// dims not multiples of 8); nullopt when it can.
std::optional<std::string> backward_reject(const backward_config& c, const problem& s, const resource_limits& limits);
/// Shared memory of the dK/dV kernel and of the dQ kernel, bytes.
int64_t backward_dkdv_shared_bytes(const backward_config& c, const problem& s);
int64_t backward_dq_shared_bytes(const backward_config& c, const problem& s);

/// The translation unit: the delta, dK/dV and dQ kernels of (c, s).
std::string backward_instantiation(const backward_config& c, const problem& s);
/// NVRTC's options for it.
std::vector<std::string> backward_compile_options();

/// One launch, in order: delta, then dK/dV (split: dV, then dK) and dQ, which all read delta.
struct backward_launch {
  const char* symbol;
  dims3 grid, block;
  int shared_bytes;
};
std::vector<backward_launch> backward_launches(const backward_config& c, const problem& s);

/// A compiled variant loaded on the device: its kernels, dynamic shared memory raised.
struct loaded_backward {
  loaded_module module;  ///< unloaded with it
  std::vector<kernel_t> kernels;
  std::vector<backward_launch> launches;
  bool atomic_dq = false;  ///< run_backward needs bwd_params' dq_accum
};
loaded_backward load_backward(const device_runtime& rt, const std::string& cubin, const backward_config& c,
                              const problem& s, int device);
/// Enqueues the three kernels on `stream`.
void run_backward(const device_runtime& rt, const loaded_backward& b, const attn_k::bwd_params& p, stream_t stream);
/// The same with the launches (grids) of another problem of the same instantiation (dtype, head
/// dim, causal, variant): backward_launches(c, s).
void run_backward(const device_runtime& rt, const loaded_backward& b, const std::vector<backward_launch>& launches,
                  const attn_k::bwd_params& p, stream_t stream);

}  // namespace attn
