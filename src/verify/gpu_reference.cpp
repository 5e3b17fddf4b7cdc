#include "verify/gpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "codegen/kernel_args.hpp"

namespace attn {

namespace {

constexpr int error_blocks = 1024;

dims3 blocks_for(int64_t n) { return {static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 4096))}; }

}  // namespace

dims3 fill_blocks(int64_t n) { return blocks_for(n); }

const std::vector<std::pair<const char*, kernel_t support_kernels::*>>& support_kernel_table() {
  using k = support_kernels;
  static const std::vector<std::pair<const char*, kernel_t k::*>> table{
      {"ref_scores_full", &k::scores_full}, {"ref_scores_lowp", &k::scores_lowp}, {"ref_softmax_full", &k::softmax_full},
      {"ref_softmax_lowp", &k::softmax_lowp}, {"ref_pv_full", &k::pv_full},     {"ref_pv_lowp", &k::pv_lowp},
      {"fill_inputs", &k::fill_inputs},       {"poison", &k::poison},           {"error_elem", &k::error_elem},
      {"error_f32", &k::error_f32},           {"gather_pages", &k::gather_pages}, {"ref_dp_full", &k::dp_full},
      {"ref_dp_lowp", &k::dp_lowp},           {"ref_ds_full", &k::ds_full},     {"ref_ds_lowp", &k::ds_lowp},
      {"ref_dq", &k::dq},                     {"ref_dk", &k::dk},               {"ref_dv_full", &k::dv_full},
      {"ref_dv_lowp", &k::dv_lowp},           {"round_f32", &k::round_f32},     {"to_elem", &k::to_elem}};
  return table;
}

std::string support_source() { return "#include \"reference.cuh\"\n"; }

std::vector<std::string> support_options(dtype t) {
  return {"-DATTN_SUPPORT_MODULE", fmt::format("-DATTN_BF16={}", t == dtype::bf16 ? 1 : 0)};
}

std::unique_ptr<support_kernels> load_support(const device_runtime& rt, const compile_cache& cache, dtype t,
                                              const std::string& arch) {
  auto compiled = compile_with_cache(cache, support_source(), arch, support_options(t), rt.kind());
  if (!compiled.result.ok)
    throw std::runtime_error("the support module (kernels/reference.cuh) does not compile:\n" +
                             compiled.result.log);
  auto s = std::make_unique<support_kernels>(rt, compiled.result.cubin);
  for (const auto& [symbol, member] : support_kernel_table()) s.get()->*member = s->module.kernel(symbol);
  return s;
}

