"""attn_tune.attention and the backward's C API without a GPU, PyTorch or the library (ctest
python_package_cpu): the choice struct of API version 7 (the variant at its end), attention in
__all__ with only the arguments the backward takes and its argument checks, a clear ImportError
without PyTorch, the API-version guard of attn_tune_backward (a fake library of version 6), and
what the backward hands the C call: each tensor contiguous in q's layout (copied only where it is
not), the problem's layout with strides 0, a window's fields and softcap as the forward sets them,
the pointers in the header's order (fake tensors and a fake torch stand in); V's own head dim
(dv != d: head_dim_v, V's and O's strides 0, dV shaped like V); attn_tune::forward's autograd
formula (through a fake torch.library) handing the forward's window, softcap and V's head dim to
the C call; the backward's refusals (a KV cache; a window, softcap and V's own head dim are none of
them); a packed variable-length batch's backward (_backward_call's packed=, the
attn_tune::varlen_backward op and attn_tune::varlen_forward's autograd formula): the offsets'
pointers, total_q/total_k, B and the longest lengths, the layout ([total, H, D] or [H, total, D]
memory) with strides 0, head_dim_v, the window and softcap, every field as the forward's
make_varlen_problem sets it, delta [H, total_q], the gradients' shapes and strides and the fake's.
ATTN_TUNE_TEST_LIBRARY names a built libattn_tune.so of version 6 or 7."""
import ctypes
import inspect
import itertools
import math
import os
import subprocess
import sys
import types
import unittest

import attn_tune
from attn_tune import _capi, tensors

LIBRARY = os.environ.get("ATTN_TUNE_TEST_LIBRARY", "")
BACKWARD_VARIANT = "kv_m32_n64_w4_s2-q_m64_n64_w4_s2"


class TorchLike:
    """What attention's checks read of a torch.Tensor (its type's module says "torch")."""
    __module__ = "torch"

    def __init__(self, shape):
        self.shape = tuple(shape)

    def data_ptr(self):
        return 0x10000

    def dim(self):
        return len(self.shape)


class TheStructs(unittest.TestCase):
    def test_the_choice_gains_the_variant_at_its_end(self):
        version6 = type("Choice6", (ctypes.Structure,), {"_fields_": _capi.Choice._fields_[:-1]})
        self.assertEqual(ctypes.sizeof(version6), 60)  # sizeof(attn_tune_choice) of API version 6
        self.assertEqual(ctypes.sizeof(_capi.Choice), ctypes.sizeof(version6) + 64)
        name, kind = _capi.Choice._fields_[-1]
        self.assertEqual((name, kind), ("variant", ctypes.c_char * 64))
        self.assertEqual(_capi.Choice.variant.offset, 60)
        self.assertEqual(_capi.new_choice().struct_size, ctypes.sizeof(_capi.Choice))

    def test_the_problem_is_unchanged(self):
        self.assertEqual(ctypes.sizeof(_capi.Problem), 264)
        self.assertEqual((_capi.API_VERSION, _capi.OLDEST_API_VERSION), (7, 6))

    def test_as_dict_names_the_variant(self):
        c = _capi.new_choice()
        self.assertEqual(c.as_dict()["variant"], "", "an older library leaves the zeroed field: ''")
        c.family, c.config, c.variant = b"fa2", b"m32_n64_w4_s2", BACKWARD_VARIANT.encode()
        self.assertEqual(c.as_dict(), {"source": "tuned", "family": "fa2", "config": "m32_n64_w4_s2",
                                       "from_bundle": False, "variant": BACKWARD_VARIANT})


class FakeLibrary:
    """A library of `version`: attn_tune_backward only from version 7 (unless `backward` says)."""

    def __init__(self, version, backward=None):
        self.version, self.calls = version, []
        if backward if backward is not None else version >= 7:
            self.attn_tune_backward = self._backward

    def attn_tune_api_version(self):
        return self.version

    def attn_tune_last_warning(self):
        return b""

    def attn_tune_last_error(self):
        return b""

    def attn_tune_context_destroy(self, handle):
        pass

    def _backward(self, *args):
        self.calls.append(args)
        args[-1]._obj.variant = BACKWARD_VARIANT.encode()  # the choice, through ctypes.byref
        return _capi.OK


def a_context(lib):
    ctx = attn_tune.Context.__new__(attn_tune.Context)  # no library call: a fake's context
    ctx._lib, ctx._handle, ctx.device = lib, 0xC0, 0
    return ctx


class TheVersionGuard(unittest.TestCase):
    def setUp(self):
        self.saved = _capi._library

    def tearDown(self):
        _capi._library = self.saved

    def test_a_version_6_library_has_no_backward(self):
        with self.assertRaises(attn_tune.AttnTuneError) as e:
            _capi.backward_function(FakeLibrary(6))
        self.assertEqual(e.exception.status, _capi.UNSUPPORTED)
        self.assertIn("libattn_tune API 6 has no attn_tune_backward: rebuild it", str(e.exception))
        with self.assertRaisesRegex(attn_tune.AttnTuneError, "libattn_tune API 6 has no attn_tune_backward"):
            a_context(FakeLibrary(6)).backward(*[0] * 10, _capi.Problem())

    def test_a_version_7_library_without_the_symbol_is_named(self):
        with self.assertRaisesRegex(attn_tune.AttnTuneError, "libattn_tune API 7 has no attn_tune_backward"):
            _capi.backward_function(FakeLibrary(7, backward=False))

    def test_context_backward_passes_its_arguments_in_the_headers_order(self):
        lib = FakeLibrary(7)
        _capi._library = lib  # check() asks the loaded library for its warnings
        problem = _capi.Problem()
        choice = a_context(lib).backward(*range(1, 11), problem, stream=0x5000)
        (call,) = lib.calls
        self.assertEqual(call[:11], (0xC0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))  # ctx, q, k, v, o, lse, dO, dq, dk, dv, delta
        self.assertIs(call[11]._obj, problem)
        self.assertEqual(call[12], 0x5000)
        self.assertEqual(choice["variant"], BACKWARD_VARIANT)


