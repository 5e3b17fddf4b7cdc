#!/usr/bin/env python3
"""The benchmark runner: measurements on a GPU machine that write their report into a folder.

    python3 bench/run.py tuning-bar [--sweep-triton | --rows-only | --sweep-only] [DIR]
    python3 bench/run.py library-bar [--build build-gpu] [--tool-args ARGS] [DIR]
    python3 bench/run.py inputs [--build build] [--families fa2,wgmma,hopper] [DIR]

DIR must be new or empty (nothing in it is overwritten). tuning-bar writes every command's output
there, its table (DIR/table.txt) and its rows (DIR/bar.tsv; default DIR /tmp/tuning_bar);
library-bar and inputs print their table and, given DIR, write it to DIR/report.txt too.
`python3 bench/run.py COMMAND --help` says what each measures and how long it takes.
"""
import argparse
import csv
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import tuning_bar

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPS_LIB = os.path.join(".deps", "usr", "lib", "x86_64-linux-gnu")  # as scripts/device_build.sh carries them


def fail(command, message):
    print(f"bench/run.py {command}: {message}", file=sys.stderr)
    sys.exit(2)


def new_folder(command, path):
    """Makes the report folder, refusing one that holds anything (nothing in it is overwritten)."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        fail(command, f"log folder '{path}' exists and is not empty; give a new one (nothing in it is overwritten)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        fail(command, f"cannot make '{path}': {e.strerror}")
    return path


def with_deps_lib(env):
    """LD_LIBRARY_PATH with the carried libraries of scripts/device_build.sh first."""
    env["LD_LIBRARY_PATH"] = os.path.join(os.getcwd(), DEPS_LIB) + ":" + env.get("LD_LIBRARY_PATH", "")
    return env


def run_logged(argv, log_path, limit_s, env, stderr_path=None):
    """Runs argv under `timeout LIMIT_S` (a hang exits 124), its output into log_path; the exit code."""
    with open(log_path, "w") as out:
        err = open(stderr_path, "w") if stderr_path else subprocess.STDOUT
        try:
            return subprocess.run(["timeout", str(limit_s), *argv], stdout=out, stderr=err, env=env).returncode
        finally:
            if stderr_path:
                err.close()


def first_line(path, prefix):
    try:
        with open(path, errors="replace") as f:
            return next((l.rstrip("\n") for l in f if l.startswith(prefix)), "")
    except OSError:
        return ""


class Report:
    """Prints lines and, given a folder, writes them to its report.txt as well."""

    def __init__(self, path=None):
        self.file = open(path, "a") if path else None

    def print(self, text=""):
        print(text, flush=True)
        if self.file:
            self.file.write(text + "\n")
            self.file.flush()


# ---------------------------------------------------------------------------------------------
TUNING_BAR_HELP = """\
The tuning bar, measured in one run on the GPU machine: for 4,32,4096,128 and 16,16,1024,64,
causal and not (bf16, default space),
  (a) Triton's cold autotune time (peers.py --with-triton's tune_s),
  (b) a cold attn-tune (empty --cache-dir, empty ATTN_TUNE_DB): wall time from process start to
      exit of `attn-tune --shape S [--causal] --out F`,
  (c) the same command again (new --out): wall time, answered from the database,
  (d) --search exhaustive --no-db on the warm cache: its winner's median,
  (e) when (b) and (d) chose different configs, the two side by side in one process (--configs
      A,B, then B,A): two processes' medians differ by the clock's moves, more than 1% at times,
then one table (bars: (b)/(a) <= 1/3, (c) < 0.5 s, (b)'s winner at most 1% slower than (d)'s,
side by side), and a cold `sweep sweeps/yardstick.csv` beside the sum of Triton's per-shape
autotune times.

  bash scripts/device_build.sh build-gpu
  python3 bench/run.py tuning-bar [--sweep-triton | --rows-only | --sweep-only] [DIR]

