"""The Python package on a GPU (ctest python_package_gpu, label gpu; skips without PyTorch or CUDA):
attn_tune.forward against a float64 reference under FlashAttention's rule, both layouts, GQA,
cross-attention, causal (bottom-right), fp16, a non-default softmax_scale, the LSE; the custom op
under torch.compile against float64 and SDPA, not only against itself. With ATTN_TUNE_REQUIRE_GPU=1
(a GPU machine) a missing PyTorch or CUDA fails instead of skipping."""
import os
import unittest

try:
    import torch
except ImportError:
    torch = None

import attn_tune

HAVE_GPU = torch is not None and torch.cuda.is_available()
REQUIRE_GPU = os.environ.get("ATTN_TUNE_REQUIRE_GPU") == "1"


def hidden(n_q, n_kv, causal, window, device):
    """The keys each query does not see: bottom-right causal (j > i + n_kv - n_q) and a window
    (FlashAttention's window_size); None when it sees all."""
    left, right = window
    if causal:
        right = 0
    if left < 0 and right < 0:
        return None
    i = torch.arange(n_q, device=device)[:, None] + n_kv - n_q
    j = torch.arange(n_kv, device=device)[None, :]
    mask = torch.zeros(n_q, n_kv, dtype=torch.bool, device=device)
    if left >= 0:
        mask |= j < i - left
    if right >= 0:
        mask |= j > i + right
    return mask