class TheAttentionFunction(unittest.TestCase):
    def test_it_is_public_and_takes_only_what_the_backward_takes(self):
        self.assertIn("attention", attn_tune.__all__)
        self.assertIn("attention(q, k, v", attn_tune.__doc__, "the module docstring documents it")
        params = list(inspect.signature(attn_tune.attention).parameters)
        self.assertEqual(params, ["q", "k", "v", "causal", "softmax_scale", "table"])

    def test_bad_arguments_are_named(self):
        q, kv = TorchLike((2, 8, 128, 64)), TorchLike((2, 2, 128, 64))
        cases = ((TypeError, r"q is a list: attention takes PyTorch tensors", ([1], kv, kv), {}),
                 (ValueError, r"k has shape \[2, 128, 64\]: expected 4 dimensions", (q, TorchLike((2, 128, 64)), kv),
                  {}),
                 (ValueError, r"v's head dim 60: attention takes multiples of 8 up to 256",
                  (q, kv, TorchLike((2, 2, 128, 60))), {}),
                 (ValueError, r"v's head dim 264", (q, kv, TorchLike((2, 2, 128, 264))), {}),
                 (ValueError, r"head dim 60: attention takes multiples of 8 up to 256",
                  (TorchLike((1, 1, 8, 60)),) * 3, {}),
                 (ValueError, r"head dim 264", (TorchLike((1, 1, 8, 264)),) * 3, {}),
                 (TypeError, r"causal is 'yes': expected True or False", (q, kv, kv), {"causal": "yes"}),
                 (TypeError, r"softmax_scale is '0.1': expected a number", (q, kv, kv), {"softmax_scale": "0.1"}),
                 (TypeError, r"softmax_scale is True", (q, kv, kv), {"softmax_scale": True}),
                 (ValueError, r"softmax_scale -1.0 is not a positive finite number", (q, kv, kv),
                  {"softmax_scale": -1.0}),
                 (ValueError, r"softmax_scale nan", (q, kv, kv), {"softmax_scale": math.nan}),
                 (TypeError, r"table is 3: expected a path", (q, kv, kv), {"table": 3}))
        for error, message, args, kwargs in cases:
            with self.subTest(message=message), self.assertRaisesRegex(error, message):
                attn_tune.attention(*args, **kwargs)
        with self.assertRaises(TypeError, msg="window_size is not a parameter: Python refuses it"):
            attn_tune.attention(q, kv, kv, window_size=(128, 0))

    def test_without_pytorch_an_import_error_says_so(self):
        # PyTorch made unimportable (whether or not it is installed), the arguments otherwise good.
        # V with a head dim of its own (d 192, dv 128) passes the argument checks too.
        code = ("import sys\n"
                "sys.modules['torch'] = None\n"
                "import attn_tune\n"
                "class T:\n"
                "    __module__ = 'torch'\n"
                "    def __init__(self, d): self.shape = (1, 8, 128, d)\n"
                "    def data_ptr(self): return 0x10000\n"
                "    def dim(self): return 4\n"
                "for d, dv in ((64, 64), (192, 128)):\n"
                "    try:\n"
                "        attn_tune.attention(T(d), T(d), T(dv), causal=True)\n"
                "    except ImportError as e:\n"
                "        print(d, dv, e)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for d, dv in ((64, 64), (192, 128)):
            self.assertIn(f"{d} {dv} attn_tune.attention needs PyTorch: import torch failed", out.stdout, out.stderr)

    def test_the_refusals_of_the_backward_are_named(self):
        self.assertEqual(attn_tune._backward_refusal(None, None), "")
        self.assertEqual(attn_tune._backward_refusal(object(), None), "cache_seqlens")
        self.assertEqual(attn_tune._backward_refusal(None, object()), "block_table")
        self.assertEqual(attn_tune._backward_refusal(object(), object()), "cache_seqlens, block_table")

    def test_a_window_softcap_and_vs_own_head_dim_are_no_refusal(self):
        # The backward takes all three: they have no say in the refusals, and none of them names them.
        params = list(inspect.signature(attn_tune._backward_refusal).parameters)
        self.assertEqual(params, ["cache_seqlens", "block_table"])
        for word in ("window", "softcap", "head dim", "dv"):
            self.assertNotIn(word, attn_tune._backward_refusal(object(), object()))


# A fake torch for the backward's own work (_backward_call): tensors of shape and strides only.
class Device:
    def __init__(self, index):
        self.index, self.type = index, "cuda"


class Tensor:
    next_pointer = 0x100000

    def __init__(self, shape, stride=None, dtype="torch.bfloat16", pointer=None, copied=False):
        self.shape, self._stride = tuple(shape), tuple(stride or contiguous(shape))
        self.dtype, self.device, self.is_cuda, self.copied = dtype, Device(0), True, copied
        if pointer is None:
            Tensor.next_pointer += 0x100000
            pointer = Tensor.next_pointer
        self.pointer = pointer

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]

    def data_ptr(self):
        return self.pointer

    def transpose(self, a, b):
        shape, stride = list(self.shape), list(self._stride)
        shape[a], shape[b], stride[a], stride[b] = shape[b], shape[a], stride[b], stride[a]
        return Tensor(shape, stride, self.dtype, self.pointer, self.copied)

    def is_contiguous(self):
        return all(s == w for s, w, n in zip(self._stride, contiguous(self.shape), self.shape) if n > 1)

    def contiguous(self):
        return self if self.is_contiguous() else Tensor(self.shape, None, self.dtype, copied=True)

    def clone(self):
        return Tensor(self.shape, self._stride, self.dtype, copied=True)

    def to(self, dtype):
        return self if dtype == self.dtype else Tensor(self.shape, self._stride, dtype, copied=True)


def contiguous(shape):
    strides, run = [], 1
    for n in reversed(shape):
        strides.insert(0, run)
        run *= n
    return tuple(strides)


class FakeTorch:
    float32 = "torch.float32"

    def __init__(self):
        self.cuda = types.SimpleNamespace(current_stream=lambda device: types.SimpleNamespace(cuda_stream=0x5000))

    @staticmethod
    def empty(shape, dtype, device):
        return Tensor(shape, None, dtype)


