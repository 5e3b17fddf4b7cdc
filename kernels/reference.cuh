#pragma once
// The support module: a straightforward materializing attention (no tensor cores) used as the
// reference, plus input generation, output poisoning and error measurement.
//
// The reference runs in two modes. Full (LOWP = false): scores, softmax and P V in fp32. Naive
// low precision (LOWP = true): the same math rounded to the input type where a plain framework
// implementation would round (scaled Q, scores, probabilities, output); its error against the
// full reference sets the tolerance of the fused kernels (FlashAttention's rule).
// Output rounding only (the full scores and softmax, P and O rounded to the input type) is the
// full mode's scores with the naive mode's softmax and P V: its error measures what rounding the
// output costs by itself, the tight bound when large logits make the naive mode's error large.
// Both process the (batch, head) pairs [bh0, bh0 + gridDim.z), so the host can chunk heads.
// The same source compiles with NVRTC (NVIDIA) and hiprtc (AMD): common/vendor.cuh picks the
// primitives, and reductions are written for any warp width (32 or 64 lanes).
#include "common/inputs.cuh"
#include "common/params.cuh"
#include "common/vendor.cuh"

namespace attn_k {

// A packed variable-length batch (p.cu_seqlens_q): sequence b's first query and key rows in the
// packed tensors and its own lengths; otherwise row 0 of its batch, q_len and its kv_len.
struct ref_sequence {
  long long q0, k0;
  int q_len, kv_len;
};
__device__ __forceinline__ ref_sequence sequence_of(const fwd_params& p, int b) {
  if (p.cu_seqlens_q != nullptr)
    return {p.cu_seqlens_q[b], p.cu_seqlens_k[b], p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b],
            p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b]};
  return {0, 0, p.q_len, p.seqlens_k ? p.seqlens_k[b] : p.kv_len};
}

__device__ __forceinline__ long long q_index(const fwd_params& p, int bh, int i) {
  const int b = bh / p.heads, h = bh % p.heads;
  return b * p.q_batch_stride + h * p.q_head_stride + (sequence_of(p, b).q0 + i) * p.q_row_stride;
}
__device__ __forceinline__ long long kv_index(const fwd_params& p, int bh, int j) {
  const int b = bh / p.heads, h = bh % p.heads;
  return b * p.kv_batch_stride + (h / p.group) * p.kv_head_stride + (sequence_of(p, b).k0 + j) * p.kv_row_stride;
}
/// V's and O's elements by their own strides (equal to K's and Q's when dv = d).
__device__ __forceinline__ long long v_index(const fwd_params& p, int bh, int j) {
  const int b = bh / p.heads, h = bh % p.heads;
  return b * p.v_batch_stride + (h / p.group) * p.v_head_stride + (sequence_of(p, b).k0 + j) * p.v_row_stride;
}
__device__ __forceinline__ long long o_index(const fwd_params& p, int bh, int i) {
  const int b = bh / p.heads, h = bh % p.heads;
  return b * p.o_batch_stride + h * p.o_head_stride + (sequence_of(p, b).q0 + i) * p.o_row_stride;
}
/// Row (b, h, i) of the LSE: [B, H, Nq], a packed batch's [H, total_q].
__device__ __forceinline__ long long lse_index(const fwd_params& p, int bh, int i) {
  if (p.cu_seqlens_q == nullptr) return (long long)bh * p.q_len + i;
  const int b = bh / p.heads, h = bh % p.heads;
  return (long long)h * p.total_q + sequence_of(p, b).q0 + i;
}

