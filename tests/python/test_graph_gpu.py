"""attn_tune.forward in a CUDA graph (ctest python_package_gpu, label gpu; skips without PyTorch or
CUDA, fails instead under ATTN_TUNE_REQUIRE_GPU=1 through test_package_gpu's check): after one
warm-up call on a side stream, torch.cuda.graph captures the call (PyTorch's graph pool gives O
and LSE new addresses) and a replay equals the eager call bit for bit, also after new inputs are
copied into the captured ones; a prefill shape (the fallback config), the op itself, and a GQA
decode shape on a table naming fa2's split-KV config (4 splits, merged in the kernel), written for this device."""
import os
import tempfile
import unittest

try:
    import torch
except ImportError:
    torch = None

import attn_tune

HAVE_GPU = torch is not None and torch.cuda.is_available()
SPLIT_CONFIG = "m32_n64_w2_s2_p4_g1"


def split_table():
    """An export CSV for this device: bf16, D=128, not causal, N_q in (0, 1] -> fa2 SPLIT_CONFIG."""
    p = torch.cuda.get_device_properties(0)
    path = os.path.join(tempfile.mkdtemp(), "split.csv")
    with open(path, "w") as f:
        f.write("device,cc,sm_count,dtype,head_dim,causal,seq_min_exclusive,seq_max,family,block_m,block_n,warps,"
                "stages,knob,splits,pack_gqa,tflops,tuned_shapes\n")
        f.write(f'"{p.name}",{p.major}.{p.minor},{p.multi_processor_count},bf16,128,0,0,1,fa2,32,64,2,2,0,4,1,1.0,1\n')
    return path, p


@unittest.skipUnless(HAVE_GPU, "no PyTorch with CUDA")
class CudaGraph(unittest.TestCase):
    def replay_equals_eager(self, call, q, k, v):
        eager = call(q, k, v)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            call(q, k, v)  # the warm-up: the kernel and the Python key
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = call(q, k, v)
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(captured, eager):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        q.copy_(torch.randn_like(q))  # new inputs in the captured buffers: the replay reads them
        k.copy_(torch.randn_like(k))
        eager = call(q, k, v)
        for t in captured:
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(captured, eager):
            torch.testing.assert_close(got, want, rtol=0, atol=0)

    @staticmethod
    def tensors(b, h, h_kv, n_q, n_kv, d):
        g = torch.Generator(device="cuda").manual_seed(0)
        make = lambda heads, n: torch.randn(b, heads, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
        return make(h, n_q), make(h_kv, n_kv), make(h_kv, n_kv)

    def test_prefill(self):
        for shape, causal in (((1, 8, 8, 128, 128, 64), False), ((2, 8, 8, 512, 512, 128), True)):
            with self.subTest(shape=shape, causal=causal):
                self.replay_equals_eager(lambda q, k, v: attn_tune.forward_with_lse(q, k, v, causal=causal),
                                         *self.tensors(*shape))

    def test_the_op_itself(self):
        self.replay_equals_eager(lambda q, k, v: torch.ops.attn_tune.forward(q, k, v, True, "", 0.0),
                                 *self.tensors(1, 8, 2, 256, 256, 64))

    def test_split_kv_decode(self):
        table, p = split_table()
        chosen = attn_tune.lookup(table, p.name, (p.major, p.minor), p.multi_processor_count, batch=8, heads=32,
                                  kv_heads=8, q_len=1, kv_len=4096, head_dim=128)
        self.assertEqual(chosen["config"], SPLIT_CONFIG)
        self.replay_equals_eager(lambda q, k, v: attn_tune.forward_with_lse(q, k, v, table=table),
                                 *self.tensors(8, 32, 8, 1, 4096, 128))


if __name__ == "__main__":
    unittest.main()