def bshd(b, h, n, d, **kw):
    """A [B, H, N, D] view of a contiguous [B, N, H, D] tensor."""
    return Tensor((b, n, h, d), **kw).transpose(1, 2)


class RecordsTheCCall:
    """A fake attn_tune.context whose backward records its arguments in self.calls."""

    def setUp(self):
        self.calls, self.saved = [], attn_tune.context

        def context(device, table):
            self.calls.append({"device": device, "table": table})
            return types.SimpleNamespace(backward=lambda *args: self.calls[-1].update(args=args))

        attn_tune.context = context

    def tearDown(self):
        attn_tune.context = self.saved


class TheBackwardCall(RecordsTheCCall, unittest.TestCase):

    def run_backward(self, q, k, v, o, d_o, causal=True, window=None, softcap=None):
        lse = Tensor((q.shape[0], q.shape[1], q.shape[2]), dtype="torch.float32")
        kwargs = {} if softcap is None else {"softcap": softcap}  # None: _backward_call's default
        grads = attn_tune._backward_call(FakeTorch(), d_o, q, k, v, o, lse, causal, "t.csv", 0.5, *(window or ()),
                                         **kwargs)
        (call,) = self.calls
        call["lse"] = lse
        return grads, call

    def test_a_bshd_model_runs_without_a_copy(self):
        q, k, v = bshd(2, 8, 300, 64), bshd(2, 2, 300, 64), bshd(2, 2, 300, 64)
        o, d_o = bshd(2, 8, 300, 64), bshd(2, 8, 300, 64)
        (dq, dk, dv), call = self.run_backward(q, k, v, o, d_o)
        ptrs, problem, stream = call["args"][:10], call["args"][10], call["args"][11]
        self.assertEqual(ptrs[:6], tuple(t.pointer for t in (q, k, v, o, call["lse"], d_o)), "no copy")
        self.assertEqual(ptrs[6:9], (dq.pointer, dk.pointer, dv.pointer))
        self.assertNotIn(ptrs[9], ptrs[:9], "delta: scratch of its own")
        self.assertEqual((call["device"], call["table"], stream), (0, "t.csv", 0x5000))
        self.assertEqual(problem.layout, _capi.BSHD)
        self.assertEqual((list(problem.q_strides), list(problem.kv_strides)), ([0, 0, 0], [0, 0, 0]))
        self.assertEqual((problem.batch, problem.heads, problem.kv_heads, problem.q_len, problem.head_dim),
                         (2, 8, 2, 300, 64))
        self.assertEqual((problem.causal, problem.softmax_scale, problem.dtype), (1, 0.5, _capi.BF16))
        # The gradients are shaped like q, k, v, contiguous in the same layout.
        self.assertEqual((dq.shape, dq.stride()), ((2, 8, 300, 64), (300 * 8 * 64, 64, 8 * 64, 1)))
        self.assertEqual((dk.shape, dk.stride()), ((2, 2, 300, 64), (300 * 2 * 64, 64, 2 * 64, 1)))

    def test_views_of_a_fused_projection_and_a_broadcast_grad_are_copied(self):
        # q, k, v as transformer_block.py makes them: views of one [B, N, H + 2 kv_heads, D] tensor.
        b, n, h, h_kv, d = 1, 128, 8, 2, 64
        fused = (n * (h + 2 * h_kv) * d, d, (h + 2 * h_kv) * d, 1)
        q = Tensor((b, h, n, d), fused)
        k = Tensor((b, h_kv, n, d), fused, pointer=q.pointer + h * d * 2)
        v = Tensor((b, h_kv, n, d), fused, pointer=q.pointer + (h + h_kv) * d * 2)
        o = Tensor((b, h, n, d), fused)  # the forward gives O q's strides
        d_o = Tensor((b, h, n, d), (0, 0, 0, 0))  # the gradient of o.sum(), expanded
        _, call = self.run_backward(q, k, v, o, d_o)
        ptrs, problem = call["args"][:10], call["args"][10]
        for pointer, t in zip(ptrs, (q, k, v, o)):
            self.assertNotEqual(pointer, t.pointer, "copied into the bshd layout")
        self.assertNotEqual(ptrs[5], d_o.pointer)
        self.assertEqual(problem.layout, _capi.BSHD)

    def test_bhsd_and_a_misaligned_view(self):
        q, k, v, o = (Tensor((1, 4, 100, 128)) for _ in range(4))
        d_o = Tensor((1, 4, 100, 128), pointer=0x300008)  # contiguous, but not 16-byte aligned
        _, call = self.run_backward(q, k, v, o, d_o, causal=False)
        ptrs, problem = call["args"][:10], call["args"][10]
        self.assertEqual(ptrs[:4], tuple(t.pointer for t in (q, k, v, o)))
        self.assertNotEqual(ptrs[5], d_o.pointer, "copied to an aligned buffer")
        self.assertEqual((problem.layout, problem.causal), (_capi.BHSD, 0))

    def test_the_window_and_softcap_reach_the_problem_as_the_forwards(self):
        q, k, v, o, d_o = (Tensor((1, 4, 256, 64)) for _ in range(5))
        for (causal, window), softcap in itertools.product(
                ((True, None), (False, (-1, -1)), (True, (64, 0)), (True, (64, -1)), (False, (40, 24)),
                 (False, (-1, 7))), (None, 0.0, 2.5, 30.0)):
            self.calls.clear()
            _, call = self.run_backward(q, k, v, o, d_o, causal=causal, window=window, softcap=softcap)
            problem = call["args"][10]
            info = [tensors.describe(t, name) for t, name in ((q, "q"), (k, "k"), (v, "v"))]
            forward = tensors.make_problem(*info, causal, 0.5, variant=(*(window or (-1, -1)), softcap or 0.0))
            with self.subTest(causal=causal, window=window, softcap=softcap):
                self.assertEqual((problem.window, problem.window_left, problem.window_right, problem.softcap),
                                 (forward.window, forward.window_left, forward.window_right, forward.softcap))
                self.assertEqual(problem.window, 0 if window in (None, (-1, -1)) else 1)
                if problem.window:
                    self.assertEqual((problem.window_left, problem.window_right), window)
                self.assertEqual(problem.softcap, softcap or 0.0)  # 2.5 and 30 are exact in float32
        with self.assertRaisesRegex(ValueError, r"window_size \(64, 8\) with causal=True"):
            self.run_backward(q, k, v, o, d_o, causal=True, window=(64, 8))

    def test_mismatches_are_named(self):
        q, k = Tensor((1, 8, 64, 64)), Tensor((1, 3, 64, 64))
        with self.assertRaisesRegex(ValueError, r"q has 8 heads, not a multiple of k's and v's 3"):
            self.run_backward(q, k, k, Tensor((1, 8, 64, 64)), Tensor((1, 8, 64, 64)))
        with self.assertRaisesRegex(ValueError, r"d_o has shape \[1, 8, 32, 64\]: expected \[1, 8, 64, 64\] "
                                                r"\(q's, with V's head dim\)"):
            self.run_backward(q, q, q, Tensor((1, 8, 64, 64)), Tensor((1, 8, 32, 64)))
        # With V's own head dim, O and dO have it: q's shape is no longer right for them.
        v = Tensor((1, 8, 64, 128))
        with self.assertRaisesRegex(ValueError, r"o has shape \[1, 8, 64, 64\]: expected \[1, 8, 64, 128\]"):
            self.run_backward(q, q, v, Tensor((1, 8, 64, 64)), Tensor((1, 8, 64, 128)))
        with self.assertRaisesRegex(ValueError, r"d_o has shape \[1, 8, 64, 64\]: expected \[1, 8, 64, 128\]"):
            self.run_backward(q, q, v, Tensor((1, 8, 64, 128)), Tensor((1, 8, 64, 64)))
        with self.assertRaisesRegex(ValueError, r"v has shape \[1, 8, 32, 128\], k \[1, 8, 64, 64\]"):
            self.run_backward(q, q, Tensor((1, 8, 32, 128)), Tensor((1, 8, 64, 128)), Tensor((1, 8, 64, 128)))

    def test_v_with_its_own_head_dim(self):
        # MLA's prefill (d 192, dv 128; GQA, bshd, as a model's projections give it) and dv above d (bhsd).
        cases = ((bshd(2, 8, 300, 192), bshd(2, 2, 300, 192), bshd(2, 2, 300, 128), bshd(2, 8, 300, 128),
                  bshd(2, 8, 300, 128), _capi.BSHD),
                 tuple(Tensor(shape) for shape in ((1, 4, 200, 64), (1, 4, 256, 64), (1, 4, 256, 128),
                                                   (1, 4, 200, 128), (1, 4, 200, 128))) + (_capi.BHSD,))
        for q, k, v, o, d_o, layout in cases:
            d, dv = q.shape[3], v.shape[3]
            with self.subTest(d=d, dv=dv):
                self.calls.clear()
                (dq, dk, dv_grad), call = self.run_backward(q, k, v, o, d_o)
                ptrs, problem = call["args"][:10], call["args"][10]
                self.assertEqual(ptrs[:6], tuple(t.pointer for t in (q, k, v, o, call["lse"], d_o)), "no copy")
                self.assertEqual(ptrs[6:9], (dq.pointer, dk.pointer, dv_grad.pointer))
                self.assertEqual((problem.head_dim, problem.head_dim_v), (d, dv), "V's head dim reaches the C call")
                self.assertEqual(problem.layout, layout)
                # Contiguous in the layout, as the C backward requires: every stride 0, V's and O's too.
                for name in ("q_strides", "kv_strides", "v_strides", "o_strides"):
                    self.assertEqual(list(getattr(problem, name)), [0, 0, 0], name)
                # dQ like q, dK like k, dV like v (its own head dim), contiguous in the layout.
                for grad, like in ((dq, q), (dk, k), (dv_grad, v)):
                    self.assertEqual(grad.shape, like.shape)
                    self.assertEqual(grad.stride(), attn_tune._contiguous_strides(like.shape, layout == _capi.BSHD))
        # With dv = d the problem keeps head_dim_v 0 (the head dim), as the forward's does.
        q = Tensor((1, 4, 64, 64))
        self.calls.clear()
        _, call = self.run_backward(q, q, q, q, q)
        self.assertEqual((call["args"][10].head_dim_v, list(call["args"][10].v_strides)), (0, [0, 0, 0]))