/// S[z][i][j] = scale * q_i . k_j (masked: -inf), softcapped when p has a cap (and then, where
/// dtanh is not null, its derivative 1 - tanh^2 at the same index). Block 16x16, grid (Nkv/16,
/// Nq/16, heads).
template <bool BF16, bool LOWP>
__device__ void ref_scores(const fwd_params& p, int bh0, int head_dim, bool causal, float* scores, float* dtanh) {
  __shared__ float qs[16][17], ks[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z, bh = bh0 + z;
  const int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx, kj = blockIdx.x * 16 + ty;
  const elem_bits* q = static_cast<const elem_bits*>(p.q);
  const elem_bits* k = static_cast<const elem_bits*>(p.k);
  // The sequence's own lengths (kv_lens, a packed batch): the rows past them are another
  // sequence's or past the tensor.
  const ref_sequence seq = sequence_of(p, bh / p.heads);
  float acc = 0.f;
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    const bool in_d = d0 + tx < head_dim;  // a head dim that is not a multiple of 16 (40, 72)
    float qv = i < seq.q_len && in_d ? to_float<BF16>(q[q_index(p, bh, i) + d0 + tx]) : 0.f;
    if (LOWP) qv = round_to_elem<BF16>(qv * p.softmax_scale);
    qs[ty][tx] = qv;
    ks[ty][tx] = kj < seq.kv_len && in_d ? to_float<BF16>(k[kv_index(p, bh, kj) + d0 + tx]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaf(qs[ty][e], ks[tx][e], acc);
    __syncthreads();
  }
  if (i >= p.q_len || j >= p.kv_len) return;
  float s = LOWP ? round_to_elem<BF16>(acc) : acc * p.softmax_scale;
  if (p.softcap_out != 0.f) {  // softcap C = softcap_out * scale, on the scaled score
    const float cap = p.softcap_out * p.softmax_scale;
    const float th = tanhf(s / cap);
    s = cap * th;
    if (LOWP) s = round_to_elem<BF16>(s);
    // The backward's factor d(score)/d(scaled q.k) = 1 - tanh^2 (ref_ds), where asked for; LOWP
    // from tanh in the element type, as a framework's autograd keeps it.
    if (dtanh != nullptr) {
      const float tr = LOWP ? round_to_elem<BF16>(th) : th;
      dtanh[((long long)z * p.q_len + i) * p.kv_len + j] = LOWP ? round_to_elem<BF16>(1.f - tr * tr) : 1.f - tr * tr;
    }
  }
  // The sequence's own length (kv_lens) hides the keys past it; the causal mask and a sliding
  // window are bottom-right aligned to it. A row past a packed sequence's queries is no row.
  const int kv_len = seq.kv_len;
  const int diagonal = i + kv_len - seq.q_len;
  if (i >= seq.q_len || j >= kv_len || (causal && j > diagonal) || (p.window_left >= 0 && j < diagonal - p.window_left) ||
      (p.window_right >= 0 && j > diagonal + p.window_right))
    s = neg_inf();
  scores[((long long)z * p.q_len + i) * p.kv_len + j] = s;
}

__device__ __forceinline__ float block_reduce(float x, bool is_max) {
  __shared__ float part[32];  // one per warp of up to 1024 threads
  for (int o = warp_lanes / 2; o > 0; o /= 2) {
    const float y = warp_xor(x, o);
    x = is_max ? fmaxf(x, y) : x + y;
  }
  __syncthreads();
  if (threadIdx.x % warp_lanes == 0) part[threadIdx.x / warp_lanes] = x;
  __syncthreads();
  x = part[0];
  for (int w = 1; w < (int)blockDim.x / warp_lanes; ++w) x = is_max ? fmaxf(x, part[w]) : x + part[w];
  return x;
}

/// Row softmax: P = exp(S - max) / sum, LSE = max + log(sum). Block 256, grid (Nq, 1, heads).
/// P is float (full) or the element type (LOWP, as bits). A row with no key: P = 0, LSE = -inf.
template <bool BF16, bool LOWP>
__device__ void ref_softmax(const fwd_params& p, int bh0, const float* scores, void* probs,
                            float* lse) {
  const int z = blockIdx.z, i = blockIdx.x;
  const float* s = scores + ((long long)z * p.q_len + i) * p.kv_len;
  float mx = neg_inf();
  for (int j = threadIdx.x; j < p.kv_len; j += blockDim.x) mx = fmaxf(mx, s[j]);
  mx = block_reduce(mx, true);
  const float shift = mx == neg_inf() ? 0.f : mx;
  float sum = 0.f;
  for (int j = threadIdx.x; j < p.kv_len; j += blockDim.x) sum += expf(s[j] - shift);
  sum = block_reduce(sum, false);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  const long long row = ((long long)z * p.q_len + i) * p.kv_len;
  for (int j = threadIdx.x; j < p.kv_len; j += blockDim.x) {
    const float pr = expf(s[j] - shift) * inv;
    if (LOWP)
      static_cast<elem_bits*>(probs)[row + j] = from_float<BF16>(pr);
    else
      static_cast<float*>(probs)[row + j] = pr;
  }
  if (threadIdx.x == 0 && lse != nullptr && i < sequence_of(p, (bh0 + z) / p.heads).q_len)
    lse[lse_index(p, bh0 + z, i)] = sum > 0.f ? mx + logf(sum) : neg_inf();
}

/// O = P V. Block 16x16, grid (ceil(dv/16), Nq/16, heads); head_dim is V's (dv). Full: float
/// output in O's layout; LOWP: element-type output (bits) in O's layout.
template <bool BF16, bool LOWP>
__device__ void ref_pv(const fwd_params& p, int bh0, int head_dim, const void* probs, void* out) {
  __shared__ float ps[16][17], vs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z, bh = bh0 + z;
  const int i = blockIdx.y * 16 + ty, d = blockIdx.x * 16 + tx;
  const elem_bits* v = static_cast<const elem_bits*>(p.v);
  const long long row = ((long long)z * p.q_len + i) * p.kv_len;
  const ref_sequence seq = sequence_of(p, bh / p.heads);
  float acc = 0.f;
  for (int j0 = 0; j0 < p.kv_len; j0 += 16) {
    float pv = 0.f;
    if (i < seq.q_len && j0 + tx < p.kv_len)
      pv = LOWP ? to_float<BF16>(static_cast<const elem_bits*>(probs)[row + j0 + tx])
                : static_cast<const float*>(probs)[row + j0 + tx];
    ps[ty][tx] = pv;
    // Keys past the sequence's own: another sequence's rows, or past the tensor (their P is 0).
    vs[ty][tx] = j0 + ty < seq.kv_len && d < head_dim ? to_float<BF16>(v[v_index(p, bh, j0 + ty) + d]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaf(ps[ty][e], vs[e][tx], acc);
    __syncthreads();
  }
  if (i >= seq.q_len || d >= head_dim) return;
  if (LOWP)
    static_cast<elem_bits*>(out)[o_index(p, bh, i) + d] = from_float<BF16>(acc);
  else
    static_cast<float*>(out)[o_index(p, bh, i) + d] = acc;
}

// The backward's reference (issue 22): the gradients of the materialized attention, in the same
// two modes. Per chunk of (batch, head) pairs, with S and P of the forward's kernels above: dP =
// dO V^T (over the scores' buffer), then dS = P (dP - delta) in place, delta = rowsum(P dP); then
// dQ = scale dS K, dK = scale dS^T Q and dV = P^T dO, dK and dV summed over a K/V head's query
// heads by atomics into fp32 (the reference need not be deterministic). LOWP rounds where a
// framework's autograd in the input type would: dP, delta, dS, and each gradient once at the end
// (round_f32). dO has O's layout and strides (o_index, dv elements a row).

/// dP[z][i][j] = dO_i . V_j (masked like S: 0 where S is -inf is taken care of by P = 0). Block
/// 16x16, grid (Nkv/16, Nq/16, heads); head_dim is V's (dv).
template <bool BF16, bool LOWP>
__device__ void ref_dp(const fwd_params& p, int bh0, int head_dim, const elem_bits* d_o, float* dp) {
  __shared__ float os[16][17], vs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z, bh = bh0 + z;
  const int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx, vj = blockIdx.x * 16 + ty;
  const elem_bits* v = static_cast<const elem_bits*>(p.v);
  const ref_sequence seq = sequence_of(p, bh / p.heads);
  float acc = 0.f;
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    const bool in_d = d0 + tx < head_dim;
    os[ty][tx] = i < seq.q_len && in_d ? to_float<BF16>(d_o[o_index(p, bh, i) + d0 + tx]) : 0.f;
    vs[ty][tx] = vj < seq.kv_len && in_d ? to_float<BF16>(v[v_index(p, bh, vj) + d0 + tx]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaf(os[ty][e], vs[tx][e], acc);
    __syncthreads();
  }
  if (i >= p.q_len || j >= p.kv_len) return;
  dp[((long long)z * p.q_len + i) * p.kv_len + j] = LOWP ? round_to_elem<BF16>(acc) : acc;
}

/// dS = P (dP - delta) in place of dP, delta = sum_j P dP over the row, times softcap's 1 - tanh^2
/// (dtanh, ref_scores'; null without softcap). Block 256, grid (Nq, 1, heads). P is float (full) or
/// the element type (LOWP, as bits).
template <bool BF16, bool LOWP>
__device__ void ref_ds(const fwd_params& p, const void* probs, const float* dtanh, float* dp_ds) {
  const int z = blockIdx.z, i = blockIdx.x;
  const long long row = ((long long)z * p.q_len + i) * p.kv_len;
  auto prob = [&](int j) {
    return LOWP ? to_float<BF16>(static_cast<const elem_bits*>(probs)[row + j]) : static_cast<const float*>(probs)[row + j];
  };
  float delta = 0.f;
  for (int j = threadIdx.x; j < p.kv_len; j += blockDim.x) delta += prob(j) * dp_ds[row + j];
  delta = block_reduce(delta, false);
  if (LOWP) delta = round_to_elem<BF16>(delta);
  for (int j = threadIdx.x; j < p.kv_len; j += blockDim.x) {
    float ds = prob(j) * (dp_ds[row + j] - delta);
    if (LOWP) ds = round_to_elem<BF16>(ds);
    if (dtanh != nullptr) ds *= dtanh[row + j];
    dp_ds[row + j] = LOWP ? round_to_elem<BF16>(ds) : ds;
  }
}

/// dQ_i = scale sum_j dS_ij K_j, into fp32 in Q's layout. Block 16x16, grid (ceil(D/16), Nq/16,
/// heads).
template <bool BF16>
__device__ void ref_dq(const fwd_params& p, int bh0, int head_dim, const float* ds, float* dq) {
  __shared__ float ss[16][17], ks[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z, bh = bh0 + z;
  const int i = blockIdx.y * 16 + ty, d = blockIdx.x * 16 + tx;
  const elem_bits* k = static_cast<const elem_bits*>(p.k);
  const long long row = ((long long)z * p.q_len + i) * p.kv_len;
  const ref_sequence seq = sequence_of(p, bh / p.heads);
  float acc = 0.f;
  for (int j0 = 0; j0 < p.kv_len; j0 += 16) {
    ss[ty][tx] = i < seq.q_len && j0 + tx < p.kv_len ? ds[row + j0 + tx] : 0.f;
    ks[ty][tx] = j0 + ty < seq.kv_len && d < head_dim ? to_float<BF16>(k[kv_index(p, bh, j0 + ty) + d]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaf(ss[ty][e], ks[e][tx], acc);
    __syncthreads();
  }
  if (i >= seq.q_len || d >= head_dim) return;
  dq[q_index(p, bh, i) + d] = acc * p.softmax_scale;
}

/// The K/V side: out_j += scale sum_i M_ij X_i over the pair's query rows, M = dS and X = Q for
/// dK (X_IS_DO false: Q's index, D), M = P and X = dO for dV (O's index, dv); out in K's or V's
/// layout, fp32, by atomics (a K/V head's query heads add to it). M is float, or the element type
/// (M_BITS: LOWP's P). Block 16x16, grid (ceil(dim/16), Nkv/16, heads).
template <bool BF16, bool M_BITS, bool X_IS_DO>
__device__ void ref_dkv(const fwd_params& p, int bh0, int head_dim, const void* m, const elem_bits* x, float scale,
                        float* out) {
  __shared__ float ms[16][17], xs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z, bh = bh0 + z;
  const int j0 = blockIdx.y * 16, j = j0 + ty, d = blockIdx.x * 16 + tx;
  const ref_sequence seq = sequence_of(p, bh / p.heads);
  const long long base = (long long)z * p.q_len * p.kv_len;
  float acc = 0.f;
  for (int i0 = 0; i0 < seq.q_len; i0 += 16) {
    const int mi = i0 + ty, mj = j0 + tx;  // ms[row i][column j]
    float mv = 0.f;
    if (mi < seq.q_len && mj < seq.kv_len) {
      const long long at = base + (long long)mi * p.kv_len + mj;
      mv = M_BITS ? to_float<BF16>(static_cast<const elem_bits*>(m)[at]) : static_cast<const float*>(m)[at];
    }
    ms[ty][tx] = mv;
    xs[ty][tx] = mi < seq.q_len && d < head_dim
                     ? to_float<BF16>(x[(X_IS_DO ? o_index(p, bh, mi) : q_index(p, bh, mi)) + d]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaf(ms[e][ty], xs[e][tx], acc);
    __syncthreads();
  }
  if (j >= seq.kv_len || d >= head_dim) return;
  atomicAdd(out + (X_IS_DO ? v_index(p, bh, j) : kv_index(p, bh, j)) + d, acc * scale);
}

/// Rounds each element to the element type (LOWP's gradients, once summed).
template <bool BF16>
__device__ void round_f32(float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = round_to_elem<BF16>(x[i]);
}

/// fp32 to the element type (the reference's O, the backward's input).
template <bool BF16>
__device__ void to_elem(const float* x, elem_bits* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = from_float<BF16>(x[i]);
}

/// Standard-normal draws from a counter-based hash (Box-Muller), shaped by `f` (common/inputs.cuh:
/// --inputs) and rounded to the element type.
__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
template <bool BF16>
__device__ void fill_inputs(elem_bits* x, long long n, unsigned long long seed, const input_fill& f) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long h = mix64(seed * 0x9e3779b97f4a7c15ull + mix64(i + 1));
    const float u1 = ((h >> 40) + 1) * (1.0f / 16777217.0f);  // (0, 1]
    const float u2 = ((h & 0xffffffull)) * (1.0f / 16777216.0f);
    x[i] = from_float<BF16>(input_value(f, i, sqrtf(-2.f * logf(u1)) * cospif(2.f * u2)));
  }
}

/// A paged cache's K or V ([pages, page_size, kv_heads, D]) from the contiguous one `p` reads: page
/// owner[x] = b * pages_per_seq + i holds rows [i * page_size, (i + 1) * page_size) of sequence
/// b. Rows at or past the sequence's length are NaN, so a kernel that reads one is caught.
/// value: V (its strides, head_dim its dv), else K.
__device__ void gather_pages(const fwd_params& p, const elem_bits* contiguous, elem_bits* paged, const int* owner,
                             int num_pages, int page_size, int pages_per_seq, int kv_heads, int head_dim, int value) {
  const long long n = (long long)num_pages * page_size * kv_heads * head_dim;
  for (long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x; x < n; x += (long long)gridDim.x * blockDim.x) {
    const int d = x % head_dim, h = (x / head_dim) % kv_heads, r = (x / ((long long)head_dim * kv_heads)) % page_size;
    const int page = x / ((long long)head_dim * kv_heads * page_size), slot = owner[page];
    const int b = slot / pages_per_seq, row = (slot % pages_per_seq) * page_size + r;
    const int kv_len = p.seqlens_k ? p.seqlens_k[b] : p.kv_len;
    const long long at = value ? b * p.v_batch_stride + h * p.v_head_stride + row * p.v_row_stride
                               : b * p.kv_batch_stride + h * p.kv_head_stride + row * p.kv_row_stride;
    paged[x] = row < kv_len ? contiguous[at + d] : elem_bits(0x7fff);
  }
}

/// Fills with a NaN pattern, so that any element a kernel fails to write is caught.
__device__ void poison(unsigned* x, long long n_words) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n_words;
       i += (long long)gridDim.x * blockDim.x)
    x[i] = 0x7fff7fffu;  // a NaN as bf16, fp16 pairs and as fp32
}

/// max |out - ref| into *max_bits (as float bits, via atomicMax: non-negative floats order like
/// unsigned ints); elements that are NaN/inf where ref is finite, or differ in an infinity,
/// are counted in *bad. Both -inf (an LSE of a row with no key) counts as equal.
__device__ __forceinline__ void accumulate_error(float out, float ref, float& worst,
                                                 unsigned long long& bad) {
  if (isinf(ref) || isinf(out)) {
    if (!(isinf(ref) && out == ref)) ++bad;
  } else if (isnan(out) || isnan(ref)) {
    ++bad;
  } else {
    worst = fmaxf(worst, fabsf(out - ref));
  }
}
__device__ __forceinline__ void publish_error(float worst, unsigned long long bad, unsigned* max_bits,
                                              unsigned long long* bad_count) {
  worst = block_reduce(worst, true);
  const float bad_f = block_reduce(static_cast<float>(bad), false);
  if (threadIdx.x == 0) {
    atomicMax(max_bits, __float_as_uint(worst));
    if (bad_f > 0.f) atomicAdd(bad_count, static_cast<unsigned long long>(bad_f));
  }
}
template <bool BF16>
__device__ void error_elem(const elem_bits* out, const float* ref, long long n, unsigned* max_bits,
                           unsigned long long* bad_count) {
  float worst = 0.f;
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    accumulate_error(to_float<BF16>(out[i]), ref[i], worst, bad);
  publish_error(worst, bad, max_bits, bad_count);
}
__device__ void error_f32(const float* out, const float* ref, long long n, unsigned* max_bits,
                          unsigned long long* bad_count) {
  float worst = 0.f;
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    accumulate_error(out[i], ref[i], worst, bad);
  publish_error(worst, bad, max_bits, bad_count);
}

}  // namespace attn_k

