"""attn_tune: attn-tune's tuned attention kernels from Python, over libattn_tune's C API (ctypes).

    import attn_tune
    o = attn_tune.forward(q, k, v, causal=True, table="results/h200.json")

q, k, v are [B, H, N, D] (k and v may have fewer heads: GQA), bf16 or fp16, on a CUDA device, in
either memory layout (see attn_tune.tensors). The call is enqueued on the current CUDA stream and
does not synchronize. With PyTorch importable, forward is the custom op torch.ops.attn_tune.forward,
with a fake implementation, so torch.compile traces through it. Importing needs neither PyTorch,
a GPU nor the library: the first call loads libattn_tune.so (see attn_tune._capi.candidates).
"""
import ctypes
import sys
import threading

from . import _capi
from ._capi import AttnTuneError, LibraryNotFoundError
from .tensors import describe, make_problem

__all__ = ["forward", "forward_with_lse", "lookup", "context", "AttnTuneError", "LibraryNotFoundError",
           "library_version"]

_contexts = {}
_contexts_lock = threading.Lock()


class Context:
    """One device's libattn_tune context (kernel cache, tuned table, loaded kernels)."""

    def __init__(self, device=0, table=None, bundle=None, cache_dir=None):
        lib = _capi.library()
        options = _capi.ContextOptions()
        options.struct_size = ctypes.sizeof(_capi.ContextOptions)
        options.device = device
        options.cache_dir = cache_dir.encode() if cache_dir is not None else None
        options.table = table.encode() if table else None
        options.bundle = bundle.encode() if bundle else None
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


def lookup(table, device_name, cc, sm_count, batch, heads, q_len, head_dim, kv_heads=None, kv_len=None,
           dtype="bf16", causal=False, layout="bhsd"):
    """Which config a device would run for a shape, from a table file, without a GPU."""
    lib = _capi.library()
    p = _capi.Problem()
    p.struct_size = ctypes.sizeof(_capi.Problem)
    p.batch, p.heads, p.q_len, p.head_dim = batch, heads, q_len, head_dim
    p.kv_heads = heads if kv_heads is None else kv_heads
    p.kv_len = q_len if kv_len is None else kv_len
    p.dtype = {"bf16": _capi.BF16, "fp16": _capi.FP16}.get(dtype, 99)
    p.layout = {"bhsd": _capi.BHSD, "bshd": _capi.BSHD}.get(layout, 99)
    p.causal = 1 if causal else 0
    handle = ctypes.c_void_p()
    _capi.check(lib.attn_tune_table_load(table.encode(), ctypes.byref(handle)))
    try:
        choice = _capi.new_choice()
        major, minor = (int(x) for x in str(cc).split("."))
        _capi.check(lib.attn_tune_table_lookup(handle, device_name.encode(), major, minor, sm_count,
                                               ctypes.byref(p), ctypes.byref(choice)))
        return choice.as_dict()
    finally:
        lib.attn_tune_table_destroy(handle)


def _forward_torch_eager(q, k, v, causal, table, softmax_scale):
    import torch

    if v.stride() != k.stride():  # the kernels read K and V with one set of strides
        v = torch.empty_strided(k.shape, k.stride(), dtype=v.dtype, device=v.device).copy_(v)
    qi, ki, vi = describe(q, "q"), describe(k, "k"), describe(v, "v")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v are on {q.device}, {k.device}, {v.device}: they must share a device")
    problem = make_problem(qi, ki, vi, causal, softmax_scale)
    o = torch.empty_strided(q.shape, q.stride(), dtype=q.dtype, device=q.device)
    lse = torch.empty((q.shape[0], q.shape[1], q.shape[2]), dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    context(qi.device, table).forward(qi.pointer, ki.pointer, vi.pointer, o.data_ptr(), lse.data_ptr(), problem,
                                      stream)
    return o, lse


def _forward_cai(q, k, v, causal, table, softmax_scale, out, lse, stream, device):
    qi, ki, vi = describe(q, "q"), describe(k, "k"), describe(v, "v")
    problem = make_problem(qi, ki, vi, causal, softmax_scale)
    if out is None or lse is None:
        import cupy  # CuPy arrays: allocate like q

        out = cupy.ndarray(q.shape, dtype=q.dtype, memptr=cupy.cuda.alloc(q.nbytes), strides=q.strides)
        lse = cupy.empty((qi.shape[0], qi.shape[1], qi.shape[2]), dtype=cupy.float32)
        stream = stream if stream is not None else cupy.cuda.get_current_stream().ptr
    oi = describe(out, "out")
    if oi.strides != qi.strides or oi.shape != qi.shape:
        raise ValueError(f"out has shape {list(oi.shape)} and strides {list(oi.strides)}: it must match q's")
    lse_ptr = lse.__cuda_array_interface__["data"][0]
    context(device, table).forward(qi.pointer, ki.pointer, vi.pointer, oi.pointer, lse_ptr, problem, stream or 0)
    return out, lse


_torch_op = None


def _register_torch_op():
    """torch.ops.attn_tune.forward: a custom op with a fake implementation (torch >= 2.4)."""
    global _torch_op
    import torch

    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        return None

    @torch.library.custom_op("attn_tune::forward", mutates_args=())
    def _op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, table: str,
            softmax_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
        return _forward_torch_eager(q, k, v, causal, table or None, softmax_scale if softmax_scale > 0 else None)

    @_op.register_fake
    def _(q, k, v, causal, table, softmax_scale):
        o = torch.empty_strided(q.shape, q.stride(), dtype=q.dtype, device=q.device)
        return o, q.new_empty((q.shape[0], q.shape[1], q.shape[2]), dtype=torch.float32)

    _torch_op = _op
    return _op


def _is_torch(t):
    return type(t).__module__.startswith("torch") and hasattr(t, "data_ptr")


def forward_with_lse(q, k, v, causal=False, table=None, softmax_scale=None, out=None, lse=None, stream=None,
                     device=0):
    """(O, LSE): LSE is float32 [B, H, N_q], natural log. For __cuda_array_interface__ objects other
    than CuPy's, pass `out` (like q), `lse`, `stream` (a cudaStream_t as int) and `device`."""
    if _is_torch(q):
        op = _torch_op or _register_torch_op()
        if op is not None:
            return op(q, k, v, bool(causal), table or "", float(softmax_scale or 0.0))
        return _forward_torch_eager(q, k, v, causal, table, softmax_scale)
    return _forward_cai(q, k, v, causal, table, softmax_scale, out, lse, stream, device)


def forward(q, k, v, causal=False, table=None, softmax_scale=None, **kwargs):
    """O = softmax(Q K^T * scale [+ bottom-right causal mask]) V with the tuned kernel."""
    return forward_with_lse(q, k, v, causal, table, softmax_scale, **kwargs)[0]


try:  # register the op at import when PyTorch is there, so torch.compile finds it
    import torch as _torch  # noqa: F401
except ImportError:
    pass
else:
    _register_torch_op()
