"""The Python package on a GPU (ctest python_package_gpu, label gpu; skips without PyTorch or CUDA):
attn_tune.forward against a float64 reference under FlashAttention's rule, both layouts, GQA,
cross-attention, causal (bottom-right), fp16, a non-default softmax_scale, the LSE; the custom op
under torch.compile against float64 and SDPA, not only against itself; flash_attn_varlen_func's
packed batches against each sequence's float64 reference (empty sequences, GQA, cross-attention). With ATTN_TUNE_REQUIRE_GPU=1
(a GPU machine) a missing PyTorch or CUDA fails instead of skipping."""
import itertools
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
        self.assertTrue(hasattr(torch.ops.attn_tune, "varlen_forward"))


def packed_inputs(h, h_kv, d, q_lens, k_lens, dv=None, qkv_packed=False, seed=4):
    """q [total_q, H, D], k and v [total_k, kv_heads, D] (v: dv), cu_seqlens_q and cu_seqlens_k;
    qkv_packed: q, k and v are views of one [total, 3, H, D] tensor (rows 3 x H x D apart)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    total_q, total_k = sum(q_lens), sum(k_lens)
    if qkv_packed:
        q, k, v = torch.randn(total_q, 3, h, d, device="cuda", dtype=torch.bfloat16, generator=g).unbind(1)
    else:
        q = torch.randn(total_q, h, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(total_k, h_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(total_k, h_kv, dv or d, device="cuda", dtype=torch.bfloat16, generator=g)

    def offsets(lengths):
        return torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")

    return q, k, v, offsets(q_lens), offsets(k_lens)


@unittest.skipUnless(HAVE_GPU, "no PyTorch with CUDA")
class VarlenForward(unittest.TestCase):
    def check(self, h, h_kv, d, q_lens, k_lens=None, causal=False, dv=None, window=(-1, -1), softcap=0.0,
              qkv_packed=False):
        """flash_attn_varlen_func against each sequence's float64 reference under FlashAttention's
        rule: O [total_q, H, dv] and the LSE [H, total_q]; a sequence without keys gives O = 0 and
        LSE = -inf; k_lens None: self-attention."""
        k_lens = q_lens if k_lens is None else k_lens
        q, k, v, cu_q, cu_k = packed_inputs(h, h_kv, d, q_lens, k_lens, dv, qkv_packed)
        o, lse, probs = attn_tune.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), causal=causal,
                                                         window_size=window, softcap=softcap, return_attn_probs=True)
        what = f"H{h}/{h_kv} d{d} dv{dv} lengths {q_lens} x {k_lens} causal={causal} window {window} softcap {softcap}"
        self.assertEqual(tuple(o.shape), (sum(q_lens), h, dv or d), what)
        self.assertEqual(tuple(lse.shape), (h, sum(q_lens)), what)
        self.assertIsNone(probs)
        starts_q, starts_k = cu_q.tolist(), cu_k.tolist()
        for b, (n_q, n_k) in enumerate(zip(q_lens, k_lens)):
            rows, keys = slice(starts_q[b], starts_q[b + 1]), slice(starts_k[b], starts_k[b + 1])
            seq = f"{what}: sequence {b} ({n_q} x {n_k})"
            if n_q == 0:
                continue
            if n_k == 0:
                self.assertEqual(o[rows].abs().max().item(), 0.0, seq)
                self.assertTrue(bool(torch.isneginf(lse[:, rows]).all()), seq + ": LSE")
                continue
            # Sequence b as a batch of one, [1, H, N, D].
            qi, ki, vi = (x.transpose(0, 1).unsqueeze(0) for x in (q[rows], k[keys], v[keys]))
            exact, naive = reference(qi, ki, vi, causal, torch.bfloat16, window=window, softcap=softcap)
            exact = torch.nan_to_num(exact)
            allowed = 2 * (torch.nan_to_num(naive.double()) - exact).abs().max().item() + 1e-4
            got = o[rows].transpose(0, 1).unsqueeze(0).double()
            self.assertLessEqual((got - exact).abs().max().item(), allowed, seq)
            want = reference_lse(qi, ki, causal, window=window, softcap=softcap)[0]
            got_lse = lse[:, rows]
            finite = torch.isfinite(want)
            self.assertTrue(bool((torch.isneginf(got_lse) == ~finite).all()), seq + ": -inf rows")
            if bool(finite.any()):
                self.assertLessEqual((got_lse[finite].double() - want[finite]).abs().max().item(), 1e-3, seq)
        again = attn_tune.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), causal=causal,
                                                 window_size=window, softcap=softcap)
        self.assertTrue(torch.equal(again, o), what + ": a second call (the call cache's)")

    def test_ragged_self_attention_causal_and_not(self):
        self.check(8, 2, 128, [517, 0, 1, 130, 300], causal=True)
        self.check(4, 4, 64, [400, 17, 0, 255])
        self.check(4, 4, 64, [100, 33, 250], causal=True, qkv_packed=True)  # q, k, v of one [total, 3, H, D]

    def test_cross_attention_gqa_and_empty_keys(self):
        self.check(4, 1, 64, [300, 5, 129], [700, 0, 64])
        self.check(4, 2, 64, [200, 64], [136, 64], causal=True)  # 64 rows of sequence 0 see no key

    def test_a_window_softcap_and_a_value_head_dim(self):
        self.check(8, 2, 128, [600, 200, 333], causal=True, window=(100, 0), softcap=50.0)
        self.check(4, 4, 64, [300, 77], window=(40, 20))
        self.check(4, 2, 192, [300, 1, 150], causal=True, dv=128)

    def test_under_torch_compile_as_eager(self):
        q, k, v, cu_q, cu_k = packed_inputs(4, 2, 64, [120, 0, 300], [120, 0, 300])

        def block(q, k, v):
            return attn_tune.flash_attn_varlen_func(q * 2, k, v, cu_q, cu_k, 300, 300, causal=True) + 1

        eager = block(q, k, v)
        compiled = torch.compile(block, fullgraph=True)(q, k, v)
        torch.testing.assert_close(compiled, eager, rtol=0, atol=0)

    def test_bad_offsets_are_named(self):
        q, k, v, cu_q, cu_k = packed_inputs(4, 4, 64, [64, 64], [64, 64])
        with self.assertRaisesRegex(TypeError, "cu_seqlens_q must be a torch.int32 tensor on the GPU"):
            attn_tune.flash_attn_varlen_func(q, k, v, cu_q.long(), cu_k, 64, 64)
        with self.assertRaisesRegex(TypeError, "cu_seqlens_k must be a torch.int32 tensor on the GPU"):
            attn_tune.flash_attn_varlen_func(q, k, v, cu_q, cu_k.cpu(), 64, 64)
        with self.assertRaisesRegex(attn_tune.AttnTuneError, "total_q 128 exceeds batch 2 x q_len"):
            attn_tune.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 32, 64)


if __name__ == "__main__":
    unittest.main()
