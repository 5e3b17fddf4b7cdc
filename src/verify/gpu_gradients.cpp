#include "verify/gpu_gradients.hpp"

#include <algorithm>
#include <optional>

namespace attn {

namespace {

enum class grad_mode { full, naive };

// The gradients' accumulators of one mode: fp32 in Q's, K's and V's layouts.
struct gradient_sums {
  device_buffer dq, dk, dv;
  gradient_sums(const device_runtime& rt, const device_problem& pr)
      : dq(rt, pr.q_elements() * 4), dk(rt, pr.kv_elements() * 4), dv(rt, pr.v_elements() * 4) {
    for (const device_buffer* b : {&dq, &dk, &dv}) rt.memset(b->get(), 0, b->bytes());
  }
};

// One chunk of pairs [bh0, bh0 + n): S and P as the forward's reference makes them, then dP, dS
// and the three gradients (dK and dV added to). dtanh: softcap's 1 - tanh^2 of the chunk (null
// without softcap).
void gradient_pass(const support_kernels& sk, const device_problem& pr, const device_buffer& d_o, grad_mode mode,
                   int bh0, int n, float* scores, void* probs, float* dtanh, gradient_sums& out) {
  const bool lowp = mode == grad_mode::naive;
  attn_k::fwd_params p = pr.params();
  int d = static_cast<int>(pr.shp.head_dim), dv = static_cast<int>(value_dim(pr.shp)), causal = pr.shp.causal ? 1 : 0;
  const unsigned count = static_cast<unsigned>(n);
  const dims3 tile{16, 16};
  auto tiles = [](int64_t x) { return static_cast<unsigned>((x + 15) / 16); };
  const device_runtime& rt = sk.rt;
  const void* dop = d_o.get();
  float* lse = nullptr;
  {
    void* args[] = {&p, &bh0, &d, &causal, &scores, &dtanh};
    rt.launch(lowp ? sk.scores_lowp : sk.scores_full, {tiles(p.kv_len), tiles(p.q_len), count}, tile, 0, nullptr, args);
  }
  {
    const float* s = scores;
    void* args[] = {&p, &bh0, &s, &probs, &lse};
    rt.launch(lowp ? sk.softmax_lowp : sk.softmax_full, {static_cast<unsigned>(p.q_len), 1, count}, {256}, 0, nullptr,
              args);
  }
  {
    void* args[] = {&p, &bh0, &dv, &dop, &scores};
    rt.launch(lowp ? sk.dp_lowp : sk.dp_full, {tiles(p.kv_len), tiles(p.q_len), count}, tile, 0, nullptr, args);
  }
  {
    const void* pp = probs;
    const float* dt = dtanh;
    void* args[] = {&p, &pp, &dt, &scores};
    rt.launch(lowp ? sk.ds_lowp : sk.ds_full, {static_cast<unsigned>(p.q_len), 1, count}, {256}, 0, nullptr, args);
  }
  {
    const float* ds = scores;
    float* dq = out.dq.as<float>();
    void* args[] = {&p, &bh0, &d, &ds, &dq};
    rt.launch(sk.dq, {tiles(d), tiles(p.q_len), count}, tile, 0, nullptr, args);
  }
  {
    const float* ds = scores;
    float* dk = out.dk.as<float>();
    void* args[] = {&p, &bh0, &d, &ds, &dk};
    rt.launch(sk.dk, {tiles(d), tiles(p.kv_len), count}, tile, 0, nullptr, args);
  }
  {
    const void* pp = probs;
    float* dvp = out.dv.as<float>();
    void* args[] = {&p, &bh0, &dv, &pp, &dop, &dvp};
    rt.launch(lowp ? sk.dv_lowp : sk.dv_full, {tiles(dv), tiles(p.kv_len), count}, tile, 0, nullptr, args);
  }
}

void launch_elementwise(const support_kernels& sk, kernel_t kernel, void* a, void* b, int64_t n) {
  long long count = n;
  if (b == nullptr) {
    void* args[] = {&a, &count};
    sk.rt.launch(kernel, fill_blocks(n), {256}, 0, nullptr, args);
  } else {
    void* args[] = {&a, &b, &count};
    sk.rt.launch(kernel, fill_blocks(n), {256}, 0, nullptr, args);
  }
}

}  // namespace

int64_t backward_reference_memory_bytes(const problem& s, int64_t chunk_bytes) {
  const int64_t elements = q_rows(s) * s.heads * s.head_dim + kv_rows(s) * s.kv_heads * (s.head_dim + value_dim(s));
  const int64_t chunk = reference_pairs_per_chunk(s, chunk_bytes) * s.q_len * s.kv_len * (has_softcap(s) ? 12 : 8);
  // dO, delta, dQ dK dV; the atomic-dQ workspace; the full and the naive sums (fp32); the chunk's
  // S/dP and P (fp32), and with softcap 1 - tanh^2.
  return o_bytes(s) + lse_bytes(s) + elements * element_size(s.dtype) + dq_accum_bytes(s) + 2 * elements * 4 + chunk;
}

backward_reference compute_backward_reference(const support_kernels& support, const device_problem& pr,
                                              const reference_outputs& forward, uint64_t seed, int64_t chunk_bytes) {
  const problem& s = pr.shp;
  const device_runtime& rt = support.rt;
  backward_reference r;
  r.d_o = device_buffer(rt, o_bytes(s));
  r.delta = device_buffer(rt, lse_bytes(s));
  r.dq = device_buffer(rt, q_bytes(s));
  r.dk = device_buffer(rt, kv_bytes(s));
  r.dv = device_buffer(rt, v_bytes(s));
  r.dq_accum = device_buffer(rt, dq_accum_bytes(s));
  {
    void* ptr = r.d_o.get();
    long long n = pr.o_elements();
    unsigned long long sd = seed ^ 0xd0d0d0d0ull;  // not Q's, K's or V's stream
    attn_k::input_fill fill = input_fill_for(pr.inputs, tensor_role::d_o, s);
    void* args[] = {&ptr, &n, &sd, &fill};
    rt.launch(support.fill_inputs, fill_blocks(n), {256}, 0, nullptr, args);
  }
  // The backward's inputs O and LSE: the reference forward's.
  launch_elementwise(support, support.to_elem, forward.o_full.get(), pr.o.get(), pr.o_elements());
  rt.copy_on_device_async(pr.lse.get(), forward.lse_full.get(), lse_bytes(s), nullptr);

  gradient_sums full(rt, pr), naive(rt, pr);
  const int64_t pairs = reference_pairs_per_chunk(s, chunk_bytes);
  device_buffer scores(rt, pairs * s.q_len * s.kv_len * 4), probs(rt, pairs * s.q_len * s.kv_len * 4);
  std::optional<device_buffer> dtanh;  // softcap's factor of dS
  if (has_softcap(s)) dtanh.emplace(rt, pairs * s.q_len * s.kv_len * 4);
  const int total = static_cast<int>(s.batch * s.heads);
  for (grad_mode mode : {grad_mode::full, grad_mode::naive})
    for (int bh0 = 0; bh0 < total; bh0 += static_cast<int>(pairs)) {
      const int n = std::min<int>(static_cast<int>(pairs), total - bh0);
      gradient_pass(support, pr, r.d_o, mode, bh0, n, scores.as<float>(), probs.get(),
                    dtanh ? dtanh->as<float>() : nullptr, mode == grad_mode::full ? full : naive);
    }
  for (device_buffer* b : {&naive.dq, &naive.dk, &naive.dv})
    launch_elementwise(support, support.round_f32, b->get(), nullptr, b->bytes() / 4);
  rt.synchronize_device();
  r.lowp_dq = float_error(support, naive.dq.as<float>(), full.dq.as<float>(), pr.q_elements()).max_error;
  r.lowp_dk = float_error(support, naive.dk.as<float>(), full.dk.as<float>(), pr.kv_elements()).max_error;
  r.lowp_dv = float_error(support, naive.dv.as<float>(), full.dv.as<float>(), pr.v_elements()).max_error;
  r.dq_full = std::move(full.dq);
  r.dk_full = std::move(full.dk);
  r.dv_full = std::move(full.dv);
  return r;
}

backward_tensors backward_tensors_of(const device_problem& pr, const backward_reference& ref) {
  backward_tensors t;
  t.q = pr.q.get(), t.k = pr.k.get(), t.v = pr.v.get(), t.o = pr.o.get(), t.d_o = ref.d_o.get();
  t.lse = pr.lse.as<float>();
  t.delta = ref.delta.as<float>();
  t.dq = ref.dq.get(), t.dk = ref.dk.get(), t.dv = ref.dv.get();
  t.dq_accum = ref.dq_accum.as<float>();
  if (is_varlen(pr.shp)) {  // a packed batch: the sequences' offsets, as the forward's
    t.cu_seqlens_q = pr.cu_seqlens_q.as<int>(), t.cu_seqlens_k = pr.cu_seqlens_k.as<int>();
    t.total_q = q_rows(pr.shp), t.total_kv = kv_rows(pr.shp);
  }
  return t;
}

void poison_gradients(const support_kernels& support, const backward_reference& ref, stream_t stream) {
  for (const device_buffer* b : {&ref.dq, &ref.dk, &ref.dv, &ref.delta}) {
    void* ptr = b->get();
    long long words = b->bytes() / 4;
    void* args[] = {&ptr, &words};
    support.rt.launch(support.poison, fill_blocks(words), {256}, 0, stream, args);
  }
}

gradient_errors gradient_error(const support_kernels& support, const device_problem& pr, const backward_reference& ref) {
  return {element_error(support, ref.dq.get(), ref.dq_full.as<float>(), pr.q_elements()),
          element_error(support, ref.dk.get(), ref.dk_full.as<float>(), pr.kv_elements()),
          element_error(support, ref.dv.get(), ref.dv_full.as<float>(), pr.v_elements())};
}

}  // namespace attn
