"""attn_tune._call_cache and the eager fast path's test without PyTorch or a GPU (ctest
python_package_cpu): a repeated call skips every check and the problem's construction, a changed
shape, stride, dtype, device, causal, table or scale misses the cache and is checked again, a
new key's errors are raised as before, a failed first call is not kept, a packed batch's offsets
are set on every call; fake tensors, a fake
library call and a fake torch stand in."""
import types
import unittest

import attn_tune
from attn_tune import _call_cache, _capi


class Device:
    def __init__(self, index):
        self.index, self.type = index, "cuda"

    def __eq__(self, other):
        return isinstance(other, Device) and other.index == self.index

    def __hash__(self):
        return hash(("cuda", self.index))

    def __repr__(self):
        return f"cuda:{self.index}"


class Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


BF16, FP16, FP32 = Dtype("torch.bfloat16"), Dtype("torch.float16"), Dtype("torch.float32")
INT32 = Dtype("torch.int32")


def contiguous(shape):
    strides, run = [], 1
    for n in reversed(shape):
        strides.insert(0, run)
        run *= n
    return tuple(strides)


class Tensor:
    """What the cache reads of a torch.Tensor."""
    next_pointer = 0x100000

    def __init__(self, shape, stride=None, dtype=BF16, device=0):
        self.shape, self._stride = tuple(shape), tuple(stride) if stride else contiguous(shape)
        self.dtype, self.device, self.is_cuda = dtype, Device(device), True
        Tensor.next_pointer += 0x10000
        self.pointer = Tensor.next_pointer

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self.pointer

    def copy_(self, other):
        self.copied_from = other
        return self


class Ops:
    float32 = FP32

    def __init__(self):
        self.allocations = []

    def empty_strided(self, shape, stride, dtype, device):
        self.allocations.append(("empty_strided", tuple(shape), tuple(stride), dtype))
        return Tensor(shape, stride, dtype, device.index)

    def empty(self, shape, dtype, device):
        self.allocations.append(("empty", tuple(shape), dtype))
        return Tensor(shape, None, dtype, device.index)

    def raw_stream(self, index):
        return 0x5000 + index


class Library:
    def __init__(self):
        self.calls, self.status = [], _capi.OK

    def attn_tune_forward(self, handle, q, k, v, o, lse, problem_ref, stream, choice):
        self.calls.append(dict(handle=handle, q=q, k=k, v=v, o=o, lse=lse, problem=problem_ref._obj, stream=stream,
                               choice=choice))
        return self.status


class Harness:
    def __init__(self):
        self.ops, self.lib, self.contexts, self.checked = Ops(), Library(), [], []
        self.cache = _call_cache.CallCache(self.ops, self.context_of, check=self.check)

    def context_of(self, device, table):
        self.contexts.append((device, table))
        return types.SimpleNamespace(_lib=self.lib, _handle=0xC0 + device)

    def check(self, status):
        self.checked.append(status)
        if status != _capi.OK:
            raise attn_tune.AttnTuneError(status, "failed")


def qkv(b=1, h=8, h_kv=8, n=128, d=64, **q_args):
    return Tensor((b, h, n, d), **q_args), Tensor((b, h_kv, n, d)), Tensor((b, h_kv, n, d))


