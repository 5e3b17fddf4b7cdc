"""kernels/common/wgmma_ops.cuh is scripts/gen_wgmma.py's output, committed: this test runs the
generator into a temporary file and fails, saying how to regenerate, when the two differ (the
script changed and its output was not written again, or the header was edited by hand)."""
import difflib
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join("scripts", "gen_wgmma.py")
OUTPUT = os.path.join("kernels", "common", "wgmma_ops.cuh")


class gen_wgmma(unittest.TestCase):
    def test_the_committed_header_is_the_generators_output(self):
        with tempfile.TemporaryDirectory(prefix="gen-wgmma-") as tmp:
            fresh = os.path.join(tmp, "wgmma_ops.cuh")
            with open(fresh, "w") as f:
                subprocess.run([sys.executable, os.path.join(ROOT, GENERATOR)], stdout=f, check=True, timeout=60)
            with open(fresh) as f:
                generated = f.read()
        with open(os.path.join(ROOT, OUTPUT)) as f:
            committed = f.read()
        if generated != committed:
            diff = "".join(list(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                                     OUTPUT + " (committed)", GENERATOR + " (now)"))[:40])
            self.fail(f"{OUTPUT} is not {GENERATOR}'s output; regenerate it from the repository root with\n"
                      f"    python3 {GENERATOR} > {OUTPUT}\nand commit it. The first lines that differ:\n{diff}")


if __name__ == "__main__":
    unittest.main()
