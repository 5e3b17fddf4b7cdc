"""The Python package without a GPU (ctest python_package_cpu): it imports without PyTorch, a GPU or
the library, says clearly what is missing, and passes arguments through the C API correctly.
ATTN_TUNE_TEST_LIBRARY names the built libattn_tune.so."""
import csv
import ctypes
import importlib
import inspect
import os
import subprocess
import tempfile
import sys
import unittest

import attn_tune
from attn_tune import _capi, tensors

LIBRARY = os.environ.get("ATTN_TUNE_TEST_LIBRARY", "")
DATA = os.path.join(os.path.dirname(__file__), "..", "data")


class FakeArray:
    """A stand-in for a CuPy array: only __cuda_array_interface__ (no memory behind it)."""

    def __init__(self, shape, strides=None, typestr="<f2", pointer=0x10000):
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides, "typestr": typestr,
                                         "data": (pointer, False), "version": 3}


class WithoutTheLibrary(unittest.TestCase):
    def test_import_needs_nothing(self):
        # PyTorch and CuPy made unimportable (a None entry in sys.modules), the library missing:
        # the import still works, and imports neither.
        code = ("import sys\n"
                "sys.modules['torch'] = None\n"
                "sys.modules['cupy'] = None\n"
                "import attn_tune\n"
                "print('imported', attn_tune.forward.__name__, sys.modules['torch'], sys.modules['cupy'])\n")
        env = dict(os.environ, ATTN_TUNE_LIBRARY="/no/such/libattn_tune.so")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "imported forward None None")

    def test_missing_library_is_a_clear_error(self):
        code = ("import attn_tune\n"
                "try:\n    attn_tune.library_version()\n"
                "except attn_tune.LibraryNotFoundError as e:\n    print(e)\n")
        env = dict(os.environ, ATTN_TUNE_LIBRARY="/no/such/libattn_tune.so")
        env.pop("LD_LIBRARY_PATH", None)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        self.assertIn("set ATTN_TUNE_LIBRARY", out.stdout)
        self.assertIn("/no/such/libattn_tune.so (no such file)", out.stdout)


class Problems(unittest.TestCase):
    def test_contiguous_bhsd(self):
        q = tensors.describe(FakeArray((2, 8, 128, 64)), "q")
        k = tensors.describe(FakeArray((2, 2, 256, 64)), "k")
        p = tensors.make_problem(q, k, k, causal=True)
        self.assertEqual((p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim), (2, 8, 2, 128, 256, 64))
        self.assertEqual(p.layout, _capi.BHSD)
        self.assertEqual(list(p.q_strides), [8 * 128 * 64, 128 * 64, 64])
        self.assertEqual(list(p.kv_strides), [2 * 256 * 64, 256 * 64, 64])
        self.assertEqual((p.dtype, p.causal), (_capi.FP16, 1))

    def test_bshd_by_strides(self):
        # A [B, N, H, D] buffer seen as [B, H, N, D]: strides in bytes, as CuPy gives them.
        b, n, h, d = 2, 128, 8, 64
        q = tensors.describe(FakeArray((b, h, n, d), strides=(n * h * d * 2, d * 2, h * d * 2, 2)), "q")
        p = tensors.make_problem(q, q, q, causal=False)
        self.assertEqual(p.layout, _capi.BSHD)
        self.assertEqual(list(p.q_strides), [n * h * d, d, h * d])

    def test_mismatches_are_named(self):
        q = tensors.describe(FakeArray((2, 8, 128, 64)), "q")
        with self.assertRaisesRegex(ValueError, r"q has 8 heads, not a multiple of k's and v's 3"):
            k = tensors.describe(FakeArray((2, 3, 128, 64)), "k")
            tensors.make_problem(q, k, k, False)
        with self.assertRaisesRegex(ValueError, r"expected 4 dimensions"):
            tensors.make_problem(tensors.describe(FakeArray((8, 128, 64)), "q"), q, q, False)
        with self.assertRaisesRegex(TypeError, r"typestr '<f4' is not supported"):
            tensors.describe(FakeArray((1, 1, 64, 64), typestr="<f4"), "q")
        with self.assertRaisesRegex(TypeError, r"q is a list"):
            tensors.describe([1, 2], "q")