Run from the repository root; needs build-gpu/attn-tune and .peers/peers.py (python3 with torch
and triton). DIR (default /tmp/tuning_bar) must be new or empty: every command's output goes
there, the table too (DIR/table.txt; it is printed before the sweep starts; `python3
bench/tuning_bar.py table DIR/bar.tsv` prints it again). Each command has a time limit (a hang
shows as exit 124 in the table's notes). On an H200 (2026-12-01: call14/ and call17/ of
results/h200/2026-12-01-hopper): the four rows take about 3 minutes, the cold sweep under 1 minute
and peers.py for the sweep's other four shapes about 5 more (--sweep-triton; without it the sweep line compares
with the four rows' shapes only). The whole exceeds a 10-minute device call; it splits in two:
--rows-only (the four rows and their table, no sweep) and --sweep-only (the cold sweep, then
peers.py for every shape of the sweep file, and the sweep line; about 8 minutes).

peers.py runs once per shape, as `--shape S --with-triton` (without --causal it runs both): each
process starts with an empty Triton cache (peers.py makes one when TRITON_CACHE_DIR is unset), so
the non-causal row is cold; the causal row runs second in that process and finds Triton's launcher
already built, so it is slightly warm, which favours Triton, not attn-tune."""


def tuning_bar_command(args):
    cmd = "tuning-bar"
    rows, sweep, sweep_triton = not args.sweep_only, not args.rows_only, args.sweep_triton or args.sweep_only
    if not rows and not sweep:
        fail(cmd, "--rows-only and --sweep-only exclude each other (give neither for both parts)")
    if not sweep and sweep_triton:
        fail(cmd, "--sweep-triton measures the sweep's shapes, and --rows-only runs no sweep")
    tool, peers, sweep_file = "build-gpu/attn-tune", ".peers/peers.py", "sweeps/yardstick.csv"
    shapes = ["4,32,4096,128", "16,16,1024,64"]
    if not os.access(tool, os.X_OK):
        fail(cmd, f"no {tool}: run from the repository root after 'bash scripts/device_build.sh build-gpu'")
    if not os.path.isfile(peers):
        fail(cmd, f"no {peers} (copy /work/shared/yardstick/peers.py there)")
    log = new_folder(cmd, args.dir)
    # Caches that would make the cold runs warm: peers.py makes fresh Triton/Inductor folders only
    # when these are unset. The cold runs get an empty CUDA driver compute cache too
    # (CUDA_CACHE_PATH), which NVRTC would answer ptxas's work from (attn-tune turns it off unless
    # CUDA_CACHE_DISABLE is set; this holds for any build).
    env = with_deps_lib(dict(os.environ))
    for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "ATTN_TUNE_CACHE_DIR", "ATTN_TUNE_DB"):
        env.pop(name, None)

    start = time.monotonic()

    def say(text):
        print(f"[{int(time.monotonic() - start):4d} s] {text}", flush=True)

    def since(t0):
        return f"{time.monotonic() - t0:.2f}"

    def run(argv, log_path, limit_s, **extra):
        return run_logged(argv, log_path, limit_s, dict(env, **extra))

    version = os.path.join(log, "version.txt")
    if run([tool, "--version"], version, 60) != 0:
        with open(version) as f:
            fail(cmd, f"{tool} --version failed:\n{f.read()}")
    gpu = "(no nvidia-smi)"
    if shutil.which("nvidia-smi"):
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        gpu = ((p.stdout + p.stderr).splitlines() or [""])[0]
    with open(version) as f:
        say(f"{f.read().rstrip(chr(10))}; {gpu}; logs in {log}")

    def peers_file(shape):  # peers.py's files are named BxHxNxD: no commas, which some transfers refuse
        return os.path.join(log, "peers-" + shape.replace(",", "x"))

    def peers_run(shape):  # both causal rows, into peers_file(shape).csv
        t0, f = time.monotonic(), peers_file(shape)
        if run(["python3", peers, "--shape", shape, "--with-triton", "--csv", f + ".csv"], f + ".txt", 240,
               PYTHONUNBUFFERED="1") != 0:
            say(f"peers.py failed for {shape} (see {f}.txt)")
        say(f"peers.py {shape} done in {since(t0)} s")

    def winner_of(path):
        try:
            return tuning_bar.winner(tuning_bar.read(path))
        except ValueError:
            return None

    table_txt = os.path.join(log, "table.txt")

    def to_table(text):
        print(text, flush=True)
        with open(table_txt, "a") as f:
            f.write(text + "\n")

    if rows:
        # (a) first: if the call runs out of time, the comparison is what must survive.
        for s in shapes:
            say(f"peers.py --shape {s} --with-triton (both causal and not; Triton autotunes cold)")
            peers_run(s)
        bar_tsv = os.path.join(log, "bar.tsv")
        open(bar_tsv, "w").close()
        for s in shapes:
            for causal in (0, 1):
                flag = ["--causal"] if causal else []
                tag = s.replace(",", "x") + ("-causal" if causal else "")
                d = os.path.join(log, tag)
                os.makedirs(d, exist_ok=True)
                at = lambda name: os.path.join(d, name)  # noqa: E731
                base = [tool, "--shape", s, *flag, "--cache-dir", at("cache")]
                say(f"{tag}: cold attn-tune (empty cache and database)")
                t0 = time.monotonic()
                cold_rc = run(base + ["--out", at("cold.csv")], at("cold.txt"), 180,
                              ATTN_TUNE_DB=at("tuned.sqlite"), CUDA_CACHE_PATH=at("nvcache"))
                cold_s = since(t0)
                say(f"{tag}: cold {cold_s} s (exit {cold_rc}); {first_line(at('cold.txt'), 'compiled ')}")
                t0 = time.monotonic()
                second_rc = run(base + ["--out", at("second.csv")], at("second.txt"), 60,
                                ATTN_TUNE_DB=at("tuned.sqlite"))
                second_s = since(t0)
                from_db = int(bool(first_line(at("second.txt"), "from the database")))
                say(f"{tag}: second run {second_s} s (exit {second_rc}, from the database: "
                    f"{'yes' if from_db else 'NO'})")
                say(f"{tag}: --search exhaustive --no-db, warm cache")
                t0 = time.monotonic()
                exhaustive_rc = run(base + ["--search", "exhaustive", "--no-db", "--out", at("exhaustive.csv")],
                                    at("exhaustive.txt"), 180)
                say(f"{tag}: exhaustive {since(t0)} s (exit {exhaustive_rc})")
                # Two processes' medians differ by the clock's moves (the H200 runs at its power
                # cap): when the winners differ, measure them side by side in one process, in both
                # orders.
                side = ""
                screen, exhaustive = winner_of(at("cold.csv")), winner_of(at("exhaustive.csv"))
                if cold_rc != 0 or exhaustive_rc != 0:
                    pass  # a failed run's winner is not compared (the table says why)
                elif screen and exhaustive and screen[0] != exhaustive[0]:
                    say(f"{tag}: the winners are of two families ({screen[0]}, {exhaustive[0]}): "
                        "not measured side by side")
                elif screen and exhaustive and screen[1] != exhaustive[1]:
                    sc, ec = screen[1], exhaustive[1]
                    say(f"{tag}: the two winners side by side ({screen[0]} {sc}, {ec}), in both orders")
                    side = f"{at('side-ab.csv')};{at('side-ba.csv')}"
                    for order, pair in (("ab", f"{sc},{ec}"), ("ba", f"{ec},{sc}")):
                        if run([tool, "--shape", s, *flag, "--family", screen[0], "--configs", pair, "--search",
                                "exhaustive", "--no-db", "--cache-dir", at("cache"), "--min-time-ms", "200",
                                "--out", at(f"side-{order}.csv")], at(f"side-{order}.txt"), 120) != 0:
                            say(f"{tag}: side by side failed (see {at(f'side-{order}.txt')})")
                            side = ""
                fields = [s, causal, peers_file(s) + ".csv", cold_s, cold_rc, at("cold.csv"), second_s, second_rc,
                          from_db, at("exhaustive.csv"), exhaustive_rc, side]
                with open(bar_tsv, "a") as f:
                    f.write("\t".join(str(x) for x in fields) + "\n")
        # The table now, before the sweep: it is what must survive if the call runs out of time.
        try:
            table = tuning_bar.format_table(tuning_bar.table_rows(tuning_bar.read(bar_tsv).splitlines())) + "\n"
        except ValueError as e:
            print(f"tuning_bar.py table: {e}", file=sys.stderr)
            table = ""
        to_table("\n" + table)
    if not sweep:
        to_table(f"whole script: {int(time.monotonic() - start)} s")
        return 0

    d = os.path.join(log, "sweep")
    os.makedirs(d, exist_ok=True)
    say(f"sweep {sweep_file} cold (empty cache and database)")
    t0 = time.monotonic()
    sweep_rc = run([tool, "--cache-dir", os.path.join(d, "cache"), "sweep", sweep_file, "--out",
                    os.path.join(d, "sweep.csv")], os.path.join(d, "sweep.txt"), 400,
                   ATTN_TUNE_DB=os.path.join(d, "tuned.sqlite"), CUDA_CACHE_PATH=os.path.join(d, "nvcache"))
    sweep_s = since(t0)
    say(f"sweep: {sweep_s} s (exit {sweep_rc}); {first_line(os.path.join(d, 'sweep.txt'), 'sweep done')}")
    if sweep_triton:
        try:
            sweep_shapes = tuning_bar.sweep_shapes(tuning_bar.read(sweep_file))
        except ValueError as e:
            print(f"tuning_bar.py shapes: {e}", file=sys.stderr)
            sweep_shapes = []
        for s in sweep_shapes:
            if os.path.exists(peers_file(s) + ".csv"):
                continue
            say(f"peers.py --shape {s} --with-triton (for the sweep's sum)")
            peers_run(s)
    if sweep_rc == 0:
        try:
            # A peers.py that failed left no file: its rows count as not measured.
            texts = [tuning_bar.read(p) for p in sorted(glob.glob(os.path.join(log, "peers-*.csv")))]
            to_table(tuning_bar.sweep_line(float(sweep_s), tuning_bar.sweep_rows(tuning_bar.read(sweep_file)), texts))
        except ValueError as e:
            print(f"tuning_bar.py sweep: {e}", file=sys.stderr)
    else:
        to_table(f"sweep cold: exited {sweep_rc} after {sweep_s} s (see {d}/sweep.txt)")
    to_table(f"whole script: {int(time.monotonic() - start)} s")
    return 0


# ---------------------------------------------------------------------------------------------
LIBRARY_BAR_HELP = """\
The library bar on a GPU machine, in one run: for each shape of sweeps/ci-smoke.csv and
4,32,4096,128, attn-tune tunes it (--no-db, a fresh --out under a temp dir), then
attn_tune.forward from Python and the C++ example (examples/cpp) run the tuned config from that
CSV (examples/python/library_bar.py); one table: shape, config, tool ms, python ms, C++ ms,
ratios, accuracy, verdict.

  bash scripts/device_build.sh build-gpu && python3 bench/run.py library-bar [--build build-gpu] [DIR]

