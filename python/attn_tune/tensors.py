"""From tensors (PyTorch, or anything with __cuda_array_interface__) to the C API's problem.

Tensors are [B, H, N, D] in index order, as torch.nn.functional.scaled_dot_product_attention takes
them; their memory may be [B, H, N, D] (bhsd) or [B, N, H, D] (bshd, a transposed view): the
strides say which. K and V have kv_heads heads (GQA when fewer than Q's). D must be contiguous.
V may have its own head dim dv (FlashAttention's dv != d): O is then [B, H, N, dv]. A packed
variable-length batch (flash_attn_varlen_func) is [total, H, D] instead: make_varlen_problem.
"""
import ctypes
import math
import operator

from . import _capi

_ELEMENT_SIZE = 2  # bf16 and fp16


class TensorInfo:
    """Pointer, shape, strides (in elements), dtype code and device of one tensor."""

    def __init__(self, pointer, shape, strides, dtype, device):
        self.pointer, self.shape, self.strides, self.dtype, self.device = pointer, tuple(shape), tuple(strides), dtype, device


def _torch_dtype_code(dtype):
    name = str(dtype)
    if name == "torch.bfloat16":
        return _capi.BF16
    if name == "torch.float16":
        return _capi.FP16
    raise TypeError(f"dtype {name} is not supported: use torch.bfloat16 or torch.float16")


def _cai_dtype_code(typestr):
    # __cuda_array_interface__ has no bfloat16 code in its typestr; "<f2" is fp16, "<V2" is taken as bf16.
    if typestr in ("<f2", "=f2"):
        return _capi.FP16
    if typestr in ("<V2", "|V2", "=V2"):
        return _capi.BF16
    raise TypeError(f"__cuda_array_interface__ typestr {typestr!r} is not supported: fp16 ('<f2') or bf16 ('<V2')")