class KvCacheProblems(unittest.TestCase):
    """flash_attn_with_kvcache's cache_seqlens and block_table as the C problem's fields."""

    def test_a_paged_cache(self):
        q = tensors.describe(FakeArray((3, 32, 1, 128)), "q")
        k = tensors.describe(FakeArray((40, 16, 8, 128)), "k_cache")  # [num_pages, page_size, kv_heads, D]
        table = tensors.TensorInfo(0x7000, (3, 12), (12, 1), None, None)
        lens = tensors.TensorInfo(0x8000, (3,), (1,), None, None)
        p = tensors.make_problem(q, k, k, causal=False, cache_seqlens=lens, block_table=table)
        self.assertEqual((p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len), (3, 32, 8, 1, 12 * 16))
        self.assertEqual((p.page_size, p.num_pages, p.block_table, p.cache_seqlens), (16, 40, 0x7000, 0x8000))
        self.assertEqual(list(p.kv_strides), [16 * 8 * 128, 128, 8 * 128])  # page, head, row

    def test_lengths_alone_keep_the_layout(self):
        q = tensors.describe(FakeArray((2, 8, 1, 64)), "q")
        k = tensors.describe(FakeArray((2, 2, 300, 64)), "k")
        lens = tensors.TensorInfo(0x8000, (2,), (1,), None, None)
        p = tensors.make_problem(q, k, k, False, cache_seqlens=lens)
        self.assertEqual((p.kv_len, p.page_size, p.cache_seqlens, p.block_table), (300, 0, 0x8000, None))

    def test_bad_index_tensors_are_named(self):
        q = tensors.describe(FakeArray((2, 8, 1, 64)), "q")
        k = tensors.describe(FakeArray((40, 16, 2, 64)), "k")
        with self.assertRaisesRegex(ValueError, r"block_table has shape \[3, 5\]: expected \[2, pages per sequence\]"):
            tensors.make_problem(q, k, k, False, block_table=tensors.TensorInfo(1, (3, 5), (5, 1), None, None))
        with self.assertRaisesRegex(ValueError, r"block_table must be contiguous"):
            tensors.make_problem(q, k, k, False, block_table=tensors.TensorInfo(1, (2, 5), (10, 1), None, None))
        with self.assertRaisesRegex(ValueError, r"cache_seqlens has shape \[3\]: expected \[2\]"):
            tensors.make_problem(q, k, k, False, cache_seqlens=tensors.TensorInfo(1, (3,), (1,), None, None),
                                 block_table=tensors.TensorInfo(1, (2, 5), (5, 1), None, None))


