"""Bound for multi-GPU runs that bring their output to the host: device-to-host copy bandwidth
of k GPUs at once, each copying BYTES from device memory into one reused page-locked buffer of
CHUNK bytes (as `lockstep bridge` over ranks does), all starting together.

Usage: python3 bench/peers/d2h_bandwidth.py [BYTES per GPU, default 4.4e9] [CHUNK, default 512 MiB]
Prints, for each GPU set, the slowest GPU's seconds and the aggregate GB/s; the bound of a
weak-scaling efficiency t1/tk for a run dominated by the copy is the ratio of those seconds.
"""
import multiprocessing as mp
import sys
import time

BYTES = int(float(sys.argv[1])) if len(sys.argv) > 1 else 4_429_185_024
CHUNK = int(sys.argv[2]) if len(sys.argv) > 2 else 512 << 20


def worker(dev, barrier, out):
    import cupy as cp
    import cupyx

    cp.cuda.Device(dev).use()
    src = cp.ones(BYTES // 4, dtype=cp.float32)
    host = cupyx.empty_pinned(CHUNK // 4, dtype=cp.float32)
    n = CHUNK // 4
    for _ in range(2):  # warm-up
        src[:n].get(out=host[:n])
    cp.cuda.runtime.deviceSynchronize()
    barrier.wait()
    t = time.perf_counter()
    for off in range(0, src.size, n):
        m = min(n, src.size - off)
        src[off:off + m].get(out=host[:m])
    cp.cuda.runtime.deviceSynchronize()
    out.put((dev, time.perf_counter() - t))


def run(devs):
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(len(devs)), ctx.Queue()
    ps = [ctx.Process(target=worker, args=(d, barrier, out)) for d in devs]
    for p in ps:
        p.start()
    res = [out.get() for _ in devs]
    for p in ps:
        p.join()
    slow = max(s for _, s in res)
    return slow, len(devs) * BYTES / slow / 1e9


if __name__ == "__main__":
    import cupy as cp

    count = cp.cuda.runtime.getDeviceCount()
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    sets = [[0], [0, 1], [0, 2], [0, 3], list(range(min(count, 4)))]
    print(f"# device-to-host copy, {BYTES / 1e9:.2f} GB per GPU in {CHUNK >> 20} MiB pinned chunks, {name}")
    t1 = None
    for devs in sets:
        if max(devs) >= count:
            continue
        slow, agg = run(devs)
        t1 = t1 or slow
        print(f"GPUs {devs}: slowest {slow:.4f} s, aggregate {agg:.1f} GB/s, t1/tk {t1 / slow:.3f}")
