"""attn_tune: attn-tune's tuned attention kernels from Python, over libattn_tune's C API (ctypes).

    import attn_tune
    o = attn_tune.forward(q, k, v, causal=True, table="results/h200.json")

q, k, v are [B, H, N, D] (k and v may have fewer heads: GQA), bf16 or fp16, on a CUDA device, in
either memory layout (see attn_tune.tensors). FlashAttention's flash_attn_func ([B, N, H, D]) and
flash_attn_varlen_func (a packed batch of sequences of their own lengths, [total, H, D]) take
their arguments by FlashAttention's names. The call is enqueued on the current CUDA stream and
does not synchronize. With PyTorch importable, forward is the custom op torch.ops.attn_tune.forward,
with a fake implementation, so torch.compile traces through it; an eager call that nothing traces
runs the op's implementation without the op's dispatch (its host cost: docs/library-and-python.md).
What a call works out from its tensors is kept per key (shapes, strides, dtypes, devices, causal,
table, scale: attn_tune._call_cache), so a repeated call only allocates O and LSE and calls the C
library; the call may be captured in a CUDA graph (torch.cuda.graph) after one warm-up call. Importing needs neither PyTorch,
a GPU nor the library: the first call loads libattn_tune.so (see attn_tune._capi.candidates).

Training (libattn_tune API version 7, attn_tune_backward):

    o = attn_tune.attention(q, k, v, causal=True)  # differentiable w.r.t. q, k and v
    o.float().square().mean().backward()

attention(q, k, v, causal=False, softmax_scale=None, table=None) takes PyTorch tensors as forward
does (GQA/MQA through fewer k/v heads; V may have a head dim of its own, dv != d, as MLA's d 192,
dv 128; head dims multiples of 8 up to 256) and nothing the backward does not take yet (a KV
cache). Its gradients come from the
custom op torch.ops.attn_tune.backward, registered as the autograd formula of
torch.ops.attn_tune.forward (torch.library.register_autograd; a torch.autograd.Function where
PyTorch is older than 2.4), so torch.compile traces the forward and the backward. A sliding window
and softcap have gradients too: forward(q, k, v, window_size=(left, right), softcap=C) with inputs
that require grad (with PyTorch >= 2.4). So do packed batches: flash_attn_varlen_func's gradients
come from torch.ops.attn_tune.varlen_backward, the autograd formula of
torch.ops.attn_tune.varlen_forward (PyTorch >= 2.4). The backward runs on the current CUDA stream; it is
deterministic (a rerun gives bit-identical gradients) with the library's fallback variants and any
tuned variant whose name does not end in -dq_atomic (see attention).
"""
import ctypes
import math
import numbers
import sys
import typing
import threading

from . import _capi
from ._capi import AttnTuneError, LibraryNotFoundError
from .tensors import (NO_VARIANT, cache_info, describe, make_problem, make_varlen_problem, max_seqlen_of,
                      out_layout, packed_out_layout, variant_of)

__all__ = ["forward", "forward_with_lse", "attention", "flash_attn_func", "flash_attn_varlen_func", "lookup",
           "context", "AttnTuneError", "LibraryNotFoundError", "library_version"]

_contexts = {}
_contexts_lock = threading.Lock()


class Context:
    """One device's libattn_tune context (kernel cache, tuned table, loaded kernels)."""

    def __init__(self, device=0, table=None, bundle=None, cache_dir=None):
        lib = _capi.library()
        options = _capi.ContextOptions()
        options.struct_size = ctypes.sizeof(_capi.ContextOptions)
        options.device = device
        options.cache_dir = _text(cache_dir, "cache_dir") if cache_dir is not None else None
        options.table = _text(table, "table") if table else None
        options.bundle = _text(bundle, "bundle") if bundle else None
        handle = ctypes.c_void_p()
        _capi.check(lib.attn_tune_context_create(ctypes.byref(options), ctypes.byref(handle)))
        self._lib, self._handle, self.device = lib, handle, device

    def __del__(self):
        # At interpreter exit the CUDA runtime may be torn down first: leave the context to the OS.
        if getattr(self, "_handle", None) and not sys.is_finalizing():
            self._lib.attn_tune_context_destroy(self._handle)
            self._handle = None

    def forward(self, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, problem, stream=0):
        choice = _capi.new_choice()
        _capi.check(self._lib.attn_tune_forward(self._handle, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                                                ctypes.byref(problem), stream or None, ctypes.byref(choice)))
        return choice.as_dict()

    def backward(self, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, d_o_ptr, dq_ptr, dk_ptr, dv_ptr, delta_ptr, problem,
                 stream=0):
        """attn_tune_backward (API version 7; AttnTuneError naming an older library's version):
        dq, dk, dv from d_o, the forward's o and lse; delta is float32 [B, H, N_q] scratch ([H, total_q]
        for a packed batch)."""
        call = _capi.backward_function(self._lib)
        choice = _capi.new_choice()
        _capi.check(call(self._handle, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, d_o_ptr, dq_ptr, dk_ptr, dv_ptr, delta_ptr,
                         ctypes.byref(problem), stream or None, ctypes.byref(choice)))
        return choice.as_dict()

    def choose(self, problem):
        choice = _capi.new_choice()
        _capi.check(self._lib.attn_tune_choose(self._handle, ctypes.byref(problem), ctypes.byref(choice)))
        return choice.as_dict()


