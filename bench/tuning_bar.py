#!/usr/bin/env python3
"""The parsing and the table of the tuning bar (`python3 bench/run.py tuning-bar`), kept apart so
that a CPU test can check them (tests/bench/test_run.py).

    tuning_bar.py triton PEERS_CSV CAUSAL     Triton's cold autotune seconds (peers.py's tune_s)
    tuning_bar.py winner RESULTS_CSV          "family config median_ms" of an attn-tune run's rank 1
    tuning_bar.py shapes SWEEP_CSV            the distinct B,H,N,D of a sweep file, one a line
    tuning_bar.py table BAR_TSV               the table (BAR_TSV: one line per shape, see COLUMNS)
    tuning_bar.py sweep SWEEP_CSV SWEEP_S PEERS_CSV...
                                              the sweep's cold wall time beside Triton's sum over its rows
"""
import csv
import io
import math
import os
import sys

# BAR_TSV's columns, as bench/run.py tuning-bar writes them (tab-separated, no header).
# head_to_head: "AB_CSV;BA_CSV", the two winners measured in one process each, in both orders
# (empty: the winners are the same config, or the runs failed).
COLUMNS = ["shape", "causal", "peers_csv", "cold_s", "cold_rc", "cold_csv", "second_s", "second_rc",
           "second_from_db", "exhaustive_csv", "exhaustive_rc", "head_to_head"]
COLD_RATIO_BAR = 1 / 3  # attn-tune cold over Triton's cold autotune
SECOND_RUN_BAR_S = 0.5
WINNER_BAR_PERCENT = 1.0


def triton_tune_s(text, causal, shape=None):
    """tune_s of peers.py's triton-autotune row for this causality (and shape "B,H,N,D", when
    given), from its CSV (or stdout)."""
    header = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = next(csv.reader([line]))
        if header is None:
            if fields[0] != "peer":
                raise ValueError(f"expected peers.py's header 'peer,dtype,...', got '{line}'")
            header = fields
            continue
        row = dict(zip(header, fields))
        same_shape = shape is None or ",".join(row.get(k, "") for k in ("B", "H", "N", "D")) == shape
        if row.get("peer") == "triton-autotune" and row.get("causal") == str(int(causal)) and same_shape:
            if not row.get("tune_s"):
                raise ValueError(f"the triton-autotune row has no tune_s: '{line}'")
            return float(row["tune_s"])
    where = f" for {shape}" if shape else ""
    raise ValueError(f"no triton-autotune row{where} with causal={int(causal)} (did peers.py run --with-triton?)")


def result_rows(text):
    """The rows of an attn-tune results CSV (its '#end' line left out), as dicts."""
    return csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if not l.startswith("#end"))))


def winner(text):
    """(family, config, median_ms) of the rank 1 row of an attn-tune results CSV."""
    for row in result_rows(text):
        if row.get("rank") == "1":
            return row["family"], row["config"], float(row["median_ms"])
    raise ValueError("no variant of rank 1 (none passed, or not an attn-tune results CSV)")


def median_of(text, config):
    """median_ms of the row of this config in an attn-tune results CSV."""
    for row in result_rows(text):
        if row.get("config") == config and row.get("status") == "ok":
            return float(row["median_ms"])
    raise ValueError(f"no passing row of {config}")


def head_to_head_percent(texts, screen_config, exhaustive_config):
    """How much slower (%) the screening's winner is than the exhaustive search's, measured side by
    side in one process: the geometric mean over the runs (one in each order, so that a clock that
    drifts during a run cancels) of median(screen) / median(exhaustive)."""
    ratios = []
    for t in texts:
        screen, exhaustive = median_of(t, screen_config), median_of(t, exhaustive_config)
        if screen <= 0 or exhaustive <= 0:
            raise ValueError(f"a median of {screen} or {exhaustive} ms cannot be compared")
        ratios.append(screen / exhaustive)
    return 100.0 * (math.prod(ratios) ** (1.0 / len(ratios)) - 1.0)


