"""What a PyTorch call of attn_tune.forward (or flash_attn_varlen_func) works out once per key, so
that a repeated call only allocates O and LSE, reads the current stream and calls the C library.

A new key takes every check of the first call (each tensor described and checked, the devices
compared, the C API's problem made and checked by make_problem, the context looked up) and the C
call's own checks and warnings; its entry is kept only after that call succeeded. The key holds
everything the entry depends on: each tensor's shape, strides, dtype and device, causal, the
table and the scale (and a KV cache's or packed batch's index tensors' shapes, and the longest
sequences), so a changed stride or dtype is a new key. Pointers are not in it: the index tensors'
are set in the problem on every call; the C library checks them all (null, alignment) on every
call and keys its own launch plans by them (src/library/plan_key.hpp).

The torch calls come through `ops` (TorchOps), so the tests can run this without PyTorch or a GPU.
"""
import ctypes

from . import _capi
from .tensors import (NO_VARIANT, cache_info, TensorInfo, describe, make_problem, make_varlen_problem, out_layout,
                      packed_out_layout)

MAX_ENTRIES = 4096  # then the cache starts again empty (a key is a few hundred bytes)


def call_key(q, k, v, causal, table, softmax_scale, cache_seqlens=None, block_table=None, variant=NO_VARIANT,
             packed=None):
    """Everything a prepared call depends on, for tensors q, k, v (and a KV cache's index tensors,
    a window and softcap, a packed batch's (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k))."""
    key = (q.shape, q.stride(), q.dtype, q.device, k.shape, k.stride(), k.dtype, k.device,
           v.shape, v.stride(), v.dtype, v.device, causal, table, softmax_scale)
    if variant != NO_VARIANT:
        key += variant
    if packed is not None:
        cu_q, cu_k, max_q, max_k = packed
        key += ("packed", cu_q.shape, cu_q.stride(), cu_q.dtype, cu_q.device, cu_k.shape, cu_k.stride(), cu_k.dtype,
                cu_k.device, max_q, max_k)
    if cache_seqlens is None and block_table is None:
        return key
    for t in (cache_seqlens, block_table):
        key += (None,) if t is None else (t.shape, t.stride(), t.dtype, t.device)
    return key


class TorchOps:
    """The few torch calls a call makes: allocations and the current stream."""

    def __init__(self, torch):
        self.empty_strided, self.empty, self.float32 = torch.empty_strided, torch.empty, torch.float32
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # a C call, no Stream object
        self.raw_stream = raw if raw is not None else (lambda index: torch.cuda.current_stream(index).cuda_stream)


class PreparedCall:
    """One key's problem (and the pointer ctypes passes for it), context, and outputs' layout."""
    __slots__ = ("problem", "problem_ref", "forward", "handle", "context", "out_shape", "out_stride", "dtype",
                 "device", "device_index", "lse_shape", "copy_v", "kv_cache", "packed")


def prepare(q, k, v, causal, table, softmax_scale, context_of, cache_seqlens=None, block_table=None,
            variant=NO_VARIANT, packed=None):
    """A new key's checks; TypeError/ValueError naming what is wrong, as the first call raised."""
    qi, ki, vi = describe(q, "q"), describe(k, "k"), describe(v, "v")
    si, ti = cache_info(cache_seqlens, "cache_seqlens"), cache_info(block_table, "block_table")
    ui = wi = None
    if packed is not None:
        ui, wi = cache_info(packed[0], "cu_seqlens_q"), cache_info(packed[1], "cu_seqlens_k")
    for info, name in ((si, "cache_seqlens"), (ti, "block_table"), (ui, "cu_seqlens_q"), (wi, "cu_seqlens_k")):
        if info is not None and info.device != qi.device:
            raise ValueError(f"{name} is on device {info.device}, q on {qi.device}: they must share a device")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v are on {q.device}, {k.device}, {v.device}: they must share a device")
    # With dv = d the kernels read K and V with one set of strides: V is copied when its differ.
    # With dv != d V has its own.
    copy_v = vi.shape[-1] == ki.shape[-1] and vi.strides != ki.strides
    if copy_v:
        vi = TensorInfo(vi.pointer, vi.shape, ki.strides, vi.dtype, vi.device)
    p = PreparedCall()
    if packed is None:
        p.problem = make_problem(qi, ki, vi, causal, softmax_scale, si, ti, variant)
        p.out_shape, p.out_stride = out_layout(tuple(q.shape), tuple(q.stride()), vi.shape[3])
        p.lse_shape = (qi.shape[0], qi.shape[1], qi.shape[2])
    else:  # [total, H, D]; the LSE [H, total_q]
        p.problem = make_varlen_problem(qi, ki, vi, ui, wi, packed[2], packed[3], causal, softmax_scale, variant)
        p.out_shape, p.out_stride = packed_out_layout(tuple(q.shape), tuple(q.stride()), vi.shape[2])
        p.lse_shape = (qi.shape[1], qi.shape[0])
    p.problem_ref = ctypes.byref(p.problem)
    p.context = context_of(qi.device, table)
    p.forward, p.handle = p.context._lib.attn_tune_forward, p.context._handle
    p.dtype, p.device, p.device_index = q.dtype, q.device, qi.device
    p.copy_v = copy_v
    # Their pointers go into the problem on every call.
    p.kv_cache, p.packed = si is not None or ti is not None, packed is not None
    return p


class CallCache:
    """forward(q, k, v, causal, table, softmax_scale) -> (o, lse) for PyTorch tensors."""

    def __init__(self, ops, context_of, check=_capi.check):
        self._ops, self._context_of, self._check, self._entries = ops, context_of, check, {}

    def __len__(self):
        return len(self._entries)

    def clear(self):
        self._entries.clear()

    def __call__(self, q, k, v, causal, table, softmax_scale, cache_seqlens=None, block_table=None,
                 variant=NO_VARIANT, packed=None):
        key = call_key(q, k, v, causal, table, softmax_scale, cache_seqlens, block_table, variant, packed)
        entry = self._entries.get(key)
        if entry is None:
            entry = prepare(q, k, v, causal, table, softmax_scale, self._context_of, cache_seqlens, block_table,
                            variant, packed)
            o, lse = self._run(entry, q, k, v, True, cache_seqlens, block_table, packed)
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = entry
            return o, lse
        return self._run(entry, q, k, v, False, cache_seqlens, block_table, packed)

    def _run(self, e, q, k, v, first, cache_seqlens=None, block_table=None, packed=None):
        ops = self._ops
        if e.kv_cache:
            e.problem.cache_seqlens = cache_seqlens.data_ptr() if cache_seqlens is not None else None
            e.problem.block_table = block_table.data_ptr() if block_table is not None else None
        if e.packed:
            e.problem.cu_seqlens_q, e.problem.cu_seqlens_k = packed[0].data_ptr(), packed[1].data_ptr()
        if e.copy_v:
            v = ops.empty_strided(k.shape, k.stride(), dtype=v.dtype, device=v.device).copy_(v)
        o = ops.empty_strided(e.out_shape, e.out_stride, dtype=e.dtype, device=e.device)
        lse = ops.empty(e.lse_shape, dtype=ops.float32, device=e.device)
        status = e.forward(e.handle, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                           e.problem_ref, ops.raw_stream(e.device_index), None)
        # The first call of a key turns the library's warnings into Python's (check); a repeated
        # one runs no compile or table read that could warn, so only a failure is looked at.
        if first or status != _capi.OK:
            self._check(status)
        return o, lse
