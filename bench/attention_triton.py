"""A FlashAttention-2-style forward kernel in Triton, autotuned: bench/peers.py's `triton` peer.

One program computes BLOCK_M query rows of one (batch, head) against every K/V block it may see,
with the online softmax in base 2; GQA by the head's group, any strides (bhsd or bshd), N not a
multiple of the blocks, and the causal mask aligned bottom-right (query i sees keys up to
i + N_kv - N_q), as attn-tune's. Blocks that the mask leaves whole run without it; the rest
(the diagonal, the last partial block) with it. Autotuned over 36 configs (BLOCK_M 16 for at most
16 query rows, else 64 or 128; BLOCK_N 32, 64, 128; 2 or 3 stages; 4 or 8 warps), per
(N_q, N_kv, D, causal, group). Needs a power-of-two D of at least 16.
"""
import math

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=stages, num_warps=warps)
           for bm in (16, 64, 128) for bn in (32, 64, 128) for stages in (2, 3) for warps in (4, 8)]


def keep_configs(configs, named_args, **kwargs):
    """Few query rows take BLOCK_M 16 (a decode step), more take 64 or 128; D 256 drops the 128x128 tiles."""
    args = {**named_args, **kwargs}
    small = args["N_Q"] <= 16
    kept = [c for c in configs if (c.kwargs["BLOCK_M"] == 16) == small
            and not (args["HEAD_DIM"] >= 256 and c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] > 128 * 64)]
    return kept or configs


@triton.jit
def _one_block(acc, row_max, row_sum, q, k_head, v_head, k_row_stride, v_row_stride, first_key, rows, shift, n_kv,
               scale_log2, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
               CAUSAL: tl.constexpr):
    keys = first_key + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    if MASKED:
        kt = tl.load(k_head + keys[None, :] * k_row_stride + dims[:, None], mask=keys[None, :] < n_kv, other=0.0)
        vb = tl.load(v_head + keys[:, None] * v_row_stride + dims[None, :], mask=keys[:, None] < n_kv, other=0.0)
    else:
        kt = tl.load(k_head + keys[None, :] * k_row_stride + dims[:, None])
        vb = tl.load(v_head + keys[:, None] * v_row_stride + dims[None, :])
    scores = tl.dot(q, kt) * scale_log2
    if MASKED:
        seen = keys[None, :] < n_kv
        if CAUSAL:
            seen = seen & (keys[None, :] <= rows[:, None] + shift)
        scores = tl.where(seen, scores, float("-inf"))
    new_max = tl.maximum(row_max, tl.max(scores, 1))
    base = tl.where(new_max == float("-inf"), 0.0, new_max)  # a row that has seen no key yet
    p = tl.math.exp2(scores - base[:, None])
    rescale = tl.math.exp2(row_max - base)
    row_sum = row_sum * rescale + tl.sum(p, 1)
    acc = tl.dot(p.to(vb.dtype), vb, acc * rescale[:, None])
    return acc, new_max, row_sum


@triton.autotune(CONFIGS, key=["N_Q", "N_KV", "HEAD_DIM", "CAUSAL", "GROUP"],
                 prune_configs_by={"early_config_prune": keep_configs})
@triton.jit
def _attention(Q, K, V, O, scale_log2, q_b, q_h, q_n, k_b, k_h, k_n, v_b, v_h, v_n, o_b, o_h, o_n, H, N_Q, N_KV,
               GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    block = tl.program_id(0)
    bh = tl.program_id(1)
    batch = (bh // H).to(tl.int64)
    head = (bh % H).to(tl.int64)
    kv_head = head // GROUP
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + batch * q_b + head * q_h + rows[:, None] * q_n + dims[None, :], mask=rows[:, None] < N_Q,
                other=0.0)
    k_head = K + batch * k_b + kv_head * k_h
    v_head = V + batch * v_b + kv_head * v_h
    row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    shift = N_KV - N_Q
    if CAUSAL:
        # Keys below `whole` are seen by every row of the block; the last row sees up to `end` - 1.
        whole = tl.maximum((block * BLOCK_M + shift + 1) // BLOCK_N * BLOCK_N, 0)
        end = tl.minimum(N_KV, block * BLOCK_M + BLOCK_M + shift)
    else:
        whole = N_KV // BLOCK_N * BLOCK_N
        end = N_KV
    for first_key in range(0, whole, BLOCK_N):
        acc, row_max, row_sum = _one_block(acc, row_max, row_sum, q, k_head, v_head, k_n, v_n, first_key, rows, shift,
                                           N_KV, scale_log2, HEAD_DIM, BLOCK_N, False, CAUSAL)
    for first_key in range(whole, end, BLOCK_N):
        acc, row_max, row_sum = _one_block(acc, row_max, row_sum, q, k_head, v_head, k_n, v_n, first_key, rows, shift,
                                           N_KV, scale_log2, HEAD_DIM, BLOCK_N, True, CAUSAL)
    out = acc / tl.where(row_sum == 0.0, 1.0, row_sum)[:, None]
    tl.store(O + batch * o_b + head * o_h + rows[:, None] * o_n + dims[None, :], out.to(O.dtype.element_ty),
             mask=rows[:, None] < N_Q)


def attention(q, k, v, causal):
    """O for q [B,H,NQ,D], k and v [B,KV,NKV,D] (any strides with D contiguous), like q's memory."""
    b, h, n_q, d = q.shape
    n_kv = k.shape[2]
    o = torch.empty_strided(q.shape, q.stride(), dtype=q.dtype, device=q.device)
    grid = lambda meta: (triton.cdiv(n_q, meta["BLOCK_M"]), b * h)  # noqa: E731
    _attention[grid](q, k, v, o, 1.4426950408889634 / math.sqrt(d), q.stride(0), q.stride(1), q.stride(2),
                     k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2), o.stride(0),
                     o.stride(1), o.stride(2), h, n_q, n_kv, h // k.shape[1], d, bool(causal))
    return o


def chosen_config():
    """The autotuner's choice for the last call, as m<BLOCK_M>_n<BLOCK_N>_w<warps>_s<stages>, or ''."""
    config = getattr(_attention, "best_config", None)
    if config is None:
        return ""
    kw = config.kwargs
    return f"m{kw['BLOCK_M']}_n{kw['BLOCK_N']}_w{config.num_warps}_s{config.num_stages}"
