"""attn_tune.attention's gradients on a GPU (label gpu; skips without PyTorch, CUDA or a
libattn_tune with attn_tune_backward, API version 7; under ATTN_TUNE_REQUIRE_GPU=1 a library
without it fails instead): O, dQ, dK and dV against SDPA's in float32 on the same inputs under
FlashAttention's rule (the error at most twice that of SDPA run in the inputs' precision, plus
1e-3), causal (bottom-right) and not, GQA and MQA, cross-attention, fp16 and bf16, N not a
multiple of 64, both memory layouts, a non-default scale; sliding windows through
forward(window_size=) against SDPA with the window's boolean mask (causal and two-sided,
cross-attention, GQA); softcap through forward(softcap=) against the materialized capped
attention in float64 under the same rule (its error in the inputs' precision), a cap that bends
the scores (2.5) and a light one (30); V's own head dim (dv != d: MLA's d 192 with dv 128, causal
GQA bf16, and d 64 with dv 128, fp16 [B, N, H, D], not causal) against the materialized attention
in float64 under the same rule; bit-identical reruns; the choice of the C call (the fallback
variant); torch.compile of a function calling attention, forward and backward, equal to eager; the
ops' fake implementations (FakeTensorMode, V's own head dim too, and torch.library.opcheck where
this PyTorch has it, a window's and softcap's too); what the backward refuses (a KV cache);
flash_attn_varlen_func's gradients (torch.ops.attn_tune.varlen_backward, the varlen forward's
autograd formula) sequence by sequence against the materialized attention of that sequence alone
in float64 under the same rule: causal GQA bf16, three sequences of their own lengths, one of a
single query ([total, H, D] memory and [H, total, D]), and fp16 [total, H, D] with dv != d; and the
varlen ops' opcheck."""
import itertools
import os
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

import attn_tune
from attn_tune import _capi, tensors

HAVE_GPU = torch is not None and torch.cuda.is_available()
REQUIRE_GPU = os.environ.get("ATTN_TUNE_REQUIRE_GPU") == "1"


def backward_missing():
    """Why the loaded library cannot run the backward, or None."""
    try:
        _capi.backward_function(_capi.library())
    except attn_tune.AttnTuneError as e:  # LibraryNotFoundError too
        return str(e)
    return None


MISSING = backward_missing() if HAVE_GPU else "no PyTorch with CUDA"


class BackwardRequired(unittest.TestCase):
    @unittest.skipUnless(REQUIRE_GPU and HAVE_GPU, "ATTN_TUNE_REQUIRE_GPU is not 1, or no GPU (test_package_gpu says)")
    def test_the_library_has_the_backward(self):
        self.assertIsNone(MISSING, "ATTN_TUNE_REQUIRE_GPU=1 but the backward tests would skip")


def window_mask(n_q, n_kv, causal, window, device):
    """The boolean mask (True = attend) of window_size=(left, right): query i sees key j when
    i + N_kv - N_q - left <= j <= i + N_kv - N_q + right (-1: no limit), causal a right of 0."""
    left, right = window
    i = torch.arange(n_q, device=device)[:, None] + n_kv - n_q
    j = torch.arange(n_kv, device=device)[None, :]
    mask = torch.ones(n_q, n_kv, dtype=torch.bool, device=device)
    if left >= 0:
        mask &= j >= i - left
    if right >= 0:
        mask &= j <= i + right
    if causal:
        mask &= j <= i
    return mask


def sdpa(q, k, v, causal, scale=None, window=None):
    """PyTorch's attention with GQA (k and v repeated) and a bottom-right causal mask; with window,
    the window's explicit boolean mask."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    n_q, n_kv = q.shape[2], k.shape[2]
    if window is not None:
        mask = window_mask(n_q, n_kv, causal, window, q.device)
        assert mask.any(dim=1).all(), "every query sees a key (SDPA gives NaN for a row with none)"
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    if causal and n_q != n_kv:  # SDPA's is_causal is top-left: the mask, with True = attend
        i = torch.arange(n_q, device=q.device)[:, None] + n_kv - n_q
        mask = torch.arange(n_kv, device=q.device)[None, :] <= i
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def materialized(q, k, v, causal, softcap=None, scale=None, window=None):
    """Attention materialized in q's dtype: s = Q K^T * scale (1/sqrt of Q's head dim by default),
    with softcap C * tanh(s / C) (None: no cap), the window's (or causal's bottom-right) mask,
    softmax, @ V; GQA as sdpa's. V may have a head dim of its own: O has V's."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else q.shape[3] ** -0.5)
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    mask = window_mask(q.shape[2], k.shape[2], causal, window or (-1, -1), q.device)
    assert mask.any(dim=1).all(), "every query sees a key (softmax gives NaN for a row with none)"
    return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v


