#!/usr/bin/env python3
"""Ours beside the peers: one timing rule, one process, one CSV and one Markdown table.

For each shape (a sweep file's rows, or --shapes), attn-tune tunes it (--no-db, a fresh results CSV
that then serves as the table; or --table names a table made before), and then, in this one
process, each implementation runs the same Q, K, V:

  attn-tune        ours, through the Python package: attn_tune.forward(q, k, v, causal=, table=)
  attn-tune-capi   ours through the C API with the problem made once (the package's host cost
                   left out; not a peer, beside ours only to show that cost)
  sdpa-cudnn, sdpa-flash, sdpa-efficient
                   torch.nn.functional.scaled_dot_product_attention with one backend each
                   (enable_gqa for GQA; a bottom-right causal mask when N_q < N_kv)
  flash-attn, flash-attn-3
                   FlashAttention 2 (flash_attn) and 3 (flash_attn_interface), when importable
  flex             FlexAttention, torch.compile(mode="max-autotune-no-cudagraphs") (--no-flex:
                   left out; its compile and autotune take seconds to a minute a shape)
  triton           a FlashAttention-2-style Triton kernel autotuned over 36 configs
                   (--with-triton; its first call, the autotune, is first_call_s)

A packed variable-length batch (a seqlens shape): Q [total,H,D], K [total,KV,D], V [total,KV,dv]
and cu_seqlens int32 [B+1] on the GPU, the same for everyone; max_seqlen_q = max_seqlen_k = NQ
(the tool's N, which the tuned table's row is keyed on):
  attn-tune        attn_tune.flash_attn_varlen_func(q, k, v, cu, cu, NQ, NQ, causal=, window_size=,
                   softcap=, table=); attn-tune-capi: the C API's packed problem, made once
  flash-attn, flash-attn-3
                   their flash_attn_varlen_func, when importable
  flex             FlexAttention on [1,H,total,D] views with a document mask: a mask_mod that lets
                   row i see row j when both are of one sequence and, within it, causal (i >= j)
                   and the window allow (document_visible), softcap as a score_mod; its BlockMask
                   over total x total is made once (create_block_mask, _compile=True) outside the
                   timed call, as a user would cache it; the same max-autotune compile
  sdpa-*           not run: SDPA has no packed entry (a loop over the sequences would time the
                   loop), said in the table; triton is left out

The rule, the same for everyone (triton.testing.do_bench's, written out in time_ms below): one call
first (compiles, autotunes; its wall time is first_call_s), 5 calls to estimate the time, warm-up
calls for 25 ms, then --reps timed calls (default: as many as fit in 200 ms, at least 20), each
after a 256 MiB buffer is zeroed (L2 cleared) and between two CUDA events; the median. With
--sustained S each one is run back to back for S seconds and timed again by the same rule right
after (the H200 at its power cap runs slower under load than in a burst): sustained_ms.

Also measured in this process: the device-to-device copy bandwidth (2 GiB, read + written) and the
bf16 matmul rate (8192^3), by the same rule; and recorded: the GPU, the date, the git commit
(git, else $ATTN_TUNE_COMMIT), the torch, Triton, cuDNN and attn-tune versions.

Correctness: once per shape each output is compared with SDPA's (the first backend of flash,
cuDNN, efficient, math that takes the shape): max abs error, and MISMATCH in status when it is
above --tolerance (default 1e-2 for bf16, 2e-3 for fp16). With softcap (no SDPA backend caps) the
reference is float32 math and the tolerance at least FlashAttention's rule: twice the error of the same
math with P and O rounded to the input's dtype, plus 1e-3. A packed batch's reference is float32
math of each sequence alone (the same causal, window and softcap), by that rule too.

Shapes: --shapes "B,H[/KV],NQ,NKV,D[c][,fp16][,bshd][,wLEFT:RIGHT][,capC][,dvN][,seqlens:...];..."
e.g. "8,32/8,1,8192,128;64,32/8,16,4096,128c;32,16,8192,8192,128c,seqlens:uniform:128:8192"
(c or ,causal: causal, bottom-right aligned when NQ < NKV; wLEFT:RIGHT: a sliding window, FlashAttention's
window_size, -1 = no limit, the right side the diagonal when causal; capC: softcap C, each peer given
the same window and cap (SDPA a boolean mask, and no softcap); dvN: V's and O's head dim N (dv != D,
TFLOPS then 2*B*H*NQ*NKV*(D+dv)); bf16 and bhsd = [B,H,N,D] unless said;
seqlens:L1/L2/... (B lengths, 0 allowed, not all 0) or seqlens:uniform:LO:HI: a packed
variable-length batch of B sequences (flash_attn_varlen_func's), self-attention only (NQ = NKV, the
longest a sequence may be; the tool's --shape N, and max_seqlen_q and _k for everyone), packed as
[total, H, D] (bshd; bhsd is refused); uniform draws B lengths in [LO, HI] from random.Random(0)
(uniform_lengths: the same on every run), and every implementation, the tool too, gets those
lengths, explicit; the label keeps the word (uniform:LO:HI, not its draws), the CSV's seqlens column
the lengths;
bench/decode.py's "B,H,HKV,NQ,NKV,D[,causal]" is read too), or --sweep FILE [--rows 0,3-5,NAME]
(rows counted from 0 in file order, or by their name column; default sweeps/yardstick.csv, all rows).

Numbers: TFLOPS = 4*B*H*NQ*NKV*D / time, halved when causal (the tool's convention; for a causal
row with NQ << NKV it halves work that is not masked: compare ratios there, not TFLOPS); a packed
batch's: 4*H*sum(N_i^2)*D, halved when causal, over its sequences' own lengths N_i (with a window
each sequence's visible pairs). GB/s = the bytes any implementation must move (Q, K, V read, O
written, and ours' float32 LSE; a packed batch's of its total rows) / time, and
of_copy = that over the copy bandwidth. ratio_to_ours = its time / ours (above 1: ours is faster).
The Markdown's "ours / fastest peer" = the fastest peer's time / ours (above 1: ours is faster).

    python3 bench/peers.py --tool build-gpu/attn-tune --sweep sweeps/ci-smoke.csv --out /tmp/peers-smoke
    python3 bench/peers.py --shapes "8,32/8,1,8192,128;64,32/8,16,4096,128c" --no-flex --out /tmp/dec
    python3 bench/peers.py --table results/h200/ci-smoke.csv --sweep sweeps/ci-smoke.csv --rows 0,2 \\
                           --with-triton --sustained 2 --out /tmp/p

Writes DIR/peers.csv (a row per shape and implementation, written as each shape ends; '#' lines
first: the environment and ceilings) and DIR/peers.md (a row per shape), and prints the table.
DIR must be new or empty: nothing is overwritten. `python3 bench/peers.py --summary DIR...` prints
a short table of such runs (ours, the fastest peer, the ratio, mismatches), and for each window or
softcap shape whose dense shape is among them, ours' TFLOPS over the visible pairs against ours there
(issue 23's "within 10% of the dense kernel"); for a packed batch, against its dense companion: the
same shape but for B and the layout, not packed (e.g. 4,16,8192,8192,128 beside
32,16,8192,8192,128,seqlens:uniform:128:8192), when one is among them.

Exit code 0; 1 when ours disagrees with SDPA (MISMATCH) or fails on a shape (FAILED: the other
shapes still run); 2 for bad input; 3 when stopped (SIGTERM, as `timeout` sends, or Ctrl-C) after
writing what was measured. Runs on the GPU machine after `bash scripts/device_build.sh build-gpu`,
with PYTHONPATH=python and ATTN_TUNE_LIBRARY=build-gpu/libattn_tune.so (bench/device/peers.sh
does all of it); a shape takes about 5 s plus its tuning and FlexAttention's compile.
"""
import argparse
import contextlib
import csv
import dataclasses
import datetime
import inspect
import math
import re
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = "bench/peers.py"