class CallCache(unittest.TestCase):
    def test_a_repeated_call_skips_the_checks_and_the_problem(self):
        t = Harness()
        q, k, v = qkv()
        o1, lse1 = t.cache(q, k, v, True, None, None)
        q2, k2, v2 = qkv()  # new tensors of the same key: new pointers
        o2, lse2 = t.cache(q2, k2, v2, True, None, None)
        self.assertEqual(len(t.contexts), 1, "the context is looked up once per key")
        self.assertEqual(len(t.cache), 1)
        first, second = t.lib.calls
        self.assertIs(first["problem"], second["problem"], "the ctypes problem is made once per key")
        self.assertEqual((second["q"], second["k"], second["v"]), (q2.pointer, k2.pointer, v2.pointer))
        self.assertEqual((second["o"], second["lse"]), (o2.pointer, lse2.pointer))
        self.assertEqual((second["stream"], second["handle"], second["choice"]), (0x5000, 0xC0, None))
        self.assertEqual(t.checked, [_capi.OK], "a repeated call that succeeds looks at no warning")
        p = first["problem"]
        self.assertEqual((p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim, p.causal), (1, 8, 8, 128, 128, 64, 1))
        # Only O (q's shape and strides) and LSE are allocated: two allocations a call.
        self.assertEqual(t.ops.allocations[2:], [("empty_strided", (1, 8, 128, 64), contiguous((1, 8, 128, 64)), BF16),
                                                 ("empty", (1, 8, 128), FP32)])
        self.assertEqual((o1.shape, lse1.shape), ((1, 8, 128, 64), (1, 8, 128)))

    def test_a_changed_stride_dtype_or_device_misses(self):
        t = Harness()
        q, k, v = qkv()
        t.cache(q, k, v, False, None, None)
        bshd = Tensor((1, 8, 128, 64), stride=(128 * 8 * 64, 64, 8 * 64, 1))  # a [B, N, H, D] buffer
        t.cache(bshd, k, v, False, None, None)
        self.assertEqual(len(t.cache), 2)
        self.assertEqual(t.lib.calls[-1]["problem"].layout, _capi.BSHD)
        self.assertEqual(list(t.lib.calls[-1]["problem"].q_strides), [128 * 8 * 64, 64, 8 * 64])
        fp16 = [Tensor(x.shape, dtype=FP16) for x in (q, k, v)]
        t.cache(*fp16, False, None, None)
        self.assertEqual(len(t.cache), 3)
        self.assertEqual(t.lib.calls[-1]["problem"].dtype, _capi.FP16)
        other_device = [Tensor(x.shape, device=1) for x in (q, k, v)]
        t.cache(*other_device, False, None, None)
        self.assertEqual(t.contexts[-1], (1, None))
        self.assertEqual(t.lib.calls[-1]["stream"], 0x5001, "the current stream of q's device")
        self.assertEqual(len(t.cache), 4)

    def test_causal_the_table_and_the_scale_are_in_the_key(self):
        t = Harness()
        q, k, v = qkv()
        for args in ((False, None, None), (True, None, None), (False, "t.json", None), (False, None, 0.5)):
            t.cache(q, k, v, *args)
        self.assertEqual(len(t.cache), 4)
        self.assertEqual(t.contexts[2], (0, "t.json"))
        self.assertEqual(t.lib.calls[3]["problem"].softmax_scale, 0.5)

    def test_the_key_holds_every_field_of_every_tensor(self):
        q, k, v = qkv(h_kv=2)
        base = _call_cache.call_key(q, k, v, False, None, None)
        for i in range(3):
            for change in (dict(shape=(2, 8, 128, 64)), dict(stride=(8 * 128 * 64, 128 * 64, 64 * 2, 1)),
                           dict(dtype=FP16), dict(device=1)):
                tensors = [q, k, v]
                old = tensors[i]
                tensors[i] = Tensor(change.get("shape", old.shape), change.get("stride", old.stride()),
                                    change.get("dtype", old.dtype), change.get("device", old.device.index))
                self.assertNotEqual(_call_cache.call_key(*tensors, False, None, None), base, f"tensor {i}: {change}")
        self.assertNotEqual(_call_cache.call_key(q, k, v, True, None, None), base)
        self.assertNotEqual(_call_cache.call_key(q, k, v, False, "x.csv", None), base)
        self.assertNotEqual(_call_cache.call_key(q, k, v, False, None, 0.1), base)
        self.assertEqual(_call_cache.call_key(*qkv(h_kv=2), False, None, None), base, "pointers are not in it")

    def test_a_new_key_is_checked_as_before(self):
        t = Harness()
        q, k, v = qkv()
        with self.assertRaisesRegex(TypeError, "torch.float32 is not supported"):
            t.cache(*[Tensor(x.shape, dtype=FP32) for x in (q, k, v)], False, None, None)
        with self.assertRaisesRegex(ValueError, "q has 8 heads, not a multiple of k's and v's 3"):
            t.cache(q, Tensor((1, 3, 128, 64)), Tensor((1, 3, 128, 64)), False, None, None)
        with self.assertRaisesRegex(ValueError, "must share a device"):
            t.cache(q, Tensor(k.shape, device=1), v, False, None, None)
        with self.assertRaisesRegex(ValueError, "softmax_scale -1.0 is not a positive finite number"):
            t.cache(q, k, v, False, None, -1.0)
        self.assertEqual((len(t.cache), t.lib.calls), (0, []), "nothing kept, nothing called")

    def test_a_failed_first_call_is_not_kept(self):
        t = Harness()
        q, k, v = qkv()
        t.lib.status = _capi.INVALID_ARGUMENT
        with self.assertRaises(attn_tune.AttnTuneError):
            t.cache(q, k, v, False, None, None)
        self.assertEqual(len(t.cache), 0)
        t.lib.status = _capi.OK
        t.cache(q, k, v, False, None, None)
        t.lib.status = _capi.DEVICE  # a repeated call's failure is raised too
        with self.assertRaises(attn_tune.AttnTuneError):
            t.cache(q, k, v, False, None, None)
        self.assertEqual(len(t.contexts), 2)

    def test_v_with_other_strides_than_k_is_copied_to_k_s(self):
        t = Harness()
        q, k, _ = qkv()
        v = Tensor(k.shape, stride=(128 * 8 * 64, 64, 8 * 64, 1))
        t.cache(q, k, v, False, None, None)
        t.cache(q, k, v, False, None, None)
        copies = [a for a in t.ops.allocations if a[0] == "empty_strided" and a[2] == k.stride() and a[1] == k.shape]
        self.assertEqual(len(copies), 2 + 2, "each call copies V (and allocates O, of the same layout here)")
        self.assertNotEqual(t.lib.calls[-1]["v"], v.pointer)
        with self.assertRaisesRegex(ValueError, "v has shape .* they must match"):
            t.cache(q, k, Tensor((1, 1, 128, 64), stride=(64 * 128, 64, 64 * 2, 1)), False, None, None)

    def test_a_packed_batch_is_prepared_once_and_its_offsets_set_on_each_call(self):
        t = Harness()
        q, k, v = Tensor((517, 8, 64)), Tensor((900, 2, 64)), Tensor((900, 2, 64))  # [total, H, D]
        cu_q, cu_k = Tensor((4,), dtype=INT32), Tensor((4,), dtype=INT32)
        o, lse = t.cache(q, k, v, True, None, None, packed=(cu_q, cu_k, 300, 700))
        p = t.lib.calls[0]["problem"]
        self.assertEqual((p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.total_q, p.total_k), (3, 8, 2, 300, 700, 517, 900))
        self.assertEqual((p.cu_seqlens_q, p.cu_seqlens_k), (cu_q.pointer, cu_k.pointer))
        self.assertEqual((list(p.q_strides), list(p.kv_strides)), ([0, 64, 8 * 64], [0, 64, 2 * 64]))
        self.assertEqual(t.ops.allocations, [("empty_strided", (517, 8, 64), contiguous((517, 8, 64)), BF16),
                                             ("empty", (8, 517), FP32)], "O like q, the LSE [H, total_q]")
        cu_q2, cu_k2 = Tensor((4,), dtype=INT32), Tensor((4,), dtype=INT32)  # the same key, other offsets
        t.cache(q, k, v, True, None, None, packed=(cu_q2, cu_k2, 300, 700))
        self.assertEqual(len(t.cache), 1)
        self.assertIs(t.lib.calls[1]["problem"], p)
        self.assertEqual((p.cu_seqlens_q, p.cu_seqlens_k), (cu_q2.pointer, cu_k2.pointer))
        t.cache(q, k, v, True, None, None, packed=(cu_q2, cu_k2, 301, 700))  # another longest sequence
        self.assertEqual(len(t.cache), 2)
        self.assertEqual(t.lib.calls[2]["problem"].q_len, 301)
        dense_key = _call_cache.call_key(q, k, v, True, None, None)
        self.assertNotEqual(_call_cache.call_key(q, k, v, True, None, None, packed=(cu_q, cu_k, 300, 700)), dense_key)
        with self.assertRaisesRegex(ValueError, "cu_seqlens_k is on device 1, q on 0"):
            t.cache(q, k, v, True, None, None, packed=(cu_q, Tensor((4,), dtype=INT32, device=1), 300, 700))
        with self.assertRaisesRegex(TypeError, "cu_seqlens_q must be a torch.int32 tensor"):
            t.cache(q, k, v, True, None, None, packed=(Tensor((4,)), cu_k, 300, 700))
        with self.assertRaisesRegex(ValueError, r"cu_seqlens_k has shape \[5\]: expected \[4\]"):
            t.cache(q, k, v, True, None, None, packed=(cu_q, Tensor((5,), dtype=INT32), 300, 700))
        self.assertEqual(len(t.cache), 2, "a refused call is not kept")

    def test_the_cache_is_bounded(self):
        t = Harness()
        saved = _call_cache.MAX_ENTRIES
        _call_cache.MAX_ENTRIES = 3
        try:
            for n in range(64, 64 * 6, 64):
                t.cache(*qkv(n=n), False, None, None)
            self.assertLessEqual(len(t.cache), 3)
        finally:
            _call_cache.MAX_ENTRIES = saved