class WindowSoftcapProblems(unittest.TestCase):
    """flash_attn_func's window_size= and softcap= as the C problem's fields."""

    def test_the_window_and_the_cap_reach_the_problem(self):
        q = tensors.describe(FakeArray((1, 8, 512, 128)), "q")
        p = tensors.make_problem(q, q, q, True, variant=tensors.variant_of((256, 0), 50.0))
        self.assertEqual((p.window, p.window_left, p.window_right, p.softcap), (1, 256, 0, 50.0))
        p = tensors.make_problem(q, q, q, False)
        self.assertEqual((p.window, p.softcap), (0, 0.0))
        p = tensors.make_problem(q, q, q, False, variant=tensors.variant_of((-1, -1), 0))
        self.assertEqual(p.window, 0, "(-1, -1) is no window")

    def test_bad_values_are_named(self):
        for window, softcap, message in (((-2, 0), 0, r"left -2 is not -1"), ((4,), 0, r"is not a pair"),
                                         ((4, 2.5), 0, r"right 2.5"), ((-1, -1), -1.0, r"softcap -1.0"),
                                         ((-1, -1), float("nan"), r"softcap nan"), (None, 0, r"not a pair")):
            with self.assertRaisesRegex(ValueError, message):
                tensors.variant_of(window, softcap)
        q = tensors.describe(FakeArray((1, 8, 512, 128)), "q")
        with self.assertRaisesRegex(ValueError, r"window_size \(8, 3\) with causal=True"):
            tensors.make_problem(q, q, q, True, variant=tensors.variant_of((8, 3), 0))

    def test_forwards_unchecked_defaults_are_variant_ofs_answer(self):
        # forward_with_lse skips variant_of for its own defaults (a host-cost shortcut): they must
        # be what variant_of makes of them, and a passed value still goes through the check.
        sig = inspect.signature(attn_tune.forward_with_lse).parameters
        self.assertEqual(tensors.variant_of(sig["window_size"].default, sig["softcap"].default), tensors.NO_VARIANT)
        with self.assertRaisesRegex(ValueError, r"softcap -1.0"):
            attn_tune.forward_with_lse(FakeArray((1, 8, 512, 128)), None, None, softcap=-1.0)

    def test_flash_attn_func_refuses_what_it_lacks(self):
        with self.assertRaisesRegex(ValueError, r"dropout_p 0.1: attn_tune has no dropout"):
            attn_tune.flash_attn_func(None, None, None, dropout_p=0.1)
        with self.assertRaisesRegex(ValueError, r"alibi_slopes"):
            attn_tune.flash_attn_func(None, None, None, alibi_slopes=[1.0])
        with self.assertRaisesRegex(ValueError, r"q must be a 4-dimensional PyTorch tensor"):
            attn_tune.flash_attn_func(FakeArray((1, 2, 3, 64)), None, None)

    def test_the_struct_is_the_c_headers(self):
        self.assertEqual(ctypes.sizeof(_capi.Problem), 264)  # sizeof(attn_tune_problem), API version 6
        self.assertEqual(_capi.API_VERSION, 7)  # 7: attn_tune_backward, the choice's variant
        # the fields of version 6 where the C header has them (after o_strides, 8-byte aligned)
        self.assertEqual(_capi.Problem.cu_seqlens_q.offset, _capi.Problem.o_strides.offset + 24)
        self.assertEqual(_capi.Problem.total_k.offset, 256)


class ValueHeadDimProblems(unittest.TestCase):
    """V with its own head dim (dv != d): head_dim_v, V's strides and O's layout in the problem."""

    def test_dv_reaches_the_problem(self):
        q = tensors.describe(FakeArray((2, 16, 256, 192)), "q")
        k = tensors.describe(FakeArray((2, 4, 512, 192)), "k")
        v = tensors.describe(FakeArray((2, 4, 512, 128)), "v")
        p = tensors.make_problem(q, k, v, True)
        self.assertEqual((p.head_dim, p.head_dim_v), (192, 128))
        self.assertEqual(list(p.kv_strides), [4 * 512 * 192, 512 * 192, 192])
        self.assertEqual(list(p.v_strides), [4 * 512 * 128, 512 * 128, 128])
        self.assertEqual(list(p.o_strides), [16 * 256 * 128, 256 * 128, 128])
        self.assertEqual(tensors.out_layout(q.shape, q.strides, 128),
                         ((2, 16, 256, 128), (16 * 256 * 128, 256 * 128, 128, 1)))
        same = tensors.make_problem(q, k, k, True)
        self.assertEqual((same.head_dim_v, list(same.v_strides), list(same.o_strides)), (0, [0, 0, 0], [0, 0, 0]))

    def test_bshd_out_and_a_paged_v(self):
        b, n, h, d, dv = 1, 64, 8, 192, 128
        q = tensors.describe(FakeArray((b, h, n, d), strides=(n * h * d * 2, d * 2, h * d * 2, 2)), "q")
        self.assertEqual(tensors.out_layout(q.shape, q.strides, dv), ((b, h, n, dv), (n * h * dv, dv, h * dv, 1)))
        k = tensors.describe(FakeArray((10, 16, 2, d)), "k_cache")
        v = tensors.describe(FakeArray((10, 16, 2, dv)), "v_cache")
        table = tensors.TensorInfo(0x7000, (1, 4), (4, 1), None, None)
        p = tensors.make_problem(q, k, v, False, block_table=table)
        self.assertEqual(list(p.v_strides), [16 * 2 * dv, dv, 2 * dv])  # page, head, row
        self.assertEqual(list(p.o_strides), [n * h * dv, dv, h * dv])

    def test_v_must_match_k_but_for_the_head_dim(self):
        q = tensors.describe(FakeArray((2, 8, 128, 192)), "q")
        k = tensors.describe(FakeArray((2, 2, 256, 192)), "k")
        with self.assertRaisesRegex(ValueError, r"they must match but for the head dim"):
            tensors.make_problem(q, k, tensors.describe(FakeArray((2, 2, 255, 128)), "v"), False)


