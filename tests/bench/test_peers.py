"""bench/peers.py's parts that need no GPU and no PyTorch: the shapes (--shapes, a packed batch's
seqlens word and its draw, sweep files, --rows), the numbers (TFLOPS, bytes moved, per sequence
too, ratios, the fastest peer), the masks' predicates (FlexAttention's mask_mods in plain ints),
the CSV and Markdown it writes, the never-overwrite rule, and its command line's refusals (which
come before torch is imported); bench/decode.py's translation to it."""
import contextlib
import dataclasses
import io
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import decode  # noqa: E402
import peers  # noqa: E402
from peers import BadInput, Shape  # noqa: E402

PEERS_PY = os.path.join(ROOT, "bench", "peers.py")
ENV = {"gpu": "NVIDIA H200", "date": "2026-12-01 10:00 UTC", "commit": "6fb819e", "copy_gbs": "4267",
       "matmul_tflops": "780.0", "versions": "torch 2.11", "rule": "the rule", "reference": "sdpa-flash"}


def run(*argv, env=None):
    """peers.py as a program, without torch on its path (it must refuse before importing it)."""
    e = dict(os.environ, PYTHONPATH="", **(env or {}))
    return subprocess.run([sys.executable, PEERS_PY, *argv], capture_output=True, text=True, env=e, cwd=ROOT)