class CustomOp:
    """What torch.library.custom_op makes of a function, as _register_backward uses it."""

    def __init__(self, fn):
        self.fn, self.fake = fn, None

    def __call__(self, *args):
        return self.fn(*args)

    def register_fake(self, fn):
        self.fake = fn
        return fn


class LibraryTorch(FakeTorch):
    """FakeTorch with the torch.library that _register_backward registers through: its ops and the
    autograd formulas, kept by name."""
    Tensor = Tensor

    def __init__(self):
        super().__init__()
        self.ops, self.formulas = {}, {}

        def custom_op(name, mutates_args):
            return lambda fn: self.ops.setdefault(name, CustomOp(fn))

        def register_autograd(name, backward, setup_context):
            self.formulas[name] = (setup_context, backward)

        self.library = types.SimpleNamespace(custom_op=custom_op, register_autograd=register_autograd)


class AutogradContext:
    """The ctx that setup_context fills and backward reads."""

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


class RegistersTheFormulas:
    """_register_backward through a fake torch.library (self.torch), its C calls recorded in
    self.calls; the module's ops and flags restored after."""

    def setUp(self):
        self.saved = (attn_tune.context, attn_tune._torch_backward_op, attn_tune._torch_varlen_backward_op,
                      attn_tune._torch_autograd)
        self.calls = []
        attn_tune.context = lambda device, table: types.SimpleNamespace(
            backward=lambda *args: self.calls.append({"table": table, "args": args}))
        self.torch = LibraryTorch()
        attn_tune._register_backward(self.torch)

    def tearDown(self):
        (attn_tune.context, attn_tune._torch_backward_op, attn_tune._torch_varlen_backward_op,
         attn_tune._torch_autograd) = self.saved