def packed(total_q=517, total_k=900, heads=8, kv_heads=2, d=64, dv=None, batch=3):
    """FakeArrays of a packed batch: q [total_q, H, D], k and v [total_k, kv_heads, D], offsets [B + 1]."""
    q = tensors.describe(FakeArray((total_q, heads, d)), "q")
    k = tensors.describe(FakeArray((total_k, kv_heads, d), pointer=0x20000), "k")
    v = tensors.describe(FakeArray((total_k, kv_heads, dv or d), pointer=0x30000), "v")
    cu_q = tensors.TensorInfo(0x7000, (batch + 1,), (1,), None, None)
    cu_k = tensors.TensorInfo(0x8000, (batch + 1,), (1,), None, None)
    return q, k, v, cu_q, cu_k


class VarlenProblems(unittest.TestCase):
    """flash_attn_varlen_func's packed batch as the C problem's fields (API version 6)."""

    def test_a_packed_batch_reaches_the_problem(self):
        q, k, v, cu_q, cu_k = packed()
        p = tensors.make_varlen_problem(q, k, v, cu_q, cu_k, 300, 700, causal=True)
        self.assertEqual((p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim), (3, 8, 2, 300, 700, 64))
        self.assertEqual((p.cu_seqlens_q, p.cu_seqlens_k, p.total_q, p.total_k), (0x7000, 0x8000, 517, 900))
        self.assertEqual((p.layout, p.causal, p.head_dim_v), (_capi.BSHD, 1, 0))
        self.assertEqual(list(p.q_strides), [0, 64, 8 * 64], "batch stride 0: one packed sequence of rows")
        self.assertEqual(list(p.kv_strides), [0, 64, 2 * 64])
        self.assertEqual((list(p.v_strides), list(p.o_strides)), ([0, 0, 0], [0, 0, 0]), "V and O share K's and Q's")
        self.assertEqual(tensors.packed_out_layout(q.shape, q.strides, 64), ((517, 8, 64), (8 * 64, 64, 1)))

    def test_heads_outside_rows_and_a_value_head_dim(self):
        # [H, total, D] memory seen as [total, H, D] (bytes, as CuPy gives them): the head stride is total x D.
        q = tensors.describe(FakeArray((517, 8, 192), strides=(192 * 2, 517 * 192 * 2, 2)), "q")
        _, k, v, cu_q, cu_k = packed(d=192, dv=128)
        p = tensors.make_varlen_problem(q, k, v, cu_q, cu_k, 300, 700, causal=False)
        self.assertEqual(list(p.q_strides), [0, 517 * 192, 192])
        self.assertEqual((p.head_dim, p.head_dim_v), (192, 128))
        self.assertEqual(list(p.v_strides), [0, 128, 2 * 128])
        self.assertEqual(list(p.o_strides), [0, 517 * 128, 128], "O in q's layout, [H, total_q, dv]")
        self.assertEqual(tensors.packed_out_layout(q.shape, q.strides, 128), ((517, 8, 128), (128, 517 * 128, 1)))
        self.assertEqual(tensors.packed_out_layout((517, 8, 192), (8 * 192, 192, 1), 128),
                         ((517, 8, 128), (8 * 128, 128, 1)))

    def test_mismatches_are_named(self):
        q, k, v, cu_q, cu_k = packed()
        cases = (
            (ValueError, r"q has shape \[1, 517, 8, 64\]: expected 3 dimensions \[total, H, D\]",
             dict(q=tensors.describe(FakeArray((1, 517, 8, 64)), "q"))),
            (ValueError, r"cu_seqlens_q has shape \[1\]: expected \[B \+ 1\] with B >= 1",
             dict(cu_q=tensors.TensorInfo(0x7000, (1,), (1,), None, None))),
            (ValueError, r"cu_seqlens_k has shape \[5\]: expected \[4\]",
             dict(cu_k=tensors.TensorInfo(0x8000, (5,), (1,), None, None))),
            (ValueError, r"cu_seqlens_q must be contiguous", dict(cu_q=tensors.TensorInfo(0x7000, (4,), (2,), None, None))),
            (ValueError, r"max_seqlen_q 0 is out of range", dict(max_q=0)),
            (TypeError, r"max_seqlen_k is 700.0: expected an int", dict(max_k=700.0)),
            (TypeError, r"max_seqlen_q is True: expected an int", dict(max_q=True)),
            (ValueError, r"k has shape \[900, 2, 128\]: its head dim must match q's \[517, 8, 64\]",
             dict(k=tensors.describe(FakeArray((900, 2, 128)), "k"))),
            (ValueError, r"v has shape \[900, 4, 64\], k \[900, 2, 64\]: they must match but for the head dim",
             dict(v=tensors.describe(FakeArray((900, 4, 64)), "v"))),
            (ValueError, r"q has 8 heads, not a multiple of k's and v's 3",
             dict(k=tensors.describe(FakeArray((900, 3, 64)), "k"), v=tensors.describe(FakeArray((900, 3, 64)), "v"))))
        for error, message, change in cases:
            args = dict(q=q, k=k, v=v, cu_q=cu_q, cu_k=cu_k, max_q=300, max_k=700)
            args.update(change)
            with self.assertRaisesRegex(error, message):
                tensors.make_varlen_problem(args["q"], args["k"], args["v"], args["cu_q"], args["cu_k"],
                                            args["max_q"], args["max_k"], False)

    def test_flash_attn_varlen_func_refuses_what_it_lacks(self):
        TorchLike = type("Tensor", (), {"__module__": "torch", "data_ptr": lambda self: 0x10000,
                                        "dim": lambda self: 3})
        t = TorchLike()
        call = attn_tune.flash_attn_varlen_func
        with self.assertRaisesRegex(ValueError, r"dropout_p 0.1: attn_tune has no dropout"):
            call(t, t, t, t, t, 16, 16, dropout_p=0.1)
        with self.assertRaisesRegex(ValueError, r"alibi_slopes"):
            call(t, t, t, t, t, 16, 16, alibi_slopes=[1.0])
        with self.assertRaisesRegex(ValueError, r"block_table: attn_tune has no paged K/V in a packed batch"):
            call(t, t, t, t, t, 16, 16, block_table=t)
        with self.assertRaisesRegex(ValueError, r"k must be a 3-dimensional PyTorch tensor \[total, H, D\]"):
            call(t, FakeArray((16, 2, 64)), t, t, t, 16, 16)
        with self.assertRaisesRegex(ValueError, r"cu_seqlens_k must be a PyTorch tensor"):
            call(t, t, t, t, [0, 16], 16, 16)
        with self.assertRaisesRegex(TypeError, r"max_seqlen_q is 16.5: expected an int"):
            call(t, t, t, t, t, 16.5, 16)
        with self.assertRaisesRegex(ValueError, r"window_size \(1,\) is not a pair"):
            call(t, t, t, t, t, 16, 16, window_size=(1,))
        self.assertIn("flash_attn_varlen_func", attn_tune.__all__)