OURS = "attn-tune"
OURS_CAPI = "attn-tune-capi"
NOT_PEERS = (OURS, OURS_CAPI)
# Every implementation in the order it runs and its columns stand.
IMPLS = (OURS, OURS_CAPI, "sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "flash-attn", "flash-attn-3", "flex", "triton")
TOLERANCE = {"bf16": 1e-2, "fp16": 2e-3}
ELEMENT_BYTES = 2  # bf16 and fp16
CSV_COLUMNS = ["shape", "name", "B", "H", "KV", "NQ", "NKV", "D", "causal", "dtype", "layout", "impl", "config",
               "status", "ms", "tflops", "gbs", "of_copy", "ratio_to_ours", "sustained_ms", "sustained_ratio_to_ours",
               "max_err", "reference", "reps", "first_call_s", "tool_ms", "tune_s", "seqlens"]


class BadInput(ValueError):
    """An argument or a file that cannot be used; the message names the bad value."""


# --- shapes ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Shape:
    b: int
    h: int
    kv: int
    nq: int
    nkv: int
    d: int
    causal: bool = False
    dtype: str = "bf16"
    layout: str = "bhsd"
    name: str = ""
    window_left: int = -1  # FlashAttention's window_size; -1 = no limit (causal: the right side is 0)
    window_right: int = -1
    softcap: float = 0.0
    dv: int = 0  # V's and O's head dim when it is not D (0: D)
    seqlens: str = ""  # a packed batch's lengths as the word gives them ("128/0/77" or "uniform:128:8192"); "": dense
    refusal: str = dataclasses.field(default="", compare=False)  # a sweep row this cannot time: why

    def value_dim(self):
        return self.dv or self.d

    def window(self):
        """(left, right) as flash_attn_func takes it: (-1, -1) without a window."""
        return (self.window_left, 0 if self.causal and self.window_left >= 0 else self.window_right)

    def has_window(self):
        return self.window_left >= 0 or self.window_right >= 0

    def mask_sides(self):
        """(left, right) of pair_visible: the window, else causal's right side 0, -1 = no limit."""
        return self.window() if self.has_window() else (-1, 0 if self.causal else -1)

    def lengths(self):
        """A packed batch's B sequence lengths (explicit, or uniform:LO:HI's draws); [] when dense."""
        if not self.seqlens:
            return []
        if self.seqlens.startswith("uniform:"):
            lo, hi = (int(x) for x in self.seqlens.split(":")[1:])
            return uniform_lengths(self.b, lo, hi)
        return [int(x) for x in self.seqlens.split("/")]

    def label(self):
        """The shape in --shapes' grammar: parse_shapes(label) gives it back (without its name)."""
        extra = "".join(f",{x}" for x, default in ((self.dtype, "bf16"), (self.layout, "bhsd")) if x != default)
        if self.has_window():
            extra += f",w{self.window_left}:{self.window_right}"
        if self.softcap:
            extra += f",cap{self.softcap:g}"
        if self.dv:
            extra += f",dv{self.dv}"
        if self.seqlens:
            extra += f",seqlens:{self.seqlens}"
        return f"{self.b},{self.h}/{self.kv},{self.nq},{self.nkv},{self.d}{'c' if self.causal else ''}{extra}"

    def tool_args(self):
        """attn-tune's options for this problem."""
        return (["--shape", f"{self.b},{self.h},{self.nq},{self.d}", "--kv-heads", str(self.kv), "--kv-len",
                 str(self.nkv), "--dtype", self.dtype, "--layout", self.layout] + (["--causal"] if self.causal else [])
                + (["--window", "{},{}".format(*self.window())] if self.has_window() else [])
                + (["--softcap", f"{self.softcap:g}"] if self.softcap else [])
                + (["--dv", str(self.dv)] if self.dv else [])
                + (["--seqlens", ",".join(str(n) for n in self.lengths())] if self.seqlens else []))


def uniform_lengths(b, lo, hi):
    """uniform:LO:HI's B lengths: LO + floor(u * (HI - LO + 1)) for the first B values u of
    random.Random(0).random() (a sequence Python keeps the same across versions): the same on every
    run, and given to everyone (the tool too) as explicit lengths."""
    rng = random.Random(0)
    return [lo + int(rng.random() * (hi - lo + 1)) for _ in range(b)]


def positive(text, what):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0 or str(value) != text.strip():
        raise BadInput(f"{what}: '{text}' is not a positive integer")
    return value


def check_shape(s, where):
    if s.h % s.kv:
        raise BadInput(f"{where}: {s.h} query heads are not a multiple of {s.kv} K/V heads")
    if s.seqlens:
        check_seqlens(s, f"{where}: seqlens:{s.seqlens}")
    return s


def check_seqlens(s, where):
    """A packed batch's refusals: self-attention only (NQ = NKV), bshd, B lengths in [0, NQ], not all 0."""
    if s.nq != s.nkv:
        raise BadInput(f"{where} with NQ {s.nq} != NKV {s.nkv}: a packed batch is self-attention here (each "
                       "sequence's keys are its queries)")
    if s.layout != "bshd":
        raise BadInput(f"{where} with layout {s.layout}: a packed batch is [total, H, D] here (bshd, "
                       "flash_attn_varlen_func's layout)")
    if s.seqlens.startswith("uniform:"):
        lo, hi = (int(x) for x in s.seqlens.split(":")[1:])
        if lo > hi:
            raise BadInput(f"{where}: LO {lo} is above HI {hi}")
        if hi > s.nq:
            raise BadInput(f"{where}: HI {hi} is above NQ {s.nq}, the longest a sequence may be")
    lengths = s.lengths()
    if len(lengths) != s.b:
        raise BadInput(f"{where} gives {len(lengths)} lengths for B {s.b}")
    if max(lengths) > s.nq:
        raise BadInput(f"{where}: length {max(lengths)} is above NQ {s.nq}, the longest a sequence may be")
    if not any(lengths):
        raise BadInput(f"{where}: every sequence is empty, nothing to attend")


WORD_FORMS = "causal, c, bf16, fp16, bhsd, bshd, wLEFT:RIGHT, capC, dvN, seqlens:L1/L2/... or seqlens:uniform:LO:HI"
WORDS = {"c": ("causal", True), "causal": ("causal", True), "bf16": ("dtype", "bf16"), "fp16": ("dtype", "fp16"),
         "bhsd": ("layout", "bhsd"), "bshd": ("layout", "bshd")}


def variant_word(word):
    """A window word wL:R (w1024:-1: a left side of 1024 keys; with causal the right side is the
    diagonal), a softcap word capC, V's head dim dvN (dv != D) or a packed batch's lengths
    (seqlens:L1/L2/... or seqlens:uniform:LO:HI, its numbers normalized), as (attribute, value)
    pairs; None for another word."""
    m = re.fullmatch(r"w(-1|\d+):(-1|\d+)", word.lower())
    if m:
        return [("window_left", int(m.group(1))), ("window_right", int(m.group(2)))]
    m = re.fullmatch(r"cap(\d+(?:\.\d+)?)", word.lower())
    if m:
        return [("softcap", float(m.group(1)))]
    m = re.fullmatch(r"dv(\d+)", word.lower())
    if m:
        return [("dv", int(m.group(1)))]
    m = re.fullmatch(r"seqlens:uniform:(\d+):(\d+)", word.lower())
    if m:
        return [("seqlens", f"uniform:{int(m.group(1))}:{int(m.group(2))}")]
    m = re.fullmatch(r"seqlens:(\d+(?:/\d+)*)", word.lower())
    if m:
        return [("seqlens", "/".join(str(int(n)) for n in m.group(1).split("/")))]
    return None


def parse_shape(item):
    """One shape of --shapes: B,H[/KV],NQ,NKV,D[c] then words (causal, fp16, bshd, a window wL:R, a
    softcap capC, dvN, a packed batch's seqlens:..., which makes the layout bshd), or decode.py's
    B,H,HKV,NQ,NKV,D[,causal|,1|,0]."""
    where = f"--shapes '{item}'"
    fields = [f.strip() for f in item.split(",")]
    first_word = next((i for i, f in enumerate(fields)
                       if f.lower() in WORDS or variant_word(f) or f.lower().startswith("seqlens")), len(fields))
    values, words = fields[:first_word], fields[first_word:]
    attrs = {}
    if len(values) == 7 and "/" not in values[1] and values[6] in ("0", "1"):  # decode.py's causal flag
        attrs["causal"] = values.pop() == "1"
    if len(values) == 6 and "/" not in values[1]:  # decode.py's B,H,HKV,NQ,NKV,D
        values = [values[0], f"{values[1]}/{values[2]}"] + values[3:]
    if len(values) > 5:
        raise BadInput(f"{where}: '{values[5]}' is not {WORD_FORMS}")
    if len(values) < 5:
        raise BadInput(f"{where}: expected B,H[/KV],NQ,NKV,D[c] (e.g. 8,32/8,1,8192,128 or 4,32,4096,4096,128c), "
                       f"got {len(values)} fields before the words")
    if values[4].endswith("c"):
        values[4] = values[4][:-1]
        attrs["causal"] = True
    for word in words:
        if variant_word(word):
            attrs.update(variant_word(word))
            continue
        if word.lower() not in WORDS:
            raise BadInput(f"{where}: '{word}' is not {WORD_FORMS}")
        key, value = WORDS[word.lower()]
        attrs[key] = value
    if "seqlens" in attrs:
        attrs.setdefault("layout", "bshd")  # a packed batch is [total, H, D]
    heads, slash, kv = values[1].partition("/")
    b, h, nq, nkv, d = (positive(v, f"{where}: {what}")
                        for v, what in zip([values[0], heads] + values[2:], ("B", "H", "NQ", "NKV", "D")))
    return check_shape(Shape(b, h, positive(kv, f"{where}: KV") if slash else h, nq, nkv, d, **attrs), where)


def parse_shapes(text):
    shapes = [parse_shape(item) for item in text.split(";") if item.strip()]
    if not shapes:
        raise BadInput(f"--shapes '{text}' names no shape")
    return shapes


SWEEP_REQUIRED = ("name", "B", "H", "N", "D")


def flag(text, where):
    t = text.strip().lower()
    if t in ("", "0", "false", "no"):
        return False
    if t in ("1", "true", "yes"):
        return True
    raise BadInput(f"{where}: '{text}' is not 0/1")


def read_sweep(path):
    """A sweep file's rows as Shapes, read as the tool reads it (src/sweep/sweep_file.cpp): '#' lines
    (after blanks too) are comments; name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout, where a blank
    kv_heads is H, kv_len N, dtype bf16, layout bhsd (bshd with seqlens), causal 0; the window,
    softcap, dv and seqlens columns as the words; a row with kv_seqlens, page_size, kv_lens or pass
    other than their defaults is read with its refusal, which parse_args raises when it is selected."""
    try:
        with open(path, newline="") as f:
            numbered = [(i + 1, line) for i, line in enumerate(f) if line.strip() and not line.lstrip().startswith("#")]
    except OSError as e:
        raise BadInput(f"cannot read sweep file '{path}': {e.strerror}") from None
    if not numbered:
        raise BadInput(f"sweep file '{path}' has no header and no rows")
    header = [c.strip() for c in next(csv.reader([numbered[0][1]]))]
    missing = [c for c in SWEEP_REQUIRED if c not in header]
    if missing:
        raise BadInput(f"sweep file '{path}': the header lacks column {', '.join(repr(c) for c in missing)} "
                       f"(it has {', '.join(header)})")
    shapes = []
    for line_no, line in numbered[1:]:
        cells = [c.strip() for c in next(csv.reader([line]))]
        where = f"{path}:{line_no}"
        if len(cells) != len(header):
            raise BadInput(f"{where}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        get = lambda column: row.get(column, "")  # noqa: E731
        number = lambda column: positive(get(column), f"{where}: column '{column}'")  # noqa: E731
        # Read, so that row numbers stay the file's, and refused when selected (parse_args).
        refusal = next((f"{where}: column '{column}': '{get(column)}' is not timed here (a paged or per-sequence "
                        "K/V cache and cross-attention packed batches: the peers take neither, so attn-tune "
                        "times them alone, e.g. bench/device/hopper_paged.sh, paged against contiguous)"
                        for column, empty in (("kv_seqlens", ""), ("page_size", "0"), ("kv_lens", ""))
                        if (get(column) or empty) != empty), "")
        if not refusal and (get("pass") or "fwd") != "fwd":  # the peers are timed on the forward only
            refusal = (f"{where}: column 'pass': '{get('pass')}' is not timed here (the peers are timed on the "
                       "forward pass, pass fwd)")
        seqlens = get("seqlens")
        if seqlens and not variant_word(f"seqlens:{seqlens}"):
            raise BadInput(f"{where}: column 'seqlens': '{seqlens}' is not L1/L2/... or uniform:LO:HI")
        if seqlens:
            seqlens = variant_word(f"seqlens:{seqlens}")[0][1]
        dtype, layout = get("dtype") or "bf16", get("layout") or ("bshd" if seqlens else "bhsd")
        if dtype not in TOLERANCE:
            raise BadInput(f"{where}: column 'dtype': '{dtype}' is not bf16 or fp16")
        if layout not in ("bhsd", "bshd"):
            raise BadInput(f"{where}: column 'layout': '{layout}' is not bhsd or bshd")
        h, n = number("H"), number("N")

        def side(column):
            text = get(column) or "-1"
            if not re.fullmatch(r"-1|\d+", text):
                raise BadInput(f"{where}: column '{column}': '{text}' is not -1 or a count of keys")
            return int(text)
        try:
            cap = float(get("softcap") or 0)
        except ValueError:
            raise BadInput(f"{where}: column 'softcap': '{get('softcap')}' is not a number") from None
        causal = flag(get("causal"), f"{where}: column 'causal'")
        left, right = side("window_left"), side("window_right")
        if right == 0:  # a right side of 0 is the causal mask, as the tool reads it
            causal, right = True, -1
        shapes.append(check_shape(Shape(number("B"), h, number("kv_heads") if get("kv_heads") else h, n,
                                        number("kv_len") if get("kv_len") else n, number("D"), causal, dtype, layout,
                                        get("name"), left, right, cap, number("dv") if get("dv") else 0,
                                        seqlens, refusal), where))
    if not shapes:
        raise BadInput(f"sweep file '{path}' has no rows")
    return shapes


def select_rows(shapes, spec, path="the sweep file"):
    """The rows of `spec`: indexes from 0 ("0,3"), ranges ("2-5") or names, in the order given."""
    names = {s.name: i for i, s in enumerate(shapes) if s.name}
    picked = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        a, dash, b = part.partition("-")
        if part in names:
            picked.append(names[part])
        elif a.isdigit() and (not dash or b.isdigit()):
            first, last = int(a), int(b) if dash else int(a)
            if first > last or last >= len(shapes):
                raise BadInput(f"--rows '{part}': {path} has {len(shapes)} rows, 0 to {len(shapes) - 1}"
                               + (" (the range runs backwards)" if first > last else ""))
            picked.extend(range(first, last + 1))
        else:
            raise BadInput(f"--rows '{part}': not a row index, a range like 2-5, or a name in {path}")
    if not picked:
        raise BadInput(f"--rows '{spec}' names no row")
    return [shapes[i] for i in picked]


# --- the numbers ----------------------------------------------------------------------------------
def sequences(s):
    """(NQ, NKV, count) of the batch's sequences: B of NQ x NKV, or each of a packed batch's own
    lengths N_i (self-attention: N_i x N_i)."""
    if s.seqlens:
        return [(n, n, 1) for n in s.lengths()]
    return [(s.nq, s.nkv, s.b)]


def visible_ranges(s, nq=None, nkv=None):
    """Each query row's visible keys [first, end) of one sequence (of the shape's NQ x NKV unless
    given) under the window (bottom-right aligned)."""
    nq, nkv = nq if nq is not None else s.nq, nkv if nkv is not None else s.nkv
    left, right = s.window()
    for i in range(nq):
        diagonal = i + nkv - nq
        first = max(0, diagonal - left) if left >= 0 else 0
        end = min(nkv, diagonal + right + 1) if right >= 0 else nkv
        yield first, end


def visible_pairs(s, nq=None, nkv=None):
    """The (query, key) pairs of one sequence a window leaves visible."""
    return sum(max(0, end - first) for first, end in visible_ranges(s, nq, nkv))


def flops(s):
    """4*B*H*NQ*NKV*D, halved when causal (attn-tune's attention_flops); with a window, 4*B*H*D
    times the visible pairs, exactly. A packed batch: the sum over its sequences of the same for
    N_i x N_i (4*H*sum(N_i^2)*D, halved when causal), as the tool counts it."""
    per_pair = 2 * (s.d + s.value_dim())  # 4 D; 2 D + 2 dv with V's own head dim
    total = 0
    for nq, nkv, count in sequences(s):
        if s.has_window():
            total += per_pair * count * s.h * visible_pairs(s, nq, nkv)
        else:
            f = per_pair * count * s.h * nq * nkv
            total += f / 2 if s.causal else f
    return total


def visible_keys(s, nq=None, nkv=None):
    """The keys of one sequence some query sees (all of them without a window): the union of the
    rows' ranges, one run since both edges rise by one a query (attn-tune's visible_keys)."""
    if not s.has_window():
        return nkv if nkv is not None else s.nkv
    seen = [(first, end) for first, end in visible_ranges(s, nq, nkv) if end > first]
    return max(end for _, end in seen) - min(first for first, _ in seen) if seen else 0


def bytes_moved(s):
    """What attention must move at the least: Q, K, V read (with a window, the keys some query
    sees), O written, and the float32 LSE; a packed batch's summed over its sequences (Q, K, V and
    O of its total rows)."""
    rows = sum(count * nq for nq, _, count in sequences(s))
    keys = sum(count * visible_keys(s, nq, nkv) for nq, nkv, count in sequences(s))
    q = rows * s.h * (s.d + s.value_dim()) * ELEMENT_BYTES  # Q read, O written
    kv = keys * s.kv * (s.d + s.value_dim()) * ELEMENT_BYTES
    return q + kv + 4 * rows * s.h


def pair_visible(i, j, left, right):
    """Whether query i sees key j, i counted on the keys' scale (i + NKV - NQ: bottom-right) under
    mask_sides' (left, right), -1 = no limit on that side: ints or tensors alike (& and comparisons),
    so FlexAttention's mask_mods, the SDPA mask and the tests share it."""
    keep = j >= 0
    if left >= 0:
        keep = keep & (j >= i - left)
    if right >= 0:
        keep = keep & (j <= i + right)
    return keep


def document_visible(seq_i, seq_j, i, j, left, right):
    """A packed batch's document mask: row i (of sequence seq_i) sees row j (of seq_j) when both are
    in one sequence and pair_visible holds (self-attention: packed rows differ as the sequence's do)."""
    return (seq_i == seq_j) & pair_visible(i, j, left, right)


def sequence_of_rows(lengths):
    """The sequence of each packed row: [0] * L1 + [1] * L2 + ... (FlexAttention's document ids)."""
    return [b for b, n in enumerate(lengths) for _ in range(n)]


def tflops(s, ms):
    return flops(s) / ms / 1e9 if ms > 0 else math.nan


def gbs(s, ms):
    return bytes_moved(s) / ms / 1e6 if ms > 0 else math.nan


def ratio(ms, ours_ms):
    """Its time over ours: above 1, ours is faster; NaN when either was not measured."""
    if not (isinstance(ms, float) and isinstance(ours_ms, float)) or not (ms > 0 and ours_ms > 0):
        return math.nan
    return ms / ours_ms


def fastest_peer(times):
    """(name, ms) of the fastest peer in {impl: ms}; ours (either way) is no peer; NaNs are not measured."""
    peers = [(ms, name) for name, ms in times.items() if name not in NOT_PEERS and isinstance(ms, float) and ms > 0]
    if not peers:
        return None, math.nan
    ms, name = min(peers)
    return name, ms


def shape_rows(s, results, copy_gbs, context):
    """The CSV rows of one shape: results is {impl: dict(ms=, sustained_ms=, max_err=, status=, ...)}."""
    ours = results.get(OURS, {})
    rows = []
    for impl in sorted(results, key=lambda n: IMPLS.index(n) if n in IMPLS else len(IMPLS)):
        r = results[impl]
        ms, sus = r.get("ms", math.nan), r.get("sustained_ms", math.nan)
        rows.append({"shape": s.label(), "name": s.name, "B": s.b, "H": s.h, "KV": s.kv, "NQ": s.nq, "NKV": s.nkv,
                     "D": s.d, "causal": int(s.causal), "dtype": s.dtype, "layout": s.layout, "impl": impl,
                     "config": r.get("config", ""), "status": r.get("status", "ok"), "ms": ms,
                     "tflops": tflops(s, ms), "gbs": gbs(s, ms),
                     "of_copy": gbs(s, ms) / copy_gbs if copy_gbs else math.nan,
                     "ratio_to_ours": ratio(ms, ours.get("ms", math.nan)), "sustained_ms": sus,
                     "sustained_ratio_to_ours": ratio(sus, ours.get("sustained_ms", math.nan)),
                     "max_err": r.get("max_err", math.nan), "reference": context.get("reference", ""),
                     "reps": r.get("reps", ""), "first_call_s": r.get("first_call_s", math.nan),
                     "tool_ms": context.get("tool_ms", math.nan) if impl == OURS else math.nan,
                     "tune_s": context.get("tune_s", math.nan) if impl == OURS else math.nan,
                     "seqlens": "/".join(str(n) for n in s.lengths())})
    return rows


# --- writing --------------------------------------------------------------------------------------
def new_output_dir(path):
    """Makes DIR; refuses one that exists and holds anything, or is not a folder (nothing is overwritten)."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        what = "is not a folder" if not os.path.isdir(path) else "is not empty"
        raise BadInput(f"--out '{path}' {what}; give a new or empty folder (nothing in it is overwritten)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise BadInput(f"--out '{path}': cannot make it: {e.strerror}") from None
    return path


def cell(value):
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return str(value)


class CsvOut:
    """DIR/peers.csv, made new ('x': never over a file), its '#' lines first, rows flushed per shape."""

    def __init__(self, path, env):
        self.file = open(path, "x", newline="")
        for key, value in env.items():
            self.file.write(f"# {key}: {value}\n")
        self.writer = csv.DictWriter(self.file, fieldnames=CSV_COLUMNS)
        self.writer.writeheader()
        self.file.flush()

    def write(self, rows):
        self.writer.writerows({k: cell(r.get(k, "")) for k in CSV_COLUMNS} for r in rows)
        self.file.flush()

    def close(self):
        self.file.close()


def fmt(value, digits=4):
    return "–" if not isinstance(value, float) or math.isnan(value) else f"{value:.{digits}f}"


def heading(env):
    """"H200, 2026-12-01, 6fb819e": how a measurement is named (the GPU, the date, the commit)."""
    gpu = env.get("gpu", "?").replace("NVIDIA ", "")
    return f"{gpu}, {env.get('date', '?')[:10]}, {env.get('commit', '?')}"


def markdown(rows, env):
    """The table a shape a line: ours, each peer's ms, the fastest peer and ours / fastest peer (and the
    same under load with --sustained), ours' error; then the environment and the rule."""
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    present = [i for i in IMPLS if i != OURS and any(r["impl"] == i for r in rows)]
    sustained = any(isinstance(r["sustained_ms"], float) and r["sustained_ms"] > 0 for r in rows)
    head = (["shape", "name", "ours config", "ours ms", "TFLOPS", "of copy"] + [f"{i} ms" for i in present]
            + ["fastest peer", "ours / fastest peer"] + (["sustained: ours / fastest peer"] if sustained else [])
            + ["ours max err"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for shape in shapes:
        by = {r["impl"]: r for r in rows if r["shape"] == shape}
        ours = by.get(OURS, {})
        peer, peer_ms = fastest_peer({i: r["ms"] for i, r in by.items()})
        _, peer_sus = fastest_peer({i: r["sustained_ms"] for i, r in by.items()})
        cells = [shape, ours.get("name") or next(iter(by.values()))["name"], ours.get("config", ""),
                 fmt(ours.get("ms")), fmt(ours.get("tflops"), 1), fmt(ours.get("of_copy"), 2)]
        for impl in present:
            r = by.get(impl)
            cells.append(fmt(r["ms"]) + (" MISMATCH" if r and "MISMATCH" in r["status"] else "") if r else "–")
        cells += [peer or "–", fmt(ratio(peer_ms, ours.get("ms", math.nan)), 2)]
        if sustained:
            cells.append(fmt(ratio(peer_sus, ours.get("sustained_ms", math.nan)), 2))
        cells.append(f"{ours['max_err']:.2e}" if isinstance(ours.get("max_err"), float)
                     and not math.isnan(ours["max_err"]) else "–")
        lines.append("| " + " | ".join(cells) + " |")
        for impl, r in by.items():
            if r["status"] != "ok":
                notes.append(f"- {shape} {impl}: {r['status']}")
    text = [f"{heading(env)}: ours and the peers, one rule, one process ({PROG}).", ""] + lines + [""]
    text.append(f"Timing: {env.get('rule', '')}. Copy bandwidth {env.get('copy_gbs', '?')} GB/s, bf16 matmul "
                f"{env.get('matmul_tflops', '?')} TFLOPS, in the same process. {env.get('versions', '')}. "
                "ours / fastest peer: the fastest peer's time over ours (above 1: ours is faster); of copy: the "
                "bytes moved (Q, K, V, O, LSE) per second over the copy bandwidth. Errors: max abs against "
                f"SDPA's output ({env.get('reference', 'the first SDPA backend that runs the shape')}).")
    if notes:
        text += ["", "Not measured or not right:"] + notes
    return "\n".join(text) + "\n"


def read_rows(path):
    """peers.csv's rows (its '#' lines skipped), numbers as floats (blank: NaN)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    except OSError as e:
        raise BadInput(f"cannot read '{path}': {e.strerror}") from None
    if rows and "ratio_to_ours" not in rows[0]:
        raise BadInput(f"'{path}' is not a {PROG} CSV (no ratio_to_ours column)")
    for r in rows:
        for key in ("ms", "sustained_ms", "max_err"):
            r[key] = float(r[key]) if r.get(key) else math.nan
    return rows


def summary(paths):
    """A short table of peers.csv files (or their folders): a shape a line, ours beside the fastest peer."""
    lines = [f"{'shape':32s} {'name':24s} {'ours ms':>9s} {'fastest peer':14s} {'its ms':>9s} {'ours/peer':>9s} "
             f"{'sustained':>9s}  status"]
    ours_ms = {}  # shape -> ours' ms over every run given (the last one that has it)
    for path in paths:
        csv_path = os.path.join(path, "peers.csv") if os.path.isdir(path) else path
        try:
            rows = read_rows(csv_path)
        except BadInput as e:  # a run that did not get to write: said, the others still shown
            lines.append(f"{csv_path}: {e}")
            continue
        lines.append(f"{csv_path}: {len(rows)} rows")
        for shape in dict.fromkeys(r["shape"] for r in rows):
            by = {r["impl"]: r for r in rows if r["shape"] == shape}
            ours = by.get(OURS, {"ms": math.nan, "sustained_ms": math.nan, "name": "", "status": "not run"})
            peer, peer_ms = fastest_peer({i: r["ms"] for i, r in by.items()})
            _, peer_sus = fastest_peer({i: r["sustained_ms"] for i, r in by.items()})
            bad = [f"{i}: {r['status'][:60]}" for i, r in by.items() if "MISMATCH" in r["status"]]
            lines.append(f"{shape:32s} {ours['name'][:24]:24s} {fmt(ours['ms']):>9s} {peer or '-':14s} "
                         f"{fmt(peer_ms):>9s} {fmt(ratio(peer_ms, ours['ms']), 2):>9s} "
                         f"{fmt(ratio(peer_sus, ours['sustained_ms']), 2):>9s}  {'; '.join(bad) or 'ok'}")
            ours_ms[shape] = ours["ms"]
    return "\n".join(lines + of_dense(ours_ms))


def dense_label(label):
    """A shape's label without its window and softcap words: the dense problem it varies."""
    return ",".join(w for w in label.split(",") if not re.fullmatch(r"w-?\d+:-?\d+|cap[0-9.]+", w))


def dense_companion(s, labels):
    """The label among `labels` of a packed batch's dense problem: the same shape but for B and the
    layout, not packed (4,16,8192,8192,128 for 32,16,8192,8192,128,seqlens:uniform:128:8192); None
    when there is none."""
    for label in labels:
        try:
            dense = parse_shape(label)
        except BadInput:
            continue
        if not dense.seqlens and dataclasses.replace(dense, b=s.b, layout=s.layout, seqlens=s.seqlens) == s:
            return label
    return None


def of_dense(ours_ms):
    """Lines for issue 23's speed bar: each window or softcap shape's TFLOPS (visible pairs) over
    ours on the same shape without them, and each packed batch's over ours on its dense companion,
    where the runs given hold both."""
    lines = []
    for label, ms in ours_ms.items():
        try:
            s = parse_shape(label)
        except BadInput:
            continue
        dense = dense_companion(s, ours_ms) if s.seqlens else dense_label(label)
        if not (s.seqlens or s.has_window() or s.softcap) or dense not in ours_ms:
            continue
        rate = tflops(s, ms) / tflops(parse_shape(dense), ours_ms[dense])
        lines.append(f"  {label:36s} {fmt(rate, 2)} of {dense} ({fmt(ms)} ms against {fmt(ours_ms[dense])})")
    return ["of dense (ours' TFLOPS over the visible pairs, against ours on the dense shape; a packed batch: "
            "its dense companion):", *lines] if lines else []


# --- tuning ---------------------------------------------------------------------------------------
def read_results_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def rank_one(path):
    """(family config, median ms) of the tool's choice (rank 1) in a results CSV."""
    for r in read_results_csv(path):
        if r.get("rank") == "1":
            return f"{r['family']} {r['config']}", float(r["median_ms"])
    raise BadInput(f"{path}: no variant of rank 1 (did every config fail?)")


def tune(tool, tool_args, s, path, log):
    argv = [tool, *s.tool_args(), "--no-db", "-q", "--out", path, *tool_args]
    t0 = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - t0
    if rc != 0:
        with open(log, errors="replace") as f:
            tail = f.read()[-600:]
        raise RuntimeError(f"attn-tune exited {rc} for {s.label()} ({' '.join(argv)}):\n{tail}")
    config, ms = rank_one(path)
    return config, ms, seconds


# --- the environment ------------------------------------------------------------------------------
def git_commit():
    """The tree's commit (+dirty when tracked files changed), else $ATTN_TUNE_COMMIT (the device
    machine gets no .git), else 'unknown'."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("ATTN_TUNE_COMMIT") or "unknown (no git here; set ATTN_TUNE_COMMIT)"


# --- on the GPU -----------------------------------------------------------------------------------
FLUSH = "zero"  # --flush: how time_ms clears the L2 before each timed call


def time_ms(fn, reps=0, warmup_ms=25.0, rep_ms=200.0, sustained_s=0.0):
    """The one rule (triton.testing.do_bench's): (median ms, reps). fn has run once already.
    5 calls estimate the time; warm-up calls for warmup_ms; then `reps` calls (0: as many as fit
    in rep_ms, at least 20), each after zeroing 256 MiB (L2 cleared), between two CUDA events.
    FLUSH "read": the 256 MiB are read instead (a sum), so the L2 is left holding clean lines, not
    the zeroing's dirty ones, whose write-back would otherwise share DRAM with the timed call.
    sustained_s > 0: fn runs back to back that long first (synchronizing every 32 calls)."""
    import torch

    if sustained_s > 0:
        end, n = time.monotonic() + sustained_s, 0
        while True:
            fn()
            n += 1
            if n % 32 == 0:
                torch.cuda.synchronize()
                if time.monotonic() >= end:
                    break
    buffer = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    clear_l2 = buffer.view(torch.int32).zero_().sum if FLUSH == "read" else buffer.zero_
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(5):
        clear_l2()
        fn()
    stop.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(stop) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate))):
        fn()
    n = reps or max(20, int(rep_ms / estimate))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        clear_l2()
        starts[i].record()
        fn()
        stops[i].record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in zip(starts, stops))
    del clear_l2, buffer
    return times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2, n


def ceilings(reps):
    """(copy GB/s, bf16 matmul TFLOPS) by the rule."""
    import torch

    x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    y.copy_(x)
    copy_ms, _ = time_ms(lambda: y.copy_(x), reps)
    del x, y
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    a @ b
    mm_ms, _ = time_ms(lambda: a @ b, reps)
    del a, b
    torch.cuda.empty_cache()
    return 2 * 2 * 1024**3 / copy_ms / 1e6, 2 * 8192**3 / mm_ms / 1e9


def make_inputs(s, seed):
    """Q [B,H,NQ,D], K [B,KV,NKV,D] and V [B,KV,NKV,dv] in index order, in the shape's memory layout;
    a packed batch's Q [total,H,D], K [total,KV,D], V [total,KV,dv] and cu_seqlens int32 [B+1]."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[s.dtype]
    g = torch.Generator(device="cuda").manual_seed(seed)

    def one(heads, n, d):
        if s.seqlens:
            return torch.randn(sum(s.lengths()), heads, d, device="cuda", dtype=dtype, generator=g)
        if s.layout == "bshd":
            return torch.randn(s.b, n, heads, d, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        return torch.randn(s.b, heads, n, d, device="cuda", dtype=dtype, generator=g)
    qkv = one(s.h, s.nq, s.d), one(s.kv, s.nkv, s.d), one(s.kv, s.nkv, s.value_dim())
    if not s.seqlens:
        return qkv
    offsets = [0]
    for n in s.lengths():
        offsets.append(offsets[-1] + n)
    return (*qkv, torch.tensor(offsets, dtype=torch.int32, device="cuda"))


def sdpa_impl(s, q, k, v, backend):
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    kwargs = {"enable_gqa": True} if s.kv != s.h else {}
    if s.seqlens:
        raise RuntimeError("SDPA has no packed variable-length entry")
    if s.softcap:
        raise RuntimeError("SDPA has no softcap")
    if s.has_window():
        kwargs["attn_mask"] = visible_mask(s)
    elif s.causal and s.nq == s.nkv:
        kwargs["is_causal"] = True
    elif s.causal:
        from torch.nn.attention.bias import causal_lower_right
        kwargs["attn_mask"] = causal_lower_right(s.nq, s.nkv)
    return (lambda: F.scaled_dot_product_attention(q, k, v, **kwargs)), (lambda: sdpa_kernel(backend))


def visible_mask(s, nq=None, nkv=None):
    """The window's (and causal) visible (i, j) of one sequence (the shape's NQ x NKV unless given)
    as a bool [NQ, NKV] on the GPU (True: attended)."""
    import torch

    nq, nkv = nq if nq is not None else s.nq, nkv if nkv is not None else s.nkv
    i = torch.arange(nq, device="cuda")[:, None] + nkv - nq
    j = torch.arange(nkv, device="cuda")[None, :]
    return pair_visible(i, j, *s.mask_sides()).expand(nq, nkv)


def float32_reference(s, pieces):
    """Float32 math a head at a time over (q [H,N,D], k [KV,NKV,D], v [KV,NKV,dv], out [H,N,dv]
    float32, keep: bool [N,NKV] or None), filling each out; returns the largest error of the same
    math with P and O rounded to q's dtype (as every kernel rounds them), FlashAttention's yardstick
    for the tolerance."""
    import torch

    lowp_err = 0.0
    group = s.h // s.kv
    for q, k, v, out, keep in pieces:
        for h in range(s.h):
            sc = (q[h].float() @ k[h // group].float().T) * s.d ** -0.5
            if s.softcap:
                sc = s.softcap * torch.tanh(sc / s.softcap)
            if keep is not None:
                sc = sc.masked_fill(~keep, float("-inf"))
            p = torch.nan_to_num(torch.softmax(sc, dim=-1))
            out[h] = p @ v[h // group].float()
            lowp = (p.to(q.dtype) @ v[h // group]).float()
            lowp_err = max(lowp_err, (lowp - out[h]).abs().max().item())
    return lowp_err


def capped_reference(s, q, k, v):
    """Softcap's reference (no SDPA backend caps), one (batch, head) at a time: the output in float32
    math, kept in float32, and float32_reference's error of the same math in q's dtype."""
    import torch

    out = torch.empty(q.shape[:3] + (v.shape[3],), dtype=torch.float32, device=q.device)
    keep = visible_mask(s) if (s.has_window() or s.causal) else None
    return out, float32_reference(s, ((q[b], k[b], v[b], out[b], keep) for b in range(s.b)))


def packed_reference(s, q, k, v):
    """A packed batch's reference: each sequence attended alone in float32 math (float32_reference,
    the same causal, window and softcap), O [total, H, dv] in float32, and the error of the same
    math in q's dtype."""
    import torch

    out = torch.empty(q.shape[:2] + (v.shape[2],), dtype=torch.float32, device=q.device)

    def each_sequence():  # its [rows, H, D] as [H, rows, D] views
        start = 0
        for n in s.lengths():
            rows = slice(start, start + n)
            if n:
                keep = visible_mask(s, n, n) if (s.has_window() or s.causal) else None
                yield (*(t[rows].transpose(0, 1) for t in (q, k, v, out)), keep)
            start += n
    return out, float32_reference(s, each_sequence())


def sdpa_backends():
    from torch.nn.attention import SDPBackend
    return {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION,
            "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION}


def reference(s, q, k, v):
    """The reference output, its name and, for float32 math (softcap, a packed batch), the error of
    the same math in the input precision (None for SDPA's output): SDPA's flash, cuDNN, efficient,
    then math."""
    from torch.nn.attention import SDPBackend

    if s.seqlens:
        out, lowp_err = packed_reference(s, q, k, v)
        return out, "float32-math-per-sequence", lowp_err
    if s.softcap:
        out, lowp_err = capped_reference(s, q, k, v)
        return out, "float32-math", lowp_err
    errors = []
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)):
        fn, ctx = sdpa_impl(s, q, k, v, backend)
        try:
            with ctx():
                return fn(), f"sdpa-{name}", None
        except RuntimeError as e:
            errors.append(f"{name}: {first_line(e)}")
    raise RuntimeError("no SDPA backend takes the shape: " + "; ".join(errors))


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160]}" if text else type(e).__name__


def flash_attn_modules():
    """{impl: module} of the FlashAttention packages importable here (with flash_attn_func)."""
    found = {}
    for impl, name in (("flash-attn", "flash_attn"), ("flash-attn-3", "flash_attn_interface")):
        try:
            module = __import__(name, fromlist=["flash_attn_func"])
        except Exception:  # not installed, or built for another torch: not a peer here
            continue
        if hasattr(module, "flash_attn_func"):
            found[impl] = module
    return found


def flash_attn_impl(module, q, k, v, s, cu=None):
    """Its flash_attn_func on [B,N,H,D] views (strides, no copies), or with cu (a packed batch) its
    flash_attn_varlen_func on [total,H,D] as they are; GQA, the bottom-right causal mask, the window
    and softcap are its own. RuntimeError when the module has no varlen function."""
    extra = {}
    if s.has_window():
        extra["window_size"] = s.window()
    if s.softcap:
        extra["softcap"] = s.softcap
    if cu is not None:
        func = getattr(module, "flash_attn_varlen_func", None)
        if func is None:
            raise RuntimeError(f"{module.__name__} has no flash_attn_varlen_func")

        def run_packed():
            out = func(q, k, v, cu, cu, s.nq, s.nkv, causal=s.causal, **extra)
            return out[0] if isinstance(out, tuple) else out
        return run_packed
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def run():
        out = module.flash_attn_func(qt, kt, vt, causal=s.causal, **extra)
        return (out[0] if isinstance(out, tuple) else out).transpose(1, 2)
    return run


def flex_impl(s, q, k, v):
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    # One process compiles every shape: a fresh Dynamo per shape, and a recompile limit that
    # raises, never falls back to eager FlexAttention (unfused, materializing) without a word.
    torch._dynamo.reset()
    for knob, value in (("cache_size_limit", 1 << 16), ("recompile_limit", 1 << 16),
                        ("accumulated_cache_size_limit", 1 << 16), ("fail_on_recompile_limit_hit", True)):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, value)
    mask = None
    shift = s.nkv - s.nq
    left, right = s.mask_sides()
    if s.seqlens:  # a document mask over the packed rows, [1, H, total, D] views of [total, H, D]
        seq = torch.tensor(sequence_of_rows(s.lengths()), device="cuda")
        total = len(seq)
        # _compile: the mask is made tile by tile, never total x total (its gathers would not fit)
        compiled = {"_compile": True} if "_compile" in inspect.signature(create_block_mask).parameters else {}
        mask = create_block_mask(lambda b, h, i, j: document_visible(seq[i], seq[j], i, j, left, right), None, None,
                                 total, total, device="cuda", **compiled)
        q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    elif s.has_window() or s.causal:  # the same window as ours, a mask_mod (block-sparse: tiles outside skipped)
        mask = create_block_mask(lambda b, h, i, j: pair_visible(i + shift, j, left, right), None, None, s.nq, s.nkv,
                                 device="cuda")
    score_mod = None
    if s.softcap:  # FlexAttention's score is already scaled: C tanh(s / C), as ours
        cap = s.softcap

        def score_mod(score, b, h, i, j):
            return cap * torch.tanh(score / cap)
    flex = torch.compile(flex_attention, mode="max-autotune-no-cudagraphs", dynamic=False)
    gqa = s.kv != s.h
    if s.seqlens:  # O [1, H, total, dv] as [total, H, dv] (a view)
        return lambda: flex(q, k, v, score_mod=score_mod, block_mask=mask, enable_gqa=gqa)[0].transpose(0, 1)
    return lambda: flex(q, k, v, score_mod=score_mod, block_mask=mask, enable_gqa=gqa)


def ours_impl(s, q, k, v, table, cu=None):
    """Ours through the Python package: attn_tune.forward, or with cu (a packed batch)
    attn_tune.flash_attn_varlen_func with max_seqlen_q and _k NQ (the tool's N)."""
    import attn_tune

    variant = {"window_size": s.window(), "softcap": s.softcap}
    if cu is not None:
        return lambda: attn_tune.flash_attn_varlen_func(q, k, v, cu, cu, s.nq, s.nkv, causal=s.causal, table=table,
                                                        **variant)
    return lambda: attn_tune.forward(q, k, v, causal=s.causal, table=table, **variant)


def capi_impl(s, q, k, v, table, cu=None):
    import torch

    import attn_tune
    from attn_tune.tensors import cache_info, describe, make_problem, make_varlen_problem, out_layout, packed_out_layout

    qi, ki, vi = describe(q, "q"), describe(k, "k"), describe(v, "v")
    variant = (*s.window(), s.softcap)
    if cu is None:
        problem = make_problem(qi, ki, vi, s.causal, variant=variant)
        shape, stride = out_layout(tuple(q.shape), tuple(q.stride()), v.shape[3])  # O has V's head dim
        lse_shape = (s.b, s.h, s.nq)
    else:  # a packed batch: O [total, H, dv], the LSE [H, total]
        cui = cache_info(cu, "cu_seqlens")
        problem = make_varlen_problem(qi, ki, vi, cui, cui, s.nq, s.nkv, s.causal, variant=variant)
        shape, stride = packed_out_layout(tuple(q.shape), tuple(q.stride()), v.shape[2])
        lse_shape = (s.h, q.shape[0])
    o = torch.empty_strided(shape, stride, dtype=q.dtype, device=q.device)
    lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
    ctx = attn_tune.context(qi.device, table)
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        ctx.forward(qi.pointer, ki.pointer, vi.pointer, o.data_ptr(), lse.data_ptr(), problem, stream)
        return o
    return run, ctx.choose(problem)


def measure_one(fn, ctx, reference_out, tolerance, reps, sustained_s):
    """One implementation by the rule: first call (its wall time), max error, ms, sustained ms."""
    import torch

    with ctx() if ctx else contextlib.nullcontext():
        t0 = time.monotonic()
        out = fn()
        torch.cuda.synchronize()
        first = time.monotonic() - t0
        err = (out.float() - reference_out.float()).abs().max().item()
        ms, n = time_ms(fn, reps)
        sus = time_ms(fn, reps, sustained_s=sustained_s)[0] if sustained_s > 0 else math.nan
    status = "ok" if err <= tolerance else f"MISMATCH: max abs error {err:.3g} over the tolerance {tolerance:g}"
    if math.isnan(err):
        status = "MISMATCH: NaN in the output"
    return {"ms": ms, "reps": n, "sustained_ms": sus, "max_err": err, "status": status, "first_call_s": first}


def run_shape(s, args, table, flash_modules, seed):
    """{impl: result} for one shape and the shape's context (reference, tool's time)."""
    import torch
    import torch.nn.functional  # noqa: F401

    q, k, v, *cu = make_inputs(s, seed)  # cu: [cu_seqlens] of a packed batch
    ref, ref_name, lowp_err = reference(s, q, k, v)
    tolerance = args.tolerance if args.tolerance is not None else TOLERANCE[s.dtype]
    if lowp_err is not None:  # against float32 math: FlashAttention's rule, 2x the low-precision math's error
        tolerance = max(tolerance, 2 * lowp_err + 1e-3)
    impls = {OURS: (ours_impl(s, q, k, v, table, *cu), None)}
    capi, choice = capi_impl(s, q, k, v, table, *cu)
    impls[OURS_CAPI] = (capi, None)
    results = {}
    for name, backend in sdpa_backends().items():
        try:
            impls[name] = sdpa_impl(s, q, k, v, backend)
        except RuntimeError as e:  # SDPA has no softcap, no packed batch: said in the table, the others still run
            results[name] = {"status": f"not run: {first_line(e)}"}
    for name, module in flash_modules.items():
        try:
            impls[name] = (flash_attn_impl(module, q, k, v, s, *cu), None)
        except RuntimeError as e:  # no varlen function
            results[name] = {"status": f"not run: {first_line(e)}"}
    if not args.no_flex:
        try:
            impls["flex"] = (flex_impl(s, q, k, v), None)
        except Exception as e:  # noqa: BLE001 (a peer that cannot be set up is said, not fatal)
            results["flex"] = {"status": f"not run: {first_line(e)}"}
    if args.with_triton and not (s.has_window() or s.softcap or s.seqlens):
        import attention_triton
        impls["triton"] = (lambda: attention_triton.attention(q, k, v, s.causal), None)
    config = f"{choice['family']} {choice['config']}"
    if choice["source"] != "tuned":
        config += f" ({choice['source']})"
    for name, (fn, ctx) in impls.items():
        try:
            results[name] = measure_one(fn, ctx, ref, tolerance, args.reps, args.sustained)
        except Exception as e:  # noqa: BLE001 (a peer that does not take the shape: said, not fatal)
            results[name] = {"status": f"{'FAILED' if name in NOT_PEERS else 'not run'}: {first_line(e)}"}
        if name in NOT_PEERS:
            results[name]["config"] = config
        if name == "triton" and "ms" in results[name]:
            import attention_triton
            results[name]["config"] = attention_triton.chosen_config()
        print(f"  {name:15s} {fmt(results[name].get('ms'))} ms  {results[name]['status']}", flush=True)
    if choice["source"] != "tuned":
        results[OURS]["status"] += f"; the table has no entry for this shape: the library ran its {choice['source']}"
    del q, k, v, cu, ref
    torch.cuda.empty_cache()
    return results, ref_name


def environment(args, copy, matmul):
    import torch

    import attn_tune

    versions = [f"torch {torch.__version__}", f"CUDA {torch.version.cuda}",
                f"cuDNN {torch.backends.cudnn.version()}"]
    try:
        import triton
        versions.append(f"Triton {triton.__version__}")
    except ImportError:
        pass
    versions.append(f"libattn_tune {attn_tune.library_version()}")
    if not args.table:
        versions.append(subprocess.run([args.tool, "--version"], capture_output=True, text=True).stdout.strip())
    return {"gpu": torch.cuda.get_device_name(), "date": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC"), "commit": git_commit(), "torch": torch.__version__,
            "versions": ", ".join(versions), "copy_gbs": f"{copy:.0f}", "matmul_tflops": f"{matmul:.1f}",
            "rule": "triton.testing.do_bench's rule written out (a first call; warm-up 25 ms; "
                    + (f"{args.reps} reps" if args.reps else "reps for 200 ms, at least 20")
                    + (", each after a 256 MiB zeroing (L2 cleared)" if FLUSH == "zero" else
                       ", each after a 256 MiB read (L2 cleared, left clean: --flush read)")
                    + ", CUDA events; the median)"
                    + (f"; sustained: again after {args.sustained:g} s back to back" if args.sustained else ""),
            "table": args.table or "a fresh attn-tune --no-db results CSV per shape"
                     + (f" (tool options: {' '.join(args.tool_args)})" if args.tool_args else "")}


# --- the command ----------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="build-gpu/attn-tune",
                    help="the attn-tune binary that tunes each shape (default build-gpu/attn-tune, as "
                         "scripts/device_build.sh builds it)")
    ap.add_argument("--tool-args", default="",
                    help="more attn-tune options for each tuning, after an '=': --tool-args='--min-time-ms 40'")
    ap.add_argument("--table", default="", help="a table made before (results CSV, export JSON/CSV) instead of "
                                                "tuning: every shape runs what it says (a shape it lacks is flagged)")
    ap.add_argument("--sweep", default="",
                    help="a sweep file (default sweeps/yardstick.csv when --shapes is not given)")
    ap.add_argument("--rows", default="", help="with --sweep: these rows only (from 0, ranges, names): 0,3-5,d64-1k")
    ap.add_argument("--shapes", default="", help="B,H[/KV],NQ,NKV,D[c][,fp16][,bshd][,wL:R][,capC][,dvN]"
                                                 "[,seqlens:L1/L2/...|seqlens:uniform:LO:HI] separated by ';'")
    ap.add_argument("--out", default="", help="a new or empty folder for peers.csv and peers.md (required)")
    ap.add_argument("--reps", type=int, default=0,
                    help="timed calls per measurement (default 0: as many as fit in 200 ms, at least 20)")
    ap.add_argument("--flush", choices=["zero", "read"], default="zero",
                    help="how the L2 is cleared before each timed call: zero 256 MiB (do_bench's rule, the "
                         "default; the zeroing's dirty lines are written back during the call), or read them "
                         "(the L2 left clean); the same for every kernel timed, the copy included")
    ap.add_argument("--sustained", type=float, default=0.0, metavar="SECONDS",
                    help="also time each one right after running it back to back this long (default 0: off)")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="max abs error against SDPA above which a row says MISMATCH (default 1e-2 bf16, 2e-3 fp16)")
    ap.add_argument("--no-flex", action="store_true",
                    help="leave FlexAttention out (its compile takes seconds to a minute a shape)")
    ap.add_argument("--with-triton", action="store_true",
                    help="the autotuned Triton kernel too (bench/attention_triton.py; its autotune takes ~30 s a shape)")
    ap.add_argument("--seed", type=int, default=0, help="the inputs' seed (default 0; each shape adds its index)")
    args = ap.parse_args(argv)
    if not args.out:
        raise BadInput("--out DIR is required: a new or empty folder for peers.csv and peers.md")
    if args.reps < 0:
        raise BadInput(f"--reps {args.reps}: expected 0 (as many as fit in 200 ms) or a positive count")
    if not (args.sustained >= 0 and math.isfinite(args.sustained)):
        raise BadInput(f"--sustained {args.sustained}: expected seconds, 0 or more")
    if args.tolerance is not None and not args.tolerance > 0:
        raise BadInput(f"--tolerance {args.tolerance}: expected a positive number")
    if args.shapes and (args.sweep or args.rows):
        raise BadInput(f"--shapes '{args.shapes}' and --sweep/--rows exclude each other: give one")
    if args.shapes:
        args.shape_list = parse_shapes(args.shapes)
    else:
        sweep = args.sweep or os.path.join(ROOT, "sweeps", "yardstick.csv")
        shapes = read_sweep(sweep)
        args.shape_list = select_rows(shapes, args.rows, sweep) if args.rows else shapes
        refused = [x.refusal for x in args.shape_list if x.refusal]
        if refused:
            raise BadInput(refused[0] + (f" (and {len(refused) - 1} more rows)" if len(refused) > 1 else "")
                           + "; --rows picks the others")
    args.tool_args = args.tool_args.split()
    if args.table:
        if not os.path.isfile(args.table):
            raise BadInput(f"--table '{args.table}': no such file")
        args.table = os.path.abspath(args.table)
    elif not (os.path.isfile(args.tool) and os.access(args.tool, os.X_OK)):
        raise BadInput(f"--tool '{args.tool}': no such program (build it: bash scripts/device_build.sh build-gpu), "
                       "or give --table")
    return args


def on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")  # `timeout` stops us: write what was measured


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["--summary"]:
            if not argv[1:]:
                raise BadInput("--summary DIR_OR_CSV...: name the runs' folders or their peers.csv")
            print(summary(argv[1:]))
            return 0
        args = parse_args(argv)
        global FLUSH
        FLUSH = args.flush
        out = new_output_dir(args.out)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="peers-triton-"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="peers-inductor-"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # attention_triton
    try:
        import torch

        import attn_tune  # noqa: F401
    except ImportError as e:
        print(f"{PROG}: {e}: run it where PyTorch is installed, with PYTHONPATH=python (bench/device/peers.sh "
              "sets it)", file=sys.stderr)
        return 2

    if not torch.cuda.is_available():
        print(f"{PROG}: no CUDA device here (torch {torch.__version__}); run it on the GPU machine", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, on_sigterm)
    copy, matmul = ceilings(args.reps)
    env = environment(args, copy, matmul)
    print(f"{heading(env)}; {env['versions']}; copy {env['copy_gbs']} GB/s, bf16 matmul {env['matmul_tflops']} "
          f"TFLOPS", flush=True)
    flash_modules = flash_attn_modules()
    work = tempfile.mkdtemp(prefix="attn-tune-peers-")
    sink = CsvOut(os.path.join(out, "peers.csv"), env)
    rows, references, status = [], set(), 0
    try:
        for i, s in enumerate(args.shape_list):
            print(f"{s.label()} {s.name}", flush=True)
            context = {}
            try:
                if args.table:
                    table = args.table
                else:
                    table = os.path.join(work, f"shape{i}.csv")
                    config, context["tool_ms"], context["tune_s"] = tune(args.tool, args.tool_args, s, table,
                                                                         os.path.join(work, f"shape{i}.log"))
                    print(f"  tuned: {config} {context['tool_ms']:.4f} ms (the tool's own median) in "
                          f"{context['tune_s']:.1f} s", flush=True)
                results, context["reference"] = run_shape(s, args, table, flash_modules, args.seed + i)
                if not args.table and results[OURS]["config"] != config:  # the library read the CSV otherwise
                    results[OURS]["status"] += (f"; the library ran {results[OURS]['config']}, the tool's rank 1 "
                                                f"is {config}")
                references.add(context["reference"])
            except Exception as e:  # noqa: BLE001 (this shape failed: said in its row, the next ones still run)
                traceback.print_exc()
                results = {OURS: {"status": f"FAILED: {first_line(e)}"}}
                torch.cuda.empty_cache()
            new = shape_rows(s, results, copy, context)
            sink.write(new)
            rows += new
            if any(r["status"].startswith(("MISMATCH", "FAILED")) for r in new if r["impl"] in NOT_PEERS):
                status = 1
    except KeyboardInterrupt as e:
        print(f"{PROG}: stopped ({str(e) or 'interrupted'}) after {len(set(r['shape'] for r in rows))} shapes; "
              "writing what was measured", file=sys.stderr)
        status = 3
    finally:
        sink.close()
        env["reference"] = ", ".join(sorted(references)) or "none"
        text = markdown(rows, env)
        with open(os.path.join(out, "peers.md"), "x") as f:
            f.write(text)
        print("\n" + text, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