class TheAutogradFormula(RegistersTheFormulas, unittest.TestCase):
    """attn_tune::forward's autograd formula (setup_context, backward) and the attn_tune::backward op,
    registered through a fake torch.library: what the forward ran with reaches the C call."""

    def setUp(self):
        super().setUp()
        self.setup_context, self.backward = self.torch.formulas["attn_tune::forward"]

    def backward_of(self, causal, window, softcap, dv=64, cache_seqlens=None, block_table=None, grads=None):
        """The C call's problem of the backward of forward(q, k, v, causal, "t.csv", 0.5, ...), q and k
        [1, 4, 256, 64], v [1, 4, 256, dv]; the gradients go in the list `grads` where one is given."""
        q, k = (Tensor((1, 4, 256, 64)) for _ in range(2))
        v, o, d_o = (Tensor((1, 4, 256, dv)) for _ in range(3))
        lse = Tensor((1, 4, 256), dtype="torch.float32")
        ctx = AutogradContext()
        self.calls.clear()
        self.setup_context(ctx, (q, k, v, causal, "t.csv", 0.5, cache_seqlens, block_table, *window, softcap),
                           (o, lse))
        self.assertEqual(ctx.non_differentiable, (lse,))
        result = self.backward(ctx, d_o, None)
        self.assertEqual(len(result), 11, "one per input of the forward op")
        if grads is not None:
            grads.extend(result[:3])
        (call,) = self.calls
        self.assertEqual(call["table"], "t.csv")
        return call["args"][10]

    def test_the_backward_op_takes_softcap_last(self):
        op = self.torch.ops["attn_tune::backward"]
        self.assertIs(attn_tune._torch_backward_op, op)
        params = inspect.signature(op.fn).parameters
        self.assertEqual(list(params)[-3:], ["window_left", "window_right", "softcap"])
        self.assertEqual((params["softcap"].annotation, params["softcap"].default), (float, 0.0))
        fake = inspect.signature(op.fake).parameters
        self.assertEqual(list(fake), list(params), "the fake takes the op's arguments")
        self.assertEqual(fake["softcap"].default, 0.0)

    def test_the_forwards_softcap_and_window_reach_the_c_call(self):
        for causal, window, softcap in ((True, (-1, -1), 0.0), (True, (-1, -1), 2.5), (True, (-1, -1), 30.0),
                                        (False, (-1, -1), 2.5), (True, (64, 0), 2.5), (False, (40, 24), 30.0)):
            with self.subTest(causal=causal, window=window, softcap=softcap):
                problem = self.backward_of(causal, window, softcap)
                self.assertEqual((problem.causal, problem.softmax_scale), (int(causal), 0.5))
                self.assertEqual(problem.softcap, softcap)
                self.assertEqual((problem.window, problem.window_left, problem.window_right),
                                 (0, 0, 0) if window == (-1, -1) else (1, *window))

    def test_vs_own_head_dim_reaches_the_c_call(self):
        # dv 128 with d 64, softcap and a window or not: head_dim_v and V's and O's strides 0 in the
        # problem, dV shaped like V (the op's and its fake's).
        for dv, window, softcap in ((128, (-1, -1), 0.0), (128, (64, 0), 30.0), (32, (-1, -1), 2.5)):
            with self.subTest(dv=dv, window=window, softcap=softcap):
                grads = []
                problem = self.backward_of(True, window, softcap, dv=dv, grads=grads)
                self.assertEqual((problem.head_dim, problem.head_dim_v, problem.softcap), (64, dv, softcap))
                self.assertEqual((list(problem.v_strides), list(problem.o_strides)), ([0, 0, 0], [0, 0, 0]))
                self.assertEqual([g.shape for g in grads], [(1, 4, 256, 64), (1, 4, 256, 64), (1, 4, 256, dv)])
        fake = self.torch.ops["attn_tune::backward"].fake
        q, k, v, o = bshd(2, 8, 300, 192), bshd(2, 2, 300, 192), bshd(2, 2, 300, 128), bshd(2, 8, 300, 128)
        shapes = [(g.shape, g.stride()) for g in fake(o, q, k, v, o, Tensor((2, 8, 300)), True, "", 0.0)]
        self.assertEqual(shapes, [(t.shape, attn_tune._contiguous_strides(t.shape, True)) for t in (q, k, v)])

    def test_what_is_refused_is_refused_at_backward_softcap_or_not(self):
        for softcap in (0.0, 30.0):
            for cache_seqlens, block_table, named in ((object(), None, "cache_seqlens"),
                                                      (None, object(), "block_table"),
                                                      (object(), object(), "cache_seqlens, block_table")):
                for dv in (64, 128):
                    with self.subTest(softcap=softcap, named=named, dv=dv):
                        message = rf"attn_tune's backward does not take {named} yet"
                        with self.assertRaisesRegex(NotImplementedError, message):
                            self.backward_of(True, (-1, -1), softcap, dv=dv, cache_seqlens=cache_seqlens,
                                             block_table=block_table)
                        self.assertEqual(self.calls, [], "nothing reached the C call")


# A packed variable-length batch (flash_attn_varlen_func): q, o, dO [total_q, H, D], k, v
# [total_k, kv_heads, D], the offsets int32 [B + 1], the LSE [H, total_q].
B, TOTAL_Q, TOTAL_K, MAX_Q, MAX_K = 3, 517, 900, 300, 700
STRIDE_FIELDS = ("q_strides", "kv_strides", "v_strides", "o_strides")


def packed(total, h, d, bshd=True, **kw):
    """A [total, H, D] tensor: contiguous [total, H, D] memory (bshd), or a view of [H, total, D]."""
    return Tensor((total, h, d), **kw) if bshd else Tensor((h, total, d), **kw).transpose(0, 1)


def offsets():
    return Tensor((B + 1,), dtype="torch.int32"), Tensor((B + 1,), dtype="torch.int32")


class RecordingTorch(FakeTorch):
    """FakeTorch that keeps what torch.empty allocated (delta among them)."""

    def __init__(self):
        super().__init__()
        self.allocated = []

    def empty(self, shape, dtype, device):
        t = Tensor(shape, None, dtype)
        self.allocated.append(t)
        return t


