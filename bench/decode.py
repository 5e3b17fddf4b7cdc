#!/usr/bin/env python3
"""Decode beside the peers: bench/peers.py on decode shapes (small N_q), kept for its old command line.

    python3 bench/decode.py --tool build-gpu/attn-tune [--shapes B,H,HKV,NQ,NKV,D[,causal];...]
                            [--sweep sweeps/llm-decode.csv [--rows 0-5]] [--out DIR] [--no-flex]

is `python3 bench/peers.py` with the same options (peers.py reads this --shapes form too), the
issue's four decode shapes when neither --shapes nor --sweep is given, and a new temporary DIR when
--out is not. It writes DIR/peers.csv and DIR/peers.md (before, DIR/decode.csv and decode.md);
every other option of peers.py passes through (--sustained, --with-triton, --table, ...):
`python3 bench/peers.py --help` says what is measured and how.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

# The two rows, then Llama-3-8B/70B-like decode rows.
SHAPES = "8,32/8,1,8192,128;64,32/8,16,4096,128c;1,32/8,1,32768,128;32,64/8,1,4096,128"


def peers_argv(argv):
    """peers.py's arguments for decode.py's."""
    given = {a.split("=", 1)[0] for a in argv}
    out = list(argv)
    if not given & {"--shapes", "--sweep"}:
        out = ["--shapes", SHAPES] + out
    if "--out" not in given:
        out += ["--out", tempfile.mkdtemp(prefix="attn-tune-decode-")]
    return out


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    sys.exit(peers.main(peers_argv(sys.argv[1:])))