#ifdef ATTN_SUPPORT_MODULE
// Entry points with C names, for one element type (ATTN_BF16 = 1 or 0).
#define ATTN_B (ATTN_BF16 != 0)
using attn_k::fwd_params;
extern "C" __global__ void ref_scores_full(fwd_params p, int bh0, int d, int causal, float* s, float* dtanh) {
  attn_k::ref_scores<ATTN_B, false>(p, bh0, d, causal != 0, s, dtanh);
}
extern "C" __global__ void ref_scores_lowp(fwd_params p, int bh0, int d, int causal, float* s, float* dtanh) {
  attn_k::ref_scores<ATTN_B, true>(p, bh0, d, causal != 0, s, dtanh);
}
extern "C" __global__ void ref_softmax_full(fwd_params p, int bh0, const float* s, void* pr,
                                            float* lse) {
  attn_k::ref_softmax<ATTN_B, false>(p, bh0, s, pr, lse);
}
extern "C" __global__ void ref_softmax_lowp(fwd_params p, int bh0, const float* s, void* pr,
                                            float* lse) {
  attn_k::ref_softmax<ATTN_B, true>(p, bh0, s, pr, lse);
}
extern "C" __global__ void ref_pv_full(fwd_params p, int bh0, int d, const void* pr, void* o) {
  attn_k::ref_pv<ATTN_B, false>(p, bh0, d, pr, o);
}
extern "C" __global__ void ref_pv_lowp(fwd_params p, int bh0, int d, const void* pr, void* o) {
  attn_k::ref_pv<ATTN_B, true>(p, bh0, d, pr, o);
}
extern "C" __global__ void ref_dp_full(fwd_params p, int bh0, int dv, const attn_k::elem_bits* d_o, float* dp) {
  attn_k::ref_dp<ATTN_B, false>(p, bh0, dv, d_o, dp);
}
extern "C" __global__ void ref_dp_lowp(fwd_params p, int bh0, int dv, const attn_k::elem_bits* d_o, float* dp) {
  attn_k::ref_dp<ATTN_B, true>(p, bh0, dv, d_o, dp);
}
extern "C" __global__ void ref_ds_full(fwd_params p, const void* pr, const float* dtanh, float* dp_ds) {
  attn_k::ref_ds<ATTN_B, false>(p, pr, dtanh, dp_ds);
}
extern "C" __global__ void ref_ds_lowp(fwd_params p, const void* pr, const float* dtanh, float* dp_ds) {
  attn_k::ref_ds<ATTN_B, true>(p, pr, dtanh, dp_ds);
}
extern "C" __global__ void ref_dq(fwd_params p, int bh0, int d, const float* ds, float* dq) {
  attn_k::ref_dq<ATTN_B>(p, bh0, d, ds, dq);
}
extern "C" __global__ void ref_dk(fwd_params p, int bh0, int d, const float* ds, float* dk) {
  attn_k::ref_dkv<ATTN_B, false, false>(p, bh0, d, ds, static_cast<const attn_k::elem_bits*>(p.q), p.softmax_scale, dk);
}
extern "C" __global__ void ref_dv_full(fwd_params p, int bh0, int dv, const void* pr, const attn_k::elem_bits* d_o,
                                       float* out) {
  attn_k::ref_dkv<ATTN_B, false, true>(p, bh0, dv, pr, d_o, 1.f, out);
}
extern "C" __global__ void ref_dv_lowp(fwd_params p, int bh0, int dv, const void* pr, const attn_k::elem_bits* d_o,
                                       float* out) {
  attn_k::ref_dkv<ATTN_B, true, true>(p, bh0, dv, pr, d_o, 1.f, out);
}
extern "C" __global__ void round_f32(float* x, long long n) { attn_k::round_f32<ATTN_B>(x, n); }
extern "C" __global__ void to_elem(const float* x, attn_k::elem_bits* out, long long n) {
  attn_k::to_elem<ATTN_B>(x, out, n);
}
extern "C" __global__ void fill_inputs(attn_k::elem_bits* x, long long n, unsigned long long seed,
                                       attn_k::input_fill f) {
  attn_k::fill_inputs<ATTN_B>(x, n, seed, f);
}
extern "C" __global__ void poison(unsigned* x, long long n_words) { attn_k::poison(x, n_words); }
extern "C" __global__ void gather_pages(fwd_params p, const attn_k::elem_bits* contiguous, attn_k::elem_bits* paged,
                                        const int* owner, int num_pages, int page_size, int pages_per_seq,
                                        int kv_heads, int head_dim, int value) {
  attn_k::gather_pages(p, contiguous, paged, owner, num_pages, page_size, pages_per_seq, kv_heads, head_dim, value);
}
extern "C" __global__ void error_elem(const attn_k::elem_bits* out, const float* ref, long long n,
                                      unsigned* max_bits, unsigned long long* bad) {
  attn_k::error_elem<ATTN_B>(out, ref, n, max_bits, bad);
}
extern "C" __global__ void error_f32(const float* out, const float* ref, long long n,
                                     unsigned* max_bits, unsigned long long* bad) {
  attn_k::error_f32(out, ref, n, max_bits, bad);
}
#endif