class shapes(unittest.TestCase):
    def test_the_grammar_and_its_defaults(self):
        self.assertEqual(peers.parse_shapes("8,32/8,1,8192,128"), [Shape(8, 32, 8, 1, 8192, 128)])
        self.assertEqual(peers.parse_shapes("64,32/8,16,4096,128c; 4,32,4096,4096,128,causal,fp16,bshd"),
                         [Shape(64, 32, 8, 16, 4096, 128, True), Shape(4, 32, 32, 4096, 4096, 128, True, "fp16", "bshd")])
        self.assertEqual(peers.parse_shape("2,16,512,512,64"), Shape(2, 16, 16, 512, 512, 64))

    def test_decode_py_s_form_reads_too(self):
        self.assertEqual(peers.parse_shapes("8,32,8,1,8192,128;64,32,8,16,4096,128,1;1,8,8,1,64,64,0"),
                         [Shape(8, 32, 8, 1, 8192, 128), Shape(64, 32, 8, 16, 4096, 128, True),
                          Shape(1, 8, 8, 1, 64, 64)])
        self.assertEqual(peers.parse_shape("64,32,8,16,4096,128,causal"), Shape(64, 32, 8, 16, 4096, 128, True))

    def test_the_label_reads_back(self):
        for s in [Shape(8, 32, 8, 1, 8192, 128), Shape(1, 8, 8, 512, 2048, 128, True, "fp16", "bshd")]:
            self.assertEqual(peers.parse_shape(s.label()), s)
        self.assertEqual(Shape(64, 32, 8, 16, 4096, 128, True).label(), "64,32/8,16,4096,128c")

    def test_bad_shapes_are_named(self):
        for text, message in [("8,32/8,1,x,128", "NKV: 'x' is not a positive integer"),
                              ("8,32/8,1,8192,0", "D: '0' is not a positive integer"),
                              ("8,32/7,1,8192,128", "32 query heads are not a multiple of 7 K/V heads"),
                              ("8,32/8,1,8192,128,fp17", "'fp17' is not causal, c, bf16, fp16, bhsd, bshd, wLEFT:RIGHT, capC, dvN, "
                                                         "seqlens:L1/L2/... or seqlens:uniform:LO:HI"),
                              ("8,32/8,1,8192,128,c,bf8", "'bf8' is not causal"),
                              ("8,32,1,8192", "got 4 fields"),
                              (" ; ", "names no shape")]:
            with self.subTest(text=text), self.assertRaisesRegex(BadInput, message):
                peers.parse_shapes(text)
        with self.assertRaisesRegex(BadInput, r"--shapes '8,32/8,1,x,128'"):
            peers.parse_shapes("4,8,64,64,64;8,32/8,1,x,128")

    def test_a_window_and_softcap(self):
        s = peers.parse_shape("1,32,16384,16384,128c,w1024:-1,cap50")
        self.assertEqual(s, Shape(1, 32, 32, 16384, 16384, 128, True, window_left=1024, softcap=50.0))
        self.assertEqual(s.window(), (1024, 0))
        self.assertEqual(peers.parse_shape(s.label()), s)
        self.assertEqual(s.tool_args()[-4:], ["--window", "1024,0", "--softcap", "50"])
        with self.assertRaisesRegex(BadInput, r"'w12' is not causal, c, bf16, fp16, bhsd, bshd, wLEFT:RIGHT, capC, dvN, "):
            peers.parse_shape("1,8,64,64,64,c,w12")

    def test_a_value_head_dim(self):
        s = peers.parse_shape("1,128,4096,4096,192c,dv128")
        self.assertEqual(s, Shape(1, 128, 128, 4096, 4096, 192, True, dv=128))
        self.assertEqual(peers.parse_shape(s.label()), s)
        self.assertEqual(s.tool_args()[-2:], ["--dv", "128"])
        self.assertEqual(peers.flops(s), 2 * (192 + 128) * 128 * 4096 * 4096 / 2)  # as the tool counts
        self.assertEqual(peers.bytes_moved(s), 128 * 4096 * (192 + 128) * 2 * 2 + 4 * 128 * 4096)
        rows = peers.read_sweep(os.path.join(ROOT, "sweeps", "llm-value-dim.csv"))
        self.assertEqual(rows[0], Shape(1, 128, 128, 4096, 4096, 192, True, name="deepseek-v3-mla-prefill-4096", dv=128))

    def test_a_packed_batch(self):
        s = peers.parse_shape("4,16,512,512,64c,seqlens:100/0/512/007")
        self.assertEqual(s, Shape(4, 16, 16, 512, 512, 64, True, layout="bshd", seqlens="100/0/512/7"))
        self.assertEqual(s.label(), "4,16/16,512,512,64c,bshd,seqlens:100/0/512/7")  # bshd: packed [total, H, D]
        self.assertEqual(s.lengths(), [100, 0, 512, 7])
        self.assertEqual(s.tool_args(), ["--shape", "4,16,512,64", "--kv-heads", "16", "--kv-len", "512", "--dtype",
                                         "bf16", "--layout", "bshd", "--causal", "--seqlens", "100,0,512,7"])
        for text in ["4,16/4,512,512,64,fp16,bshd,w64:-1,cap30,dv32,seqlens:1/2/3/4",
                     "32,16,8192,8192,128c,SEQLENS:Uniform:128:8192"]:
            with self.subTest(text=text):
                s = peers.parse_shape(text)
                self.assertEqual(peers.parse_shape(s.label()), s)
        self.assertEqual(Shape(8, 8, 8, 64, 64, 64).lengths(), [])

    def test_uniform_lengths_are_drawn_the_same_every_run(self):
        s = peers.parse_shape("32,16,8192,8192,128c,seqlens:uniform:128:8192")
        self.assertEqual(s.label(), "32,16/16,8192,8192,128c,bshd,seqlens:uniform:128:8192")
        lengths = s.lengths()
        self.assertEqual(lengths[:6], [6938, 6240, 3519, 2216, 4251, 3393])  # random.Random(0).random()'s
        self.assertEqual((len(lengths), sum(lengths), min(lengths), max(lengths)), (32, 163220, 940, 8054))
        self.assertEqual(s.tool_args()[-2:], ["--seqlens", ",".join(map(str, lengths))])  # explicit, as drawn
        self.assertEqual(peers.uniform_lengths(3, 5, 5), [5, 5, 5])
        self.assertEqual(peers.uniform_lengths(4, 0, 1), [1, 1, 0, 0])
        self.assertTrue(all(0 <= n <= 2 for n in peers.uniform_lengths(200, 0, 2)))
        self.assertEqual(set(peers.uniform_lengths(200, 0, 2)), {0, 1, 2})

    def test_bad_packed_batches_are_named(self):
        for text, message in [
                ("4,16,512,512,64,seqlens:1/2/3", r"seqlens:1/2/3 gives 3 lengths for B 4"),
                ("4,16,512,1024,64,seqlens:1/2/3/4", r"seqlens:1/2/3/4 with NQ 512 != NKV 1024: a packed batch is "
                                                     "self-attention here"),
                ("4,16,512,512,64,bhsd,seqlens:1/2/3/4", r"seqlens:1/2/3/4 with layout bhsd: a packed batch is "
                                                         r"\[total, H, D\] here"),
                ("4,16,512,512,64,seqlens:0/0/0/0", r"seqlens:0/0/0/0: every sequence is empty"),
                ("4,16,512,512,64,seqlens:1/2/3/600", r"seqlens:1/2/3/600: length 600 is above NQ 512"),
                ("4,16,512,512,64,seqlens:uniform:9:3", r"seqlens:uniform:9:3: LO 9 is above HI 3"),
                ("4,16,512,512,64,seqlens:uniform:1:513", r"seqlens:uniform:1:513: HI 513 is above NQ 512"),
                ("4,16,512,512,64,seqlens:uniform:0:0", r"seqlens:uniform:0:0: every sequence is empty"),
                ("4,16,512,512,64,seqlens:uniform:1", r"'seqlens:uniform:1' is not causal, .* or seqlens:uniform:LO:HI"),
                ("4,16,512,512,64,seqlens:1//2", r"'seqlens:1//2' is not causal"),
                ("4,16,512,512,64,seqlens:-1/2/3/4", r"'seqlens:-1/2/3/4' is not causal")]:
            with self.subTest(text=text), self.assertRaisesRegex(BadInput, message):
                peers.parse_shape(text)
        with self.assertRaisesRegex(BadInput, r"^--shapes '4,16,512,512,64,seqlens:1/2/3': "):
            peers.parse_shape("4,16,512,512,64,seqlens:1/2/3")

    def test_the_tool_gets_the_whole_problem(self):
        self.assertEqual(Shape(1, 8, 2, 512, 2048, 128, True, "fp16", "bshd").tool_args(),
                         ["--shape", "1,8,512,128", "--kv-heads", "2", "--kv-len", "2048", "--dtype", "fp16",
                          "--layout", "bshd", "--causal"])