def reference(q, k, v, causal, dtype, scale=None, window=(-1, -1), softcap=0.0):
    """float64 attention, and the same math done naively in `dtype` (FlashAttention's yardstick);
    softcap C caps the scaled scores to C * tanh(s / C)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    n_q, n_kv = q.shape[2], k.shape[2]
    mask = hidden(n_q, n_kv, causal, window, q.device)

    def attend(q, k, v, low):
        sc = scale if scale is not None else q.shape[-1] ** -0.5
        s = (q * sc) @ k.transpose(-1, -2) if low else (q @ k.transpose(-1, -2)) * sc
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        p = torch.nan_to_num(torch.softmax(s.float() if low else s, dim=-1))
        return (p.to(dtype) @ v) if low else p @ v

    return attend(q.double(), k.double(), v.double(), False), attend(q, k, v, True)


def reference_lse(q, k, causal, scale=None, window=(-1, -1), softcap=0.0):
    """float64 log-sum-exp of each query row's scaled scores; -inf for a row that sees no key."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1).double()
    s = (q.double() @ k.transpose(-1, -2)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    mask = hidden(q.shape[2], k.shape[2], causal, window, q.device)
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return torch.logsumexp(s, dim=-1)


class GpuRequired(unittest.TestCase):
    @unittest.skipUnless(REQUIRE_GPU, "ATTN_TUNE_REQUIRE_GPU is not 1")
    def test_pytorch_with_cuda_is_there(self):
        self.assertIsNotNone(torch, "ATTN_TUNE_REQUIRE_GPU=1 but PyTorch is not importable: the GPU tests would skip")
        self.assertTrue(torch.cuda.is_available(), "ATTN_TUNE_REQUIRE_GPU=1 but PyTorch sees no CUDA device")


@unittest.skipUnless(HAVE_GPU, "no PyTorch with CUDA")
class Forward(unittest.TestCase):
    def check(self, b, h, h_kv, n_q, n_kv, d, causal=False, dtype=None, bshd=False):
        dtype = dtype or torch.bfloat16
        g = torch.Generator(device="cuda").manual_seed(0)

        def make(heads, n):
            if bshd:
                return torch.randn(b, n, heads, d, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
            return torch.randn(b, heads, n, d, device="cuda", dtype=dtype, generator=g)

        q, k, v = make(h, n_q), make(h_kv, n_kv), make(h_kv, n_kv)
        o = attn_tune.forward(q, k, v, causal=causal)
        exact, naive = reference(q, k, v, causal, dtype)
        error = (o.double() - exact).abs().max().item()
        allowed = 2 * (naive.double() - exact).abs().max().item() + 1e-4
        self.assertLessEqual(error, allowed, f"B{b} H{h}/{h_kv} N{n_q}x{n_kv} D{d} causal={causal} bshd={bshd}")
        self.assertEqual(o.stride(), q.stride())

    def test_layouts(self):
        self.check(2, 8, 8, 256, 256, 64)
        self.check(2, 8, 8, 256, 256, 128, bshd=True)

    def test_head_dims_of_8s(self):  # fa2 pads its loops to 16; the tensors keep their D
        self.check(1, 4, 2, 200, 200, 40, causal=True)
        self.check(1, 4, 4, 128, 300, 72, bshd=True)

    def test_gqa_cross_causal_fp16(self):
        self.check(1, 8, 2, 128, 128, 64)
        self.check(1, 4, 4, 128, 512, 128)
        self.check(1, 4, 1, 300, 300, 64, causal=True)
        self.check(1, 4, 2, 128, 320, 64, causal=True, dtype=torch.float16)

    def check_kv_cache(self, b, h, h_kv, n_q, n_kv, d, page_size, lengths, causal):
        """A paged cache (page_size > 0: a random page table) with each sequence's own length, against
        the float64 reference of each sequence cut to its length."""
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(b, h, n_q, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(b, h_kv, n_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(b, h_kv, n_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        kwargs = {"cache_seqlens": seqlens}
        k_in, v_in = k, v
        if page_size:
            per_seq = n_kv // page_size
            perm = torch.randperm(b * per_seq, generator=torch.Generator().manual_seed(2)).to("cuda")
            table = perm.view(b, per_seq).to(torch.int32)
            k_in = torch.full((b * per_seq, page_size, h_kv, d), float("nan"), device="cuda", dtype=torch.bfloat16)
            v_in = k_in.clone()
            # page table[b, i] holds rows i*P .. (i+1)*P of sequence b, as [P, kv_heads, D]
            k_in[table.long().flatten()] = k.transpose(1, 2).reshape(b * per_seq, page_size, h_kv, d)
            v_in[table.long().flatten()] = v.transpose(1, 2).reshape(b * per_seq, page_size, h_kv, d)
            kwargs["block_table"] = table
        o, lse = attn_tune.forward_with_lse(q, k_in, v_in, causal=causal, **kwargs)
        for i, n in enumerate(lengths):
            if n == 0:
                self.assertEqual(o[i].abs().max().item(), 0.0, f"sequence {i} of length 0")
                self.assertTrue(bool(torch.isneginf(lse[i]).all()), f"sequence {i} of length 0: LSE")
                continue
            qi, ki, vi = q[i:i + 1], k[i:i + 1, :, :n], v[i:i + 1, :, :n]
            exact, naive = reference(qi, ki, vi, causal, torch.bfloat16)
            exact = torch.nan_to_num(exact)
            error = (o[i:i + 1].double() - exact).abs().max().item()
            allowed = 2 * (torch.nan_to_num(naive.double()) - exact).abs().max().item() + 1e-4
            self.assertLessEqual(error, allowed, f"sequence {i} (length {n}), page size {page_size}, causal={causal}")
            want = reference_lse(qi, ki, causal)
            finite = torch.isfinite(want)
            self.assertTrue(bool((torch.isneginf(lse[i:i + 1]) == ~finite).all()), f"sequence {i}: -inf rows")
            self.assertLessEqual((lse[i:i + 1][finite].double() - want[finite]).abs().max().item(), 1e-3)

    def check_variant(self, b, h, h_kv, n_q, n_kv, d, causal, window, softcap):
        """A sliding window and softcap through forward_with_lse and flash_attn_func ([B, N, H, D])."""
        g = torch.Generator(device="cuda").manual_seed(3)
        q = torch.randn(b, h, n_q, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(b, h_kv, n_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(b, h_kv, n_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        o, lse = attn_tune.forward_with_lse(q, k, v, causal=causal, window_size=window, softcap=softcap)
        exact, naive = reference(q, k, v, causal, torch.bfloat16, window=window, softcap=softcap)
        exact = torch.nan_to_num(exact)
        allowed = 2 * (torch.nan_to_num(naive.double()) - exact).abs().max().item() + 1e-4
        what = f"window {window} softcap {softcap} causal={causal} N{n_q}x{n_kv}"
        self.assertLessEqual((o.double() - exact).abs().max().item(), allowed, what)
        want = reference_lse(q, k, causal, window=window, softcap=softcap)
        finite = torch.isfinite(want)
        self.assertTrue(bool((torch.isneginf(lse) == ~finite).all()), what + ": -inf rows")
        self.assertLessEqual((lse[finite].double() - want[finite]).abs().max().item(), 1e-3, what)
        o2 = attn_tune.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal,
                                       window_size=window, softcap=softcap)
        self.assertEqual(tuple(o2.shape), (b, n_q, h, d))
        self.assertTrue(torch.equal(o2.transpose(1, 2), o), what + ": flash_attn_func")

    def test_windows_and_softcap(self):
        self.check_variant(2, 8, 2, 512, 512, 128, True, (128, 0), 0.0)
        self.check_variant(1, 4, 4, 300, 450, 64, False, (64, 32), 0.0)
        self.check_variant(1, 4, 4, 256, 256, 128, False, (-1, -1), 5.0)
        self.check_variant(1, 8, 2, 384, 384, 64, True, (100, 0), 50.0)

    def check_value_dim(self, b, h, h_kv, n_q, n_kv, d, dv, causal, bshd=False):
        """V with its own head dim (dv != d): O is [B, H, N_q, dv], in q's layout."""
        g = torch.Generator(device="cuda").manual_seed(3)

        def make(heads, n, width):
            if bshd:
                return torch.randn(b, n, heads, width, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
            return torch.randn(b, heads, n, width, device="cuda", dtype=torch.bfloat16, generator=g)

        q, k, v = make(h, n_q, d), make(h_kv, n_kv, d), make(h_kv, n_kv, dv)
        o, lse = attn_tune.forward_with_lse(q, k, v, causal=causal)
        what = f"B{b} H{h}/{h_kv} N{n_q}x{n_kv} d{d} dv{dv} causal={causal} bshd={bshd}"
        self.assertEqual(tuple(o.shape), (b, h, n_q, dv), what)
        self.assertEqual(o.is_contiguous(), not bshd, what)
        exact, naive = reference(q, k, v, causal, torch.bfloat16)
        allowed = 2 * (naive.double() - exact).abs().max().item() + 1e-4
        self.assertLessEqual((o.double() - exact).abs().max().item(), allowed, what)
        want = reference_lse(q, k, causal)
        self.assertLessEqual((lse.double() - want).abs().max().item(), 1e-3, what)

    def test_a_value_head_dim_of_its_own(self):
        self.check_value_dim(2, 16, 4, 512, 512, 192, 128, True)  # DeepSeek's MLA prefill, small
        self.check_value_dim(1, 8, 8, 300, 450, 64, 128, False, bshd=True)
        self.check_value_dim(2, 8, 2, 1, 2048, 192, 128, False)  # decode: split-KV's combine over dv

    def test_a_paged_cache_with_lengths(self):
        self.check_kv_cache(4, 32, 8, 1, 1024, 128, 16, [0, 1, 700, 1024], causal=False)
        self.check_kv_cache(3, 16, 2, 16, 512, 128, 64, [5, 512, 300], causal=True)
        self.check_kv_cache(2, 8, 8, 1, 768, 64, 256, [768, 513], causal=False)
        self.check_kv_cache(2, 8, 2, 4, 300, 128, 0, [3, 299], causal=True)  # lengths alone

    def test_errors_are_named(self):
        q = torch.randn(1, 4, 64, 64, device="cuda", dtype=torch.float32)
        with self.assertRaisesRegex(TypeError, "torch.float32 is not supported"):
            attn_tune.forward(q, q, q)

    def test_torch_compile_matches_eager(self):
        q = torch.randn(1, 4, 256, 64, device="cuda", dtype=torch.bfloat16)

        def block(x):
            return attn_tune.forward(x * 2, x, x, causal=True) + 1

        eager = block(q)
        compiled = torch.compile(block, fullgraph=True)(q)
        torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
        # ...and both are attention: float64's under the rule, and close to PyTorch's SDPA.
        exact, naive = reference(q * 2, q, q, True, torch.bfloat16)
        error = (compiled.double() - (exact + 1)).abs().max().item()
        allowed = 2 * (naive.double() - exact).abs().max().item() + 1e-4
        self.assertLessEqual(error, allowed)
        sdpa = torch.nn.functional.scaled_dot_product_attention(q * 2, q, q, is_causal=True) + 1
        self.assertLessEqual((compiled.double() - sdpa.double()).abs().max().item(), 2 * allowed + 1e-2)

    def test_a_non_default_softmax_scale_and_the_lse(self):
        g = torch.Generator(device="cuda").manual_seed(3)
        q = torch.randn(1, 4, 128, 64, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(1, 2, 192, 64, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(1, 2, 192, 64, device="cuda", dtype=torch.bfloat16, generator=g)
        for scale in (0.37, None):
            o, lse = attn_tune.forward_with_lse(q, k, v, causal=True, softmax_scale=scale)
            exact, naive = reference(q, k, v, True, torch.bfloat16, scale)
            error = (o.double() - exact).abs().max().item()
            allowed = 2 * (naive.double() - exact).abs().max().item() + 1e-4
            self.assertLessEqual(error, allowed, f"softmax_scale={scale}")
            self.assertLessEqual((lse.double() - reference_lse(q, k, True, scale)).abs().max().item(), 2e-3)
        # The scale is the one applied: 0.37 is far from the default's output.
        o, _ = attn_tune.forward_with_lse(q, k, v, causal=True, softmax_scale=0.37)
        default, _ = reference(q, k, v, True, torch.bfloat16)
        self.assertGreater((o.double() - default).abs().max().item(), 0.05)

    def test_the_op_is_registered(self):
        self.assertTrue(hasattr(torch.ops.attn_tune, "forward"))


if __name__ == "__main__":
    unittest.main()