Needs PyTorch with CUDA for the Python column. Exit code 1 when a shape misses the bar.
--tool-args: more attn-tune options (default $TOOL_ARGS, or --min-time-ms 40 when it is unset, as
the first library bar run: the tool's winner is then measured over up to 300 repetitions, so its
median is steadier)."""


def run_reported(argv, env, report):
    """Runs argv; with a report file its output (stdout and stderr) goes there too. The exit code."""
    if not report.file:
        return subprocess.run(argv, env=env).returncode
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        report.print(line.rstrip("\n"))
    return p.wait()


def library_bar_command(args):
    os.chdir(ROOT)
    build = args.build
    for f in ("attn-tune", "attn_tune_example", "libattn_tune.so"):
        if not os.path.exists(os.path.join(build, f)):
            fail("library-bar", f"no {build}/{f}: run 'bash scripts/device_build.sh {build}' first")
    report = Report(os.path.join(new_folder("library-bar", args.dir), "report.txt") if args.dir else None)
    env = with_deps_lib(dict(os.environ))
    env["ATTN_TUNE_LIBRARY"] = os.path.join(ROOT, build, "libattn_tune.so")
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.monotonic()
    rc = run_reported(["python3", "examples/python/library_bar.py", "--tool", f"{build}/attn-tune", "--example",
                       f"{build}/attn_tune_example", "--shapes", "sweeps/ci-smoke.csv", "--extra", "4,32,4096,128",
                       "--tool-args", args.tool_args], env, report)
    report.print(f"library_bar: {int(time.monotonic() - start)} s")
    return rc


# ---------------------------------------------------------------------------------------------
INPUTS_HELP = """\
The input kinds checked on real data, in one short table: for each shape and --inputs kind, a
tuning of every family's default space: how many variants came out ok and wrong, the worst error
of an ok one, the naive and the rounding errors of the reference, the allowed error, which bound
decided, and how far the worst ok error is below it. Then the GPU tests of the reference against
float64, the device fill per kind, correctness per kind, the planted defects (the skipped rescale
on wide inputs included) and the memory formula against PyTorch (ATTN_TUNE_REQUIRE_GPU=1: a skip
is a failure).

  python3 bench/run.py inputs [--build build] [--families fa2,wgmma,hopper] [DIR]"""

INPUT_SHAPES = ["2,8,777,128 --dtype fp16 --causal", "1,8,2048,64", "2,16,1024,128 --causal",
                "1,4,3000,256 --dtype fp16"]
INPUT_GPU_TESTS = "reference_vs_cpu|inputs_on_device|fa2_correctness|planted_defects|gpu_memory_formula_pytorch"
CTEST_LINES = ("tests passed", "tests failed", "(Failed)", "Skipped", "materialized", "PyTorch")


def input_row(results_csv, output, shape, kind, rc):
    """The table's line for one tuning (and up to three wrong variants); True when it passed."""
    rows = []
    if rc in (0, 1):
        with open(results_csv) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#end")))
    ok = [r for r in rows if r["status"] == "ok"]
    wrong = [r for r in rows if r["status"] == "wrong"]
    with open(output, errors="replace") as f:
        m = re.search(r"naive error ([0-9.e+-]+).*rounding error ([0-9.e+-]+)", f.read())
    naive, rounding = (float(m.group(1)), float(m.group(2))) if m else (math.nan,) * 2
    worst = max((float(r["max_error"]) for r in ok), default=math.nan)
    allowed = float(ok[0]["allowed_error"]) if ok else math.nan
    bound = ok[0]["bound"] if ok else "-"
    margin = allowed / worst if ok and worst > 0 else math.nan
    lines = [f"{shape:34s} {kind:6s} {len(ok):4d} {len(wrong):5d} {worst:9.2e} {naive:9.2e} {rounding:9.2e} "
             f"{allowed:9.2e} {bound:8s} {margin:6.1f}" + ("" if rc == 0 else f"  exit {rc}")]
    lines += [f"    wrong: {r['family']} {r['config']}: {r['message'][:160]}" for r in wrong[:3]]
    return lines, rc == 0 and not wrong


