"""Brownian bridge (NAG's algorithm): a reusable :class:`Plan`, then paths or scaled
increments from Philox, Sobol or your own normals, the same bits on CPU and GPU.

Example::

    import numpy as np, lockstep
    plan = lockstep.bridge.Plan.uniform(64, t_end=1.0, cov=[[1.0, 0.5], [0.5, 2.0]])
    x = plan.generate(100_000, source="philox", seed=7, precision="f64")
    x.shape                                   # (64, 2, 100000): t1..T, dims, paths
    np.cov(x[-1])                             # ~ Σ·T
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from . import _check, _native

__all__ = ["Plan", "generate"]

_PRECISIONS = {"f32": np.float32, "f64": np.float64}


def _matrix(name: str, value, d: Optional[int]) -> list:
    m = np.asarray(value, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name}: shape {m.shape}, expected a square (d, d) matrix")
    if d is not None and m.shape[0] != d:
        raise ValueError(f"{name}: {m.shape[0]}×{m.shape[0]}, but start has d = {d}")
    return m.ravel().tolist()


class Plan:
    """A validated bridge problem and its construction strategy, reusable for any number of
    generations (Rust ``lockstep::bridge::Plan``).

    Parameters
    ----------
    times : sequence of float
        The interior times t1 < … < tN (N ≥ 1), copied (small).
    t_end : float
        The end time T > tN.
    order : "bisection" | "forward" | sequence of int
        The construction order: bisection (the paper's eq. 3), forward (1, 2, …, N), or a
        permutation of the 1-based time indices 1..N.
    start : sequence of float, optional
        X at t0 (its length is the dimension d, 1..8); zeros of the covariance's size if absent.
    cov, chol : (d, d) array-like, optional
        The covariance Σ (symmetric positive definite) or its lower Cholesky factor C. Neither:
        the identity.
    t0 : float
        The start time (< t1).

    Errors (``ValueError`` with the Rust message): times not finite or not increasing, an
    order that is not a permutation, d outside 1..8, Σ not positive definite, ….
    """

    def __init__(
        self,
        times: Sequence[float],
        t_end: float,
        order: Union[str, Sequence[int]] = "bisection",
        start: Optional[Sequence[float]] = None,
        cov=None,
        chol=None,
        t0: float = 0.0,
    ) -> None:
        t = np.asarray(times, dtype=np.float64)
        if t.ndim != 1:
            raise ValueError(f"times: shape {t.shape}, expected a 1-D sequence of interior times")
        n = t.shape[0]
        if isinstance(order, str):
            _check.choice("order", order, ("bisection", "forward"))
            order_list = _bisection(n) if order == "bisection" else list(range(1, n + 1))
        else:
            o = np.asarray(order)
            if o.ndim != 1 or not np.issubdtype(o.dtype, np.integer):
                raise TypeError("order: expected 'bisection', 'forward' or a 1-D sequence of ints (1-based time indices)")
            if (o < 0).any():
                raise ValueError("order: negative entry; entries are 1-based time indices 1..N")
            order_list = o.tolist()
        if cov is not None and chol is not None:
            raise ValueError("cov, chol: give one of them, not both")
        d = None if start is None else len(start)
        if cov is not None:
            cov_l, chol_l = _matrix("cov", cov, d), None
        elif chol is not None:
            cov_l, chol_l = None, _matrix("chol", chol, d)
        else:
            dd = d or 1
            cov_l, chol_l = None, np.eye(dd).ravel().tolist()
        if start is None:
            dd = int(round(len(cov_l or chol_l) ** 0.5))
            start_l = [0.0] * dd
        else:
            start_l = np.asarray(start, dtype=np.float64).ravel().tolist()
        self._plan = _native._Plan(
            float(t0), t.tolist(), _check.real("t_end", t_end), order_list, start_l, cov=cov_l, chol=chol_l
        )

    @classmethod
    def uniform(
        cls,
        steps: int,
        t_end: float = 1.0,
        dims: Optional[int] = None,
        order: Union[str, Sequence[int]] = "bisection",
        cov=None,
        chol=None,
    ) -> "Plan":
        """``steps`` equal steps of [0, t_end] (N = steps − 1 interior times), from 0 in ``dims``
        dimensions (None: the size of ``cov``/``chol``, else 1) — the CLI's
        ``lockstep bridge --steps --t-end --dims --order --cov``."""
        steps = _check.count("steps", steps, 1)
        if dims is None:
            m = cov if cov is not None else chol
            dims = 1 if m is None else int(np.shape(m)[0])
        dims = _check.count("dims", dims, 1)
        t_end = _check.real("t_end", t_end, positive=True)
        times = [t_end * i / steps for i in range(1, steps)]
        return cls(times, t_end, order=order, start=[0.0] * dims, cov=cov, chol=chol)

    @property
    def steps(self) -> int:
        """Output rows: N + 1 (t1..tN and T)."""
        return self._plan.steps

    @property
    def dims(self) -> int:
        """The dimension d."""
        return self._plan.dims

    @property
    def rows(self) -> int:
        """Normals per path: (N + 1)·d."""
        return self._plan.rows

    @property
    def grid(self) -> np.ndarray:
        """The times t0, t1, …, tN, T."""
        return np.asarray(self._plan.grid)

    @property
    def order(self) -> list:
        """The construction order (1-based time indices)."""
        return list(self._plan.order)

    @property
    def stack_slots(self) -> int:
        """Live values the strategy keeps per path."""
        return self._plan.stack_slots

    def __repr__(self) -> str:
        return f"Plan(steps={self.steps}, dims={self.dims}, t_end={self.grid[-1]})"

    def generate(
        self,
        paths: int,
        source: Union[str, np.ndarray] = "philox",
        seed: int = 1,
        precision: str = "f32",
        output: str = "paths",
        device: str = "auto",
        first: int = 0,
    ) -> np.ndarray:
        """``paths`` bridge paths (or scaled increments) as a new array of shape
        ``(N+1, d, paths)`` (rows t1..tN, T; the CLI's ``.npy`` layout), the same bits on
        every device.

        Parameters
        ----------
        paths : int
            Number of paths (1 .. 2^32 − 1; an output larger than this machine's memory is
            refused before allocating, ``MemoryError``).
        source : "philox" | "philox-bm" | "sobol" | ndarray
            Philox4x32-10 (``seed`` is the key; ``"philox"`` maps words to normals by Φ⁻¹,
            ``"philox-bm"`` by Box–Muller), Sobol (``seed`` is path 0's point index), or
            your normals: an ndarray of the precision's dtype, C-contiguous, shape
            ``(N+1, d, paths)`` or ``(rows, paths)`` — used in place, never copied (NaN
            normals give NaN paths; they are not scanned).
        precision : "f32" | "f64"
        output : "paths" | "increments"
            X at t1..T, or (X_{t_g} − X_{t_{g−1}})/(t_g − t_{g−1}).
        device : "auto" | "cpu" | "cpu-seq" | "gpu"
        first : int
            Index of the first path: paths ``first .. first + paths`` of a larger run, with the
            bits a one-shot run of that run gives them (a run larger than memory, made in chunks;
            with an ndarray source, the array holds the chunk's normals alone).

        The result is the Rust ``Vec`` handed to numpy (no copy). Ctrl-C: on ``"cpu"`` the
        generation stops between blocks of 4096 paths; ``"cpu-seq"`` and ``"gpu"`` finish the
        call first (one pass).
        """
        paths = _check.count("paths", paths, 0, 2**64 - 1)
        _check.choice("precision", precision, ("f32", "f64"))
        _check.choice("output", output, ("paths", "increments"))
        _check.device(device)
        dtype = _PRECISIONS[precision]
        z = None
        if isinstance(source, np.ndarray):
            shape = (self.steps, self.dims, paths) if source.ndim == 3 else (self.rows, paths)
            z = _check.array("source", source, (dtype,), ndim=source.ndim if source.ndim in (2, 3) else 3, shape=shape)
            kind = "buffer"
        else:
            kind = _check.choice("source", source, ("philox", "philox-bm", "sobol"))
        seed = _check.count("seed", seed, 0, 2**64 - 1)
        first = _check.count("first", first, 0, 2**32 - 1)
        fn = _native.bridge_generate_f32 if precision == "f32" else _native.bridge_generate_f64
        return fn(self._plan, paths, kind, seed, z, output, device, first)


def generate(plan: Plan, paths: int, **kwargs) -> np.ndarray:
    """``plan.generate(paths, **kwargs)``."""
    return plan.generate(paths, **kwargs)


def _bisection(n: int) -> list:
    """The bisection order of the paper's eq. 3 (Rust ``bridge::bisection_order``)."""
    out, queue = [], [(0, n + 1)]
    while queue:
        a, b = queue.pop(0)
        if b - a >= 2:
            m = (a + b) // 2
            out.append(m)
            queue += [(a, m), (m, b)]
    return out
