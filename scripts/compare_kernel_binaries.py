#!/usr/bin/env python3
"""Compare the machine code two kernels/ trees compile to, without a GPU.

For each case (family, arch, shape, causal, config) attn-tune --compile-only compiles the variant
once against each tree (--kernels-dir, a fresh cache directory each, so the one cache entry there
is that variant's binary), and the ELF's code sections (.text.*) are compared byte for byte, with
the registers and spills of the compile report. A restructuring of the kernels that claims no
change in speed should come out identical; where it does not, the report names the sections.

  scripts/compare_kernel_binaries.py --tool build/attn-tune --before /tmp/kernels-old --after kernels
  scripts/compare_kernel_binaries.py ... --cases my_cases.txt   # lines: family arch shape causal config

Exit status 0 when every case is identical, 1 when some differ, 2 on errors.
"""
import argparse
import concurrent.futures
import csv
import os
import struct
import subprocess
import sys
import tempfile

# family, arch, shape (B,H,N,D as --shape takes it, maybe followed by --kv-len K), causal, config
DEFAULT_CASES = []
# hopper: configs that the family's limits keep at each head dim, over its schedule bits (1
# overlap, 2 ping-pong, 4 persistent, 8 two Q tiles, 16 half-width last tile); N = 1030 leaves a
# short last K/V tile, so bit 16 acts without a causal mask too.
HOPPER_CONFIGS = {
    64: ("m128_n128_w12_s2_k3", "m192_n128_w16_s2_k5", "m192_n192_w16_s2_k6", "m128_n128_w12_s3_k13",
         "m128_n128_w12_s2_k22", "m128_n128_w12_s2_k23", "m128_n128_w12_s2_k31", "m128_n128_w12_s2_k16"),
    128: ("m128_n128_w12_s2_k3", "m128_n128_w12_s2_k7", "m192_n80_w16_s2_k5", "m128_n128_w12_s2_k13",
          "m128_n128_w12_s2_k22", "m128_n128_w12_s2_k23", "m128_n128_w12_s2_k31", "m128_n128_w12_s2_k16"),
    256: ("m128_n64_w12_s2_k3", "m128_n64_w12_s2_k13", "m128_n64_w12_s2_k22", "m128_n64_w12_s2_k23",
          "m128_n64_w12_s2_k31", "m128_n64_w12_s2_k2"),
}
for d, configs in HOPPER_CONFIGS.items():
    for causal in (0, 1):
        for cfg in configs:
            DEFAULT_CASES.append(("hopper", "sm_90a", f"2,4,1030,{d}", causal, cfg))
        DEFAULT_CASES.append(("hopper", "sm_90a", f"2,4,1024,{d}", causal, configs[0]))
for d in (64, 128):
    for causal in (0, 1):
        for cfg in ("m128_n64_w4_s2", "m64_n64_w4_s1", "m128_n128_w8_s3"):
            DEFAULT_CASES.append(("fa2", "sm_80", f"2,4,1024,{d}", causal, cfg))
        for cfg in ("m128_n64_w8_s2", "m192_n80_w16_s4", "m128_n128_w12_s3", "m64_n64_w4_s1"):
            DEFAULT_CASES.append(("wgmma", "sm_90a", f"2,4,1024,{d}", causal, cfg))
        for cfg in ("m64_n32_w4_s1", "m64_n32_w2_s1_k2", "m32_n64_w2_s1", "m32_n32_w2_s2"):
            DEFAULT_CASES.append(("mfma", "gfx90a", f"2,4,1024,{d}", causal, cfg))
# Ragged shapes: a short last K/V tile, cross-attention, fp16.
DEFAULT_CASES += [
    ("hopper", "sm_90a", "1,2,777,128", 1, "m128_n128_w12_s2_k23"),
    ("hopper", "sm_90a", "1,2,300,128 --kv-len 1000", 1, "m128_n128_w12_s2_k7"),
    ("hopper", "sm_90a", "1,2,777,64", 0, "m128_n128_w12_s2_k22"),
    ("hopper", "sm_90a", "2,4,1030,96", 1, "m128_n128_w12_s2_k23"),
    ("hopper", "sm_90a", "2,4,1030,128 --dtype fp16", 0, "m128_n128_w12_s2_k13"),
    ("fa2", "sm_80", "1,2,777,96", 1, "m128_n64_w4_s2"),
    ("wgmma", "sm_90a", "1,2,300,96 --kv-len 1000", 1, "m128_n64_w8_s2"),
]