class sweeps(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_ci_smoke_as_the_tool_reads_it(self):
        rows = peers.read_sweep(os.path.join(ROOT, "sweeps", "ci-smoke.csv"))
        self.assertEqual(rows, [Shape(2, 32, 8, 1024, 1024, 128, True, name="llama3-8b-1k"),
                                Shape(4, 16, 16, 1024, 1024, 64, name="d64-1k"),
                                Shape(1, 16, 8, 1024, 1024, 256, True, name="gemma2-1k"),
                                Shape(1, 8, 8, 512, 2048, 128, False, "fp16", "bshd", "cross-fp16-bshd")])

    def test_every_sweep_of_the_repository_reads(self):
        for name in sorted(os.listdir(os.path.join(ROOT, "sweeps"))):
            with self.subTest(name=name):
                self.assertTrue(peers.read_sweep(os.path.join(ROOT, "sweeps", name)))
        self.assertEqual(len(peers.read_sweep(os.path.join(ROOT, "sweeps", "yardstick.csv"))), 12)

    def test_comments_blanks_and_flags(self):
        path = self.write("# a comment\n  # an indented one\nname,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n\n"
                          "a,1,8,2,16,4096,128,yes,,\nb,2,4,,64,,64,false,fp16,bshd\n")
        self.assertEqual(peers.read_sweep(path), [Shape(1, 8, 2, 16, 4096, 128, True, name="a"),
                                                  Shape(2, 4, 4, 64, 64, 64, False, "fp16", "bshd", "b")])

    def test_bad_sweeps_name_the_line_column_and_value(self):
        header = "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n"
        for body, message in [("a,1,8,,0,,64,0,,\n", r":2: column 'N': '0' is not a positive integer"),
                              ("a,1,8,,16,,64,2,,\n", r":2: column 'causal': '2' is not 0/1"),
                              ("a,1,8,,16,,64,0,fp32,\n", r":2: column 'dtype': 'fp32' is not bf16 or fp16"),
                              ("a,1,8,,16,,64,0,,bsdh\n", r":2: column 'layout': 'bsdh' is not bhsd or bshd"),
                              ("a,1,8,3,16,,64,0,,\n", r":2: 8 query heads are not a multiple of 3"),
                              ("a,1,8\n", r":2: 3 cells, the header has 10"),
                              ("", "has no rows")]:
            with self.subTest(body=body), self.assertRaisesRegex(BadInput, message):
                peers.read_sweep(self.write(header + body))
        with self.assertRaisesRegex(BadInput, "lacks column 'D'"):
            peers.read_sweep(self.write("name,B,H,N\na,1,1,1\n"))
        with self.assertRaisesRegex(BadInput, "cannot read sweep file '/nonexistent.csv'"):
            peers.read_sweep("/nonexistent.csv")

    def test_a_packed_batch_s_columns(self):
        header = "name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout,seqlens,kv_seqlens,page_size,kv_lens\n"
        rows = peers.read_sweep(self.write(header + "p,3,4,,512,,64,1,,,512/0/77,,0,\n"
                                           "u,2,4,,512,,64,0,,bshd,uniform:1:512,,,\n"))
        self.assertEqual(rows[0], Shape(3, 4, 4, 512, 512, 64, True, layout="bshd", name="p", seqlens="512/0/77"))
        self.assertEqual(rows[1].seqlens, "uniform:1:512")
        with_pass = header[:-1] + ",pass\n"
        for body, message in [("a,3,4,,512,,64,0,,,512/0/77,1/1/1,,,\n", r"column 'kv_seqlens': '1/1/1' is not timed"),
                              ("a,1,4,,512,,64,0,,,,,64,,\n", r"column 'page_size': '64' is not timed"),
                              ("a,1,4,,512,,64,0,,,,,,100,\n", r"column 'kv_lens': '100' is not timed"),
                              ("a,1,4,,512,,64,0,,,,,,,bwd\n", r"column 'pass': 'bwd' is not timed")]:
            with self.subTest(body=body):
                path = self.write(with_pass + "d,1,4,,512,,64,0,,,,,,,fwd\n" + body)
                self.assertRegex(peers.read_sweep(path)[1].refusal, message)
                self.assertEqual(peers.parse_args(["--sweep", path, "--rows", "0", "--table", path, "--out", path + ".out"]).shape_list[0].name, "d")
                with self.assertRaisesRegex(BadInput, message + r".*--rows picks the others"):
                    peers.parse_args(["--sweep", path, "--table", path, "--out", path + ".out"])
        for body, message in [("a,2,4,,512,,64,0,,,5;6,,,\n", r"column 'seqlens': '5;6' is not L1/L2/"),
                              ("a,2,4,,512,,64,0,,bhsd,5/6,,,\n", r"with layout bhsd: a packed batch is"),
                              ("a,2,4,,512,,64,0,,,5/600,,,\n", r"length 600 is above NQ 512")]:
            with self.subTest(body=body), self.assertRaisesRegex(BadInput, message):
                peers.read_sweep(self.write(header + body))

    def test_flush_is_zero_unless_read_is_asked(self):
        table = self.write("a table\n")
        shapes = ["--shapes", "8,32/8,1,8192,128", "--table", table, "--out", table + ".out"]
        self.assertEqual(peers.parse_args(shapes).flush, "zero")
        self.assertEqual(peers.parse_args(shapes + ["--flush", "read"]).flush, "read")
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            peers.parse_args(shapes + ["--flush", "dirty"])
        self.assertIn("invalid choice: 'dirty'", err.getvalue())

    def test_rows_by_index_range_and_name(self):
        rows = peers.read_sweep(os.path.join(ROOT, "sweeps", "ci-smoke.csv"))
        self.assertEqual([s.name for s in peers.select_rows(rows, "3,0-1,gemma2-1k")],
                         ["cross-fp16-bshd", "llama3-8b-1k", "d64-1k", "gemma2-1k"])
        for spec, message in [("4", "has 4 rows, 0 to 3"), ("2-9", "has 4 rows"), ("3-1", "runs backwards"),
                              ("llama", "not a row index, a range like 2-5, or a name"), (",", "names no row")]:
            with self.subTest(spec=spec), self.assertRaisesRegex(BadInput, message):
                peers.select_rows(rows, spec, "ci-smoke.csv")


class numbers(unittest.TestCase):
    def test_tflops_the_tool_s_way(self):
        s = Shape(4, 32, 32, 4096, 4096, 128)
        self.assertEqual(peers.flops(s), 4 * 4 * 32 * 4096 * 4096 * 128)
        self.assertEqual(peers.flops(Shape(4, 32, 32, 4096, 4096, 128, True)), peers.flops(s) / 2)
        self.assertAlmostEqual(peers.tflops(s, 1.6322), 673.6, places=1)  # the README's headline row
        self.assertTrue(math.isnan(peers.tflops(s, 0.0)))

    def test_a_window_counts_its_visible_pairs(self):
        s = Shape(2, 4, 4, 1024, 1024, 64, True, window_left=255)
        self.assertEqual(peers.flops(s), 4 * 2 * 4 * 64 * (1024 * 256 - 255 * 256 // 2))  # as the tool counts
        s = Shape(1, 1, 1, 4, 6, 64, False, window_left=1, window_right=1)
        self.assertEqual(peers.visible_pairs(s), 3 + 3 + 3 + 2)  # keys i+1..i+3, the last row clamped at 5

    def test_the_variant_sweep_as_the_tool_reads_it(self):
        rows = peers.read_sweep(os.path.join(ROOT, "sweeps", "llm-variants.csv"))
        self.assertEqual(rows[0], Shape(4, 32, 32, 4096, 4096, 128, True, name="4x32x4096x128-w1024", window_left=1024))
        self.assertEqual(rows[-2].softcap, 50.0)
        self.assertEqual(rows[-2].window(), (4096, 0))

    def test_bytes_moved_with_gqa_and_the_lse(self):
        s = Shape(8, 32, 8, 1, 8192, 128)
        q = 8 * 32 * 1 * 128 * 2
        self.assertEqual(peers.bytes_moved(s), 2 * q + 2 * 8 * 8 * 8192 * 128 * 2 + 4 * 8 * 32)
        # decode.py's GB/s for its first row (results/h200/2026-12-01-decode/call8): 3081 at 0.08717 ms
        self.assertAlmostEqual(peers.gbs(s, 0.08716800063848495), 3081.03, places=1)

    def test_a_window_reads_only_the_keys_some_query_sees(self):
        s = Shape(8, 32, 8, 1, 8192, 128, True, window_left=1024)  # decode: the cache's last 1025 keys
        self.assertEqual(peers.visible_keys(s), 1025)
        q = 8 * 32 * 1 * 128 * 2
        self.assertEqual(peers.bytes_moved(s), 2 * q + 2 * 8 * 8 * 1025 * 128 * 2 + 4 * 8 * 32)
        self.assertEqual(peers.visible_keys(Shape(1, 1, 1, 4096, 4096, 64, True, window_left=1024)), 4096)
        self.assertEqual(peers.visible_keys(Shape(1, 1, 1, 4, 6, 64, False, window_left=1, window_right=1)), 5)
        self.assertEqual(peers.visible_keys(Shape(1, 1, 1, 4096, 4096, 64)), 4096)

    def test_of_dense_sets_a_window_or_softcap_beside_the_dense_shape(self):
        self.assertEqual(peers.dense_label("2,16/8,8192,8192,256c,w4096:-1,cap50"), "2,16/8,8192,8192,256c")
        self.assertEqual(peers.dense_label("4,32/32,4096,4096,128c"), "4,32/32,4096,4096,128c")
        ms = {"4,32/32,4096,4096,128c": 1.0, "4,32/32,4096,4096,128c,cap50": 1.25,
              "4,32/32,4096,4096,128c,w1024:-1": 0.5, "1,8/8,64,64,64,w8:8": 0.1}
        lines = peers.of_dense(ms)
        self.assertEqual(len(lines), 3)  # the last has no dense row: left out
        self.assertIn("4,32/32,4096,4096,128c,cap50", lines[1])
        self.assertIn(" 0.80 of 4,32/32,4096,4096,128c", lines[1])  # the same FLOPs in 1.25x the time
        pairs = 1024 * 1025 // 2 + 1025 * (4096 - 1024)  # the window's visible pairs against N^2/2
        self.assertIn(f" {pairs / (4096 * 4096 / 2) / 0.5:.2f} of", lines[2])
        self.assertEqual(peers.of_dense({"4,32/32,4096,4096,128c": 1.0}), [])

    def test_a_packed_batch_counts_each_sequence(self):
        s = peers.parse_shape("3,4/2,8,8,16c,seqlens:4/0/8")
        self.assertEqual(peers.flops(s), 4 * 16 * 4 * (4 * 4 + 0 + 8 * 8) / 2)  # the tool's: N_i^2 halved
        self.assertEqual(peers.flops(dataclasses.replace(s, causal=False)), 4 * 16 * 4 * 80)
        rows = 4 + 0 + 8  # Q and O of 4 heads, K and V of 2, the LSE: of the total rows
        self.assertEqual(peers.bytes_moved(s), rows * 4 * 16 * 2 * 2 + rows * 2 * 16 * 2 * 2 + 4 * rows * 4)
        w = peers.parse_shape("3,4/2,8,8,16c,w2:-1,seqlens:4/0/8")  # row i sees keys i-2..i of its sequence
        self.assertEqual(peers.flops(w), 4 * 16 * 4 * ((1 + 2 + 3 + 3) + (1 + 2 + 3 * 6)))
        self.assertEqual(peers.bytes_moved(w), peers.bytes_moved(s))  # every key is seen by some query
        for text in ["2,4,64,64,32c,seqlens:64/64", "2,4/2,64,64,32,w8:8,seqlens:64/64"]:  # equal lengths: dense
            with self.subTest(text=text):
                packed = peers.parse_shape(text)
                dense = dataclasses.replace(packed, seqlens="", layout="bhsd")
                self.assertEqual(peers.flops(packed), peers.flops(dense))
                self.assertEqual(peers.bytes_moved(packed), peers.bytes_moved(dense))

    def test_of_dense_sets_a_packed_batch_beside_its_dense_companion(self):
        packed = "32,16/16,8192,8192,128,bshd,seqlens:uniform:128:8192"
        ms = {"4,16/16,8192,8192,128": 1.0, "4,16/16,8192,8192,128c": 0.6, packed: 2.0,
              "32,16/16,8192,8192,64,bshd,seqlens:uniform:128:8192": 1.0}  # no companion: left out
        self.assertEqual(peers.dense_companion(peers.parse_shape(packed), ms), "4,16/16,8192,8192,128")
        causal = packed.replace("128,bshd", "128c,bshd")  # causal must match
        self.assertIsNone(peers.dense_companion(peers.parse_shape(causal), [causal, "4,16/16,8192,8192,128"]))
        lines = peers.of_dense(ms)
        self.assertEqual(len(lines), 2)
        rate = sum(n * n for n in peers.parse_shape(packed).lengths()) / (4 * 8192 * 8192) / 2.0
        self.assertIn(f"{packed} {rate:.2f} of 4,16/16,8192,8192,128 (2.0000 ms against 1.0000)",
                      " ".join(lines[1].split()))

    def test_the_masks_pair_visible(self):
        def pattern(s):  # the rows of keys each query sees, bottom-right
            return [[j for j in range(s.nkv) if peers.pair_visible(i + s.nkv - s.nq, j, *s.mask_sides())]
                    for i in range(s.nq)]
        self.assertEqual(pattern(Shape(1, 1, 1, 2, 4, 64, True)), [[0, 1, 2], [0, 1, 2, 3]])
        self.assertEqual(pattern(Shape(1, 1, 1, 2, 4, 64)), [[0, 1, 2, 3]] * 2)
        self.assertEqual(pattern(Shape(1, 1, 1, 3, 3, 64, True, window_left=1)), [[0], [0, 1], [1, 2]])
        self.assertEqual(pattern(Shape(1, 1, 1, 3, 3, 64, window_left=0, window_right=1)), [[0, 1], [1, 2], [2]])
        s = Shape(1, 1, 1, 4, 6, 64, window_left=1, window_right=1)  # as visible_pairs counts it
        self.assertEqual(sum(map(len, pattern(s))), peers.visible_pairs(s))

    def test_the_document_mask_of_a_packed_batch(self):
        def pattern(text):  # FlexAttention's mask_mod over the packed rows, in plain ints
            s = peers.parse_shape(text)
            seq = peers.sequence_of_rows(s.lengths())
            return [[j for j in range(len(seq)) if peers.document_visible(seq[i], seq[j], i, j, *s.mask_sides())]
                    for i in range(len(seq))]
        self.assertEqual(peers.sequence_of_rows([2, 0, 3]), [0, 0, 2, 2, 2])
        self.assertEqual(pattern("3,1,3,3,64c,seqlens:2/0/3"), [[0], [0, 1], [2], [2, 3], [2, 3, 4]])
        self.assertEqual(pattern("3,1,3,3,64,seqlens:2/0/3"), [[0, 1], [0, 1], [2, 3, 4], [2, 3, 4], [2, 3, 4]])
        self.assertEqual(pattern("2,1,3,3,64c,w1:-1,seqlens:2/3"), [[0], [0, 1], [2], [2, 3], [3, 4]])
        self.assertEqual(pattern("2,1,3,3,64,w0:1,seqlens:2/3"), [[0, 1], [1], [2, 3], [3, 4], [4]])
        # each sequence's block is the dense mask of its length, and its pairs are what flops counts
        s = peers.parse_shape("3,1,9,9,16c,w3:-1,seqlens:9/4/7")
        self.assertEqual(sum(map(len, pattern(s.label()))), peers.flops(s) / (4 * 16))

    def test_ratios_and_the_fastest_peer(self):
        self.assertAlmostEqual(peers.ratio(2.0, 1.0), 2.0)
        for bad in [(math.nan, 1.0), (1.0, math.nan), (0.0, 1.0), (1.0, 0.0)]:
            self.assertTrue(math.isnan(peers.ratio(*bad)))
        times = {"attn-tune": 0.5, "attn-tune-capi": 0.1, "sdpa-cudnn": 0.8, "sdpa-flash": 0.6, "flex": math.nan}
        self.assertEqual(peers.fastest_peer(times), ("sdpa-flash", 0.6))  # ours either way is no peer
        name, ms = peers.fastest_peer({"attn-tune": 0.5, "flex": math.nan})
        self.assertIsNone(name)
        self.assertTrue(math.isnan(ms))

    def test_shape_rows(self):
        s = Shape(8, 32, 8, 1, 8192, 128, name="b8")
        results = {"sdpa-cudnn": {"ms": 0.08, "sustained_ms": 0.09, "max_err": 1e-4, "status": "ok"},
                   "attn-tune": {"ms": 0.1, "sustained_ms": 0.1, "max_err": 2e-4, "status": "ok",
                                 "config": "fa2 m32_n64_w2_s2_p4_g1", "reps": 900},
                   "flex": {"status": "not run: RuntimeError: no"}}
        rows = peers.shape_rows(s, results, 4000.0, {"tool_ms": 0.09, "tune_s": 1.5, "reference": "sdpa-flash"})
        self.assertEqual([r["impl"] for r in rows], ["attn-tune", "sdpa-cudnn", "flex"])
        ours, cudnn, flex = rows
        self.assertAlmostEqual(ours["ratio_to_ours"], 1.0)
        self.assertAlmostEqual(cudnn["ratio_to_ours"], 0.8)
        self.assertAlmostEqual(cudnn["sustained_ratio_to_ours"], 0.9)
        self.assertAlmostEqual(ours["of_copy"], peers.gbs(s, 0.1) / 4000.0)
        self.assertEqual((ours["tool_ms"], ours["tune_s"]), (0.09, 1.5))
        self.assertTrue(math.isnan(cudnn["tool_ms"]))
        self.assertTrue(math.isnan(flex["ms"]) and math.isnan(flex["ratio_to_ours"]))
        self.assertEqual(flex["status"], "not run: RuntimeError: no")
        self.assertEqual(ours["seqlens"], "")  # a packed batch's lengths, explicit, below
        packed = peers.parse_shape("4,8,64,64,64,seqlens:uniform:0:64")
        self.assertEqual(peers.shape_rows(packed, results, 4000.0, {})[0]["seqlens"], "54/49/27/16")


class writing(unittest.TestCase):
    def rows(self):
        out = []
        for s, res in [(Shape(8, 32, 8, 1, 8192, 128, name="b8"),
                        {"attn-tune": {"ms": 0.1, "sustained_ms": 0.11, "max_err": 2.5e-4, "config": "fa2 m32_n64"},
                         "sdpa-cudnn": {"ms": 0.08, "sustained_ms": 0.1, "max_err": 1e-4},
                         "sdpa-flash": {"ms": 0.09, "sustained_ms": 0.12, "max_err": 1e-4}}),
                       (Shape(4, 32, 32, 4096, 4096, 128, True, name="head"),
                        {"attn-tune": {"ms": 1.0, "sustained_ms": 1.0, "max_err": 7e-4, "config": "hopper m128"},
                         "sdpa-cudnn": {"ms": 1.1, "sustained_ms": 1.05, "max_err": 5e-4},
                         "triton": {"ms": 1.3, "max_err": 0.5, "status": "MISMATCH: max abs error 0.5"}})]:
            out += peers.shape_rows(s, res, 4267.0, {"reference": "sdpa-flash"})
        return out

    def test_markdown(self):
        text = peers.markdown(self.rows(), ENV)
        lines = text.splitlines()
        self.assertEqual(lines[0], "H200, 2026-12-01, 6fb819e: ours and the peers, one rule, one process "
                                   "(bench/peers.py).")
        head = [c.strip() for c in lines[2].strip("|").split("|")]
        self.assertEqual(head, ["shape", "name", "ours config", "ours ms", "TFLOPS", "of copy", "sdpa-cudnn ms",
                                "sdpa-flash ms", "triton ms", "fastest peer", "ours / fastest peer",
                                "sustained: ours / fastest peer", "ours max err"])
        decode_row = [c.strip() for c in lines[4].strip("|").split("|")]
        self.assertEqual(decode_row[:4], ["8,32/8,1,8192,128", "b8", "fa2 m32_n64", "0.1000"])
        self.assertEqual(decode_row[6:], ["0.0800", "0.0900", "–", "sdpa-cudnn", "0.80", "0.91", "2.50e-04"])
        prefill_row = [c.strip() for c in lines[5].strip("|").split("|")]
        self.assertEqual(prefill_row[6:], ["1.1000", "–", "1.3000 MISMATCH", "sdpa-cudnn", "1.10", "1.05", "7.00e-04"])
        self.assertIn("Copy bandwidth 4267 GB/s, bf16 matmul 780.0 TFLOPS", text)
        self.assertIn("- 4,32/32,4096,4096,128c triton: MISMATCH: max abs error 0.5", text)

    def test_csv_its_environment_and_the_summary(self):
        d = tempfile.mkdtemp()
        sink = peers.CsvOut(os.path.join(d, "peers.csv"), ENV)
        rows = self.rows()
        sink.write(rows[:3])
        sink.write(rows[3:])
        sink.close()
        with open(os.path.join(d, "peers.csv")) as f:
            text = f.read()
        self.assertTrue(text.startswith("# gpu: NVIDIA H200\n# date: 2026-12-01 10:00 UTC\n# commit: 6fb819e\n"))
        self.assertIn("\n" + ",".join(peers.CSV_COLUMNS) + "\n", text)
        back = peers.read_rows(os.path.join(d, "peers.csv"))
        self.assertEqual(len(back), 6)
        self.assertEqual(back[1]["impl"], "sdpa-cudnn")
        self.assertAlmostEqual(float(back[1]["ratio_to_ours"]), 0.8)
        self.assertEqual(back[5]["status"], "MISMATCH: max abs error 0.5")
        short = peers.summary([d, os.path.join(d, "missing")]).splitlines()
        self.assertIn("6 rows", short[1])
        self.assertRegex(short[2], r"^8,32/8,1,8192,128 +b8 +0\.1000 sdpa-cudnn +0\.0800 +0\.80 +0\.91  ok$")
        self.assertRegex(short[3], r"1\.10 +1\.05  triton: MISMATCH")
        self.assertIn("missing: cannot read", short[4])

    def test_never_overwrite(self):
        d = tempfile.mkdtemp()
        self.assertEqual(peers.new_output_dir(d), d)  # empty: taken
        peers.new_output_dir(os.path.join(d, "new", "deeper"))  # new: made
        with open(os.path.join(d, "peers.csv"), "w") as f:
            f.write("earlier\n")
        with self.assertRaisesRegex(BadInput, f"--out '{d}' is not empty"):
            peers.new_output_dir(d)
        with self.assertRaisesRegex(BadInput, "is not a folder"):
            peers.new_output_dir(os.path.join(d, "peers.csv"))
        with self.assertRaises(FileExistsError):  # the file itself is opened only new
            peers.CsvOut(os.path.join(d, "peers.csv"), ENV)
        with open(os.path.join(d, "peers.csv")) as f:
            self.assertEqual(f.read(), "earlier\n")


class command_line(unittest.TestCase):
    def test_help_teaches_without_torch(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        for words in ("triton.testing.do_bench", "L2 cleared", "--sustained", "ratio_to_ours", "B,H[/KV],NQ,NKV,D",
                      "bench/device/peers.sh", "nothing is overwritten", "seqlens:uniform:LO:HI", "random.Random(0)",
                      "document mask", "SDPA has no packed"):
            self.assertIn(words, p.stdout)

    def test_refusals_name_the_value_and_come_before_torch(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "x"), "w"):
            pass
        tool = os.path.join(d, "attn-tune")  # any executable file will do: these are refused before it runs
        with open(tool, "w") as f:
            f.write("#!/bin/sh\nexit 9\n")
        os.chmod(tool, 0o755)
        cases = [(["--shapes", "1,8,64,64,64"], "--out DIR is required"),
                 (["--out", d, "--tool", tool, "--shapes", "1,8,64,64,64"], f"--out '{d}' is not empty"),
                 (["--out", d + "/n", "--tool", tool, "--shapes", "8,32/3,1,64,64"], "not a multiple of 3 K/V heads"),
                 (["--out", d + "/n", "--tool", tool, "--shapes", "4,8,64,64,64,seqlens:1/2"], "gives 2 lengths for B 4"),
                 (["--out", d + "/n", "--tool", "/no/attn-tune", "--shapes", "1,8,64,64,64"], "--tool '/no/attn-tune'"),
                 (["--out", d + "/n", "--table", "/no/table.json", "--shapes", "1,8,64,64,64"],
                  "--table '/no/table.json': no such file"),
                 (["--out", d + "/n", "--shapes", "1,8,64,64,64", "--sweep", "sweeps/ci-smoke.csv"], "exclude each other"),
                 (["--out", d + "/n", "--tool", tool, "--sweep", "sweeps/ci-smoke.csv", "--rows", "9"], "has 4 rows"),
                 (["--out", d + "/n", "--tool", tool, "--reps", "-1"], "--reps -1"),
                 (["--out", d + "/n", "--tool", tool, "--sustained", "-2"], "--sustained -2.0"),
                 (["--out", d + "/n", "--tool", tool, "--tolerance", "0"], "--tolerance 0.0"),
                 (["--summary"], "name the runs' folders")]
        for argv, message in cases:
            with self.subTest(argv=argv):
                p = run(*argv)
                self.assertEqual(p.returncode, 2, p.stderr + p.stdout)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
        self.assertFalse(os.path.exists(d + "/n"))


class decode_wrapper(unittest.TestCase):
    def test_its_old_options_become_peers_py_s(self):
        argv = decode.peers_argv(["--tool", "t", "--no-flex"])
        self.assertEqual(argv[:2], ["--shapes", decode.SHAPES])
        self.assertEqual(argv[2:5], ["--tool", "t", "--no-flex"])
        self.assertEqual(argv[5], "--out")
        self.assertEqual(len(peers.parse_shapes(decode.SHAPES)), 4)
        self.assertEqual(decode.peers_argv(["--sweep", "s.csv", "--rows", "0-5", "--out", "o"]),
                         ["--sweep", "s.csv", "--rows", "0-5", "--out", "o"])
        self.assertEqual(decode.peers_argv(["--shapes=8,32,8,1,8192,128", "--out", "o"]),
                         ["--shapes=8,32,8,1,8192,128", "--out", "o"])


if __name__ == "__main__":
    unittest.main()
