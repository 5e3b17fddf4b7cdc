"""CUDA-event timing shared by the examples: warm-up calls, then the median of `reps` calls, each
between two events on the current stream; `before` runs ahead of each start event (not timed)."""
import torch


def median_ms(fn, reps=20, warmup=3, before=None):
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]