def context(device=0, table=None, bundle=None):
    """The shared Context of (device, table, bundle), made on first use."""
    key = (device, table, bundle)
    with _contexts_lock:
        if key not in _contexts:
            _contexts[key] = Context(device, table, bundle)
        return _contexts[key]


def library_version():
    return _capi.library().attn_tune_version_string().decode()


def _count(value, name, limit=2**63 - 1):
    """A positive int below `limit`, else TypeError/ValueError naming it: ctypes would wrap
    2**64 + 32 to 32 without a word."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is {value!r}: expected an int")
    if not 1 <= value <= limit:
        raise ValueError(f"{name} {value} is out of range: expected 1 to {limit}")
    return value


def _text(value, name):
    """A str without NUL, as bytes: a NUL would cut the C string short."""
    if not isinstance(value, str):
        raise TypeError(f"{name} is {value!r}: expected a str")
    if "\0" in value:
        raise ValueError(f"{name} {value!r} holds a NUL character")
    return value.encode()


def _flag(value, name):
    """True/False (or 0/1): "no" is not False."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return int(value)
    raise TypeError(f"{name} is {value!r}: expected True or False")


def _capability(cc):
    """(major, minor) from "9.0", 9.0 or (9, 0)."""
    parts = tuple(cc) if isinstance(cc, (tuple, list)) else str(cc).split(".")
    try:
        major, minor = (int(x) for x in parts)
    except (TypeError, ValueError):
        raise ValueError(f"cc {cc!r} is not MAJOR.MINOR, e.g. \"9.0\"") from None
    if not (0 <= major < 1000 and 0 <= minor < 1000):
        raise ValueError(f"cc {cc!r} is out of range")
    return major, minor


def lookup(table, device_name, cc, sm_count, batch, heads, q_len, head_dim, kv_heads=None, kv_len=None,
           dtype="bf16", causal=False, layout="bhsd"):
    """Which config a device would run for a shape, from a table file, without a GPU. Arguments of
    the wrong type or range raise TypeError or ValueError naming them."""
    table_path, device = _text(table, "table"), _text(device_name, "device_name")
    major, minor = _capability(cc)
    lib = _capi.library()
    p = _capi.Problem()
    p.struct_size = ctypes.sizeof(_capi.Problem)
    p.batch, p.heads = _count(batch, "batch"), _count(heads, "heads")
    p.q_len, p.head_dim = _count(q_len, "q_len"), _count(head_dim, "head_dim")
    p.kv_heads = p.heads if kv_heads is None else _count(kv_heads, "kv_heads")
    p.kv_len = p.q_len if kv_len is None else _count(kv_len, "kv_len")
    p.dtype = {"bf16": _capi.BF16, "fp16": _capi.FP16}.get(dtype, 99)
    p.layout = {"bhsd": _capi.BHSD, "bshd": _capi.BSHD}.get(layout, 99)
    p.causal = _flag(causal, "causal")
    handle = ctypes.c_void_p()
    _capi.check(lib.attn_tune_table_load(table_path, ctypes.byref(handle)))
    try:
        choice = _capi.new_choice()
        _capi.check(lib.attn_tune_table_lookup(handle, device, major, minor, _count(sm_count, "sm_count", 2**31 - 1),
                                               ctypes.byref(p), ctypes.byref(choice)))
        return choice.as_dict()
    finally:
        lib.attn_tune_table_destroy(handle)


_torch_call = None  # a _call_cache.CallCache, made with the op
_NO_WINDOW, _NO_SOFTCAP = (-1, -1), 0.0  # the defaults, which need no check (variant_of's answer: NO_VARIANT)


def _normalized(causal, table, softmax_scale):
    """The arguments as the op takes them back: a bool, a path or None, a scale or None (0 and
    None mean 1/sqrt(D); a negative or NaN one is kept, for make_problem to refuse)."""
    return bool(causal), table or None, float(softmax_scale) if softmax_scale else None