device_problem::device_problem(const problem& s, const support_kernels& support, uint64_t seed, input_kind kind)
    : shp(s), runtime(&support.rt), inputs(kind) {
  const device_runtime& rt = support.rt;
  q = device_buffer(rt, q_bytes(s));
  k = device_buffer(rt, kv_bytes(s));
  v = device_buffer(rt, v_bytes(s));
  o = device_buffer(rt, o_bytes(s));
  rt.synchronize_device();
  const int64_t before = rt.free_memory();
  lse = device_buffer(rt, lse_bytes(s));
  lse_measured_bytes = before - rt.free_memory();
  // Distinct seeds per tensor: Q, K and V must not be equal.
  const std::tuple<device_buffer*, int64_t, tensor_role> tensors[] = {
      {&q, q_elements(), tensor_role::q}, {&k, kv_elements(), tensor_role::k}, {&v, v_elements(), tensor_role::v}};
  uint64_t stream_seed = seed;
  for (auto& [buffer, n, role] : tensors) {
    void* ptr = buffer->get();
    long long count = n;
    unsigned long long sd = stream_seed++;
    attn_k::input_fill fill = input_fill_for(kind, role, s);
    void* args[] = {&ptr, &count, &sd, &fill};
    rt.launch(support.fill_inputs, blocks_for(n), {256}, 0, nullptr, args);
  }
  if (has_kv_lens(s)) {
    std::vector<int> lengths;
    for (int64_t n : kv_lengths(s)) lengths.push_back(static_cast<int>(n));
    seqlens = device_buffer(rt, static_cast<int64_t>(lengths.size() * sizeof(int)));
    rt.copy_to_device(seqlens.get(), lengths.data(), seqlens.bytes());
  }
  if (is_varlen(s)) {
    auto upload = [&](device_buffer& to, const std::vector<int64_t>& lengths) {
      std::vector<int> starts;
      for (int64_t n : cumulative_lengths(lengths)) starts.push_back(static_cast<int>(n));
      to = device_buffer(rt, static_cast<int64_t>(starts.size() * sizeof(int)));
      rt.copy_to_device(to.get(), starts.data(), to.bytes());
    };
    upload(cu_seqlens_q, q_lengths(s));
    upload(cu_seqlens_k, kv_lengths(s));
  }
  if (s.page_size > 0) {
    const std::vector<int> table = random_page_table(s, seed);
    num_pages = static_cast<int64_t>(table.size());
    std::vector<int> owner(table.size());
    for (size_t slot = 0; slot < table.size(); ++slot) owner[static_cast<size_t>(table[slot])] = static_cast<int>(slot);
    block_table = device_buffer(rt, num_pages * static_cast<int64_t>(sizeof(int)));
    rt.copy_to_device(block_table.get(), table.data(), block_table.bytes());
    device_buffer owners(rt, num_pages * static_cast<int64_t>(sizeof(int)));
    rt.copy_to_device(owners.get(), owner.data(), owners.bytes());
    const int64_t page_rows = num_pages * s.page_size * s.kv_heads;
    k_pages = device_buffer(rt, page_rows * s.head_dim * element_size(s.dtype));
    v_pages = device_buffer(rt, page_rows * value_dim(s) * element_size(s.dtype));
    const attn_k::fwd_params p = params();
    int pages = static_cast<int>(num_pages), page_size = static_cast<int>(s.page_size),
        per_seq = static_cast<int>(pages_per_sequence(s)), kv_heads = static_cast<int>(s.kv_heads);
    const void* own = owners.get();
    for (auto [from, to, value] : {std::tuple{&k, &k_pages, 0}, std::tuple{&v, &v_pages, 1}}) {
      const void* src = from->get();
      void* dst = to->get();
      int d = static_cast<int>(value ? value_dim(s) : s.head_dim), is_v = value;
      void* args[] = {const_cast<attn_k::fwd_params*>(&p), &src, &dst, &own, &pages, &page_size, &per_seq, &kv_heads, &d, &is_v};
      rt.launch(support.gather_pages, blocks_for(page_rows * d), {256}, 0, nullptr, args);
    }
    rt.synchronize_device();  // before `owners` goes
  }
  rt.synchronize_device();
}

std::vector<int> random_page_table(const problem& s, uint64_t seed) {
  std::vector<int> table(static_cast<size_t>(s.batch * pages_per_sequence(s)));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int>(i);
  std::mt19937_64 rng(seed ^ 0x9a9e5);
  std::shuffle(table.begin(), table.end(), rng);
  return table;
}

int64_t decode_inputs_bytes(const problem& s) {
  const int64_t pages = s.batch * pages_per_sequence(s);
  return pages * s.page_size * s.kv_heads * (s.head_dim + value_dim(s)) * element_size(s.dtype) + pages * 8 +
         s.batch * 4;
}

int64_t device_problem::q_elements() const { return q_rows(shp) * shp.heads * shp.head_dim; }
int64_t device_problem::o_elements() const { return q_rows(shp) * shp.heads * value_dim(shp); }
int64_t device_problem::kv_elements() const { return kv_rows(shp) * shp.kv_heads * shp.head_dim; }
int64_t device_problem::v_elements() const { return kv_rows(shp) * shp.kv_heads * value_dim(shp); }