def forward_problem(q, k, v, cu_q, cu_k, causal, variant, max_q=MAX_Q, max_k=MAX_K):
    """The problem the varlen forward's call makes (_call_cache.prepare's make_varlen_problem)."""
    info = [tensors.describe(t, name) for t, name in ((q, "q"), (k, "k"), (v, "v"))]
    return tensors.make_varlen_problem(*info, tensors.cache_info(cu_q, "cu_seqlens_q"),
                                       tensors.cache_info(cu_k, "cu_seqlens_k"), max_q, max_k, causal, 0.5, variant)


class PackedProblemChecks:
    """The checks of a packed batch's backward problem against the forward's."""

    def assert_packed_problem(self, problem, q, k, v, cu_q, cu_k, causal, variant, bshd):
        d, dv = q.shape[2], v.shape[2]
        self.assertEqual((problem.cu_seqlens_q, problem.cu_seqlens_k), (cu_q.pointer, cu_k.pointer), "the offsets")
        self.assertEqual((problem.total_q, problem.total_k), (q.shape[0], k.shape[0]), "the totals")
        self.assertEqual((problem.batch, problem.q_len, problem.kv_len), (B, MAX_Q, MAX_K), "B and the longest")
        self.assertEqual((problem.heads, problem.kv_heads, problem.head_dim), (q.shape[1], k.shape[1], d))
        self.assertEqual(problem.head_dim_v, dv if dv != d else 0, "V's own head dim")
        self.assertEqual(problem.layout, _capi.BSHD if bshd else _capi.BHSD)
        for name in STRIDE_FIELDS:  # contiguous in the layout, as the C backward requires
            self.assertEqual(list(getattr(problem, name)), [0, 0, 0], name)
        self.assertEqual((problem.causal, problem.softmax_scale, problem.dtype), (int(causal), 0.5, _capi.BF16))
        left, right, softcap = variant
        self.assertEqual((problem.window, problem.window_left, problem.window_right),
                         (0, 0, 0) if (left, right) == (-1, -1) else (1, left, right))
        self.assertEqual(problem.softcap, softcap)
        self.assertEqual((problem.cache_seqlens, problem.block_table), (None, None))
        # Every field as the forward's problem has it, but the strides (all 0 here).
        forward = forward_problem(q, k, v, cu_q, cu_k, causal, variant)
        for name, _ in _capi.Problem._fields_:
            if name not in STRIDE_FIELDS:
                self.assertEqual(getattr(problem, name), getattr(forward, name), f"{name}: the forward's")