def _forward_cai(q, k, v, causal, table, softmax_scale, out, lse, stream, device, variant=NO_VARIANT):
    qi, ki, vi = describe(q, "q"), describe(k, "k"), describe(v, "v")
    problem = make_problem(qi, ki, vi, causal, softmax_scale, variant=variant)
    o_shape, o_strides = out_layout(qi.shape, qi.strides, vi.shape[3])
    if out is None or lse is None:
        import cupy  # CuPy arrays: allocate like q (with V's head dim)

        out = cupy.ndarray(o_shape, dtype=q.dtype, memptr=cupy.cuda.alloc(math.prod(o_shape) * 2),
                           strides=tuple(s * 2 for s in o_strides))  # bf16/fp16: 2 bytes
        lse = cupy.empty((qi.shape[0], qi.shape[1], qi.shape[2]), dtype=cupy.float32)
        stream = stream if stream is not None else cupy.cuda.get_current_stream().ptr
    oi = describe(out, "out")
    if oi.strides != o_strides or oi.shape != o_shape:
        raise ValueError(f"out has shape {list(oi.shape)} and strides {list(oi.strides)}: expected shape "
                         f"{list(o_shape)} and strides {list(o_strides)} (q's, with V's head dim)")
    lse_ptr = lse.__cuda_array_interface__["data"][0]
    context(device, table).forward(qi.pointer, ki.pointer, vi.pointer, oi.pointer, lse_ptr, problem, stream or 0)
    return out, lse


_torch_op = None
_torch_varlen_op = None
_eager_ok = None  # (q, k, v) -> whether a call may skip the op's dispatch (see _register_torch_op)
_torch_backward_op = None  # torch.ops.attn_tune.backward
_torch_varlen_backward_op = None  # torch.ops.attn_tune.varlen_backward
_torch_autograd = False  # whether attn_tune::forward (and varlen_forward) have their autograd formulas
_autograd_function = None  # where it has not: the torch.autograd.Function attention runs instead


def _fast_path_check(torch):
    """The test of whether a call of forward may run the op's implementation directly: nothing
    traces or transforms it (torch.compile, a dispatch or function mode such as make_fx's or
    FakeTensorMode's, functorch, tensor subclasses), no gradient is asked for and the profiler is
    off (so the op shows in its trace). None when this PyTorch lacks one of the tests: every
    call goes through the op then."""
    tensor = torch.Tensor
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
    function_modes = getattr(torch._C, "_is_torch_function_mode_enabled", None)
    wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)
    if None in (is_compiling, dispatch_modes, function_modes, wrapped):
        return None
    profiling = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", None) or (lambda: False)
    grad_enabled = torch.is_grad_enabled

    def eager_ok(q, k, v):
        # is_compiling first: under torch.compile it is a constant, and nothing after it is traced.
        return (not is_compiling() and type(q) is tensor and type(k) is tensor and type(v) is tensor
                and not dispatch_modes() and not function_modes() and not profiling()
                and not (grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad))
                and not (wrapped(q) or wrapped(k) or wrapped(v)))

    return eager_ok


def _register_torch_op():
    """torch.ops.attn_tune.forward and torch.ops.attn_tune.varlen_forward: custom ops with fake
    implementations (torch >= 2.4); torch.ops.attn_tune.backward and varlen_backward, their
    autograd formulas (_register_backward)."""
    global _torch_op, _torch_varlen_op, _torch_call, _eager_ok, _autograd_function
    import torch

    from ._call_cache import CallCache, TorchOps

    if _torch_call is None:
        _torch_call = CallCache(TorchOps(torch), context)
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        if _autograd_function is None:
            _autograd_function = _make_autograd_function(torch)
        return None

    @torch.library.custom_op("attn_tune::forward", mutates_args=())
    def _op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, table: str,
            softmax_scale: float, cache_seqlens: typing.Optional[torch.Tensor] = None,
            block_table: typing.Optional[torch.Tensor] = None, window_left: int = -1, window_right: int = -1,
            softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
        return _torch_call(q, k, v, causal, table or None, softmax_scale if softmax_scale != 0.0 else None,
                           cache_seqlens, block_table, (window_left, window_right, softcap))

    @_op.register_fake
    def _(q, k, v, causal, table, softmax_scale, cache_seqlens=None, block_table=None, window_left=-1,
          window_right=-1, softcap=0.0):
        shape, stride = out_layout(tuple(q.shape), tuple(q.stride()), v.shape[3])
        o = torch.empty_strided(shape, stride, dtype=q.dtype, device=q.device)
        return o, q.new_empty((q.shape[0], q.shape[1], q.shape[2]), dtype=torch.float32)

    @torch.library.custom_op("attn_tune::varlen_forward", mutates_args=())
    def _varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                   cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool, table: str,
                   softmax_scale: float, window_left: int = -1, window_right: int = -1,
                   softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
        return _torch_call(q, k, v, causal, table or None, softmax_scale if softmax_scale != 0.0 else None,
                           variant=(window_left, window_right, softcap),
                           packed=(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k))

    @_varlen_op.register_fake
    def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, table, softmax_scale,
          window_left=-1, window_right=-1, softcap=0.0):
        shape, stride = packed_out_layout(tuple(q.shape), tuple(q.stride()), v.shape[2])
        o = torch.empty_strided(shape, stride, dtype=q.dtype, device=q.device)
        return o, q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)

    _eager_ok = _fast_path_check(torch)
    _register_backward(torch)
    if not _torch_autograd:
        _autograd_function = _make_autograd_function(torch)
    _torch_op, _torch_varlen_op = _op, _varlen_op
    return _op


