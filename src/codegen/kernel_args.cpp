#include "codegen/kernel_args.hpp"

#include "common/resources.cuh"  // kernels/common, shared with the device code

#include <climits>
#include <cmath>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

namespace attn {

std::pair<int, int> kernel_window(const problem& s) {
  // A side at or past every key limits nothing; the kernels take the window in 32 bits.
  auto side = [&](int64_t n) { return n < 0 || n >= s.q_len + s.kv_len ? -1 : static_cast<int>(n); };
  return {side(s.window_left), s.causal ? 0 : side(s.window_right)};
}

tensor_strides contiguous_strides(const problem& s, bool kv) { return contiguous_strides(s, kv, s.head_dim); }

tensor_strides contiguous_strides(const problem& s, bool kv, int64_t d) {
  if (kv && s.page_size > 0) return {s.page_size * s.kv_heads * d, d, s.kv_heads * d};
  const int64_t h = kv ? s.kv_heads : s.heads;
  if (is_varlen(s)) return packed_strides(s, kv, d, kv ? kv_rows(s) : q_rows(s));
  const int64_t n = kv ? s.kv_len : s.q_len;
  if (s.layout == layout::bhsd) return {h * n * d, n * d, d};
  return {n * h * d, d, h * d};
}

tensor_strides packed_strides(const problem& s, bool kv, int64_t d, int64_t rows) {
  const int64_t h = kv ? s.kv_heads : s.heads;  // [H, total, D] or [total, H, D]
  return s.layout == layout::bhsd ? tensor_strides{0, rows * d, d} : tensor_strides{0, d, h * d};
}

int64_t split_workspace_floats(const problem& s, int splits) {
  return splits <= 1 ? 0 : attn_k::SPLIT_COUNTERS + int64_t(splits) * s.batch * s.heads * s.q_len * (value_dim(s) + 1);
}

int64_t split_counter_bytes() { return int64_t(attn_k::SPLIT_COUNTERS) * 4; }

namespace {

void check_pointer(const void* p, const char* name, int64_t alignment) {
  if (p == nullptr) throw invalid_input(fmt::format("{} is NULL", name));
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address % static_cast<uintptr_t>(alignment) != 0)
    throw invalid_input(fmt::format("{} = {} is not {}-byte aligned", name, p, alignment));
}

void check_strides(const tensor_strides& t, const char* name, int64_t head_dim, int elem, int64_t alignment,
                   bool packed = false) {
  const int64_t per_load = alignment / elem;
  const std::pair<const char*, int64_t> all[] = {{"batch", t.batch}, {"head", t.head}, {"row", t.row}};
  for (const auto& [which, value] : all) {
    if (packed && std::string_view(which) == "batch") {  // a packed batch's sequences are rows, not batches
      if (value != 0)
        throw invalid_input(fmt::format("{} batch stride {} of a packed batch (seqlens) is not 0: its sequences "
                                        "are rows of one packed tensor", name, value));
      continue;
    }
    if (value <= 0 || value % per_load != 0)
      throw invalid_input(fmt::format("{} {} stride {} is not a positive multiple of {} elements ({} bytes)", name,
                                      which, value, per_load, alignment));
  }
  if (t.row < head_dim)
    throw invalid_input(fmt::format("{} row stride {} is less than the head dim {}: rows would overlap", name,
                                    t.row, head_dim));
}

// The last element the strides reach, (count - 1) * stride summed, plus the row: refused when it
// does not fit in 64 bits (the kernels' offsets are 64-bit, so anything below is handled).
void check_reach(const tensor_strides& t, const char* name, int64_t batch, int64_t heads, int64_t rows,
                 int64_t head_dim) {
  __int128 last = head_dim;
  last += static_cast<__int128>(batch - 1) * t.batch + static_cast<__int128>(heads - 1) * t.head +
          static_cast<__int128>(rows - 1) * t.row;
  if (last > INT64_MAX)
    throw invalid_input(fmt::format("{} strides {}, {}, {} over [{}, {}, {}] reach past 64 bits of elements", name,
                                    t.batch, t.head, t.row, batch, heads, rows));
}

}  // namespace

