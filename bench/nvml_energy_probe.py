#!/usr/bin/env python3
"""How NVML's total energy counter moves on this GPU: while a bf16 matmul runs back to back for
SECONDS, read nvmlDeviceGetTotalEnergyConsumption as fast as the host can, and print each step (its
time, its size and the power it implies) and the power between steps 0.1, 0.25, 0.5 and 1 s apart,
against the counter's difference over windows that do not start and end at a step. Needs
libnvidia-ml.so.1 and PyTorch with a CUDA device.      usage: bench/nvml_energy_probe.py [SECONDS]"""
import ctypes
import statistics
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
mj = ctypes.c_ulonglong()
limit = ctypes.c_uint()


def counter():
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj)) == 0
    return mj.value


nvml.nvmlDeviceGetEnforcedPowerLimit(dev, ctypes.byref(limit))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(20):
    a @ a
torch.cuda.synchronize()
reads = []  # (seconds, mJ)
t0 = time.perf_counter()
previous = None
while time.perf_counter() - t0 < seconds:
    for _ in range(4):
        a @ a  # about 1.4 ms each on an H200
    done = torch.cuda.Event()
    done.record()
    if previous is not None:  # one batch stays queued while the host reads the counter
        while not previous.query():
            reads.append((time.perf_counter() - t0, counter()))
    previous = done
torch.cuda.synchronize()
steps = [(t, e) for (t, e), (_, prev) in zip(reads[1:], reads) if e != prev]
print(f"power limit {limit.value / 1000:.0f} W; {len(reads)} reads in {seconds:.1f} s; {len(steps)} steps")
gaps = [b[0] - a[0] for a, b in zip(steps, steps[1:])]
if gaps:
    print(f"time between steps: median {1000 * statistics.median(gaps):.1f} ms, min {1000 * min(gaps):.1f}, "
          f"max {1000 * max(gaps):.1f}")
    sizes = [b[1] - a[1] for a, b in zip(steps, steps[1:])]
    print(f"step sizes: median {statistics.median(sizes)} mJ, min {min(sizes)}, max {max(sizes)}")
for w in (0.1, 0.25, 0.5, 1.0):
    aligned, any_window = [], []
    for i, (t, e) in enumerate(steps):
        later = [s for s in steps[i + 1:] if s[0] - t >= w]
        if later and t > 0.2:
            aligned.append((later[0][1] - e) / (later[0][0] - t) / 1000)
    for i, (t, e) in enumerate(reads):
        later = [r for r in reads[i + 1:] if r[0] - t >= w]
        if later and t > 0.2 and i % 7 == 0:
            any_window.append((later[0][1] - e) / (later[0][0] - t) / 1000)
    if aligned and any_window:
        print(f"window {w:.2f} s: between steps {min(aligned):.0f}-{max(aligned):.0f} W (median "
              f"{statistics.median(aligned):.0f}); any start {min(any_window):.0f}-{max(any_window):.0f} W")