@unittest.skipUnless(LIBRARY, "ATTN_TUNE_TEST_LIBRARY is not set")
class WithTheLibrary(unittest.TestCase):
    def setUp(self):
        os.environ["ATTN_TUNE_LIBRARY"] = LIBRARY
        _capi._library = None

    def test_version(self):
        self.assertEqual(attn_tune.library_version(), "0.1.0")

    def test_lookup_from_a_table(self):
        c = attn_tune.lookup(os.path.join(DATA, "export_fixture.csv"), "NVIDIA H200", "9.0", 132,
                             batch=4, heads=32, q_len=4096, head_dim=128)
        self.assertEqual(c, {"source": "tuned", "family": "fa2", "config": "m256_n64_w8_s2", "from_bundle": False,
                             "variant": "m256_n64_w8_s2"})
        c = attn_tune.lookup(os.path.join(DATA, "library_export.csv"), "NVIDIA H200", "9.0", 132,
                             batch=1, heads=8, q_len=100, head_dim=128)
        self.assertEqual(c["source"], "fallback")

    def test_other_device_and_bad_dtype(self):
        with self.assertRaises(attn_tune.AttnTuneError) as e:
            attn_tune.lookup(os.path.join(DATA, "library_export.csv"), "Tesla V100", "7.0", 80,
                             batch=1, heads=8, q_len=100, head_dim=128)
        self.assertEqual(e.exception.status, _capi.TABLE)
        self.assertIn("not tuned on this device, Tesla V100", str(e.exception))
        with self.assertRaisesRegex(attn_tune.AttnTuneError, "unknown dtype 99"):
            attn_tune.lookup(os.path.join(DATA, "library_export.csv"), "NVIDIA H200", "9.0", 132,
                             batch=1, heads=8, q_len=100, head_dim=128, dtype="fp8")

    # Issue 21, item 11: bad arguments are refused before ctypes (which wraps, cuts and truthifies).
    def test_lookup_checks_its_arguments(self):
        table = os.path.join(DATA, "export_fixture.csv")
        args = dict(batch=4, heads=32, q_len=4096, head_dim=128)
        with self.assertRaisesRegex(ValueError, "batch 18446744073709551648 is out of range"):
            attn_tune.lookup(table, "NVIDIA H200", "9.0", 132, **dict(args, batch=2**64 + 32))
        with self.assertRaisesRegex(TypeError, "heads is 32.0: expected an int"):
            attn_tune.lookup(table, "NVIDIA H200", "9.0", 132, **dict(args, heads=32.0))
        with self.assertRaisesRegex(ValueError, "device_name .* holds a NUL"):
            attn_tune.lookup(table, "NVIDIA H200\0x", "9.0", 132, **args)
        with self.assertRaisesRegex(ValueError, "table .* holds a NUL"):
            attn_tune.lookup(table + "\0.csv", "NVIDIA H200", "9.0", 132, **args)
        with self.assertRaisesRegex(TypeError, "causal is 'no': expected True or False"):
            attn_tune.lookup(table, "NVIDIA H200", "9.0", 132, causal="no", **args)
        with self.assertRaisesRegex(ValueError, "cc 'nine' is not MAJOR.MINOR"):
            attn_tune.lookup(table, "NVIDIA H200", "nine", 132, **args)
        self.assertEqual(attn_tune.lookup(table, "NVIDIA H200", (9, 0), 132, causal=0, **args)["source"], "tuned")

    # Issue 21, item 15: what the library warns of becomes a Python warning (it prints nothing).
    def test_a_warning_of_the_library_is_a_python_warning(self):
        rows = [l for l in open(os.path.join(DATA, "export_fixture.csv")) if not l.startswith("#end,")]
        parsed = list(csv.reader(rows))
        keep = parsed[0].index("noise")
        old = os.path.join(tempfile.mkdtemp(), "schema3.csv")
        with open(old, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(parsed[0][:keep])
            for r in parsed[1:]:
                w.writerow(["3"] + r[1:keep])
        with self.assertWarnsRegex(RuntimeWarning, "has no '#end' line"):
            c = attn_tune.lookup(old, "NVIDIA H200", "9.0", 132, batch=4, heads=32, q_len=4096, head_dim=128)
        self.assertEqual(c["config"], "m256_n64_w8_s2")

    # Issue 21, item 22: out= and lse= with PyTorch tensors are refused, not ignored.
    def test_out_and_lse_with_torch_tensors_are_refused(self):
        TorchLike = type("Tensor", (), {"__module__": "torch", "data_ptr": lambda self: 0x10000})
        t = TorchLike()
        for extra in ({"out": t}, {"lse": t}):
            with self.assertRaisesRegex(ValueError, "out= and lse= are for __cuda_array_interface__ arrays"):
                attn_tune.forward_with_lse(t, t, t, **extra)

    # The version 6 fields reach the C library where it reads them: its checks of a packed batch
    # name the totals and the offsets this package wrote.
    def test_a_packed_problem_is_read_by_the_library(self):
        lib = _capi.library()
        q, k, v, cu_q, cu_k = packed()
        p = tensors.make_varlen_problem(q, k, v, cu_q, cu_k, 300, 700, causal=True)
        tensors_at = (0x10000, 0x20000, 0x30000, 0x40000, 0x50000)
        self.assertEqual(lib.attn_tune_check(*tensors_at, ctypes.byref(p)), _capi.OK, lib.attn_tune_last_error())
        p.q_len = 100  # 517 rows cannot be 3 sequences of at most 100
        self.assertEqual(lib.attn_tune_check(*tensors_at, ctypes.byref(p)), _capi.INVALID_ARGUMENT)
        self.assertEqual(lib.attn_tune_last_error().decode(),
                         "total_q 517 exceeds batch 3 x q_len (max_seqlen_q) 100: no sequence may be longer than that")
        p.q_len, p.cu_seqlens_k = 300, None
        self.assertEqual(lib.attn_tune_check(*tensors_at, ctypes.byref(p)), _capi.INVALID_ARGUMENT)
        self.assertIn("cu_seqlens_q without cu_seqlens_k", lib.attn_tune_last_error().decode())
        p.cu_seqlens_k, p.total_k = 0x8000, 0
        self.assertEqual(lib.attn_tune_check(*tensors_at, ctypes.byref(p)), _capi.INVALID_ARGUMENT)
        self.assertIn("total_k 0 with cu_seqlens_q", lib.attn_tune_last_error().decode())

    def test_forward_without_a_gpu(self):
        q = FakeArray((1, 2, 64, 64))
        try:
            importlib.import_module("cupy")
            self.skipTest("CuPy is installed: the GPU tests cover it")
        except ImportError:
            pass
        with self.assertRaises(attn_tune.AttnTuneError) as e:
            attn_tune.forward(q, q, q, out=FakeArray((1, 2, 64, 64), pointer=0x20000),
                              lse=FakeArray((1, 2, 64), typestr="<f4", pointer=0x30000), stream=0)
        if e.exception.status == _capi.NO_DEVICE:
            self.assertIn("no CUDA device", str(e.exception))
        else:
            self.skipTest(f"this machine has a GPU ({e.exception})")


if __name__ == "__main__":
    unittest.main()