class TheVarlenBackwardCall(RecordsTheCCall, PackedProblemChecks, unittest.TestCase):
    """_backward_call(..., packed=(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)): the
    packed problem the forward makes, tensors contiguous in q's layout, delta [H, total_q]."""

    def run_backward(self, q, k, v, o, d_o, cu_q, cu_k, causal=True, variant=(-1, -1, 0.0), lse=None,
                     max_q=MAX_Q, max_k=MAX_K):
        lse = lse or Tensor((q.shape[1], q.shape[0]), dtype="torch.float32")
        torch = RecordingTorch()
        grads = attn_tune._backward_call(torch, d_o, q, k, v, o, lse, causal, "t.csv", 0.5, *variant,
                                         packed=(cu_q, cu_k, max_q, max_k))
        (call,) = self.calls
        call.update(lse=lse, allocated=torch.allocated)
        return grads, call

    def test_a_packed_batch_reaches_the_c_call(self):
        # GQA 8/2; both layouts; dv = d, MLA's d 192 with dv 128, and dv above d.
        for bshd, d, dv in ((True, 64, 64), (False, 64, 64), (False, 192, 128), (True, 64, 128)):
            with self.subTest(bshd=bshd, d=d, dv=dv):
                q, k, v = packed(TOTAL_Q, 8, d, bshd), packed(TOTAL_K, 2, d, bshd), packed(TOTAL_K, 2, dv, bshd)
                o, d_o = packed(TOTAL_Q, 8, dv, bshd), packed(TOTAL_Q, 8, dv, bshd)
                cu_q, cu_k = offsets()
                self.calls.clear()
                (dq, dk, dv_grad), call = self.run_backward(q, k, v, o, d_o, cu_q, cu_k)
                ptrs, problem, stream = call["args"][:10], call["args"][10], call["args"][11]
                self.assertEqual(ptrs[:6], tuple(t.pointer for t in (q, k, v, o, call["lse"], d_o)), "no copy")
                self.assertEqual(ptrs[6:9], (dq.pointer, dk.pointer, dv_grad.pointer))
                (delta,) = [t for t in call["allocated"] if t.pointer == ptrs[9]]
                self.assertEqual((delta.shape, delta.dtype), ((8, TOTAL_Q), "torch.float32"), "delta [H, total_q]")
                self.assertEqual((call["device"], call["table"], stream), (0, "t.csv", 0x5000))
                self.assert_packed_problem(problem, q, k, v, cu_q, cu_k, True, (-1, -1, 0.0), bshd)
                # dQ like q, dK like k, dV like v (its own head dim), contiguous in the layout.
                for grad, like in ((dq, q), (dk, k), (dv_grad, v)):
                    self.assertEqual(grad.shape, like.shape)
                    self.assertEqual(grad.stride(), attn_tune._contiguous_strides(like.shape, bshd))
                    self.assertEqual(grad.stride(), like.stride(), "the input's own strides: it was contiguous")

    def test_the_window_and_softcap_reach_the_problem_as_the_forwards(self):
        q, k, v = packed(TOTAL_Q, 8, 64), packed(TOTAL_K, 2, 64), packed(TOTAL_K, 2, 64)
        cu_q, cu_k = offsets()
        for (causal, window), softcap in itertools.product(
                ((True, (-1, -1)), (True, (64, 0)), (False, (40, 24)), (False, (-1, 7))), (0.0, 2.5, 30.0)):
            with self.subTest(causal=causal, window=window, softcap=softcap):
                self.calls.clear()
                _, call = self.run_backward(q, k, v, packed(TOTAL_Q, 8, 64), packed(TOTAL_Q, 8, 64), cu_q, cu_k,
                                            causal, (*window, softcap))
                self.assert_packed_problem(call["args"][10], q, k, v, cu_q, cu_k, causal, (*window, softcap), True)

    def test_views_of_a_fused_projection_and_a_broadcast_grad_are_copied(self):
        # q, k, v as views of one packed [total, H + 2 kv_heads, D] projection; dO expanded.
        h, h_kv, d = 8, 2, 64
        fused = ((h + 2 * h_kv) * d, d, 1)
        q = Tensor((TOTAL_Q, h, d), fused)
        k = Tensor((TOTAL_Q, h_kv, d), fused, pointer=q.pointer + h * d * 2)
        v = Tensor((TOTAL_Q, h_kv, d), fused, pointer=q.pointer + (h + h_kv) * d * 2)
        o = Tensor((TOTAL_Q, h, d), fused)  # the forward gives O q's strides
        d_o = Tensor((TOTAL_Q, h, d), (0, 0, 0))
        cu_q, cu_k = offsets()
        _, call = self.run_backward(q, k, v, o, d_o, cu_q, cu_k)
        ptrs, problem = call["args"][:10], call["args"][10]
        for pointer, t in zip(ptrs[:4], (q, k, v, o)):
            self.assertNotEqual(pointer, t.pointer, "copied into the bshd layout")
        self.assertNotEqual(ptrs[5], d_o.pointer)
        self.assertEqual((problem.layout, problem.total_q, problem.total_k), (_capi.BSHD, TOTAL_Q, TOTAL_Q))

    def test_mismatches_are_named_and_nothing_is_called(self):
        q, k, v = packed(TOTAL_Q, 8, 64), packed(TOTAL_K, 2, 64), packed(TOTAL_K, 2, 128)
        o = packed(TOTAL_Q, 8, 128)
        cu_q, cu_k = offsets()
        cases = ((ValueError, r"lse has shape \[3, 8, 517\]: expected \[8, 517\] \(the forward's\)",
                  dict(lse=Tensor((3, 8, 517), dtype="torch.float32"))),
                 (ValueError, r"o has shape \[517, 8, 64\]: expected \[517, 8, 128\]", dict(o=packed(TOTAL_Q, 8, 64))),
                 (ValueError, r"d_o has shape \[517, 8, 64\]: expected \[517, 8, 128\]",
                  dict(d_o=packed(TOTAL_Q, 8, 64))),
                 (TypeError, r"cu_seqlens_q must be a torch.int32 tensor",
                  dict(cu_q=Tensor((B + 1,), dtype="torch.int64"))),
                 (ValueError, r"cu_seqlens_k has shape \[5\]: expected \[4\]",
                  dict(cu_k=Tensor((5,), dtype="torch.int32"))),
                 (ValueError, r"max_seqlen_q 0 is out of range", dict(max_q=0)),
                 (ValueError, r"q has 8 heads, not a multiple of k's and v's 3",
                  dict(k=packed(TOTAL_K, 3, 64), v=packed(TOTAL_K, 3, 128))))
        for error, message, change in cases:
            args = dict(q=q, k=k, v=v, o=o, d_o=o, cu_q=cu_q, cu_k=cu_k, lse=None, max_q=MAX_Q, max_k=MAX_K)
            args.update(change)
            with self.subTest(message=message), self.assertRaisesRegex(error, message):
                self.run_backward(args["q"], args["k"], args["v"], args["o"], args["d_o"], args["cu_q"],
                                  args["cu_k"], lse=args["lse"], max_q=args["max_q"], max_k=args["max_k"])
            self.assertEqual([c for c in self.calls if "args" in c], [], "nothing reached the C call")
            self.calls.clear()

    def test_the_dense_lse_is_checked_too(self):
        q = Tensor((1, 4, 64, 64))
        with self.assertRaisesRegex(ValueError, r"lse has shape \[4, 64\]: expected \[1, 4, 64\]"):
            attn_tune._backward_call(FakeTorch(), q, q, q, q, q, Tensor((4, 64), dtype="torch.float32"), True,
                                     None, None)