def elf_sections(data):
    """{name: bytes} of a 64-bit little-endian ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = []
    for i in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        headers.append((name, offset, size, _type))
    str_off, str_size = headers[shstrndx][1], headers[shstrndx][2]
    names = data[str_off:str_off + str_size]
    out = {}
    for name, offset, size, typ in headers:
        n = names[name:names.index(b"\0", name)].decode()
        out[n] = b"" if typ == 8 else data[offset:offset + size]  # SHT_NOBITS has no bytes
    return out


def entry_binary(path):
    """The binary of one compile-cache entry (codegen/cache_entry.hpp: header line, binary, log)."""
    raw = open(path, "rb").read()
    eol = raw.index(b"\n")
    fields = raw[:eol].split()
    return raw[eol + 1:eol + 1 + int(fields[-3])]  # "attn-tune cache entry 1 BIN LOG DIGEST"


def compile_case(tool, kernels, case, work):
    family, arch, shp, causal, config = case
    cache = tempfile.mkdtemp(dir=work)
    out = os.path.join(cache, "out.csv")
    shp, *extra = shp.split()  # e.g. "1,2,300,128 --kv-len 1000"
    cmd = [tool, "--compile-only", "--arch", arch, "--family", family, "--shape", shp, *extra, "--configs", config,
           "--cache-dir", cache, "--kernels-dir", kernels, "--no-db", "--out", out, "--force", "-q", "-j", "1"]
    if causal:
        cmd.append("--causal")
    run = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.DictReader(l for l in open(out) if not l.startswith("#"))] if os.path.exists(out) else []
    entries = [f for f in os.listdir(cache) if f.endswith(".entry")]
    if run.returncode != 0 or len(rows) != 1 or rows[0]["status"] != "compiled" or len(entries) != 1:
        msg = rows[0]["message"] if rows else run.stderr.strip()[-300:]
        return None, f"not compiled: {msg}"
    binary = entry_binary(os.path.join(cache, entries[0]))
    return (elf_sections(binary), rows[0]["registers"], rows[0]["spill_bytes"]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True, help="attn-tune")
    ap.add_argument("--before", required=True, help="kernels/ directory: the reference")
    ap.add_argument("--after", required=True, help="kernels/ directory: the change")
    ap.add_argument("--cases", help="file of cases, one a line: family arch shape causal(0/1) config")
    ap.add_argument("--family", action="append", help="only these families")
    ap.add_argument("-j", type=int, default=2, help="compiles at once")
    a = ap.parse_args()
    cases = DEFAULT_CASES
    if a.cases:
        cases = [(f, ar, " ".join(s), int(c), cfg) for f, ar, *s, c, cfg in
                 (l.split() for l in open(a.cases) if l.strip() and not l.startswith("#"))]
    if a.family:
        cases = [c for c in cases if c[0] in a.family]
    work = tempfile.mkdtemp(prefix="compare-kernels-")
    differ = errors = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        jobs = [(c, pool.submit(compile_case, a.tool, a.before, c, work), pool.submit(compile_case, a.tool, a.after, c, work))
                for c in cases]
        for case, fb, fa in jobs:
            (b, eb), (af, ea) = fb.result(), fa.result()
            label = f"{case[0]:6} {case[1]:6} {case[2]:16} {'causal' if case[3] else 'full  '} {case[4]:22}"
            if eb or ea:
                if eb and ea and eb == ea:  # refused by both trees alike (e.g. not expressible)
                    print(f"{label} skipped: {eb}")
                    continue
                errors += 1
                print(f"{label} ERROR before: {eb or 'ok'}; after: {ea or 'ok'}")
                continue
            (sb, rb, pb), (sa, ra, pa) = b, af
            texts = sorted(n for n in set(sb) | set(sa) if n.startswith(".text"))
            changed = [n for n in texts if sb.get(n) != sa.get(n)]
            regs = f"registers {rb}" + (f" -> {ra}" if ra != rb else "") + f", spills {pb}" + (f" -> {pa}" if pa != pb else "")
            if not changed and rb == ra and pb == pa:
                print(f"{label} identical ({regs})")
            else:
                differ += 1
                sizes = ", ".join(f"{n} {len(sb.get(n, b''))} -> {len(sa.get(n, b''))} bytes" for n in changed)
                print(f"{label} DIFFERS: {sizes or 'code identical'}; {regs}")
    print(f"{len(cases)} cases: {len(cases) - differ - errors} identical or skipped, {differ} differ, {errors} errors")
    return 2 if errors else 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