void device_problem::reserve_workspace(int64_t floats) const {
  if (floats > workspace_floats) {
    workspace = device_buffer(*runtime, floats * 4);
    workspace_floats = floats;
  }
  // Split-KV's counters start at 0 for every variant planned on it (a variant that stopped
  // half-way would otherwise leave its counts for the next).
  // The memset is the legacy stream's, the variants run on their own: wait for it.
  if (floats > 0) {
    runtime->memset(workspace.get(), 0, split_counter_bytes());
    runtime->synchronize_device();
  }
}

int64_t reference_pairs_per_chunk(const problem& s, int64_t chunk_bytes) {
  const int64_t per_pair = s.q_len * s.kv_len * 8;  // fp32 scores + fp32 probabilities
  return std::clamp<int64_t>(chunk_bytes / per_pair, 1, std::min<int64_t>(s.batch * s.heads, 65535));
}

attn_k::fwd_params device_problem::params() const {
  problem contiguous = shp;
  contiguous.page_size = 0;
  forward_tensors t{q.get(), k.get(), v.get(), o.get(), lse.as<float>(), workspace.as<float>(), workspace_floats,
                    seqlens.as<int>()};
  t.cu_seqlens_q = cu_seqlens_q.as<int>();
  t.cu_seqlens_k = cu_seqlens_k.as<int>();
  t.total_q = q_rows(shp);
  t.total_kv = kv_rows(shp);
  return make_fwd_params(contiguous, t, {}, {}, 0);
}

attn_k::fwd_params device_problem::kernel_params() const {
  if (shp.page_size == 0) return params();
  return make_fwd_params(shp,
                         {q.get(), k_pages.get(), v_pages.get(), o.get(), lse.as<float>(), workspace.as<float>(),
                          workspace_floats, seqlens.as<int>(), block_table.as<int>(), num_pages},
                         {}, {}, 0);
}

namespace {


// Which computation a materializing pass is: full fp32; naive (scaled Q, scores, P, O in the
// input type); rounded (fp32 scores and softmax, P and O in the input type).
enum class pass_kind { full, naive, rounded };

// One materializing pass over pairs [bh0, bh0 + n): scores, softmax, P V.
void materializing_pass(const support_kernels& sk, const device_problem& pr, pass_kind kind, int bh0, int n,
                float* scores, void* probs, float* lse, void* out) {
  const bool lowp_scores = kind == pass_kind::naive, lowp_output = kind != pass_kind::full;
  attn_k::fwd_params p = pr.params();
  int d = static_cast<int>(pr.shp.head_dim), dv = static_cast<int>(value_dim(pr.shp)), causal = pr.shp.causal ? 1 : 0;
  const dims3 tile{16, 16};
  const auto count = static_cast<unsigned>(n);
  {
    float* no_dtanh = nullptr;  // the backward's (gpu_gradients)
    void* args[] = {&p, &bh0, &d, &causal, &scores, &no_dtanh};
    sk.rt.launch(lowp_scores ? sk.scores_lowp : sk.scores_full,
                 {static_cast<unsigned>((p.kv_len + 15) / 16), static_cast<unsigned>((p.q_len + 15) / 16), count},
                 tile, 0, nullptr, args);
  }
  {
    const float* s = scores;
    void* args[] = {&p, &bh0, &s, &probs, &lse};
    sk.rt.launch(lowp_output ? sk.softmax_lowp : sk.softmax_full, {static_cast<unsigned>(p.q_len), 1, count}, {256}, 0,
                 nullptr, args);
  }
  {
    const void* pp = probs;
    void* args[] = {&p, &bh0, &dv, &pp, &out};
    sk.rt.launch(lowp_output ? sk.pv_lowp : sk.pv_full,
                 {static_cast<unsigned>((dv + 15) / 16), static_cast<unsigned>((p.q_len + 15) / 16), count}, tile, 0,
                 nullptr, args);
  }
}

error_stats read_error(const device_runtime& rt, const device_buffer& max_bits, const device_buffer& bad) {
  unsigned bits = 0;
  unsigned long long bad_count = 0;
  rt.copy_to_host(&bits, max_bits.get(), sizeof bits);
  rt.copy_to_host(&bad_count, bad.get(), sizeof bad_count);
  float worst = 0;
  std::memcpy(&worst, &bits, sizeof worst);
  return {worst, bad_count};
}

error_stats run_error(const device_runtime& rt, kernel_t kernel, const void* out, const float* ref, int64_t n) {
  device_buffer max_bits(rt, sizeof(unsigned)), bad(rt, sizeof(unsigned long long));
  rt.memset(max_bits.get(), 0, sizeof(unsigned));
  rt.memset(bad.get(), 0, sizeof(unsigned long long));
  long long count = n;
  void* mb = max_bits.get();
  void* bc = bad.get();
  void* args[] = {&out, &ref, &count, &mb, &bc};
  rt.launch(kernel, {error_blocks}, {256}, 0, nullptr, args);
  rt.synchronize_device();
  return read_error(rt, max_bits, bad);
}

}  // namespace

