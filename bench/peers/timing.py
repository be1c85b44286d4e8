"""CUDA-event timing shared by the peer scripts and probes of this folder (run them by path,
`python3 bench/peers/<script>.py`, so this folder is on `sys.path`)."""
import cupy as cp


def median_ms(fn, runs):
    """The median of `runs` timings of `fn()` in milliseconds (CUDA events on the current
    stream), after one warm-up call; the upper median for an even count."""
    fn()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(runs):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2]