def _grad_layout(q):
    """Whether the backward runs in bshd ([B, N, H, D] memory; packed: [total, H, D]) rather than
    bhsd ([B, H, N, D]; packed: [H, total, D]): q's layout as make_problem (make_varlen_problem)
    reads it, so that a model's [B, N, H, D] projections are not transposed in memory."""
    row = 0 if len(q.shape) == 3 else 2  # a packed batch's rows are its first dimension
    return q.stride(1) < q.stride(row)


def _layout_swap(t, bshd):
    """The two dimensions to swap so that a plain contiguous() gives the layout's memory order,
    or None: [B, H, N, D] is bhsd's and [total, H, D] bshd's."""
    if len(t.shape) == 3:
        return None if bshd else (0, 1)
    return (1, 2) if bshd else None


def _in_layout(t, bshd):
    """t ([B, H, N, D], or a packed [total, H, D]) contiguous in the layout's memory order and
    16-byte aligned, the only form the C backward takes: t itself where it is already, else a copy
    (a view of a fused QKV projection, the broadcast dO of a sum)."""
    swap = _layout_swap(t, bshd)
    t = t.transpose(*swap).contiguous().transpose(*swap) if swap else t.contiguous()
    return t if t.data_ptr() % 16 == 0 else t.clone()  # a clone of a dense tensor keeps its strides


def _empty_in_layout(torch, shape, bshd, dtype, device):
    """A new [B, H, N, D] (or packed [total, H, D]) tensor contiguous in the layout: the
    gradients, in the real ops and their fakes."""
    if len(shape) == 3:
        total, h, d = shape
        if bshd:
            return torch.empty((total, h, d), dtype=dtype, device=device)
        return torch.empty((h, total, d), dtype=dtype, device=device).transpose(0, 1)
    b, h, n, d = shape
    if bshd:
        return torch.empty((b, n, h, d), dtype=dtype, device=device).transpose(1, 2)
    return torch.empty((b, h, n, d), dtype=dtype, device=device)


def _contiguous_strides(shape, bshd):
    if len(shape) == 3:  # packed [total, H, D]: [total, H, D] or [H, total, D] in memory
        total, h, d = shape
        return (h * d, d, 1) if bshd else (d, total * d, 1)
    b, h, n, d = shape
    return (n * h * d, d, h * d, 1) if bshd else (h * n * d, n * d, d, 1)


def _backward_call(torch, d_o, q, k, v, o, lse, causal, table, softmax_scale, window_left=-1, window_right=-1,
                   softcap=0.0, packed=None):
    """(dq, dk, dv) of the attention whose forward gave (o, lse): attn_tune_backward on the current
    CUDA stream, every tensor contiguous in q's layout (copied there where it is not). window_left,
    window_right and softcap: the forward's window_size (-1, -1: none) and softcap (0: off), set in
    the problem as the forward's. packed: a packed batch's (cu_seqlens_q, cu_seqlens_k,
    max_seqlen_q, max_seqlen_k), as _torch_call takes it: q, o, d_o [total_q, H, D], k, v
    [total_k, kv_heads, D], the LSE [H, total_q]; the problem is make_varlen_problem's (the
    forward's), delta [H, total_q]."""
    bshd = _grad_layout(q)
    q, k, v, o = (_in_layout(t, bshd) for t in (q, k, v, o))
    d_o = _in_layout(d_o.to(q.dtype), bshd)  # autocast or a float32 loss may hand back another dtype
    o_shape = tuple(q.shape[:-1]) + (v.shape[-1],)  # q's, with V's head dim (dv; d where V has none of its own)
    for t, name in ((o, "o"), (d_o, "d_o")):
        if tuple(t.shape) != o_shape:
            raise ValueError(f"{name} has shape {list(t.shape)}: expected {list(o_shape)} (q's, with V's head dim)")
    lse_shape = (q.shape[1], q.shape[0]) if packed is not None else tuple(q.shape[:3])  # [H, total_q] / [B, H, N_q]
    if tuple(lse.shape) != lse_shape:
        raise ValueError(f"lse has shape {list(lse.shape)}: expected {list(lse_shape)} (the forward's)")
    infos = []
    for t, name in ((q, "q"), (k, "k"), (v, "v")):
        info = describe(t, name)
        # The strides the copies above made, whatever a dimension of one element says.
        info.strides = _contiguous_strides(info.shape, bshd)
        infos.append(info)
    # shapes, heads, dtypes, scale: named errors; the window's fields and softcap as the forward sets
    # them; head_dim_v where V has a head dim of its own (dv != d: V, dV [B, kv_heads, N_kv, dv], O, dO
    # [B, H, N_q, dv]), as the forward sets it
    variant = (window_left, window_right, softcap)
    if packed is None:
        problem = make_problem(*infos, causal, softmax_scale, variant=variant)
    else:  # the forward's packed problem: cu_seqlens_q/_k, total_q/_k, batch B, q_len/kv_len the longest
        cu_q, cu_k = cache_info(packed[0], "cu_seqlens_q"), cache_info(packed[1], "cu_seqlens_k")
        for info, name in ((cu_q, "cu_seqlens_q"), (cu_k, "cu_seqlens_k")):
            if info.device != infos[0].device:
                raise ValueError(f"{name} is on device {info.device}, q on {infos[0].device}: they must share a device")
        problem = make_varlen_problem(*infos, cu_q, cu_k, packed[2], packed[3], causal, softmax_scale, variant)
    # All strides 0: contiguous in the layout, which the C backward requires (and q's layout is not
    # read from strides where H or N is 1); V's and O's too, which make_problem set where dv != d.
    problem.layout = _capi.BSHD if bshd else _capi.BHSD
    problem.q_strides[:] = [0, 0, 0]
    problem.kv_strides[:] = [0, 0, 0]
    problem.v_strides[:] = [0, 0, 0]
    problem.o_strides[:] = [0, 0, 0]
    lse = lse.contiguous()
    dq, dk, dv = (_empty_in_layout(torch, t.shape, bshd, t.dtype, t.device) for t in (q, k, v))  # dv: V's dv
    delta = torch.empty(tuple(lse.shape), dtype=torch.float32, device=q.device)  # [B, H, N_q] or [H, total_q]
    stream = torch.cuda.current_stream(q.device).cuda_stream
    context(infos[0].device, table).backward(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                                             d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                                             delta.data_ptr(), problem, stream)
    return dq, dk, dv