int64_t reference_memory_bytes(const problem& s, int64_t chunk_bytes) {
  const int64_t o_elems = q_rows(s) * s.heads * value_dim(s);
  return reference_pairs_per_chunk(s, chunk_bytes) * s.q_len * s.kv_len * 8 + o_elems * 4 + lse_bytes(s) +
         o_bytes(s);
}

reference_outputs compute_reference(const support_kernels& support, const device_problem& pr,
                                    int64_t chunk_bytes) {
  const problem& s = pr.shp;
  const device_runtime& rt = support.rt;
  reference_outputs r;
  r.o_full = device_buffer(rt, pr.o_elements() * 4);
  r.lse_full = device_buffer(rt, lse_bytes(s));
  device_buffer o_low(rt, o_bytes(s));  // the naive run's O, then the rounded run's
  const int64_t pairs = reference_pairs_per_chunk(s, chunk_bytes);
  device_buffer scores(rt, pairs * s.q_len * s.kv_len * 4), probs(rt, pairs * s.q_len * s.kv_len * 4);
  const int total = static_cast<int>(s.batch * s.heads);
  auto run = [&](pass_kind kind, bool with_full) {
    for (int bh0 = 0; bh0 < total; bh0 += static_cast<int>(pairs)) {
      const int n = std::min<int>(static_cast<int>(pairs), total - bh0);
      if (with_full)
        materializing_pass(support, pr, pass_kind::full, bh0, n, scores.as<float>(), probs.get(), r.lse_full.as<float>(),
                   r.o_full.get());
      materializing_pass(support, pr, kind, bh0, n, scores.as<float>(), probs.get(), nullptr, o_low.get());
    }
    rt.synchronize_device();
    return element_error(support, o_low.get(), r.o_full.as<float>(), pr.o_elements()).max_error;
  };
  r.lowp_error = run(pass_kind::naive, true);
  r.rounding_error = run(pass_kind::rounded, false);
  return r;
}

void poison_outputs(const support_kernels& support, const device_problem& pr, stream_t stream) {
  const std::pair<void*, int64_t> targets[] = {{pr.o.get(), pr.o.bytes() / 4},
                                               {pr.lse.get(), pr.lse.bytes() / 4}};
  for (auto [ptr, words] : targets) {
    long long n = words;
    void* args[] = {&ptr, &n};
    support.rt.launch(support.poison, blocks_for(words), {256}, 0, stream, args);
  }
}

error_stats element_error(const support_kernels& support, const void* out, const float* ref,
                          int64_t n) {
  return run_error(support.rt, support.error_elem, out, ref, n);
}

error_stats float_error(const support_kernels& support, const float* out, const float* ref,
                        int64_t n) {
  return run_error(support.rt, support.error_f32, out, ref, n);
}

}  // namespace attn