class TheVarlenAutogradFormula(RegistersTheFormulas, PackedProblemChecks, unittest.TestCase):
    """attn_tune::varlen_forward's autograd formula and the attn_tune::varlen_backward op, through
    the fake torch.library: what the varlen forward ran with reaches the C call."""
    OP_PARAMS = ["d_o", "q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k",
                 "causal", "table", "softmax_scale", "window_left", "window_right", "softcap"]


    def test_it_is_registered_for_the_varlen_forward(self):
        self.assertIn("attn_tune::varlen_forward", self.torch.formulas)
        self.assertIn("attn_tune::forward", self.torch.formulas)
        self.assertTrue(attn_tune._torch_autograd)
        op = self.torch.ops["attn_tune::varlen_backward"]
        self.assertIs(attn_tune._torch_varlen_backward_op, op)
        params = inspect.signature(op.fn).parameters
        self.assertEqual(list(params), self.OP_PARAMS)
        self.assertEqual([(params[n].annotation, params[n].default) for n in ("max_seqlen_q", "max_seqlen_k")],
                         [(int, inspect.Parameter.empty)] * 2)
        self.assertEqual([params[n].default for n in self.OP_PARAMS[-3:]], [-1, -1, 0.0])
        self.assertEqual(list(inspect.signature(op.fake).parameters), self.OP_PARAMS, "the fake takes the op's")
        self.assertIn("differentiable", attn_tune.flash_attn_varlen_func.__doc__)

    def test_without_register_autograd_there_is_no_formula(self):
        torch = LibraryTorch()
        del torch.library.register_autograd
        attn_tune._torch_autograd = False
        attn_tune._register_backward(torch)
        self.assertEqual(torch.formulas, {})
        self.assertIn("attn_tune::varlen_backward", torch.ops)
        self.assertFalse(attn_tune._torch_autograd)

    def backward_of(self, causal, window, softcap, d=64, dv=64, bshd=True):
        """(problem, grads, inputs) of the backward of varlen_forward(q, k, v, cu_q, cu_k, 300, 700,
        causal, "t.csv", 0.5, *window, softcap), q [517, 8, d], k and v [900, 2, d / dv]."""
        q, k, v = packed(TOTAL_Q, 8, d, bshd), packed(TOTAL_K, 2, d, bshd), packed(TOTAL_K, 2, dv, bshd)
        o, d_o = packed(TOTAL_Q, 8, dv, bshd), packed(TOTAL_Q, 8, dv, bshd)
        lse = Tensor((8, TOTAL_Q), dtype="torch.float32")
        cu_q, cu_k = offsets()
        setup_context, backward = self.torch.formulas["attn_tune::varlen_forward"]
        ctx = AutogradContext()
        self.calls.clear()
        setup_context(ctx, (q, k, v, cu_q, cu_k, MAX_Q, MAX_K, causal, "t.csv", 0.5, *window, softcap), (o, lse))
        self.assertEqual(ctx.non_differentiable, (lse,))
        result = backward(ctx, d_o, None)
        self.assertEqual(len(result), 13, "one per input of the varlen forward op")
        self.assertEqual(result[3:], (None,) * 10, "no gradient for the offsets, lengths and flags")
        (call,) = self.calls
        self.assertEqual(call["table"], "t.csv")
        ptrs = call["args"][:10]
        self.assertEqual(ptrs[:6], tuple(t.pointer for t in (q, k, v, o, lse, d_o)), "the saved tensors, uncopied")
        return call["args"][10], result[:3], (q, k, v, cu_q, cu_k)

    def test_the_forwards_arguments_reach_the_c_call(self):
        for causal, window, softcap, d, dv, bshd in ((True, (-1, -1), 0.0, 64, 64, True),
                                                     (True, (-1, -1), 2.5, 64, 64, False),
                                                     (True, (64, 0), 30.0, 64, 64, True),
                                                     (False, (40, 24), 2.5, 64, 64, False),
                                                     (True, (-1, -1), 0.0, 192, 128, True),
                                                     (False, (40, 24), 30.0, 64, 128, False)):
            with self.subTest(causal=causal, window=window, softcap=softcap, d=d, dv=dv, bshd=bshd):
                problem, grads, (q, k, v, cu_q, cu_k) = self.backward_of(causal, window, softcap, d, dv, bshd)
                self.assert_packed_problem(problem, q, k, v, cu_q, cu_k, causal, (*window, softcap), bshd)
                self.assertEqual([g.shape for g in grads], [(TOTAL_Q, 8, d), (TOTAL_K, 2, d), (TOTAL_K, 2, dv)])
                for grad, like in zip(grads, (q, k, v)):
                    self.assertEqual(grad.stride(), like.stride(), "contiguous in q's layout")

    def test_the_fake_gives_the_ops_shapes_and_strides(self):
        op = self.torch.ops["attn_tune::varlen_backward"]
        for bshd, d, dv in ((True, 64, 64), (False, 64, 64), (True, 192, 128), (False, 64, 128)):
            with self.subTest(bshd=bshd, d=d, dv=dv):
                q, k, v = packed(TOTAL_Q, 8, d, bshd), packed(TOTAL_K, 2, d, bshd), packed(TOTAL_K, 2, dv, bshd)
                o = packed(TOTAL_Q, 8, dv, bshd)
                cu_q, cu_k = offsets()
                args = (o, q, k, v, o, Tensor((8, TOTAL_Q), dtype="torch.float32"), cu_q, cu_k, MAX_Q, MAX_K, True,
                        "", 0.0)
                fake = [(g.shape, g.stride()) for g in op.fake(*args)]
                real = [(g.shape, g.stride()) for g in op(*args)]
                self.assertEqual(fake, real)
                self.assertEqual(fake, [(t.shape, attn_tune._contiguous_strides(t.shape, bshd)) for t in (q, k, v)])
        # A view that is not contiguous in its layout: the gradients are contiguous ones, not its strides.
        q = Tensor((TOTAL_Q, 8, 64), (12 * 64, 64, 1))
        (dq, _, _) = op.fake(q, q, q, q, q, Tensor((8, TOTAL_Q)), *offsets(), MAX_Q, MAX_K, True, "", 0.0)
        self.assertEqual(dq.stride(), (8 * 64, 64, 1))


@unittest.skipUnless(LIBRARY, "ATTN_TUNE_TEST_LIBRARY is not set")
class WithTheLibrary(unittest.TestCase):
    def setUp(self):
        self.saved = (os.environ.get("ATTN_TUNE_LIBRARY"), _capi._library)
        os.environ["ATTN_TUNE_LIBRARY"] = LIBRARY
        _capi._library = None

    def tearDown(self):
        library, _capi._library = self.saved
        if library is None:
            os.environ.pop("ATTN_TUNE_LIBRARY", None)
        else:
            os.environ["ATTN_TUNE_LIBRARY"] = library

    def test_a_library_of_version_6_or_7_loads(self):
        lib = _capi.library()
        version = lib.attn_tune_api_version()
        self.assertIn(version, (6, 7))
        if version >= 7:
            self.assertIs(_capi.backward_function(lib), lib.attn_tune_backward)
            self.assertEqual(len(lib.attn_tune_backward.argtypes), 14)
        else:
            with self.assertRaisesRegex(attn_tune.AttnTuneError, "libattn_tune API 6 has no attn_tune_backward"):
                _capi.backward_function(lib)

    def test_lookup_gives_the_variant(self):
        c = attn_tune.lookup(os.path.join(os.path.dirname(__file__), "..", "data", "export_fixture.csv"),
                             "NVIDIA H200", "9.0", 132, batch=4, heads=32, q_len=4096, head_dim=128)
        self.assertEqual(c["config"], "m256_n64_w8_s2")
        # A forward's variant is its config; a library of version 6 leaves it "".
        want = "m256_n64_w8_s2" if _capi.library().attn_tune_api_version() >= 7 else ""
        self.assertEqual(c["variant"], want)


if __name__ == "__main__":
    unittest.main()
