"""bench/tuning_bar.py's parsing and table, and bench/run.py (tuning-bar, library-bar, inputs) end
to end with a fake attn-tune, a fake peers.py and a fake ctest (the real ones need the GPU machine)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import tuning_bar  # noqa: E402

# What peers.py --shape 16,16,1024,64 --with-triton writes (its format; the numbers made up).
PEERS = textwrap.dedent("""\
    # NVIDIA H200 torch 2.11.0+cu130 triton 3.6.0
    # ceilings: dense bf16 matmul 786 TFLOPS; device copy 4.26 TB/s
    peer,dtype,B,H,N,D,causal,ms,tflops,rel_err_vs_flash,tune_s
    sdpa-flash,bfloat16,16,16,1024,64,0,0.2481,277.0,0.00e+00,
    sdpa-cudnn,bfloat16,16,16,1024,64,0,0.1636,420.1,2.80e-03,
    triton-autotune,bfloat16,16,16,1024,64,0,0.2000,343.6,3.10e-03,21.4
    # sdpa-efficient B16 H16 N1024 D64 causal=1: not available (...)
    sdpa-flash,bfloat16,16,16,1024,64,1,0.1701,201.9,0.00e+00,
    triton-autotune,bfloat16,16,16,1024,64,1,0.1500,229.0,1.50e-03,18.9
    """)

RESULTS_HEADER = ("schema_version,device,family,config,status,median_ms,rank,noise,measured\n")


def results(rows):
    """A results CSV cut to the columns the helper reads, with the '#end' line attn-tune writes."""
    body = RESULTS_HEADER + "".join(f"4,NVIDIA H200,{f},{c},ok,{ms},{rank},0.004,full\n" for f, c, ms, rank in rows)
    return body + f"#end,rows={len(rows)},xxh3=0123\n"


class parsing(unittest.TestCase):
    def test_triton_tune_s_of_each_causality(self):
        self.assertEqual(tuning_bar.triton_tune_s(PEERS, False), 21.4)
        self.assertEqual(tuning_bar.triton_tune_s(PEERS, True), 18.9)
        self.assertEqual(tuning_bar.triton_tune_s(PEERS, True, "16,16,1024,64"), 18.9)
        with self.assertRaisesRegex(ValueError, "no triton-autotune row for 4,32,4096,128 with causal=1"):
            tuning_bar.triton_tune_s(PEERS, True, "4,32,4096,128")

    def test_peers_output_without_triton_says_so(self):
        without = "\n".join(l for l in PEERS.splitlines() if not l.startswith("triton"))
        with self.assertRaisesRegex(ValueError, "--with-triton"):
            tuning_bar.triton_tune_s(without, False)
        with self.assertRaisesRegex(ValueError, "expected peers.py's header"):
            tuning_bar.triton_tune_s("a,b\n1,2\n", False)

    def test_winner_is_rank_one_not_the_first_row_nor_the_fastest(self):
        text = results([("hopper", "m128_n128_w12_s2_k7", 0.1650, 2), ("hopper", "m192_n128_w16_s3_k7", 0.1662, 1),
                        ("hopper", "m128_n64_w12_s2_k5", 0.1700, 3)])
        self.assertEqual(tuning_bar.winner(text), ("hopper", "m192_n128_w16_s3_k7", 0.1662))
        with self.assertRaisesRegex(ValueError, "no variant of rank 1"):
            tuning_bar.winner(results([("hopper", "m128_n64_w12_s2_k5", 0.17, 0)]))

    def test_sweep_rows_and_shapes(self):
        with open(os.path.join(ROOT, "sweeps", "yardstick.csv")) as f:
            text = f.read()
        rows = tuning_bar.sweep_rows(text)
        self.assertEqual(len(rows), 12)
        self.assertEqual(rows[:2], [("4,32,4096,128", False), ("4,32,4096,128", True)])
        self.assertEqual(tuning_bar.sweep_shapes(text)[:2], ["4,32,4096,128", "16,16,1024,64"])
        self.assertEqual(len(tuning_bar.sweep_shapes(text)), 6)
        with self.assertRaisesRegex(ValueError, "row gqa"):
            tuning_bar.sweep_rows("name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\ngqa,1,8,2,512,,64,0,,\n")

    def test_difference_percent(self):
        self.assertAlmostEqual(tuning_bar.difference_percent(1.01, 1.0), 1.0)
        self.assertAlmostEqual(tuning_bar.difference_percent(0.99, 1.0), -1.0)

    def test_sweep_line_sums_the_rows_it_has_and_says_what_is_missing(self):
        rows = [("16,16,1024,64", False), ("16,16,1024,64", True)]
        self.assertEqual(tuning_bar.sweep_line(10.15, rows, [PEERS]),
                         "sweep cold: 10.2 s wall; Triton's cold autotune summed over 2 of its 2 rows: 40.3 s; "
                         "ratio 0.252")
        line = tuning_bar.sweep_line(10.0, rows + [("4,32,4096,128", False)], [PEERS])
        self.assertIn("summed over 2 of its 3 rows: 40.3 s; no ratio: 1 rows not measured", line)


class table(unittest.TestCase):
    SCREEN, EXHAUSTIVE = "m192_n128_w16_s3_k7", "m128_n128_w12_s2_k7"

    def files(self, screen_ms, exhaustive_ms, side):
        # side: (screen/exhaustive in the A,B run, in the B,A run), both winners measured in one process
        ab, ba = side
        return {"p.csv": PEERS,
                "cold.csv": results([("hopper", self.SCREEN, screen_ms, 1)]),
                "ex.csv": results([("hopper", self.EXHAUSTIVE, exhaustive_ms, 1)]),
                "ab.csv": results([("hopper", self.SCREEN, 0.2 * ab, 1), ("hopper", self.EXHAUSTIVE, 0.2, 2)]),
                "ba.csv": results([("hopper", self.EXHAUSTIVE, 0.2, 1), ("hopper", self.SCREEN, 0.2 * ba, 2)])}

    def line(self, causal="0", cold_s="6.50", cold_rc="0", second_s="0.38", from_db="1", ex_rc="0",
             side="ab.csv;ba.csv"):
        return "\t".join(["16,16,1024,64", causal, "p.csv", cold_s, cold_rc, "cold.csv", second_s, "0", from_db,
                          "ex.csv", ex_rc, side])

    def rows(self, lines, screen_ms=0.1650, exhaustive_ms=0.1640, side=(1.004, 1.002)):
        files = self.files(screen_ms, exhaustive_ms, side)

        def read(path):
            if path not in files:
                raise ValueError(f"cannot read {path}")
            return files[path]
        return tuning_bar.table_rows(lines, read)

    def test_a_row_that_meets_every_bar(self):
        (r,) = self.rows([self.line()])
        self.assertEqual(r["triton_s"], 21.4)
        self.assertAlmostEqual(r["ratio"], 6.5 / 21.4)
        self.assertAlmostEqual(r["diff"], 100 * (0.1650 / 0.1640 - 1))
        self.assertAlmostEqual(r["same_run"], 100 * ((1.004 * 1.002) ** 0.5 - 1))
        self.assertTrue(r["second_ok"])
        self.assertEqual(r["notes"], [])
        text = tuning_bar.format_table([r])
        row = text.splitlines()[3]
        self.assertIn(" 21.4 ", row)
        self.assertIn("0.304", row)
        self.assertIn("hopper m192_n128_w16_s3_k7 0.1650", row)
        self.assertIn("hopper m128_n128_w12_s2_k7 0.1640", row)
        self.assertIn("+0.61", row)
        self.assertIn("+0.30", row)
        self.assertNotIn("MISSED", text)

    def test_side_by_side_decides_not_the_two_processes_medians(self):
        # Two processes 2.4% apart (the screening's faster), side by side 1.5% slower: missed.
        (r,) = self.rows([self.line()], screen_ms=0.923, exhaustive_ms=0.9456, side=(1.016, 1.014))
        self.assertLess(r["diff"], -2)
        self.assertAlmostEqual(r["same_run"], 100 * ((1.016 * 1.014) ** 0.5 - 1))
        self.assertEqual(tuning_bar.format_table([r]).splitlines()[3].count("MISSED"), 1)
        # ... and 1.2% slower in two processes, 0.3% side by side: met.
        (r,) = self.rows([self.line()], screen_ms=1.018, exhaustive_ms=1.006, side=(1.004, 1.002))
        self.assertNotIn("MISSED", tuning_bar.format_table([r]))

    def test_the_same_config_needs_no_side_by_side_and_its_absence_is_said(self):
        files = self.files(0.1650, 0.1640, (1, 1))
        files["ex.csv"] = results([("hopper", self.SCREEN, 0.1640, 1)])
        (r,) = tuning_bar.table_rows([self.line(side="")], lambda p: files[p])
        self.assertEqual(r["same_run"], 0.0)
        self.assertEqual(r["notes"], [])
        (r,) = self.rows([self.line(side="")])
        self.assertIsNone(r["same_run"])
        self.assertEqual(r["decider"], r["diff"])  # the two processes' diff decides, and the note says so
        note = ("the two winners were not measured side by side (no side-by-side run (it failed, or "
                "its bar.tsv predates it)): the two processes' diff decides")
        self.assertIn(note, r["notes"])
        self.assertIn("note: 16,16,1024,64: " + note, tuning_bar.format_table([r]))

    def test_a_line_from_before_the_side_by_side_column_still_reads(self):
        (r,) = self.rows([self.line().rsplit("\t", 1)[0]])  # 11 fields, as results/h200/2026-12-01-hopper/call11 and call15 hold
        self.assertIsNone(r["same_run"])
        self.assertAlmostEqual(r["decider"], r["diff"])
        self.assertNotIn("MISSED", tuning_bar.format_table([r]))

    def test_winners_of_two_families_are_said(self):
        files = self.files(0.1650, 0.1640, (1, 1))
        files["ex.csv"] = results([("fa2", self.EXHAUSTIVE, 0.1640, 1)])
        (r,) = tuning_bar.table_rows([self.line(side="")], lambda p: files[p])
        self.assertTrue(any("the winners are of two families" in n for n in r["notes"]), r["notes"])

    def test_a_zero_median_is_a_note_not_a_crash(self):
        (r,) = self.rows([self.line()], side=(0.0, 1.0))
        self.assertIsNone(r["same_run"])
        self.assertTrue(any(n.startswith("side by side: a median of 0.0") for n in r["notes"]), r["notes"])

    def test_each_bar_missed_says_missed(self):
        (r,) = self.rows([self.line(causal="1", cold_s="7.00", second_s="0.61")], screen_ms=0.170, exhaustive_ms=0.160,
                         side=(1.03, 1.05))
        self.assertAlmostEqual(r["ratio"], 7.0 / 18.9)  # the causal row's Triton time
        self.assertFalse(r["second_ok"])
        row = tuning_bar.format_table([r]).splitlines()[3]
        self.assertEqual(row.count("MISSED"), 3, row)

    def test_a_second_run_that_measured_again_is_not_a_pass_however_fast(self):
        (r,) = self.rows([self.line(second_s="0.30", from_db="0")])
        self.assertFalse(r["second_ok"])
        self.assertIn("second run did not answer from the database", r["notes"])

    def test_failed_parts_read_as_dashes_and_notes(self):
        (r,) = self.rows([self.line(cold_rc="4", ex_rc="1")])
        self.assertIsNone(r["ratio"])
        self.assertIsNone(r["diff"])
        text = tuning_bar.format_table([r])
        self.assertIn("note: 16,16,1024,64: cold run exited 4", text)
        self.assertIn("note: 16,16,1024,64: exhaustive run exited 1", text)
        with self.assertRaisesRegex(ValueError, "expected 12 tab-separated fields"):
            self.rows(["16,16,1024,64\t0"])


FAKE_ATTN_TUNE = r'''#!/usr/bin/env python3
# A stand-in for attn-tune: writes a results CSV, answers from "the database" (a file) the second time.
import os, sys, time
a = sys.argv[1:]
if a == ["--version"]:
    print("attn-tune 0.0-fake"); sys.exit(0)
def value(name):
    return a[a.index(name) + 1] if name in a else None
out, db = value("--out"), os.environ.get("ATTN_TUNE_DB")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.txt"), "a") as f:
    f.write(" ".join(a) + " | ATTN_TUNE_DB=" + str(db) + "\n")
if "sweep" in a:
    open(out, "w").write("x\n"); print("sweep done: 12 shapes tuned, 0 failed, 1.0 s"); sys.exit(0)
if "--configs" in a:  # side by side: the screening's winner (k7) 0.6% slower than the exhaustive's (k5)
    ms = {"m128_n128_w12_s2_k7": 0.2012, "m128_n128_w12_s2_k5": 0.2}
    rows = [f"4,fake,hopper,{c},ok,{ms[c]},{1 + (c != min(ms, key=ms.get))}" for c in value("--configs").split(",")]
    open(out, "w").write("schema_version,device,family,config,status,median_ms,rank\n" + "\n".join(rows) +
                         f"\n#end,rows={len(rows)},xxh3=0\n")
    sys.exit(0)
ms = 0.2 if "--search" in a else 0.201
config = "m128_n128_w12_s2_k5" if "--search" in a else "m128_n128_w12_s2_k7"
if db and "--no-db" not in a and os.path.exists(db):
    print("from the database, tuned 2026-12-01 00:00:00 (attn-tune 0.0-fake, entry 1); --retune to measure again")
else:
    time.sleep(0.2)
    print("compiled 2 variants (0 from cache) in 0.1 s; total 0.2 s")
    if db and "--no-db" not in a: open(db, "w").write("db")
open(out, "w").write("schema_version,device,family,config,status,median_ms,rank\n"
                     f"4,fake,hopper,{config},ok,{ms},1\n#end,rows=1,xxh3=0\n")
'''

FAKE_PEERS = r'''#!/usr/bin/env python3
import os, sys
a = sys.argv[1:]
shape, csv = a[a.index("--shape") + 1], a[a.index("--csv") + 1]
assert "--with-triton" in a and "TRITON_CACHE_DIR" not in os.environ
B, H, N, D = shape.split(",")
rows = ["peer,dtype,B,H,N,D,causal,ms,tflops,rel_err_vs_flash,tune_s"]
rows += [f"triton-autotune,bfloat16,{B},{H},{N},{D},{c},0.2,300.0,1e-3,{20.0 + c}" for c in (0, 1)]
open(csv, "w").write("\n".join(rows) + "\n"); print("\n".join(rows))
'''


class script(unittest.TestCase):
    """bench/run.py tuning-bar with fakes, in a folder laid out like the repository root."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="tuning-bar-")
        self.root = self.tmp.name
        for name in ("bench", "sweeps"):
            os.symlink(os.path.join(ROOT, name), os.path.join(self.root, name))
        for path, text in (("build-gpu/attn-tune", FAKE_ATTN_TUNE), (".peers/peers.py", FAKE_PEERS)):
            full = os.path.join(self.root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            os.chmod(full, 0o755)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args):
        # Caches and a database of the caller's must not reach the cold runs.
        env = dict(os.environ, TRITON_CACHE_DIR="/somewhere/warm", ATTN_TUNE_DB="/somewhere/else.sqlite")
        return subprocess.run([sys.executable, "bench/run.py", "tuning-bar", *args], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=120)

    def test_the_whole_call_prints_the_table_and_the_sweep_line(self):
        log = os.path.join(self.root, "log")
        p = self.run_script("--sweep-triton", log)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = p.stdout
        self.assertRegex(out, r"\[ +\d+ s\] 4x32x4096x128: cold attn-tune")
        self.assertEqual(out.count("from the database: yes"), 4, out)
        lines = [l for l in out.splitlines() if l.startswith(("4,32,4096,128", "16,16,1024,64"))]
        self.assertEqual(len(lines), 4, out)
        for l in lines:
            self.assertTrue(l.rstrip().endswith("+0.50   +0.60     ok"), l)  # wall times: this machine's, not checked
            self.assertIn("hopper m128_n128_w12_s2_k7 0.2010", l)
            self.assertIn("hopper m128_n128_w12_s2_k5 0.2000", l)
        self.assertIn("summed over 12 of its 12 rows: 246.0 s; ratio", out)  # six shapes, 20 + 21 s each
        with open(os.path.join(log, "table.txt")) as f:
            self.assertIn("shape", f.read())
        with open(os.path.join(self.root, "build-gpu", "calls.txt")) as f:
            calls = f.read().splitlines()
        cold = [c for c in calls if "--shape 16,16,1024,64 --causal" in c]
        self.assertEqual(len(cold), 5, calls)  # cold, second, exhaustive, the two winners side by side twice
        self.assertIn("--family hopper --configs m128_n128_w12_s2_k7,m128_n128_w12_s2_k5", cold[3])
        self.assertIn("--configs m128_n128_w12_s2_k5,m128_n128_w12_s2_k7", cold[4])
        self.assertIn("--cache-dir " + os.path.join(log, "16x16x1024x64-causal", "cache"), cold[0])
        self.assertIn("ATTN_TUNE_DB=" + os.path.join(log, "16x16x1024x64-causal", "tuned.sqlite"), cold[0])
        self.assertIn("--search exhaustive --no-db", cold[2])

    def calls(self):
        with open(os.path.join(self.root, "build-gpu", "calls.txt")) as f:
            return f.read().splitlines()

    def test_rows_only_measures_the_four_rows_and_no_sweep(self):
        log = os.path.join(self.root, "log")
        p = self.run_script("--rows-only", log)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count("from the database: yes"), 4, p.stdout)
        self.assertNotIn("sweep", p.stdout)
        self.assertFalse(any("sweep" in c for c in self.calls()))
        self.assertEqual(sorted(f for f in os.listdir(log) if f.startswith("peers-") and f.endswith(".csv")),
                         ["peers-16x16x1024x64.csv", "peers-4x32x4096x128.csv"])

    def test_sweep_only_runs_the_sweep_and_peers_for_every_shape(self):
        log = os.path.join(self.root, "log")
        p = self.run_script("--sweep-only", log)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("from the database", p.stdout)
        calls = self.calls()
        self.assertEqual(len(calls), 1, calls)  # the sweep only, no per-shape tuning (--version is not logged)
        self.assertIn("sweep sweeps/yardstick.csv", calls[0])
        self.assertIn("ATTN_TUNE_DB=" + os.path.join(log, "sweep", "tuned.sqlite"), calls[0])
        self.assertIn("summed over 12 of its 12 rows: 246.0 s; ratio", p.stdout)
        with open(os.path.join(log, "table.txt")) as f:
            self.assertIn("sweep cold:", f.read())

    def test_the_two_parts_exclude_each_other(self):
        p = self.run_script("--rows-only", "--sweep-only", os.path.join(self.root, "log"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("exclude each other", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "log")))
        p = self.run_script("--rows-only", "--sweep-triton", os.path.join(self.root, "log"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--rows-only runs no sweep", p.stderr)

    def test_a_log_folder_in_use_is_refused_and_kept(self):
        log = os.path.join(self.root, "used")
        os.makedirs(log)
        with open(os.path.join(log, "mine.txt"), "w") as f:
            f.write("keep me")
        p = self.run_script(log)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"log folder '{log}' exists and is not empty", p.stderr)
        with open(os.path.join(log, "mine.txt")) as f:
            self.assertEqual(f.read(), "keep me")
        self.assertEqual(self.run_script("--frobnicate").returncode, 2)


FAKE_LIBRARY_BAR = r"""#!/usr/bin/env python3
import os, sys
print("argv", " ".join(sys.argv[1:]))
print("env", os.environ["ATTN_TUNE_LIBRARY"], os.environ["PYTHONPATH"].split(":")[0])
print("the table", file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_RC", "0")))
"""

# A stand-in for attn-tune's tuning with --inputs: two variants, the second wrong on sink inputs.
FAKE_INPUTS_TOOL = r"""#!/usr/bin/env python3
import sys
a = sys.argv[1:]
assert " --family fa2,wgmma,hopper --seed 7 --no-db --out " in " ".join(a), a
kind, out = a[a.index("--inputs") + 1], a[a.index("--out") + 1]
status = "wrong" if kind == "sink" else "ok"
open(out, "w").write("family,config,status,max_error,allowed_error,bound,message\n"
                     "hopper,m128_n128_w12_s2_k3,ok,1.0e-03,4.0e-03,naive,\n"
                     f"hopper,m192_n80_w16_s2_k7,{status},2.0e-03,4.0e-03,naive,error 9e-3 over 4e-3\n"
                     "#end,rows=2,xxh3=0\n")
print(f"reference ({kind} inputs): naive error 1.5e-03, rounding error 2.5e-04")
sys.exit(1 if kind == "sink" else 0)
"""

FAKE_CTEST = r"""#!/bin/sh
echo "PyTorch: ctest $* REQUIRE=$ATTN_TUNE_REQUIRE_GPU in $(basename "$PWD")"
echo "100% tests passed, 0 tests failed out of 5"
"""


class other_commands(unittest.TestCase):
    """bench/run.py library-bar and inputs with fakes, in a folder laid out like the repository root."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-run-")
        self.root = self.tmp.name
        for name in ("bench", "sweeps"):
            os.symlink(os.path.join(ROOT, name), os.path.join(self.root, name))

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, path, text, mode=0o755):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        os.chmod(full, mode)
        return full

    def run_bench(self, *args, **env):
        return subprocess.run([sys.executable, os.path.join(self.root, "bench", "run.py"), *args],
                              env=dict(os.environ, **env), capture_output=True, text=True, timeout=120)

    def test_library_bar_runs_the_python_bar_with_the_library_and_writes_the_report(self):
        for f in ("attn-tune", "attn_tune_example", "libattn_tune.so"):
            self.write(os.path.join("build-gpu", f), "")
        self.write("examples/python/library_bar.py", FAKE_LIBRARY_BAR)
        report = os.path.join(self.root, "report")
        p = self.run_bench("library-bar", report, FAKE_RC="1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # a missed bar's exit code passes through
        self.assertIn("argv --tool build-gpu/attn-tune --example build-gpu/attn_tune_example --shapes "
                      "sweeps/ci-smoke.csv --extra 4,32,4096,128 --tool-args --min-time-ms 40", p.stdout)
        self.assertIn(f"env {self.root}/build-gpu/libattn_tune.so {self.root}/python", p.stdout)
        with open(os.path.join(report, "report.txt")) as f:
            text = f.read()
        self.assertIn("the table\n", text)
        self.assertRegex(text, r"library_bar: \d+ s\n$")
        p = self.run_bench("library-bar", TOOL_ARGS="--family hopper")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("--tool-args --family hopper\n", p.stdout)
        p = self.run_bench("library-bar", "--build", "elsewhere")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no elsewhere/attn-tune: run 'bash scripts/device_build.sh elsewhere' first", p.stderr)
        p = self.run_bench("library-bar", report)
        self.assertEqual(p.returncode, 2)
        self.assertIn("exists and is not empty", p.stderr)

    def test_inputs_tabulates_each_shape_and_kind_then_runs_the_gpu_tests(self):
        self.write("build/attn-tune", FAKE_INPUTS_TOOL)
        bin_dir = os.path.dirname(self.write("fakebin/ctest", FAKE_CTEST))
        report = os.path.join(self.root, "report")
        p = self.run_bench("inputs", report, PATH=bin_dir + ":" + os.environ["PATH"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # the sink rows hold a wrong variant
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("shape "), lines[0])
        rows = [l for l in lines if l.startswith(("2,8,777,128", "1,8,2048,64", "2,16,1024,128", "1,4,3000,256"))]
        self.assertEqual(len(rows), 12, p.stdout)
        self.assertIn("normal    2     0  2.00e-03  1.50e-03  2.50e-04  4.00e-03 naive       2.0", rows[0])
        self.assertTrue(rows[2].endswith("  exit 1") and " sink      1     1 " in rows[2], rows[2])
        self.assertIn("    wrong: hopper m192_n80_w16_s2_k7: error 9e-3 over 4e-3", p.stdout)
        self.assertIn("PyTorch: ctest -L gpu -R reference_vs_cpu|inputs_on_device|fa2_correctness|planted_defects|"
                      "gpu_memory_formula_pytorch --output-on-failure REQUIRE=1 in build", p.stdout)
        self.assertIn("100% tests passed", p.stdout)
        with open(os.path.join(report, "report.txt")) as f:
            self.assertEqual(f.read(), p.stdout)
        p = self.run_bench("inputs", "--build", "nowhere")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no nowhere/attn-tune: build first", p.stderr)


if __name__ == "__main__":
    unittest.main()
