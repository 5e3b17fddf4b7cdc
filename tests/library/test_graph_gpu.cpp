// attn_tune_forward captured in a CUDA graph (label gpu; skips without a device unless
// ATTN_TUNE_REQUIRE_GPU=1): after one warm-up call the same call is captured on a non-default
// stream in global capture mode (PyTorch's default) and replayed, and the replay's O and LSE are
// the eager call's, bit for bit, also after the inputs change (the graph reads them at replay)
// and on another stream. A capture makes a plan of its own (host work; for a split-KV config a
// workspace of its own, allocated under the relaxed capture mode), with the warm-up's buffers on
// the warm-up's stream, or with buffers the context has never seen on another stream (PyTorch's
// graph pool gives new ones). Shapes: a prefill one (the fallback config)
// and a GQA decode one (8, 32/8, 1, 4096, 128) on a table naming fa2's split-KV config
// (m32_n64_w2_s2, 4 splits, packed GQA: merged in the kernel through its counters, which a replay
// finds at 0), written for the device at hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "attn_tune/attn_tune.hpp"
#include "library_gpu_fixture.hpp"
#include "reference.hpp"  // examples/cpp

namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

struct buffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit buffer(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess); }
  ~buffer() { cudaFree(p); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  std::vector<unsigned char> host() const {
    std::vector<unsigned char> out(bytes);
    EXPECT_EQ(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

void fill_random(buffer& b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> bits(b.bytes / 2);
  for (auto& x : bits) x = example::to_bits(example::round_to(normal(rng), true), true);
  EXPECT_EQ(cudaMemcpy(b.p, bits.data(), b.bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

// An export CSV for this device whose one bucket (bf16, D=128, not causal, N_q in (0, 1]) is fa2
// with 4 splits and packed GQA: the decode shape's config.
// tile: "family,block_m,block_n,warps,stages,knob".
std::string split_table(const std::string& path, int splits = 4, const char* tile = "fa2,32,64,2,2,0") {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::ofstream out(path);
  out << "device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,warps,stages,"
         "knob,splits,pack_gqa,tflops,tuned_shapes\n"
      << '"' << prop.name << "\"," << prop.major << '.' << prop.minor << ',' << prop.multiProcessorCount
      << ",bf16,128,0,0,1," << tile << ',' << splits << ",1,1.0,1\n";
  return path;
}

struct outputs {
  buffer o, lse;
  explicit outputs(const attn_tune::problem& p)
      : o(p.batch * p.heads * p.q_len * p.head_dim * 2), lse(p.batch * p.heads * p.q_len * 4) {}
  void poison() {
    EXPECT_EQ(cudaMemset(o.p, 0xff, o.bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(lse.p, 0xff, lse.bytes), cudaSuccess);
  }
};

class LibraryGraph : public library_gpu_test {
 protected:
  // Eager on `eager`, then a warm-up call and a capture of the same call on `graph` (on another
  // stream than the warm-up's when `fresh`, with buffers made just before the capture), replayed
  // twice: with the first inputs, then with new ones.
  void capture_and_replay(attn_tune::context& ctx, const attn_tune::problem& p, bool fresh, const char* expect_config,
                          bool twice = false) {
    const size_t q_bytes = p.batch * p.heads * p.q_len * p.head_dim * 2;
    const size_t kv_bytes = p.batch * p.kv_heads * p.kv_len * p.head_dim * 2;
    buffer q(q_bytes), k(kv_bytes), v(kv_bytes);
    fill_random(q, 1), fill_random(k, 2), fill_random(v, 3);
    cudaStream_t warm = nullptr, capture = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&warm, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
    outputs eager(p), warmed(p);
    auto run = [&](outputs& out, cudaStream_t s) {
      return ctx.forward(q.p, k.p, v.p, out.o.p, static_cast<float*>(out.lse.p), p, s);
    };
    const attn_tune::choice ran = run(eager, warm);
    if (expect_config) EXPECT_STREQ(ran.config, expect_config);
    run(warmed, fresh ? warm : capture);  // the warm-up: the plan of these buffers (and the kernel)
    CUDA_OK(cudaStreamSynchronize(warm));
    CUDA_OK(cudaStreamSynchronize(capture));
    outputs fresh_out(p);
    outputs& captured = fresh ? fresh_out : warmed;
    captured.poison();
    CUDA_OK(cudaDeviceSynchronize());

    // Captures the call into a graph; `twice`: a first graph of it is made and never launched, and
    // the one replayed is a second capture of the same call (it reuses the first's plan, whose
    // split-KV counters only the first graph's own node would have zeroed).
    auto capture_graph = [&](cudaGraph_t& graph, cudaGraphExec_t& exec) {
      CUDA_OK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
      attn_tune_status status = ATTN_TUNE_OK;
      try {
        run(captured, capture);
      } catch (const attn_tune::error& e) {
        status = e.status();
        ADD_FAILURE() << "forward during capture: " << e.what();
      }
      const cudaError_t ended = cudaStreamEndCapture(capture, &graph);
      ASSERT_EQ(status, ATTN_TUNE_OK);
      CUDA_OK(ended);
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    };
    cudaGraph_t first = nullptr, graph = nullptr;
    cudaGraphExec_t first_exec = nullptr, exec = nullptr;
    if (twice) capture_graph(first, first_exec);
    capture_graph(graph, exec);
    if (HasFatalFailure()) return;
    const auto unreplayed = captured.o.host();  // capturing launched nothing
    EXPECT_TRUE(std::all_of(unreplayed.begin(), unreplayed.end(), [](unsigned char b) { return b == 0xff; }));

    CUDA_OK(cudaGraphLaunch(exec, capture));
    CUDA_OK(cudaStreamSynchronize(capture));
    EXPECT_EQ(captured.o.host(), eager.o.host()) << "the replay's O differs from the eager call's";
    EXPECT_EQ(captured.lse.host(), eager.lse.host()) << "the replay's LSE differs from the eager call's";

    fill_random(q, 4), fill_random(k, 5);  // new inputs in the same buffers: the replay reads them
    run(eager, warm);
    CUDA_OK(cudaStreamSynchronize(warm));
    captured.poison();
    CUDA_OK(cudaGraphLaunch(exec, warm));  // a graph replays on any stream
    CUDA_OK(cudaStreamSynchronize(warm));
    EXPECT_EQ(captured.o.host(), eager.o.host()) << "the second replay's O differs";
    EXPECT_EQ(captured.lse.host(), eager.lse.host()) << "the second replay's LSE differs";

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    if (first_exec) cudaGraphExecDestroy(first_exec);
    if (first) cudaGraphDestroy(first);
    cudaStreamDestroy(warm);
    cudaStreamDestroy(capture);
  }
};

TEST_F(LibraryGraph, PrefillReplayEqualsEager) {
  const auto p = attn_tune::make_problem(2, 8, 8, 512, 512, 64, ATTN_TUNE_BF16, true);
  capture_and_replay(*m_ctx, p, false, nullptr);
  capture_and_replay(*m_ctx, p, true, nullptr);
}

TEST_F(LibraryGraph, SplitKvDecodeReplayEqualsEager) {
  attn_tune::context_options o;
  o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
  o.table = split_table(std::string(ATTN_TUNE_BINARY_DIR) + "/graph-test-split-table.csv");
  attn_tune::context ctx(o);
  const auto p = attn_tune::make_problem(8, 32, 8, 1, 4096, 128);
  EXPECT_EQ(ctx.choose(p).source, ATTN_TUNE_SOURCE_BUCKET);
  capture_and_replay(ctx, p, false, "m32_n64_w2_s2_p4_g1");
  capture_and_replay(ctx, p, true, "m32_n64_w2_s2_p4_g1");
  capture_and_replay(ctx, p, true, "m32_n64_w2_s2_p4_g1", true);  // a second capture of one plan
}

// Above FUSED_MERGE_SPLITS (4) the combine kernel merges, launched after the split kernel: both in
// the graph.
TEST_F(LibraryGraph, SplitKvDecodeWithTheCombineKernelReplayEqualsEager) {
  attn_tune::context_options o;
  o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
  o.table = split_table(std::string(ATTN_TUNE_BINARY_DIR) + "/graph-test-split8-table.csv", 8);
  attn_tune::context ctx(o);
  const auto p = attn_tune::make_problem(8, 32, 8, 1, 4096, 128);
  capture_and_replay(ctx, p, false, "m32_n64_w2_s2_p8_g1");
  capture_and_replay(ctx, p, true, "m32_n64_w2_s2_p8_g1");
}

// hopper's combine kernel is launched as its split kernel's programmatic dependent (sm_90): in a
// graph the two are joined by a programmatic edge.
TEST_F(LibraryGraph, HopperSplitKvDecodeWithItsDependentCombineReplayEqualsEager) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major != 9) GTEST_SKIP() << "hopper runs on sm_90 only; this is sm_" << prop.major << prop.minor;
  attn_tune::context_options o;
  o.cache_dir = std::string(ATTN_TUNE_BINARY_DIR) + "/test-cache";
  o.table = split_table(std::string(ATTN_TUNE_BINARY_DIR) + "/graph-test-hopper-split-table.csv", 8,
                        "hopper,64,64,8,2,1");
  attn_tune::context ctx(o);
  const auto p = attn_tune::make_problem(8, 32, 8, 1, 4096, 128);
  EXPECT_EQ(ctx.choose(p).source, ATTN_TUNE_SOURCE_BUCKET);
  capture_and_replay(ctx, p, false, "m64_n64_w8_s2_k1_p8_g1");
  capture_and_replay(ctx, p, true, "m64_n64_w8_s2_k1_p8_g1");
  capture_and_replay(ctx, p, true, "m64_n64_w8_s2_k1_p8_g1", true);
}

}  // namespace