def _backward_refusal(cache_seqlens, block_table):
    """What of a forward call the backward does not take yet, named ("" when nothing; a window,
    softcap and V's own head dim it takes)."""
    refused = (("cache_seqlens", cache_seqlens is not None), ("block_table", block_table is not None))
    return ", ".join(name for name, used in refused if used)


def _register_backward(torch):
    """torch.ops.attn_tune.backward and torch.ops.attn_tune.varlen_backward (with fake
    implementations), and the autograd formulas of attn_tune::forward and attn_tune::varlen_forward
    through them where torch.library.register_autograd exists (torch >= 2.4)."""
    global _torch_backward_op, _torch_varlen_backward_op, _torch_autograd

    @torch.library.custom_op("attn_tune::backward", mutates_args=())
    def _bwd_op(d_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                lse: torch.Tensor, causal: bool, table: str, softmax_scale: float, window_left: int = -1,
                window_right: int = -1, softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _backward_call(torch, d_o, q, k, v, o, lse, causal, table or None,
                              softmax_scale if softmax_scale != 0.0 else None, window_left, window_right, softcap)

    @_bwd_op.register_fake
    def _(d_o, q, k, v, o, lse, causal, table, softmax_scale, window_left=-1, window_right=-1, softcap=0.0):
        bshd = _grad_layout(q)
        return tuple(_empty_in_layout(torch, t.shape, bshd, t.dtype, t.device) for t in (q, k, v))

    def setup_context(ctx, inputs, output):
        q, k, v, causal, table, softmax_scale, cache_seqlens, block_table, window_left, window_right, softcap = inputs
        o, lse = output
        # The backward takes dO alone: a gradient through the LSE would be dropped without a word,
        # so the LSE does not require grad.
        ctx.mark_non_differentiable(lse)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.table, ctx.softmax_scale = causal, table, softmax_scale
        ctx.window_left, ctx.window_right, ctx.softcap = window_left, window_right, softcap
        # Refused at backward, not here: a forward that works today with inputs requiring grad
        # (a KV cache) keeps working as long as nothing asks for its gradient.
        ctx.refused = _backward_refusal(cache_seqlens, block_table)

    def backward(ctx, d_o, d_lse):
        if ctx.refused:
            raise NotImplementedError(f"attn_tune's backward does not take {ctx.refused} yet (the forward ran with it)")
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _bwd_op(d_o, q, k, v, o, lse, ctx.causal, ctx.table, ctx.softmax_scale, ctx.window_left,
                             ctx.window_right, ctx.softcap)
        return dq, dk, dv, None, None, None, None, None, None, None, None  # one per input of the forward op

    @torch.library.custom_op("attn_tune::varlen_backward", mutates_args=())
    def _varlen_bwd_op(d_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                       lse: torch.Tensor, cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                       max_seqlen_k: int, causal: bool, table: str, softmax_scale: float, window_left: int = -1,
                       window_right: int = -1,
                       softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _backward_call(torch, d_o, q, k, v, o, lse, causal, table or None,
                              softmax_scale if softmax_scale != 0.0 else None, window_left, window_right, softcap,
                              packed=(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k))

    @_varlen_bwd_op.register_fake
    def _(d_o, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, table, softmax_scale,
          window_left=-1, window_right=-1, softcap=0.0):
        bshd = _grad_layout(q)  # packed: [total, H, D] in q's layout, as the op's
        return tuple(_empty_in_layout(torch, t.shape, bshd, t.dtype, t.device) for t in (q, k, v))

    def varlen_setup_context(ctx, inputs, output):
        (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, table, softmax_scale, window_left,
         window_right, softcap) = inputs
        o, lse = output
        ctx.mark_non_differentiable(lse)  # as the dense forward's: dO alone reaches the backward
        ctx.save_for_backward(q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k)
        ctx.max_seqlen_q, ctx.max_seqlen_k = max_seqlen_q, max_seqlen_k
        ctx.causal, ctx.table, ctx.softmax_scale = causal, table, softmax_scale
        ctx.window_left, ctx.window_right, ctx.softcap = window_left, window_right, softcap

    def varlen_backward(ctx, d_o, d_lse):
        q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k = ctx.saved_tensors
        dq, dk, dv = _varlen_bwd_op(d_o, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, ctx.max_seqlen_q,
                                    ctx.max_seqlen_k, ctx.causal, ctx.table, ctx.softmax_scale, ctx.window_left,
                                    ctx.window_right, ctx.softcap)
        return (dq, dk, dv) + (None,) * 10  # one per input of the varlen forward op: the offsets have none

    _torch_backward_op, _torch_varlen_backward_op = _bwd_op, _varlen_bwd_op
    if hasattr(torch.library, "register_autograd"):
        torch.library.register_autograd("attn_tune::forward", backward, setup_context=setup_context)
        torch.library.register_autograd("attn_tune::varlen_forward", varlen_backward,
                                        setup_context=varlen_setup_context)
        _torch_autograd = True


def _make_autograd_function(torch):
    """attention's torch.autograd.Function where attn_tune::forward has no autograd formula (a
    PyTorch older than 2.4): the forward's and the backward's implementations, without the ops
    (attention's arguments only: no window or softcap, which the backward's defaults leave off)."""

    class AttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal, table, softmax_scale):
            o, lse = _torch_call(q, k, v, causal, table, softmax_scale)
            ctx.mark_non_differentiable(lse)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.causal, ctx.table, ctx.softmax_scale = causal, table, softmax_scale
            return o, lse

        @staticmethod
        def backward(ctx, d_o, d_lse):
            q, k, v, o, lse = ctx.saved_tensors
            dq, dk, dv = _backward_call(torch, d_o, q, k, v, o, lse, ctx.causal, ctx.table, ctx.softmax_scale)
            return dq, dk, dv, None, None, None

    return AttentionFunction


def _is_torch(t):
    return type(t).__module__.startswith("torch") and hasattr(t, "data_ptr")


def forward_with_lse(q, k, v, causal=False, table=None, softmax_scale=None, out=None, lse=None, stream=None,
                     device=0, cache_seqlens=None, block_table=None, window_size=_NO_WINDOW, softcap=_NO_SOFTCAP):
    """(O, LSE): LSE is float32 [B, H, N_q], natural log. For __cuda_array_interface__ objects other
    than CuPy's, pass `out` (like q), `lse`, `stream` (a cudaStream_t as int) and `device`; with
    PyTorch tensors out= and lse= are refused (ValueError): new tensors are returned.

    A KV cache, with the names of FlashAttention's flash_attn_with_kvcache (PyTorch tensors only):
    cache_seqlens, int32 [B] on the GPU, gives each sequence's length in the cache (k and v hold
    N_kv rows, the capacity; a length of 0 gives O = 0 and LSE = -inf; causal is bottom-right per
    sequence). block_table, int32 [B, pages per sequence] on the GPU, makes k and v a paged cache:
    k_cache and v_cache are [num_pages, page_size, kv_heads, D] and row b of the table names
    sequence b's pages in order (page_size a power of two up to 1024; N_kv = pages per sequence x
    page_size). q stays [B, H, N_q, D] in index order, as everywhere in this package.

    A sliding window and softcap, with flash_attn_func's names: window_size=(left, right), query i
    sees key j when i + N_kv - N_q - left <= j <= i + N_kv - N_q + right (-1: no limit on that side;
    with causal=True, right is 0 or -1); softcap=C caps each score to C * tanh(score / C) after the
    scale (0: off).

    With PyTorch >= 2.4, O is differentiable where the backward takes the call (see attention),
    a sliding window, softcap and V's own head dim (dv != d) included (their gradients are the
    windowed, capped attention's): a gradient through a KV cache raises NotImplementedError when it
    is asked for; the LSE never requires grad."""
    variant = NO_VARIANT if window_size is _NO_WINDOW and softcap is _NO_SOFTCAP else variant_of(window_size, softcap)
    if _is_torch(q):
        if out is not None or lse is not None:  # refused, never ignored: the op allocates both
            raise ValueError("out= and lse= are for __cuda_array_interface__ arrays; with PyTorch tensors "
                             "forward_with_lse returns new ones (copy them where you need them)")
        op = _torch_op or _register_torch_op()
        causal, table, softmax_scale = _normalized(causal, table, softmax_scale)
        if op is None or (_eager_ok is not None and _eager_ok(q, k, v)):
            # what the op would run, without its dispatch
            return _torch_call(q, k, v, causal, table, softmax_scale, cache_seqlens, block_table, variant)
        return op(q, k, v, causal, table or "", softmax_scale or 0.0, cache_seqlens, block_table, *variant)
    if cache_seqlens is not None or block_table is not None:
        raise ValueError("cache_seqlens= and block_table= take PyTorch tensors (int32 on the GPU)")
    return _forward_cai(q, k, v, causal, table, softmax_scale, out, lse, stream, device, variant)


def forward(q, k, v, causal=False, table=None, softmax_scale=None, **kwargs):
    """O = softmax(Q K^T * scale [+ bottom-right causal mask]) V with the tuned kernel; a KV cache
    through cache_seqlens= and block_table=, a sliding window through window_size=, softcap=
    (see forward_with_lse)."""
    return forward_with_lse(q, k, v, causal, table, softmax_scale, **kwargs)[0]


def _need_torch():
    """Registers the ops where PyTorch became importable after this package was; ImportError
    saying so where it is not."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise ImportError(f"attn_tune.attention needs PyTorch: import torch failed ({e}); attn_tune.forward "
                          "also takes CuPy arrays, without gradients") from e
    _register_torch_op()


def attention(q, k, v, causal=False, softmax_scale=None, table=None):
    """O = softmax(Q K^T * scale [+ bottom-right causal mask]) V, differentiable w.r.t. q, k and v.

    PyTorch tensors as forward takes them: q [B, H, N_q, D], k [B, kv_heads, N_kv, D] and v
    [B, kv_heads, N_kv, Dv] (GQA and MQA when kv_heads < H; Dv = D, or V's own head dim, e.g. MLA's
    D 192 with Dv 128: O is then [B, H, N_q, Dv]), bf16 or fp16 on a CUDA device, in either memory
    layout; D and Dv multiples of 8 up to 256. softmax_scale: None for 1/sqrt(D); table: a tuned
    table's path (its pass bwd entries choose the backward's variant, its forward entries the
    forward's). The backward (libattn_tune API version 7) is deterministic (a rerun gives
    bit-identical gradients) with the library's fallback variants and any variant whose name does
    not end in -dq_atomic; a table that names an atomic-dQ variant (-dq_atomic: dQ summed with fp32
    atomics) gives gradients that can differ in the last bits between reruns. It copies q, k, v, O and dO into one
    contiguous layout (q's) where they are not. A sliding window and softcap are no parameters
    here: forward(q, k, v, window_size=(left, right), softcap=C) takes them, with gradients
    (PyTorch >= 2.4). A packed batch is flash_attn_varlen_func's, with gradients too (PyTorch >=
    2.4). What the backward does not take yet is no parameter either: a KV cache (forward runs
    it, without gradients).
    Bad arguments raise TypeError or ValueError naming them; no PyTorch, ImportError."""
    for t, name in ((q, "q"), (k, "k"), (v, "v")):
        if not _is_torch(t):
            raise TypeError(f"{name} is a {type(t).__name__}: attention takes PyTorch tensors [B, H, N, D]")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {list(t.shape)}: expected 4 dimensions [B, H, N, D]")
    d, dv = q.shape[3], v.shape[3]
    if d % 8 or d > 256:
        raise ValueError(f"head dim {d}: attention takes multiples of 8 up to 256 (its backward's)")
    if dv % 8 or dv > 256:  # V's own head dim (dv != d) is taken, under the same rule
        raise ValueError(f"v's head dim {dv}: attention takes multiples of 8 up to 256 (its backward's)")
    _flag(causal, "causal")
    if softmax_scale is not None:
        if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, numbers.Real):
            raise TypeError(f"softmax_scale is {softmax_scale!r}: expected a number or None (1/sqrt(D))")
        if not (math.isfinite(softmax_scale) and softmax_scale > 0):
            raise ValueError(f"softmax_scale {softmax_scale} is not a positive finite number")
    if table is not None and not isinstance(table, str):
        raise TypeError(f"table is {table!r}: expected a path (str) or None")
    if _torch_call is None:  # no PyTorch at import
        _need_torch()
    if _torch_autograd:  # the op, with its autograd formula: torch.compile traces both passes
        return forward_with_lse(q, k, v, causal, table, softmax_scale)[0]
    return _autograd_function.apply(q, k, v, *_normalized(causal, table, softmax_scale))[0]


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False, table=None):
    """FlashAttention's flash_attn_func on PyTorch tensors q [B, N_q, H, D], k and v [B, N_kv,
    kv_heads, D]: O as [B, N_q, H, D] (with return_attn_probs, (O, LSE [B, H, N_q], None); no
    probabilities are kept). Dropout and ALiBi are not supported: a dropout_p other than 0 or
    alibi_slopes raise ValueError. deterministic is accepted (the forward pass always is)."""
    if dropout_p:
        raise ValueError(f"dropout_p {dropout_p}: attn_tune has no dropout (give 0.0)")
    if alibi_slopes is not None:
        raise ValueError("alibi_slopes: attn_tune has no ALiBi")
    for t, name in ((q, "q"), (k, "k"), (v, "v")):
        if not _is_torch(t) or t.dim() != 4:
            raise ValueError(f"{name} must be a 4-dimensional PyTorch tensor [B, N, H, D]")
    del deterministic
    o, lse = forward_with_lse(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal, table, softmax_scale,
                              window_size=window_size, softcap=softcap)
    o = o.transpose(1, 2)
    return (o, lse, None) if return_attn_probs else o


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, table=None):
    """FlashAttention's flash_attn_varlen_func on PyTorch tensors: a packed batch of B sequences of
    their own lengths, q [total_q, H, D], k and v [total_k, kv_heads, D] (v may have its own head
    dim dv), sequence b's queries rows cu_seqlens_q[b] to cu_seqlens_q[b + 1] of q, its keys
    cu_seqlens_k[b] to cu_seqlens_k[b + 1] of k and v (cu_seqlens_q and cu_seqlens_k: int32 [B + 1]
    on the GPU, from 0 to total_q and total_k); max_seqlen_q and max_seqlen_k are the longest
    sequence's counts (ints). Causal is bottom-right per sequence; a sequence without keys gives
    O = 0 and LSE = -inf. Returns O [total_q, H, dv] (with return_attn_probs, (O, LSE [H, total_q],
    None); no probabilities are kept). The lengths are not read on the host: wrong offsets are the
    caller's, as with FlashAttention. Dropout, ALiBi and a paged K/V (block_table) are not
    supported: dropout_p other than 0, alibi_slopes or block_table raise ValueError; deterministic
    is accepted (the forward pass always is, and so is the backward but with a table's -dq_atomic
    variant: see attention). window_size and softcap as in flash_attn_func.

    With PyTorch >= 2.4, O is differentiable w.r.t. q, k and v (a window, softcap and V's own head
    dim included): torch.ops.attn_tune.varlen_backward, the autograd formula of
    torch.ops.attn_tune.varlen_forward, runs the C backward on the packed batch (the forward's
    offsets, totals and longest lengths; q, k, v, O and dO made contiguous in q's layout, [total,
    H, D] or [H, total, D] in memory), so torch.compile traces both passes. The offsets and the
    LSE have no gradient. Older PyTorch runs the forward without gradients."""
    if dropout_p:
        raise ValueError(f"dropout_p {dropout_p}: attn_tune has no dropout (give 0.0)")
    if alibi_slopes is not None:
        raise ValueError("alibi_slopes: attn_tune has no ALiBi")
    if block_table is not None:
        raise ValueError("block_table: attn_tune has no paged K/V in a packed batch (forward's block_table= is "
                         "flash_attn_with_kvcache's)")
    for t, name in ((q, "q"), (k, "k"), (v, "v")):
        if not _is_torch(t) or t.dim() != 3:
            raise ValueError(f"{name} must be a 3-dimensional PyTorch tensor [total, H, D]")
    for t, name in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k")):
        if not _is_torch(t):
            raise ValueError(f"{name} must be a PyTorch tensor (int32 [B + 1] on the GPU)")
    del deterministic
    variant = variant_of(window_size, softcap)
    packed = (cu_seqlens_q, cu_seqlens_k, max_seqlen_of(max_seqlen_q, "max_seqlen_q"),
              max_seqlen_of(max_seqlen_k, "max_seqlen_k"))
    if _torch_op is None:
        _register_torch_op()
    causal, table, softmax_scale = _normalized(causal, table, softmax_scale)
    op = _torch_varlen_op
    if op is None or (_eager_ok is not None and _eager_ok(q, k, v)):  # what the op would run, without its dispatch
        o, lse = _torch_call(q, k, v, causal, table, softmax_scale, variant=variant, packed=packed)
    else:
        o, lse = op(q, k, v, *packed, causal, table or "", softmax_scale or 0.0, *variant)
    return (o, lse, None) if return_attn_probs else o


try:  # register the op at import when PyTorch is there, so torch.compile finds it
    import torch as _torch  # noqa: F401
except ImportError:
    pass
else:
    _register_torch_op()
