"""The Himeno benchmark's Jacobi sweep (himenoBMTxpa.c, f32): the pressure after any number of
sweeps, and the last sweep's gosa, the same bits on every device.

Example::

    import lockstep
    p, gosa = lockstep.himeno.run("S", 100)           # sizes XS, S, M, L, XL or (mi, mj, mk)
    p.shape, p.dtype, gosa                            # (65, 65, 129) float32 …
    q, g2 = lockstep.himeno.run("S", 100, device="cpu-seq")
    assert (p == q).all() and gosa == g2
"""

from __future__ import annotations

from typing import Tuple, Union

import numpy as np

from . import _check, _native

__all__ = ["grid", "run"]


def grid(size: str) -> Tuple[int, int, int]:
    """``(mi, mj, mk)`` of a size name: XS, S, M, L, XL (case-insensitive)."""
    if not isinstance(size, str):
        raise TypeError(f"size: expected a name such as 'XS', got {type(size).__name__}")
    return tuple(_native.himeno_grid(size))


def run(
    size: Union[str, Tuple[int, int, int]],
    sweeps: int,
    gosa: str = "tree",
    device: str = "auto",
) -> Tuple[np.ndarray, float]:
    """``sweeps`` Jacobi sweeps from the benchmark's initial state.

    Parameters
    ----------
    size : "XS" | "S" | "M" | "L" | "XL" | (mi, mj, mk)
        The grid (each extent ≥ 3).
    sweeps : int
        Number of sweeps (0 .. 2^32 − 1).
    gosa : "tree" | "seq"
        The last sweep's residual by lockstep's two-level tree (every device, bit-identical),
        or summed sequentially as himenoBMTxpa.c does (CPU only).
    device : "auto" | "cpu" | "cpu-seq" | "gpu"

    Returns ``(p, gosa)``: the pressure, a new float32 array of shape ``(mi, mj, mk)``, and the
    gosa as a float. Ctrl-C stops between chunks of sweeps (every ~0.1 s; each chunk continues
    from the last one's pressure, which gives the same bits as one run).
    """
    if isinstance(size, str):
        mi, mj, mk = grid(size)
    elif isinstance(size, (tuple, list)) and len(size) == 3:
        mi, mj, mk = (_check.count(f"size[{i}]", v, 3, 2**32 - 1) for i, v in enumerate(size))
    else:
        raise TypeError("size: expected a name ('XS', 'S', 'M', 'L', 'XL') or (mi, mj, mk)")
    sweeps = _check.count("sweeps", sweeps, 0, 2**32 - 1)
    _check.choice("gosa", gosa, ("tree", "seq"))
    _check.device(device)
    p, g = _native.himeno_run(mi, mj, mk, sweeps, gosa, device)
    return p, float(g)