def inputs_command(args):
    os.chdir(ROOT)
    tool = os.path.join(args.build, "attn-tune")
    if not os.access(tool, os.X_OK):
        fail("inputs", f"no {tool}: build first (cmake -S . -B {args.build} -G Ninja && cmake --build {args.build})")
    report = Report(os.path.join(new_folder("inputs", args.dir), "report.txt") if args.dir else None)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        out, err, csv_path = (os.path.join(tmp, n) for n in ("out.txt", "err.txt", "r.csv"))
        report.print(f"{'shape':34s} {'inputs':6s} {'ok':>4s} {'wrong':>5s} {'worst_ok':>9s} {'naive_err':>9s} "
                     f"{'round_err':>9s} {'allowed':>9s} {'bound':8s} {'margin':>6s}")
        for shape in INPUT_SHAPES:
            for kind in ("normal", "wide", "sink"):
                with open(out, "w") as o, open(err, "w") as e:
                    rc = subprocess.run([tool, "--shape", *shape.split(), "--inputs", kind, "--family", args.families,
                                         "--seed", "7", "--no-db", "--out", csv_path, "--force"],
                                        stdout=o, stderr=e).returncode
                try:
                    lines, passed = input_row(csv_path, out, shape, kind, rc)
                except (OSError, KeyError, ValueError) as e:
                    lines, passed = [f"{shape:34s} {kind:6s} unreadable results ({e}); exit {rc}"], False
                for line in lines:
                    report.print(line)
                status = status if passed else 1
        report.print()
        report.print("GPU tests of the input kinds (reference vs float64 and device fill per kind, correctness per "
                     "kind,")
        report.print("planted defects incl. the skipped rescale on wide inputs, the memory formula against PyTorch):")
        ctest_txt = os.path.join(tmp, "ctest.txt")
        with open(ctest_txt, "w") as f:
            rc = subprocess.run(["ctest", "-L", "gpu", "-R", INPUT_GPU_TESTS, "--output-on-failure"], cwd=args.build,
                                env=dict(os.environ, ATTN_TUNE_REQUIRE_GPU="1"), stdout=f,
                                stderr=subprocess.STDOUT).returncode
        status = status if rc == 0 else 1
        with open(ctest_txt, errors="replace") as f:
            for line in [l.rstrip("\n") for l in f if any(k in l for k in CTEST_LINES)][:40]:
                report.print(line)
    return status