attn_k::fwd_params make_fwd_params(const problem& s, const forward_tensors& t, tensor_strides q_strides,
                                   tensor_strides kv_strides, float softmax_scale, tensor_strides v_strides,
                                   tensor_strides o_strides) {
  validate(s);
  if (s.q_len > INT_MAX || s.kv_len > INT_MAX || s.heads > INT_MAX || s.batch > INT_MAX)
    throw invalid_input(fmt::format("{}: batch, N_q, N_kv and heads must fit in 32 bits", describe(s)));
  const int64_t alignment = tensor_alignment_of(s);
  check_pointer(t.q, "q", alignment);
  check_pointer(t.k, "k", alignment);
  check_pointer(t.v, "v", alignment);
  check_pointer(t.o, "o", alignment);
  check_pointer(t.lse, "lse", alignof(float));
  if (q_strides.unset()) q_strides = contiguous_strides(s, false);
  if (kv_strides.unset()) kv_strides = contiguous_strides(s, true);
  const bool packed = is_varlen(s);
  if (packed) {
    if (t.cu_seqlens_q == nullptr || t.cu_seqlens_k == nullptr)
      throw invalid_input(fmt::format("seqlens {} (a packed batch) needs cu_seqlens_q and cu_seqlens_k", s.seqlens));
    if (t.total_q <= 0 || t.total_q > INT_MAX || t.total_kv <= 0 || t.total_kv > INT_MAX)
      throw invalid_input(fmt::format("a packed batch's rows (total_q {}, total_kv {}) are not in [1, 2^31)", t.total_q,
                                      t.total_kv));
  }
  // The rows a pass over Q (or K) reaches: a packed batch's are one sequence of them all.
  const int64_t q_batches = packed ? 1 : s.batch, q_reach = packed ? t.total_q : s.q_len;
  const int64_t kv_reach = packed ? t.total_kv : s.kv_len;
  check_strides(q_strides, "q", s.head_dim, element_size(s.dtype), alignment, packed);
  check_strides(kv_strides, "kv", s.head_dim, element_size(s.dtype), alignment, packed);
  check_reach(q_strides, "q", q_batches, s.heads, q_reach, s.head_dim);
  // V and O: their own strides with dv != d; K's and Q's with dv = d (the kernels read those).
  const int64_t dv = value_dim(s);
  if (!has_value_dim(s)) {
    if (!v_strides.unset() && !(v_strides == kv_strides))
      throw invalid_input(fmt::format("v strides {}, {}, {} differ from k's {}, {}, {}: with dv = d they must be equal",
                                      v_strides.batch, v_strides.head, v_strides.row, kv_strides.batch,
                                      kv_strides.head, kv_strides.row));
    if (!o_strides.unset() && !(o_strides == q_strides))
      throw invalid_input(fmt::format("o strides {}, {}, {} differ from q's {}, {}, {}: with dv = d they must be equal",
                                      o_strides.batch, o_strides.head, o_strides.row, q_strides.batch, q_strides.head,
                                      q_strides.row));
    v_strides = kv_strides;
    o_strides = q_strides;
  }
  if (v_strides.unset()) v_strides = contiguous_strides(s, true, dv);
  if (o_strides.unset()) o_strides = contiguous_strides(s, false, dv);
  check_strides(v_strides, "v", dv, element_size(s.dtype), alignment, packed);
  check_strides(o_strides, "o", dv, element_size(s.dtype), alignment, packed);
  check_reach(o_strides, "o", q_batches, s.heads, q_reach, dv);
  if (s.page_size > 0) {
    if (t.block_table == nullptr) throw invalid_input(fmt::format("a paged cache (page size {}) needs block_table", s.page_size));
    if (t.num_pages <= 0 || t.num_pages > INT_MAX)
      throw invalid_input(fmt::format("a paged cache's page count {} is not in [1, 2^31)", t.num_pages));
    if (pages_per_sequence(s) > INT_MAX / s.batch)
      throw invalid_input(fmt::format("the page table of {} pages per sequence exceeds 2^31 entries", pages_per_sequence(s)));
    check_reach(kv_strides, "kv", t.num_pages, s.kv_heads, s.page_size, s.head_dim);
    check_reach(v_strides, "v", t.num_pages, s.kv_heads, s.page_size, dv);
  } else {
    check_reach(kv_strides, "kv", q_batches, s.kv_heads, kv_reach, s.head_dim);
    check_reach(v_strides, "v", q_batches, s.kv_heads, kv_reach, dv);
  }
  if (has_kv_lens(s) && t.seqlens_k == nullptr)
    throw invalid_input(fmt::format("kv_lens {} needs each sequence's length (seqlens_k / cache_seqlens)", s.kv_lens));
  if (softmax_scale != 0 && !(std::isfinite(softmax_scale) && softmax_scale > 0))
    throw invalid_input(fmt::format("softmax_scale {} is not a positive finite number (0: 1/sqrt(D))", softmax_scale));

  attn_k::fwd_params p{};
  p.q = t.q;
  p.k = t.k;
  p.v = t.v;
  p.o = t.o;
  p.lse = t.lse;
  p.batch = static_cast<int>(s.batch);
  p.num_splits = 1;
  p.o_partial = t.workspace;
  p.workspace_floats = t.workspace ? t.workspace_floats : 0;
  p.q_batch_stride = q_strides.batch;
  p.q_head_stride = q_strides.head;
  p.q_row_stride = q_strides.row;
  p.kv_batch_stride = kv_strides.batch;
  p.kv_head_stride = kv_strides.head;
  p.kv_row_stride = kv_strides.row;
  p.v_batch_stride = v_strides.batch;
  p.v_head_stride = v_strides.head;
  p.v_row_stride = v_strides.row;
  p.o_batch_stride = o_strides.batch;
  p.o_head_stride = o_strides.head;
  p.o_row_stride = o_strides.row;
  p.q_len = static_cast<int>(s.q_len);
  p.kv_len = static_cast<int>(s.kv_len);
  p.heads = static_cast<int>(s.heads);
  p.group = static_cast<int>(s.heads / s.kv_heads);
  const double scale = softmax_scale != 0 ? softmax_scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  p.softmax_scale = static_cast<float>(scale);
  p.seqlens_k = has_kv_lens(s) ? t.seqlens_k : nullptr;
  if (packed) {
    p.cu_seqlens_q = t.cu_seqlens_q;
    p.cu_seqlens_k = t.cu_seqlens_k;
    p.total_q = static_cast<int>(t.total_q);
    p.total_k = static_cast<int>(t.total_kv);
  }
  if (s.page_size > 0) {
    p.block_table = t.block_table;
    p.pages_per_seq = static_cast<int>(pages_per_sequence(s));
    p.total_k = static_cast<int>(t.num_pages);  // the cache's pages (hopper's tensor maps span them)
    while ((int64_t{1} << p.page_shift) < s.page_size) ++p.page_shift;
  }
  p.scale_log2 = static_cast<float>(scale * M_LOG2E);
  std::tie(p.window_left, p.window_right) = kernel_window(s);
  if (has_softcap(s)) {
    p.softcap_in = static_cast<float>(scale / s.softcap);
    p.softcap_out = static_cast<float>(s.softcap / scale);
  }
  return p;
}