def run(attend, q, k, v, d_o):
    """(O, dQ, dK, dV) of attend on leaf copies of q, k, v (strides kept) for the output gradient d_o."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    o = attend(q, k, v)
    o.backward(d_o)
    return o.detach(), q.grad, k.grad, v.grad


def inputs(b, h, h_kv, n_q, n_kv, d, dtype, bshd=False, seed=0, dv=None):
    """q, k, v and dO; v and dO with head dim dv where given (V's own), else d."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dv = dv or d

    def make(heads, n, width):
        if bshd:  # a [B, N, H, D] tensor seen as [B, H, N, D]
            return torch.randn(b, n, heads, width, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        return torch.randn(b, heads, n, width, device="cuda", dtype=dtype, generator=g)

    return make(h, n_q, d), make(h_kv, n_kv, d), make(h_kv, n_kv, dv), make(h, n_q, dv)


@unittest.skipIf(MISSING, MISSING or "")
class Gradients(unittest.TestCase):
    def check(self, b, h, h_kv, n_q, n_kv, d, causal, dtype=None, bshd=False, scale=None, window=None,
              softcap=None, dv=None):
        """attention's gradients, or with window or softcap forward(window_size=window, softcap=softcap)'s
        (attention takes neither); with softcap or V's own head dim dv against materialized's in
        float64 (SDPA has no cap, and not every SDPA backend takes dv != d)."""
        dtype = dtype or torch.bfloat16
        q, k, v, d_o = inputs(b, h, h_kv, n_q, n_kv, d, dtype, bshd, dv=dv)
        what = (f"B{b} H{h}/{h_kv} N{n_q}x{n_kv} D{d} Dv{dv or d} causal={causal} {dtype} bshd={bshd} "
                f"scale={scale} window={window} softcap={softcap}")
        if window is None and softcap is None:
            attend = lambda q, k, v: attn_tune.attention(q, k, v, causal=causal, softmax_scale=scale)  # noqa: E731
        else:
            attend = lambda q, k, v: attn_tune.forward(q, k, v, causal=causal, softmax_scale=scale,  # noqa: E731
                                                       window_size=window or (-1, -1), softcap=softcap or 0.0)

        plain = softcap is None and dv is None

        def reference(q, k, v):
            if plain:
                return sdpa(q, k, v, causal, scale, window)
            return materialized(q, k, v, causal, softcap, scale, window)  # SDPA has no cap

        wide = torch.float32 if plain else torch.float64  # the exact run's precision
        ours = run(attend, q, k, v, d_o)
        exact = run(reference, *(t.to(wide) for t in (q, k, v, d_o)))
        low = run(reference, q, k, v, d_o)
        shapes = (d_o.shape, q.shape, k.shape, v.shape)  # O like dO: q's with V's head dim
        for name, got, want, base, shape in zip(("O", "dQ", "dK", "dV"), ours, exact, low, shapes):
            self.assertEqual((tuple(got.shape), got.dtype), (tuple(shape), dtype), f"{what}: {name}")
            error = (got.float() - want).abs().max().item()
            allowed = 2 * (base.float() - want).abs().max().item() + 1e-3
            self.assertLessEqual(error, allowed, f"{what}: {name}")

    def test_causal_and_not(self):
        self.check(2, 8, 8, 256, 256, 64, causal=False)
        self.check(2, 8, 8, 256, 256, 64, causal=True)

    def test_n_not_a_multiple_of_64(self):
        self.check(1, 4, 4, 300, 300, 64, causal=True)
        self.check(1, 4, 4, 200, 200, 128, causal=False)
        self.check(2, 4, 2, 77, 77, 64, causal=True)

    def test_gqa_and_mqa(self):
        self.check(2, 8, 2, 256, 256, 128, causal=True)
        self.check(1, 8, 1, 190, 190, 64, causal=False)

    def test_fp16(self):
        self.check(1, 8, 2, 333, 333, 64, causal=True, dtype=torch.float16)
        self.check(1, 4, 4, 128, 128, 128, causal=False, dtype=torch.float16)

    def test_cross_attention_bottom_right(self):
        self.check(1, 4, 2, 128, 320, 64, causal=True)
        self.check(1, 4, 4, 100, 257, 64, causal=False)

    def test_bshd_head_dims_and_a_scale(self):
        self.check(2, 8, 2, 256, 256, 64, causal=True, bshd=True)
        self.check(1, 4, 2, 160, 160, 96, causal=True, scale=0.3)
        self.check(1, 4, 4, 128, 128, 256, causal=True)  # above D = 128: the other fallback

    def test_sliding_windows(self):
        self.check(2, 8, 8, 256, 256, 64, causal=True, window=(64, 0))
        self.check(2, 8, 8, 256, 256, 64, causal=False, window=(40, 24))
        self.check(1, 4, 4, 300, 300, 64, causal=True, window=(64, -1))  # causal: a right of -1 is 0
        self.check(1, 4, 4, 256, 256, 64, causal=False, window=(-1, 24))  # one side only
        self.check(1, 4, 4, 256, 256, 64, causal=False, window=(40, -1))

    def test_sliding_windows_gqa_cross_attention_layouts_and_dtypes(self):
        self.check(2, 8, 2, 256, 256, 128, causal=True, window=(64, 0))
        self.check(1, 4, 2, 128, 320, 64, causal=True, window=(64, 0))  # bottom-right: queries see keys 128..319
        self.check(1, 4, 2, 200, 333, 64, causal=False, window=(40, 24))
        self.check(1, 8, 2, 300, 300, 64, causal=False, window=(40, 24), bshd=True, scale=0.3)
        self.check(1, 8, 2, 333, 333, 64, causal=True, window=(64, 0), dtype=torch.float16)
        self.check(1, 4, 4, 256, 256, 256, causal=False, window=(40, 24))  # above D = 128: the other fallback

    def test_softcap(self):
        # 2.5 bends unit-normal scores (scaled to about N(0, 1)) well into tanh's curve; 30 barely.
        for softcap in (2.5, 30.0):
            self.check(2, 8, 8, 256, 256, 64, causal=True, softcap=softcap)
        self.check(1, 4, 4, 300, 300, 64, causal=False, softcap=2.5)
        self.check(1, 4, 4, 160, 160, 96, causal=True, scale=0.3, softcap=2.5)

    def test_softcap_gqa_cross_attention_layouts_dtypes_and_a_window(self):
        self.check(2, 8, 2, 256, 256, 128, causal=True, softcap=2.5)
        self.check(1, 4, 2, 128, 320, 64, causal=True, softcap=2.5)  # bottom-right
        self.check(1, 8, 2, 300, 300, 64, causal=True, bshd=True, softcap=30.0)
        self.check(1, 8, 2, 333, 333, 64, causal=True, dtype=torch.float16, softcap=2.5)
        self.check(1, 4, 4, 256, 256, 256, causal=True, softcap=2.5)  # above D = 128: the other fallback
        self.check(2, 8, 8, 256, 256, 64, causal=True, window=(64, 0), softcap=2.5)
        self.check(1, 4, 2, 200, 333, 64, causal=False, window=(40, 24), softcap=30.0)

    def test_vs_own_head_dim(self):
        # MLA's prefill: d 192 (Q and K), dv 128 (V, O); causal, GQA, bf16, N not a multiple of 64 too.
        self.check(2, 8, 2, 256, 256, 192, causal=True, dv=128)
        self.check(1, 8, 2, 300, 300, 192, causal=True, dv=128)
        # dv above d: 64 and 128, fp16, [B, N, H, D] memory (bshd), not causal.
        self.check(1, 8, 4, 200, 200, 64, causal=False, dtype=torch.float16, bshd=True, dv=128)
        self.check(2, 4, 4, 256, 256, 64, causal=False, dtype=torch.float16, bshd=True, dv=128)

    def test_a_fused_qkv_projection(self):
        # q, k, v as views of one [B, N, H + 2 kv_heads, D] tensor (examples/python/transformer_block.py):
        # the gradient reaches that tensor through the views (the backward copies them, not run's clones).
        b, n, h, h_kv, d = 2, 200, 8, 2, 64
        g = torch.Generator(device="cuda").manual_seed(5)
        qkv = torch.randn(b, n, h + 2 * h_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        d_o = torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)

        def grads(attend, qkv, d_o):
            qkv = qkv.detach().clone().requires_grad_()
            q, k, v = (qkv[:, :, a:z].transpose(1, 2) for a, z in ((0, h), (h, h + h_kv), (h + h_kv, h + 2 * h_kv)))
            o = attend(q, k, v)
            o.backward(d_o)
            return o.detach(), qkv.grad

        ours = grads(lambda q, k, v: attn_tune.attention(q, k, v, causal=True), qkv, d_o)
        exact = grads(lambda q, k, v: sdpa(q, k, v, True), qkv.float(), d_o.float())
        low = grads(lambda q, k, v: sdpa(q, k, v, True), qkv, d_o)
        for name, got, want, base in zip(("O", "dQKV"), ours, exact, low):
            allowed = 2 * (base.float() - want).abs().max().item() + 1e-3
            self.assertLessEqual((got.float() - want).abs().max().item(), allowed, name)

    def test_reruns_are_bit_identical(self):
        q, k, v, d_o = inputs(2, 16, 2, 384, 384, 128, torch.bfloat16, seed=1)  # GQA: dK, dV summed over 8 heads
        attend = lambda q, k, v: attn_tune.attention(q, k, v, causal=True)  # noqa: E731
        first = run(attend, q, k, v, d_o)
        for _ in range(3):
            for name, a, b in zip(("O", "dQ", "dK", "dV"), first, run(attend, q, k, v, d_o)):
                self.assertTrue(torch.equal(a, b), f"{name} differs on a rerun")

    def test_forward_is_differentiable_too_and_the_lse_is_not(self):
        q, k, v, d_o = inputs(1, 4, 2, 128, 128, 64, torch.bfloat16, seed=2)
        a = run(lambda q, k, v: attn_tune.attention(q, k, v, causal=True), q, k, v, d_o)
        b = run(lambda q, k, v: attn_tune.forward(q, k, v, causal=True), q, k, v, d_o)
        for name, x, y in zip(("O", "dQ", "dK", "dV"), a, b):
            self.assertTrue(torch.equal(x, y), name)
        o, lse = attn_tune.forward_with_lse(q.requires_grad_(), k, v)
        self.assertEqual((o.requires_grad, lse.requires_grad), (True, False))

    def test_the_choice_of_the_c_call(self):
        # The header's fallbacks; config is the dK/dV kernel's tile (the _x2 split is the variant's).
        for d, variant, config in ((64, "kv_m32_n64_w4_s2-q_m64_n64_w4_s2", "m32_n64_w4_s2"),
                                   (256, "kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1", "m32_n64_w4_s2")):
            q, k, v, d_o = inputs(1, 4, 4, 128, 128, d, torch.bfloat16)
            o, lse = attn_tune.forward_with_lse(q, k, v)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            delta = torch.empty_like(lse)
            info = [tensors.describe(t, name) for t, name in ((q, "q"), (k, "k"), (v, "v"))]
            problem = tensors.make_problem(*info, causal=False)
            choice = attn_tune.context(0).backward(*(t.data_ptr() for t in (q, k, v, o, lse, d_o, dq, dk, dv, delta)),
                                                   problem, torch.cuda.current_stream().cuda_stream)
            self.assertEqual((choice["source"], choice["family"], choice["variant"], choice["config"]),
                             ("fallback", "fa2", variant, config), f"D={d}")
            torch.cuda.synchronize()

    def test_what_the_backward_refuses(self):
        q, k, v, d_o = inputs(2, 4, 4, 128, 256, 64, torch.bfloat16, seed=3)
        seqlens = torch.tensor([200, 256], dtype=torch.int32, device="cuda")  # a KV cache's lengths
        with self.assertRaisesRegex(NotImplementedError, r"attn_tune's backward does not take cache_seqlens yet"):
            run(lambda q, k, v: attn_tune.forward(q, k, v, causal=True, cache_seqlens=seqlens), q, k, v, d_o)
        # ...while the forward alone runs with it, inputs requiring grad or not.
        o = attn_tune.forward(*(t.detach().clone().requires_grad_() for t in (q, k, v)), causal=True,
                              cache_seqlens=seqlens)
        self.assertEqual(tuple(o.shape), (2, 4, 128, 64))
        with self.assertRaisesRegex(TypeError, "torch.float32 is not supported"):
            attn_tune.attention(q.float(), k.float(), v.float())
        with self.assertRaisesRegex(ValueError, "v's head dim 60: attention takes multiples of 8 up to 256"):
            attn_tune.attention(q, k, v[..., :60])


def packed_batch(h, h_kv, d, q_lens, k_lens, dtype, dv=None, heads_outer=False, seed=7):
    """A packed batch: q and dO [total_q, H, D / dv], k and v [total_k, kv_heads, D / dv], and
    cu_seqlens_q, cu_seqlens_k (int32 on the GPU); heads_outer: [H, total, D] memory seen as
    [total, H, D] (bhsd), else [total, H, D] (bshd)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dv = dv or d

    def make(total, heads, width):
        if heads_outer:
            return torch.randn(heads, total, width, device="cuda", dtype=dtype, generator=g).transpose(0, 1)
        return torch.randn(total, heads, width, device="cuda", dtype=dtype, generator=g)

    total_q, total_k = sum(q_lens), sum(k_lens)

    def offsets(lengths):
        return torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")

    return (make(total_q, h, d), make(total_k, h_kv, d), make(total_k, h_kv, dv), make(total_q, h, dv),
            offsets(q_lens), offsets(k_lens))


@unittest.skipIf(MISSING, MISSING or "")
class VarlenGradients(unittest.TestCase):
    def check(self, h, h_kv, d, q_lens, k_lens, causal, dtype, dv=None, heads_outer=False):
        """flash_attn_varlen_func's O, dQ, dK and dV, sequence by sequence, against materialized's
        in float64 on that sequence alone (a batch of one [1, H, N, D]), under FlashAttention's rule
        (the error at most twice that of materialized in the inputs' precision, plus 1e-3)."""
        q, k, v, d_o, cu_q, cu_k = packed_batch(h, h_kv, d, q_lens, k_lens, dtype, dv, heads_outer)
        what = (f"H{h}/{h_kv} d{d} dv{dv or d} lengths {q_lens} x {k_lens} causal={causal} {dtype} "
                f"heads_outer={heads_outer}")
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
        o, lse, _ = attn_tune.flash_attn_varlen_func(*leaves, cu_q, cu_k, max(q_lens), max(k_lens), causal=causal,
                                                     return_attn_probs=True)
        self.assertEqual((o.requires_grad, lse.requires_grad), (True, False), what)
        o.backward(d_o)
        ours = (o.detach(), *(t.grad for t in leaves))
        for name, got, like in zip(("O", "dQ", "dK", "dV"), ours, (d_o, q, k, v)):
            self.assertEqual((tuple(got.shape), got.dtype), (tuple(like.shape), dtype), f"{what}: {name}")
            self.assertTrue(bool(torch.isfinite(got).all()), f"{what}: {name} finite")
        starts_q, starts_k = cu_q.tolist(), cu_k.tolist()
        for b, (n_q, n_k) in enumerate(zip(q_lens, k_lens)):
            rows, keys = slice(starts_q[b], starts_q[b + 1]), slice(starts_k[b], starts_k[b + 1])
            # Sequence b alone as a batch of one, [1, H, N, D].
            one = [x.transpose(0, 1).unsqueeze(0) for x in (q[rows], k[keys], v[keys], d_o[rows])]
            attend = lambda q, k, v: materialized(q, k, v, causal)  # noqa: E731
            exact = run(attend, *(t.double() for t in one))
            low = run(attend, *one)
            mine = [t[part].transpose(0, 1).unsqueeze(0) for t, part in zip(ours, (rows, rows, keys, keys))]
            for name, got, want, base in zip(("O", "dQ", "dK", "dV"), mine, exact, low):
                error = (got.double() - want).abs().max().item()
                allowed = 2 * (base.double() - want).abs().max().item() + 1e-3
                self.assertLessEqual(error, allowed, f"{what}: sequence {b} ({n_q} x {n_k}): {name}")

    def test_causal_gqa_bf16_with_a_one_query_sequence(self):
        # Three sequences of their own lengths, the middle one a single query over 190 keys (causal
        # bottom-right: it sees them all); GQA 8/2, N not a multiple of 64.
        self.check(8, 2, 128, [257, 1, 130], [257, 190, 130], causal=True, dtype=torch.bfloat16)

    def test_causal_gqa_bf16_heads_outer(self):
        # The same in [H, total, D] memory (the problem's BHSD).
        self.check(8, 2, 128, [257, 1, 130], [257, 190, 130], causal=True, dtype=torch.bfloat16, heads_outer=True)

    def test_fp16_bshd_with_vs_own_head_dim(self):
        # [total, H, D] memory, d 64 with dv 128 (and MLA's d 192 with dv 128), not causal and causal.
        self.check(8, 4, 64, [200, 33, 128], [200, 33, 128], causal=False, dtype=torch.float16, dv=128)
        self.check(4, 2, 192, [150, 1, 77], [150, 1, 77], causal=True, dtype=torch.float16, dv=128)


@unittest.skipIf(MISSING, MISSING or "")
class Compiled(unittest.TestCase):
    def test_torch_compile_forward_and_backward_match_eager(self):
        q, k, v, w = inputs(2, 8, 2, 320, 320, 64, torch.bfloat16, seed=4)

        def step(q, k, v):
            o = attn_tune.attention(q * 2, k, v, causal=True)
            return o, (o.float() * w.float()).sum()  # dO = w exactly, compiled or not

        results = []
        for fn in (step, torch.compile(step)):
            leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
            o, loss = fn(*leaves)
            loss.backward()
            results.append((o.detach(), loss.detach(), *(t.grad for t in leaves)))
        (o, loss, dq, dk, dv), (o_c, loss_c, dq_c, dk_c, dv_c) = results
        # The same kernels on the same inputs: equal bit for bit (the loss is a sum whose order may differ).
        for name, a, b in (("O", o, o_c), ("dQ", dq, dq_c), ("dK", dk, dk_c), ("dV", dv, dv_c)):
            torch.testing.assert_close(b, a, rtol=0, atol=0, msg=lambda m, name=name: f"{name}: {m}")
        torch.testing.assert_close(loss_c, loss, rtol=1e-4, atol=1e-2)
        # ...and they are attention's gradients, not only each other's.
        exact = run(lambda q, k, v: sdpa(q * 2, k, v, True), q.float(), k.float(), v.float(), w.float())
        low = run(lambda q, k, v: sdpa(q * 2, k, v, True), q, k, v, w)
        for name, got, want, base in zip(("O", "dQ", "dK", "dV"), (o_c, dq_c, dk_c, dv_c), exact, low):
            allowed = 2 * (base.float() - want).abs().max().item() + 1e-3
            self.assertLessEqual((got.float() - want).abs().max().item(), allowed, name)


@unittest.skipIf(MISSING, MISSING or "")
class FakeImplementations(unittest.TestCase):
    def test_fake_tensors_get_the_real_ops_shapes_and_strides(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        for bshd, d, dv in ((False, 64, 64), (True, 64, 64), (False, 192, 128), (True, 64, 128)):
            shapes = ((2, 8, 300, d), (2, 2, 300, d), (2, 2, 300, dv))  # dv: dV like V, its own head dim
            q, k, v, d_o = inputs(2, 8, 2, 300, 300, d, torch.bfloat16, bshd=bshd, dv=dv)
            o, lse = torch.ops.attn_tune.forward(q, k, v, True, "", 0.0)
            real = torch.ops.attn_tune.backward(d_o, q, k, v, o, lse, True, "", 0.0)
            with FakeTensorMode() as mode:
                fq, fk, fv, fd_o = (mode.from_tensor(t) for t in (q, k, v, d_o))
                fo, flse = torch.ops.attn_tune.forward(fq, fk, fv, True, "", 0.0)
                fake = torch.ops.attn_tune.backward(fd_o, fq, fk, fv, fo, flse, True, "", 0.0)
            for name, r, f, shape in zip(("dq", "dk", "dv"), real, fake, shapes):
                self.assertEqual(tuple(f.shape), shape, name)
                self.assertEqual((f.dtype, f.device), (torch.bfloat16, q.device), name)
                self.assertEqual((tuple(f.shape), f.stride()), (tuple(r.shape), r.stride()),
                                 f"{name} bshd={bshd} d={d} dv={dv}")

    @unittest.skipUnless(torch is not None and hasattr(torch.library, "opcheck"), "no torch.library.opcheck")
    def test_opcheck(self):
        q, k, v, d_o = inputs(1, 4, 2, 128, 128, 64, torch.bfloat16, seed=6)
        o, lse = torch.ops.attn_tune.forward(q, k, v, True, "", 0.0)
        torch.library.opcheck(torch.ops.attn_tune.backward.default, (d_o, q, k, v, o, lse, True, "", 0.0))
        # The forward with inputs that require grad: its autograd formula (the backward op) too.
        leaves = tuple(t.detach().clone().requires_grad_() for t in (q, k, v))
        torch.library.opcheck(torch.ops.attn_tune.forward.default, (*leaves, True, "", 0.0))
        # A window: the backward op's window_left and window_right, and the forward's formula passing them on.
        o, lse = torch.ops.attn_tune.forward(q, k, v, False, "", 0.0, None, None, 40, 24)
        torch.library.opcheck(torch.ops.attn_tune.backward.default, (d_o, q, k, v, o, lse, False, "", 0.0, 40, 24))
        torch.library.opcheck(torch.ops.attn_tune.forward.default, (*leaves, True, "", 0.0, None, None, 64, 0))
        # Softcap: the backward op's softcap, and the forward's formula passing it on.
        o, lse = torch.ops.attn_tune.forward(q, k, v, True, "", 0.0, None, None, -1, -1, 2.5)
        torch.library.opcheck(torch.ops.attn_tune.backward.default,
                              (d_o, q, k, v, o, lse, True, "", 0.0, -1, -1, 2.5))
        torch.library.opcheck(torch.ops.attn_tune.forward.default, (*leaves, True, "", 0.0, None, None, -1, -1, 2.5))

    @unittest.skipUnless(torch is not None and hasattr(torch.library, "opcheck"), "no torch.library.opcheck")
    def test_varlen_opcheck(self):
        # The packed batch's backward op and the varlen forward's autograd formula (dv != d too).
        for dv in (64, 128):
            q, k, v, d_o, cu_q, cu_k = packed_batch(4, 2, 64, [100, 1, 60], [100, 30, 60], torch.bfloat16, dv=dv)
            o, lse = torch.ops.attn_tune.varlen_forward(q, k, v, cu_q, cu_k, 100, 100, True, "", 0.0)
            torch.library.opcheck(torch.ops.attn_tune.varlen_backward.default,
                                  (d_o, q, k, v, o, lse, cu_q, cu_k, 100, 100, True, "", 0.0))
            leaves = tuple(t.detach().clone().requires_grad_() for t in (q, k, v))
            torch.library.opcheck(torch.ops.attn_tune.varlen_forward.default,
                                  (*leaves, cu_q, cu_k, 100, 100, True, "", 0.0, 64, 0, 30.0))


if __name__ == "__main__":
    unittest.main()
