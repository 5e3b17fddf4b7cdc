#pragma once
// The backward's side of verification (issue 22): its inputs on the device and the gradients of
// the materialized attention they are checked against, with FlashAttention's rule.
#include <cstdint>

#include "codegen/kernel_args.hpp"  // backward_tensors
#include "verify/gpu_reference.hpp"

namespace attn {

/// The backward's buffers beside a device_problem's: dO (fresh random, standard normal, O's
/// shape), delta (the kernels' scratch, fp32 [B, H, Nq]), dQ, dK, dV (the variant's outputs, the
/// input type) and the reference gradients (fp32 in Q's, K's and V's layouts). The problem's O and
/// LSE hold the reference forward's (O rounded to the input type), as a correct forward leaves them.
struct backward_reference {
  device_buffer d_o, delta, dq, dk, dv;
  device_buffer dq_accum;  ///< the atomic-dQ variants' fp32 workspace (backward_tensors' dq_accum)
  device_buffer dq_full, dk_full, dv_full;
  /// How far the same math done in the input type lands from the fp32 gradients (max |x_naive -
  /// x_full| of each): dP, delta, dS and each gradient rounded where a framework's autograd rounds.
  double lowp_dq = 0, lowp_dk = 0, lowp_dv = 0;
};

/// FlashAttention's rule: twice the input type's own error, plus this.
inline constexpr double backward_absolute_tolerance = 1e-3;
inline double backward_allowed(double lowp_error) { return 2 * lowp_error + backward_absolute_tolerance; }

/// Fills dO (seeded), sets the problem's O and LSE from `forward` (compute_reference's), and
/// computes the gradients, materializing at most chunk_bytes of scores and probabilities at a
/// time. Throws device_error.
backward_reference compute_backward_reference(const support_kernels& support, const device_problem& pr,
                                              const reference_outputs& forward, uint64_t seed, int64_t chunk_bytes);
/// Device memory compute_backward_reference and its buffers take beyond the forward's reference.
int64_t backward_reference_memory_bytes(const problem& s, int64_t chunk_bytes);
/// The kernels' view of them.
backward_tensors backward_tensors_of(const device_problem& pr, const backward_reference& ref);
/// NaN into dQ, dK, dV and delta, so that whatever a variant leaves unwritten is caught.
void poison_gradients(const support_kernels& support, const backward_reference& ref, stream_t stream);

struct gradient_errors {
  error_stats dq, dk, dv;
};
/// The variant's dQ, dK and dV against the reference's.
gradient_errors gradient_error(const support_kernels& support, const device_problem& pr, const backward_reference& ref);

}  // namespace attn
