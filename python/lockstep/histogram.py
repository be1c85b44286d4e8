"""Histograms by warp-aggregated atomics: ``k`` equal bins over ``[lo, hi)``, counts exact
and the same on every device. NaN and values outside ``[lo, hi)`` are dropped and reported.

Example::

    import numpy as np, lockstep
    x = np.random.default_rng(1).normal(size=10_000_000)
    h = lockstep.histogram.histogram(x, 100, (-4.0, 4.0))
    counts, edges = h                          # as numpy.histogram returns them
    (h.nan, h.below, h.above)                  # what was dropped
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from . import _check, _native

__all__ = ["Histogram", "histogram"]

_METHODS = ("auto", "plain", "shared", "shfl", "match", "block", "count", "private", "wide", "partition")


class Histogram(tuple):
    """``(counts, edges)`` — unpacks like ``numpy.histogram``'s result — with the dropped
    values as attributes ``nan``, ``below`` (< lo, −∞ included) and ``above`` (≥ hi, +∞
    included)."""

    nan: int
    below: int
    above: int

    def __new__(cls, counts: np.ndarray, edges: np.ndarray, nan: int, below: int, above: int) -> "Histogram":
        self = super().__new__(cls, (counts, edges))
        self.nan, self.below, self.above = int(nan), int(below), int(above)
        return self

    @property
    def counts(self) -> np.ndarray:
        """Counts per bin (uint64), or the fixed-point sums (float64) with ``counters="fixed"``."""
        return self[0]

    @property
    def edges(self) -> np.ndarray:
        """``k + 1`` bin edges, ``numpy.linspace(lo, hi, k + 1)``."""
        return self[1]

    def __repr__(self) -> str:
        return f"Histogram(k={len(self[0])}, nan={self.nan}, below={self.below}, above={self.above})"


def histogram(
    values: np.ndarray,
    bins: int,
    range: Tuple[float, float],
    weights: Optional[np.ndarray] = None,
    counters: str = "u64",
    method: str = "auto",
    frac_bits: Optional[int] = None,
    device: str = "auto",
) -> Histogram:
    """Histogram of ``values`` in ``bins`` equal bins over ``[range[0], range[1])``.

    Parameters
    ----------
    values : ndarray of float64, 1-D, C-contiguous
        Read in place (never copied; a float32 or strided array is refused: convert it).
    bins : int
        Number of bins k (1 .. 2^31).
    range : (lo, hi)
        Finite, lo < hi. Unlike ``numpy.histogram`` the last bin is half-open: ``hi`` itself
        is dropped as ``above``.
    weights : ndarray of float64, optional
        One finite weight per value (``counters="fixed"`` only).
    counters : "u64" | "fixed"
        Exact ``uint64`` counts, or float64 sums of ``round(w·2^f)`` accumulated in ``int64``
        (``f = frac_bits``, default 32; refused when the sums could wrap) — bit-identical on
        every device.
    method : "auto" | "plain" | "shared" | "shfl" | "match" | "block" | "count" | "private" | "wide" | "partition"
        The GPU's method for ``u64`` counts (auto: the launcher's pick for ``k`` and the GPU —
        ``private``, then ``wide`` up to 65,536 bins, then ``partition`` up to 2^25, then
        ``plain``); every method gives the same counts. Ignored on the CPU.
    device : "auto" | "cpu" | "cpu-seq" | "gpu"

    Returns :class:`Histogram`: ``counts, edges = histogram(...)``, plus ``.nan``, ``.below``,
    ``.above``. Ctrl-C: the CPU stops between chunks of 2^22 values; the GPU finishes its pass.
    """
    x = _check.array("values", values, (np.float64,), ndim=1, shape=(None,))
    k = _check.count("bins", bins, 1, 2**31)
    if not isinstance(range, (tuple, list)) or len(range) != 2:
        raise TypeError("range: expected a (lo, hi) pair")
    lo = _check.real("range[0]", range[0])
    hi = _check.real("range[1]", range[1])
    if not lo < hi:
        raise ValueError(f"range: lo = {lo} is not below hi = {hi}")
    _check.choice("counters", counters, ("u64", "fixed"))
    _check.choice("method", method, _METHODS)
    _check.device(device)
    w = None
    if weights is not None:
        if counters != "fixed":
            raise ValueError("weights: only with counters='fixed' (u64 counters count values)")
        w = _check.array("weights", weights, (np.float64,), ndim=1, shape=(x.shape[0],))
    if counters == "u64":
        counts, nan, below, above = _native.histogram_counts(x, lo, hi, k, method, device)
    else:
        if frac_bits is not None:
            frac_bits = _check.count("frac_bits", frac_bits, 0, 52)
        counts, nan, below, above = _native.histogram_fixed(x, w, lo, hi, k, frac_bits, device)
    return Histogram(counts, np.linspace(lo, hi, k + 1), nan, below, above)