double softcap_poly_limit(double softcap, double x_limit) {
  constexpr double cap_limit = 32;
  return softcap * std::tanh(x_limit) <= cap_limit ? x_limit : std::atanh(cap_limit / softcap);
}

softcap_polynomial softcap_poly_for(double softcap, double softmax_scale) {
  // In raw q.k units s: x = s scale / C, and exp2 takes C tanh(x) scale_log2 / scale = s
  // scale_log2 (c0 + c1 x^2 + c2 x^4).
  softcap_polynomial poly;
  if (!(softcap > 0)) return poly;
  const double in = softmax_scale / softcap;
  // c_k of tanh's fit in x, for s: times scale log2(e) and in^(2k).
  auto fold = [&](double c, int k) { return static_cast<float>(softmax_scale * M_LOG2E * c * std::pow(in * in, k)); };
  for (int k = 0; k < 3; ++k) poly.coefficients[k] = fold(softcap_tanh_poly[k], k);
  for (int k = 0; k < 2; ++k) poly.coefficients3[k] = fold(softcap_tanh_poly3[k], k);
  poly.limit = static_cast<float>(softcap_poly_limit(softcap) / in);
  poly.limit3 = static_cast<float>(softcap_poly_limit(softcap, softcap_poly3_x) / in);
  return poly;
}