def main(argv):
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    raw = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("tuning-bar", help="cold tuning against Triton's cold autotune, the second run, "
                       "the screening against the exhaustive search, a cold sweep", description=TUNING_BAR_HELP,
                       formatter_class=raw)
    p.add_argument("--sweep-triton", action="store_true", help="peers.py for every shape of the sweep file too")
    p.add_argument("--rows-only", action="store_true", help="the four rows and their table, no sweep")
    p.add_argument("--sweep-only", action="store_true", help="the cold sweep and peers.py for its shapes")
    p.add_argument("dir", nargs="?", default="/tmp/tuning_bar", metavar="DIR",
                   help="the log folder, new or empty (default /tmp/tuning_bar)")
    p.set_defaults(run=tuning_bar_command)

    p = sub.add_parser("library-bar", help="libattn_tune from Python and C++ against the tool's time",
                       description=LIBRARY_BAR_HELP, formatter_class=raw)
    p.add_argument("--build", default="build-gpu", help="the build folder (default build-gpu)")
    p.add_argument("--tool-args", default=os.environ.get("TOOL_ARGS", "--min-time-ms 40"),
                   help="more attn-tune options (default: $TOOL_ARGS, else --min-time-ms 40)")
    p.add_argument("dir", nargs="?", metavar="DIR", help="a new or empty folder for report.txt")
    p.set_defaults(run=library_bar_command)

    p = sub.add_parser("inputs", help="the --inputs kinds on real data, then their GPU tests",
                       description=INPUTS_HELP, formatter_class=raw)
    p.add_argument("--build", default="build", help="the build folder (default build)")
    p.add_argument("--families", default="fa2,wgmma,hopper", help="--family of the tunings (default fa2,wgmma,hopper)")
    p.add_argument("dir", nargs="?", metavar="DIR", help="a new or empty folder for report.txt")
    p.set_defaults(run=inputs_command)

    args = ap.parse_args(argv[1:])
    if args.dir and args.command != "tuning-bar":  # these two work from the repository root
        args.dir = os.path.abspath(args.dir)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