def describe(t, name):
    """TensorInfo of a torch.Tensor or a __cuda_array_interface__ object; TypeError/ValueError naming it."""
    if hasattr(t, "data_ptr") and hasattr(t, "stride") and hasattr(t, "is_cuda"):
        if not t.is_cuda:
            raise ValueError(f"{name} is on {t.device}, not on a CUDA device")
        return TensorInfo(t.data_ptr(), t.shape, t.stride(), _torch_dtype_code(t.dtype), t.device.index or 0)
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{name} is a {type(t).__name__}: expected a torch.Tensor or an object with "
                        "__cuda_array_interface__ (CuPy)")
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:  # C-contiguous
        strides, run = [], 1
        for n in reversed(shape):
            strides.insert(0, run)
            run *= n
    else:
        if any(s % _ELEMENT_SIZE for s in cai["strides"]):
            raise ValueError(f"{name}'s strides {cai['strides']} are not whole elements")
        strides = [s // _ELEMENT_SIZE for s in cai["strides"]]
    return TensorInfo(cai["data"][0], shape, strides, _cai_dtype_code(cai["typestr"]), None)


def _int32_vector(info, name, shape):
    """Checks an int32 index tensor (cache_seqlens, block_table): its shape and contiguity."""
    if tuple(info.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {list(info.shape)}: expected {list(shape)}")
    if (len(shape) == 2 and shape[0] > 1 and info.strides[0] != shape[1]) or info.strides[-1] != 1:
        raise ValueError(f"{name} must be contiguous (strides {list(info.strides)})")


def cache_info(t, name):
    """TensorInfo of cache_seqlens or block_table: an int32 torch.Tensor on the GPU."""
    if t is None:
        return None
    if str(getattr(t, "dtype", None)) != "torch.int32" or not getattr(t, "is_cuda", False):
        raise TypeError(f"{name} must be a torch.int32 tensor on the GPU, not {getattr(t, 'dtype', type(t).__name__)}"
                        f" on {getattr(t, 'device', '?')}")
    return TensorInfo(t.data_ptr(), t.shape, t.stride(), None, t.device.index or 0)


def out_layout(q_shape, q_strides, dv):
    """O's shape and strides for q's and V's head dim dv: q's when dv is q's head dim, else
    contiguous in q's layout (bshd when q's head stride is below its row stride) with rows of dv."""
    b, h, n, d = q_shape
    if dv == d:
        return tuple(q_shape), tuple(q_strides)
    if q_strides[1] < q_strides[2]:  # bshd
        return (b, h, n, dv), (n * h * dv, dv, h * dv, 1)
    return (b, h, n, dv), (h * n * dv, n * dv, dv, 1)


NO_VARIANT = (-1, -1, 0.0)  # window_size (-1, -1) and softcap 0: dense attention


def variant_of(window_size, softcap):
    """(window_left, window_right, softcap) from flash_attn_func's window_size=(left, right) and
    softcap=; ValueError naming a bad value."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError(f"window_size {window_size!r} is not a pair (left, right)") from None
    for side, n in (("left", left), ("right", right)):
        if isinstance(n, bool) or not isinstance(n, int) or n < -1:
            raise ValueError(f"window_size {tuple(window_size)!r}: {side} {n!r} is not -1 (no limit) or an int >= 0")
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)) or not math.isfinite(softcap) or softcap < 0:
        raise ValueError(f"softcap {softcap!r} is not 0 (off) or a positive finite number")
    return int(left), int(right), float(softcap)


def make_problem(q, k, v, causal, softmax_scale=None, cache_seqlens=None, block_table=None, variant=NO_VARIANT):
    """The C API's problem for TensorInfos q, k, v (and a KV cache's cache_seqlens [B] and
    block_table [B, pages per sequence], int32 TensorInfos or None; a window and softcap as
    variant_of gives them); ValueError naming the mismatch. With block_table, k and v are paged:
    [num_pages, page_size, kv_heads, D]."""
    for info, name in ((q, "q"), (k, "k"), (v, "v")):
        if len(info.shape) != 4:
            raise ValueError(f"{name} has shape {list(info.shape)}: expected 4 dimensions [B, H, N, D]")
        if info.strides[3] != 1:
            raise ValueError(f"{name}'s head dim is not contiguous (stride {info.strides[3]})")
    b, h, n_q, d = q.shape
    if block_table is not None:
        num_pages, page_size, h_kv, dk = k.shape
        if len(block_table.shape) != 2 or block_table.shape[0] != b:
            raise ValueError(f"block_table has shape {list(block_table.shape)}: expected [{b}, pages per sequence]")
        _int32_vector(block_table, "block_table", block_table.shape)
        if dk != d:
            raise ValueError(f"k_cache has shape {list(k.shape)}: its head dim must match q's {list(q.shape)}")
        bk, n_kv = b, block_table.shape[1] * page_size
        kv_strides = [k.strides[0], k.strides[2], k.strides[1]]  # page, head, row
    else:
        bk, h_kv, n_kv, dk = k.shape
        kv_strides = [k.strides[0], k.strides[1], k.strides[2]]
    if cache_seqlens is not None:
        _int32_vector(cache_seqlens, "cache_seqlens", (b,))
    if (bk, dk) != (b, d):
        raise ValueError(f"k has shape {list(k.shape)}: batch and head dim must match q's {list(q.shape)}")
    dv = v.shape[3]
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"v has shape {list(v.shape)}, k {list(k.shape)}: they must match but for the head dim")
    if dv == d and v.strides != k.strides:
        raise ValueError(f"v's strides {list(v.strides)} differ from k's {list(k.strides)}: they must match")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError("q, k and v must have the same dtype")
    if h % h_kv:
        raise ValueError(f"q has {h} heads, not a multiple of k's and v's {h_kv}")
    p = _capi.Problem()
    p.struct_size = ctypes.sizeof(_capi.Problem)
    p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim = b, h, h_kv, n_q, n_kv, d
    p.dtype = q.dtype
    p.layout = _capi.BSHD if q.strides[1] < q.strides[2] else _capi.BHSD
    p.causal = 1 if causal else 0
    p.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
    if softmax_scale is not None and not (math.isfinite(softmax_scale) and softmax_scale > 0):
        raise ValueError(f"softmax_scale {softmax_scale} is not a positive finite number")
    p.q_strides[:] = [q.strides[0], q.strides[1], q.strides[2]]
    p.kv_strides[:] = kv_strides
    if dv != d:  # V and O with their own head dim and strides
        p.head_dim_v = dv
        p.v_strides[:] = [v.strides[0], v.strides[2], v.strides[1]] if block_table is not None else list(v.strides[:3])
        p.o_strides[:] = list(out_layout(q.shape, q.strides, dv)[1][:3])
    if block_table is not None:
        p.block_table, p.page_size, p.num_pages = block_table.pointer, page_size, num_pages
    if cache_seqlens is not None:
        p.cache_seqlens = cache_seqlens.pointer
    left, right, softcap = variant
    if causal and right > 0:
        raise ValueError(f"window_size ({left}, {right}) with causal=True: causal is a right side of 0 (give 0 or -1)")
    if (left, right) != (-1, -1):
        p.window, p.window_left, p.window_right = 1, left, right
    p.softcap = softcap
    return p


def packed_out_layout(q_shape, q_strides, dv):
    """O's shape and strides of a packed batch, q [total_q, H, D]: q's when dv is q's head dim,
    else contiguous in q's layout ([total_q, H, dv], or [H, total_q, dv] when q's head stride is
    above its row stride) with rows of dv."""
    total, h, d = q_shape
    _, (_, head, row, _) = out_layout((1, h, total, d), (0, q_strides[1], q_strides[0], 1), dv)
    return (total, h, dv), (row, head, 1)


def max_seqlen_of(value, name):
    """flash_attn_varlen_func's max_seqlen_q/_k: an int >= 1 (TypeError/ValueError naming it)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} is {value!r}: expected an int")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} is {value!r}: expected an int (the longest sequence's length)") from None
    if not 1 <= n < 2**31:
        raise ValueError(f"{name} {n} is out of range: expected 1 to {2**31 - 1}")
    return n


