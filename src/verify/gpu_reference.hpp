#pragma once
// The GPU side of verification: the support module (reference attention, input generation,
// poisoning, error reduction) and the reference outputs of one problem.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend/resources.hpp"
#include "codegen/cache.hpp"
#include "core/problem.hpp"
#include "verify/input_fill.hpp"
#include "common/params.cuh"  // kernels/common, shared with the device code

namespace attn {

struct support_kernels {
  support_kernels(const device_runtime& r, const std::string& image) : rt(r), module(r, image) {}
  const device_runtime& rt;  ///< everything built on the support module runs here
  loaded_module module;
  kernel_t scores_full{}, scores_lowp{}, softmax_full{}, softmax_lowp{}, pv_full{}, pv_lowp{};
  kernel_t fill_inputs{}, poison{}, error_elem{}, error_f32{}, gather_pages{};
  // The backward's reference (verify/gpu_gradients.hpp).
  kernel_t dp_full{}, dp_lowp{}, ds_full{}, ds_lowp{}, dq{}, dk{}, dv_full{}, dv_lowp{}, round_f32{}, to_elem{};
};

/// Compiles (through the cache, with NVRTC or hiprtc as rt's backend needs) and loads the support
/// module for one element type. Throws std::runtime_error with the compiler's log when it does
/// not compile.
std::unique_ptr<support_kernels> load_support(const device_runtime& rt, const compile_cache& cache, dtype t,
                                              const std::string& arch);
/// Each kernel's extern "C" name in the support module and its member, as load_support loads them.
const std::vector<std::pair<const char*, kernel_t support_kernels::*>>& support_kernel_table();
/// The support module's source and options (also used by the compile-only tests).
std::string support_source();
std::vector<std::string> support_options(dtype t);

/// Q, K, V, O and LSE of one shape on the device, Q, K and V filled with fresh random values of
/// the kind asked for.
struct device_problem {
  device_problem(const problem& s, const support_kernels& support, uint64_t seed, input_kind inputs = input_kind::normal);
  problem shp;
  const device_runtime* runtime;
  input_kind inputs = input_kind::normal;
  device_buffer q, k, v, o, lse;
  /// kv_lens: each sequence's length (int32 [B]); a paged cache: K and V in pages (the rows at or
  /// past a sequence's length NaN), the page table (int32 [B, pages per sequence], a random
  /// permutation of the pages, as a serving engine's allocator leaves them). k and v stay
  /// contiguous for the reference.
  device_buffer seqlens, k_pages, v_pages, block_table;
  /// A packed batch (seqlens): each side's cumulative offsets, int32 [B + 1].
  device_buffer cu_seqlens_q, cu_seqlens_k;
  int64_t num_pages = 0;
  int64_t lse_measured_bytes = 0;  ///< device memory the LSE allocation actually took
  /// Split-KV's partial outputs, grown to the largest a variant has needed (never shrunk).
  mutable device_buffer workspace;
  mutable int64_t workspace_floats = 0;
  void reserve_workspace(int64_t floats) const;
  /// The reference's view: contiguous K and V (the lengths as the kernels see them).
  attn_k::fwd_params params() const;
  /// The kernels' view: K and V paged when the problem is.
  attn_k::fwd_params kernel_params() const;
  int64_t q_elements() const;
  int64_t o_elements() const;  ///< O's: q_elements with the value dim (dv)
  int64_t kv_elements() const;
  int64_t v_elements() const;  ///< V's: kv_elements with the value dim
};

struct error_stats {
  double max_error = 0;
  uint64_t bad = 0;  ///< NaN/inf where the reference is finite, or poisoned elements left
};

/// Reference outputs: full fp32 (O as float in Q's layout, LSE), and how far from its O two
/// low-precision runs land: the naive one (scaled Q, scores, P and O rounded to the input type)
/// and the one that rounds only P and O (the output's own rounding).
struct reference_outputs {
  device_buffer o_full, lse_full;
  double lowp_error = 0;      ///< max |O_naive - O_full|
  double rounding_error = 0;  ///< max |O_rounded - O_full|
};

/// Scores are materialized for at most `chunk_bytes` of (batch, head) pairs at a time (at least
/// one pair). Throws device_error.
reference_outputs compute_reference(const support_kernels& support, const device_problem& p,
                                    int64_t chunk_bytes);
/// (batch, head) pairs whose scores and probabilities fit chunk_bytes (at least one).
int64_t reference_pairs_per_chunk(const problem& s, int64_t chunk_bytes);
/// fill_inputs' launch grid for n elements.
dims3 fill_blocks(int64_t n);
/// The page table of a paged problem: B * pages_per_sequence pages in a random order (seeded).
std::vector<int> random_page_table(const problem& s, uint64_t seed);
/// Device memory a paged problem's copies of K and V, its table and its lengths take.
int64_t decode_inputs_bytes(const problem& s);
/// Device memory compute_reference needs beyond the problem's own buffers.
int64_t reference_memory_bytes(const problem& s, int64_t chunk_bytes);

void poison_outputs(const support_kernels& support, const device_problem& p, stream_t stream);
error_stats element_error(const support_kernels& support, const void* out, const float* ref,
                          int64_t n);
error_stats float_error(const support_kernels& support, const float* out, const float* ref,
                        int64_t n);

}  // namespace attn