def sweep_rows(text):
    """(B,H,N,D, causal) of each row of a sweep file (dtype, kv heads, kv length, layout: defaults,
    as peers.py runs them)."""
    out = []
    for row in csv.DictReader(l for l in text.splitlines() if l and not l.startswith("#")):
        if any(row.get(k) for k in ("kv_heads", "kv_len", "dtype", "layout")):
            raise ValueError(f"row {row['name']}: peers.py runs B,H,N,D in bf16 only; leave the other columns empty")
        out.append((",".join(row[k] for k in ("B", "H", "N", "D")), row["causal"] in ("1", "true", "yes")))
    return out


def sweep_shapes(text):
    """The distinct B,H,N,D of a sweep file's rows, in order."""
    out = []
    for shape, _ in sweep_rows(text):
        if shape not in out:
            out.append(shape)
    return out


def difference_percent(screen_ms, exhaustive_ms):
    return 100.0 * (screen_ms / exhaustive_ms - 1.0)


def verdict(ok):
    return "ok" if ok else "MISSED"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}")


def table_rows(lines, read_file=read):
    """One dict per BAR_TSV line, with what the table prints; a part that failed reads as None."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        # 11 fields: written before head_to_head (results/h200/2026-12-01-hopper/call11 and call15)
        if len(fields) == len(COLUMNS) - 1:
            fields.append("")
        if len(fields) != len(COLUMNS):
            raise ValueError(f"expected {len(COLUMNS)} tab-separated fields, got {len(fields)}: '{line.strip()}'")
        m = dict(zip(COLUMNS, fields))
        causal = m["causal"] == "1"
        row = {"shape": m["shape"], "causal": causal, "notes": []}

        def attempt(what, f):
            try:
                return f()
            except ValueError as e:
                row["notes"].append(f"{what}: {e}")
                return None

        row["triton_s"] = attempt("triton", lambda: triton_tune_s(read_file(m["peers_csv"]), causal))
        row["cold_s"] = float(m["cold_s"]) if m["cold_rc"] == "0" else None
        if m["cold_rc"] != "0":
            row["notes"].append(f"cold run exited {m['cold_rc']}")
        row["second_s"] = float(m["second_s"]) if m["second_rc"] == "0" else None
        if m["second_rc"] != "0":
            row["notes"].append(f"second run exited {m['second_rc']}")
        elif m["second_from_db"] != "1":
            row["notes"].append("second run did not answer from the database")
        row["screen"] = attempt("cold run", lambda: winner(read_file(m["cold_csv"]))) if row["cold_s"] else None
        row["exhaustive"] = attempt("exhaustive", lambda: winner(read_file(m["exhaustive_csv"])))
        if m["exhaustive_rc"] != "0":
            row["notes"].append(f"exhaustive run exited {m['exhaustive_rc']}")
        row["ratio"] = row["cold_s"] / row["triton_s"] if row["cold_s"] and row["triton_s"] else None
        row["diff"] = (difference_percent(row["screen"][2], row["exhaustive"][2])
                       if row["screen"] and row["exhaustive"] else None)
        # The bar's verdict: side by side when the winners differ (two processes' medians differ by
        # the clock's moves, up to 2-3% on a power-capped H200), else the same config: 0.
        # Without it (winners of two families, a failed run): the two processes' diff decides, said.
        row["same_run"], row["decider"] = None, None
        if row["screen"] and row["exhaustive"]:
            if row["screen"][:2] == row["exhaustive"][:2]:
                row["same_run"] = 0.0
            elif m["head_to_head"]:
                row["same_run"] = attempt("side by side", lambda: head_to_head_percent(
                    [read_file(p) for p in m["head_to_head"].split(";")], row["screen"][1], row["exhaustive"][1]))
            else:
                why = ("the winners are of two families" if row["screen"][0] != row["exhaustive"][0]
                       else "no side-by-side run (it failed, or its bar.tsv predates it)")
                row["notes"].append(f"the two winners were not measured side by side ({why}): the two processes' "
                                    "diff decides")
        row["decider"] = row["same_run"] if row["same_run"] is not None else row["diff"]
        row["second_ok"] = row["second_s"] is not None and row["second_s"] < SECOND_RUN_BAR_S and \
            m["second_from_db"] == "1"
        out.append(row)
    return out


def format_table(rows):
    def num(x, spec):
        return "-" if x is None else format(x, spec)

    def pick(w):
        return "-" if w is None else f"{w[0]} {w[1]} {w[2]:.4f}"

    head = (f"{'shape':<16} {'causal':>6} {'triton s':>8} {'cold s':>7} {'ratio':>6} {'<=1/3':>6} "
            f"{'2nd s':>6} {'<0.5s':>6}  {'screen winner, ms':<36} {'exhaustive winner, ms':<36} "
            f"{'diff %':>7} {'side %':>7} {'<=1%':>6}")
    lines = ["bars: a cold attn-tune within 1/3 of Triton's cold autotune; the second run under 0.5 s, from the "
             "database; the screening's winner at most 1% slower than the exhaustive search's. diff %: the two "
             "runs' medians (ms, each in its own process); side %: the two winners measured side by side in one "
             "process, in both orders (0: the same config), which decides",
             head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['shape']:<16} {('yes' if r['causal'] else 'no'):>6} {num(r['triton_s'], '.1f'):>8} "
            f"{num(r['cold_s'], '.1f'):>7} {num(r['ratio'], '.3f'):>6} "
            f"{('-' if r['ratio'] is None else verdict(r['ratio'] <= COLD_RATIO_BAR)):>6} "
            f"{num(r['second_s'], '.2f'):>6} {verdict(r['second_ok']):>6}  {pick(r['screen']):<36} "
            f"{pick(r['exhaustive']):<36} {num(r['diff'], '+.2f'):>7} {num(r['same_run'], '+.2f'):>7} "
            f"{('-' if r['decider'] is None else verdict(r['decider'] <= WINNER_BAR_PERCENT)):>6}")
    for r in rows:
        for n in r["notes"]:
            lines.append(f"note: {r['shape']}{' causal' if r['causal'] else ''}: {n}")
    return "\n".join(lines)


def sweep_line(sweep_s, rows, peers_texts):
    """The sweep's cold wall time beside the sum of Triton's autotune times over its rows (each
    row's time from whichever peers output has it)."""
    total, missing = 0.0, []
    for shape, causal in rows:
        for text in peers_texts:
            try:
                total += triton_tune_s(text, causal, shape)
                break
            except ValueError:
                continue
        else:
            missing.append(f"{shape}{' causal' if causal else ''}")
    counted = len(rows) - len(missing)
    line = (f"sweep cold: {sweep_s:.1f} s wall; Triton's cold autotune summed over {counted} of its "
            f"{len(rows)} rows: {total:.1f} s")
    if not missing and total > 0:
        line += f"; ratio {sweep_s / total:.3f}"
    else:
        line += f"; no ratio: {len(missing)} rows not measured (bench/run.py tuning-bar --sweep-triton measures them)"
    return line


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    try:
        if cmd == "triton" and len(args) == 2:
            print(triton_tune_s(read(args[0]), args[1] == "1"))
        elif cmd == "winner" and len(args) == 1:
            print(" ".join(str(x) for x in winner(read(args[0]))))
        elif cmd == "shapes" and len(args) == 1:
            print("\n".join(sweep_shapes(read(args[0]))))
        elif cmd == "table" and len(args) == 1:
            print(format_table(table_rows(read(args[0]).splitlines())))
        elif cmd == "sweep" and len(args) >= 2:
            # A peers.py that failed left no file: its rows count as not measured.
            texts = [read(p) for p in args[2:] if os.path.exists(p)]
            print(sweep_line(float(args[1]), sweep_rows(read(args[0])), texts))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except ValueError as e:
        print(f"tuning_bar.py {cmd}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