def make_varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale=None,
                        variant=NO_VARIANT):
    """The C API's problem of a packed variable-length batch (flash_attn_varlen_func): TensorInfos
    q [total_q, H, D], k and v [total_k, kv_heads, D] (v: dv), cu_seqlens_q and cu_seqlens_k int32
    [B + 1] (TensorInfos of the GPU's, as cache_info gives them), and the longest sequence's query
    and key counts; ValueError/TypeError naming the mismatch. The offsets themselves are never read
    on the host (only the kernel reads them)."""
    for info, name in ((q, "q"), (k, "k"), (v, "v")):
        if len(info.shape) != 3:
            raise ValueError(f"{name} has shape {list(info.shape)}: expected 3 dimensions [total, H, D] (packed)")
    if len(cu_seqlens_q.shape) != 1 or cu_seqlens_q.shape[0] < 2:
        raise ValueError(f"cu_seqlens_q has shape {list(cu_seqlens_q.shape)}: expected [B + 1] with B >= 1")
    _int32_vector(cu_seqlens_q, "cu_seqlens_q", cu_seqlens_q.shape)
    _int32_vector(cu_seqlens_k, "cu_seqlens_k", cu_seqlens_q.shape)
    max_q, max_k = max_seqlen_of(max_seqlen_q, "max_seqlen_q"), max_seqlen_of(max_seqlen_k, "max_seqlen_k")
    if k.shape[2] != q.shape[2]:
        raise ValueError(f"k has shape {list(k.shape)}: its head dim must match q's {list(q.shape)}")
    if v.shape[:2] != k.shape[:2]:
        raise ValueError(f"v has shape {list(v.shape)}, k {list(k.shape)}: they must match but for the head dim")
    if v.shape[2] == k.shape[2] and v.strides != k.strides:
        raise ValueError(f"v's strides {list(v.strides)} differ from k's {list(k.strides)}: they must match")

    def batch_of_one(t):  # [total, H, D] as [1, H, total, D]
        return TensorInfo(t.pointer, (1, t.shape[1], t.shape[0], t.shape[2]), (0, t.strides[1], t.strides[0],
                                                                                t.strides[2]), t.dtype, t.device)

    p = make_problem(batch_of_one(q), batch_of_one(k), batch_of_one(v), causal, softmax_scale, variant=variant)
    p.batch, p.q_len, p.kv_len = cu_seqlens_q.shape[0] - 1, max_q, max_k
    p.q_strides[0] = p.kv_strides[0] = p.v_strides[0] = p.o_strides[0] = 0  # one packed sequence of rows
    p.cu_seqlens_q, p.cu_seqlens_k = cu_seqlens_q.pointer, cu_seqlens_k.pointer
    p.total_q, p.total_k = q.shape[0], k.shape[0]
    return p
