import numpy as np
import pytest

import lockstep
from lockstep.histogram import histogram


def test_counts_equal_numpy_histogram():
    rng = np.random.default_rng(4)
    x = rng.normal(size=1_000_003)
    for k in (1, 7, 100, 4096):
        counts, edges = histogram(x, k, (-3.0, 3.0), device="cpu")
        want, want_edges = np.histogram(x, k, (-3.0, 3.0))
        assert counts.dtype == np.uint64
        assert np.array_equal(counts, want)
        assert np.array_equal(edges, want_edges)


def test_dropped_values_are_reported():
    x = np.array([0.05, 0.5, 0.95, 1.0, -1.0, np.nan, np.inf, -np.inf, 0.0])
    h = histogram(x, 10, (0.0, 1.0))
    assert (h.nan, h.below, h.above) == (1, 2, 2)
    assert h.counts[0] == 2 and h.counts.sum() == 4


def test_threads_and_one_thread_agree_and_chunks_do_not_matter():
    x = np.random.default_rng(5).uniform(-1, 2, size=(1 << 22) + 12345)
    a = histogram(x, 333, (0.0, 1.0), device="cpu")
    b = histogram(x, 333, (0.0, 1.0), device="cpu-seq")
    assert np.array_equal(a.counts, b.counts) and (a.nan, a.below, a.above) == (b.nan, b.below, b.above)


def test_fixed_point_weighted_sums():
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 1, size=100_000)
    w = rng.uniform(0, 1, size=100_000)
    h = histogram(x, 10, (0.0, 1.0), weights=w, counters="fixed", frac_bits=32)
    want, _ = np.histogram(x, 10, (0.0, 1.0), weights=w)
    assert h.counts.dtype == np.float64
    assert np.allclose(h.counts, want, rtol=1e-9)
    # Weights quantised to 2^-32: the sums of the rounded weights, exactly.
    q = np.round(w * 2.0**32)
    exact = [int(q[(x >= lo) & (x < lo + 0.1)].sum()) for lo in np.linspace(0, 0.9, 10)]
    assert abs(h.counts[3] * 2.0**32 - exact[3]) <= 2**20  # only edge-of-bin rounding differs
    seq = histogram(x, 10, (0.0, 1.0), weights=w, counters="fixed", device="cpu-seq")
    assert np.array_equal(h.counts.view(np.uint64), seq.counts.view(np.uint64))


def test_gpu_equals_cpu(gpu):
    x = np.random.default_rng(7).normal(size=3_000_001)
    x[::1000] = np.nan
    for method in ("auto", "plain", "match", "private", "wide"):
        a = histogram(x, 1000, (-2.0, 2.0), device="cpu")
        b = histogram(x, 1000, (-2.0, 2.0), method=method, device="gpu")
        assert np.array_equal(a.counts, b.counts) and (a.nan, a.below, a.above) == (b.nan, b.below, b.above)
    for method in ("auto", "wide", "partition"):  # past the private counters
        a = histogram(x, 100_000, (-2.0, 2.0), device="cpu")
        b = histogram(x, 100_000, (-2.0, 2.0), method=method, device="gpu")
        assert np.array_equal(a.counts, b.counts) and (a.nan, a.below, a.above) == (b.nan, b.below, b.above)
    w = np.random.default_rng(8).uniform(-1, 1, size=x.shape[0])
    a = histogram(x, 100, (-2.0, 2.0), weights=w, counters="fixed", device="cpu")
    b = histogram(x, 100, (-2.0, 2.0), weights=w, counters="fixed", device="gpu")
    assert np.array_equal(a.counts.view(np.uint64), b.counts.view(np.uint64))