def fake_torch(**overrides):
    class T:
        pass

    state = dict(compiling=False, dispatch=0, function_mode=False, profiling=False, grad=True)
    state.update(overrides)
    c = types.SimpleNamespace(_len_torch_dispatch_stack=lambda: state["dispatch"],
                              _is_torch_function_mode_enabled=lambda: state["function_mode"],
                              _functorch=types.SimpleNamespace(is_functorch_wrapped_tensor=lambda t: getattr(t, "wrapped", False)),
                              _autograd=types.SimpleNamespace(_profiler_enabled=lambda: state["profiling"]))
    torch = types.SimpleNamespace(Tensor=T, _C=c, compiler=types.SimpleNamespace(is_compiling=lambda: state["compiling"]),
                                  is_grad_enabled=lambda: state["grad"])
    return torch, T, state


class FastPath(unittest.TestCase):
    def test_only_an_untraced_call_without_gradients_skips_the_op(self):
        torch, T, state = fake_torch()
        ok = attn_tune._fast_path_check(torch)
        q = T()
        q.requires_grad = False
        self.assertTrue(ok(q, q, q))
        for key, value in (("compiling", True), ("dispatch", 1), ("function_mode", True), ("profiling", True)):
            saved = state[key]
            state[key] = value
            self.assertFalse(ok(q, q, q), key)
            state[key] = saved
        grad = T()
        grad.requires_grad = True
        self.assertFalse(ok(q, grad, q), "a gradient asked for")
        state["grad"] = False
        self.assertTrue(ok(q, grad, q), "under no_grad")
        sub = type("FakeTensor", (T,), {})()
        sub.requires_grad = False
        self.assertFalse(ok(q, q, sub), "a tensor subclass")
        wrapped = T()
        wrapped.requires_grad, wrapped.wrapped = False, True
        self.assertFalse(ok(wrapped, q, q), "a functorch-wrapped tensor")

    def test_a_torch_without_the_tests_gets_no_fast_path(self):
        torch, _, _ = fake_torch()
        del torch._C._len_torch_dispatch_stack
        self.assertIsNone(attn_tune._fast_path_check(torch))

    def test_the_arguments_are_normalized_as_the_op_takes_them(self):
        self.assertEqual(attn_tune._normalized(1, "", 0.0), (True, None, None))
        self.assertEqual(attn_tune._normalized(False, "t.csv", 0.5), (False, "t.csv", 0.5))
        self.assertEqual(attn_tune._normalized(False, None, -1), (False, None, -1.0), "kept, to be refused")


if __name__ == "__main__":
    unittest.main()