// bench/backward_peers.py's pack_params packs this layout by hand (11 pointers, 6 strides, 5 ints,
// 2 floats, the window's 2 ints, softcap's 2 floats, O's and V's 6 strides, a packed batch's 2
// pointers and 2 ints): change both together.
static_assert(sizeof(attn_k::bwd_params) == 256, "attn_k::bwd_params changed: update bench/backward_peers.py's pack_params");

attn_k::bwd_params make_bwd_params(const problem& s, const backward_tensors& t, float softmax_scale) {
  validate(s);
  const std::pair<const void*, const char*> pointers[] = {{t.q, "q"},   {t.k, "k"},   {t.v, "v"},   {t.o, "o"},
                                                          {t.d_o, "dout"}, {t.dq, "dq"}, {t.dk, "dk"}, {t.dv, "dv"}};
  for (const auto& [p, what] : pointers) check_pointer(p, what, tensor_alignment);
  check_pointer(t.lse, "lse", 4);
  check_pointer(t.delta, "delta", 4);
  if (t.dq_accum) check_pointer(t.dq_accum, "dq_accum", 16);
  if (!(softmax_scale >= 0) || !std::isfinite(softmax_scale))
    throw invalid_input(fmt::format("softmax scale {} is not finite and positive", softmax_scale));
  // Contiguous strides; a packed batch's over the totals given (lengths "given" have no total of
  // their own: q_rows() would be a bound).
  const bool packed = is_varlen(s);
  const auto strides = [&](bool kv, int64_t d) {
    return packed ? packed_strides(s, kv, d, kv ? t.total_kv : t.total_q) : contiguous_strides(s, kv, d);
  };
  const tensor_strides qs = strides(false, s.head_dim), ks = strides(true, s.head_dim);
  const tensor_strides os = strides(false, value_dim(s)), vs = strides(true, value_dim(s));
  attn_k::bwd_params p{};
  p.q = t.q, p.k = t.k, p.v = t.v, p.o = t.o, p.d_o = t.d_o, p.lse = t.lse, p.delta = t.delta;
  p.dq = t.dq, p.dk = t.dk, p.dv = t.dv, p.dq_accum = t.dq_accum;
  p.q_batch_stride = qs.batch, p.q_head_stride = qs.head, p.q_row_stride = qs.row;
  p.kv_batch_stride = ks.batch, p.kv_head_stride = ks.head, p.kv_row_stride = ks.row;
  p.o_batch_stride = os.batch, p.o_head_stride = os.head, p.o_row_stride = os.row;
  p.v_batch_stride = vs.batch, p.v_head_stride = vs.head, p.v_row_stride = vs.row;
  p.q_len = static_cast<int>(s.q_len), p.kv_len = static_cast<int>(s.kv_len);
  p.heads = static_cast<int>(s.heads), p.group = static_cast<int>(s.heads / s.kv_heads);
  p.batch = static_cast<int>(s.batch);
  p.softmax_scale = softmax_scale > 0 ? softmax_scale : static_cast<float>(1.0 / std::sqrt(double(s.head_dim)));
  p.scale_log2 = static_cast<float>(p.softmax_scale * 1.4426950408889634);
  std::tie(p.window_left, p.window_right) = kernel_window(s);  // as the forward's
  if (is_varlen(s)) {  // a packed batch: each sequence's rows, the longest lengths in q_len and kv_len
    check_pointer(t.cu_seqlens_q, "cu_seqlens_q", 4);
    check_pointer(t.cu_seqlens_k, "cu_seqlens_k", 4);
    if (t.total_q <= 0 || t.total_kv <= 0 || t.total_q > INT_MAX || t.total_kv > INT_MAX)
      throw invalid_input(fmt::format("a packed batch's rows total_q {} and total_k {}: each in [1, 2^31)", t.total_q,
                                      t.total_kv));
    p.cu_seqlens_q = t.cu_seqlens_q, p.cu_seqlens_k = t.cu_seqlens_k;
    p.total_q = static_cast<int>(t.total_q), p.total_k = static_cast<int>(t.total_kv);
  }
  if (has_softcap(s)) {  // as the forward's, with this call's scale
    p.softcap_in = static_cast<float>(p.softmax_scale / s.softcap);
    p.softcap_out = static_cast<float>(s.softcap / p.softmax_scale);
  }
  return p;
}

}  // namespace attn
