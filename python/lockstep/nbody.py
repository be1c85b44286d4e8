"""All-pairs N-body with RK4. Exact mode equals the CPU twin bit for bit (no contraction,
correctly rounded sqrt and division, the pair sum in increasing j); fast mode (FMA,
``rsqrt.approx``) runs on the GPU only, within a stated tolerance.

Example::

    import lockstep
    pos, vel, mass = lockstep.nbody.plummer(1024, seed=7)
    t = lockstep.nbody.integrate(pos, vel, mass, dt=1e-3, steps=100, eps=0.01, every=10)
    t.pos.shape                                # (11, 1024, 3): steps 0, 10, …, 100
    abs(t.energy[-1] / t.energy[0] - 1)        # energy drift
"""

from __future__ import annotations

import os
from typing import NamedTuple, Optional, Tuple, Union

import numpy as np

from . import _check, _native

__all__ = ["Trajectory", "integrate", "plummer"]

_DTYPES = {"f32": np.float32, "f64": np.float64}


class Trajectory(NamedTuple):
    """Frames at steps 0, every, 2·every, …, steps."""

    pos: np.ndarray
    """Positions, ``(frames, n, 3)``."""
    vel: np.ndarray
    """Velocities, ``(frames, n, 3)``."""
    energy: np.ndarray
    """Total energy per frame (float64; empty with ``energy=False``)."""
    step: np.ndarray
    """The step of each frame (uint64)."""


def plummer(n: int, seed: int = 1) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Plummer sphere of ``n`` bodies (the CLI's ``--init plummer``): ``(pos, vel, mass)`` as
    float64 arrays of shapes ``(n, 3)``, ``(n, 3)``, ``(n,)``."""
    n = _check.count("n", n, 1, 1 << 30)
    seed = _check.count("seed", seed, 0, 2**64 - 1)
    return _native.nbody_plummer(n, seed)


def integrate(
    pos: np.ndarray,
    vel: np.ndarray,
    mass: np.ndarray,
    dt: float,
    steps: int,
    eps: float = 0.0,
    g: float = 1.0,
    precision: Optional[str] = None,
    mode: str = "exact",
    every: Optional[int] = None,
    energy: bool = True,
    device: str = "auto",
    checkpoint: Optional[Union[str, os.PathLike]] = None,
    checkpoint_every: Optional[int] = None,
    resume: Optional[Union[str, os.PathLike]] = None,
) -> Trajectory:
    """``steps`` RK4 steps of ``dt``.

    Parameters
    ----------
    pos, vel : ndarray ``(n, 3)``; mass : ndarray ``(n,)``
        One float dtype for all three (float32 or float64), C-contiguous, finite, masses ≥ 0.
        They are read once into lockstep's ``(x, y, z, m)`` layout (one copy of the state,
        ``8·n`` values; the inputs are not modified).
    dt : float
        Time step (> 0).
    steps : int
        Number of steps (≥ 0).
    eps, g : float
        Plummer softening ε (≥ 0) and the gravitational constant (≥ 0).
    precision : "f32" | "f64" | None
        Must match the arrays' dtype (None: taken from it).
    mode : "exact" | "fast"
        Fast: FMA and approximate rsqrt, GPU only.
    every : int, optional
        Record a frame every ``every`` steps (None: the first and last state only).
    energy : bool
        Compute each frame's total energy (an O(n²) pass in float64).
    device : "auto" | "cpu" | "cpu-seq" | "gpu"
    checkpoint : path, optional
        Write a checkpoint here every ``checkpoint_every`` steps and on Ctrl-C (then
        ``KeyboardInterrupt`` is raised): atomically, with a checksum (lockstep's checkpoint
        format, the CLI's).
    checkpoint_every : int, optional
        Steps between checkpoints (None: only on Ctrl-C).
    resume : path, optional
        Continue from this checkpoint, written by a call with the same arguments (the arrays
        are then only checked against it: the state comes from the file); checkpoints go on to
        ``checkpoint``, else to this file. The result is bit-identical to an uninterrupted call,
        also across devices in exact mode. A corrupt, truncated or mismatched file is a
        ``ValueError`` before any work. With either option a non-finite state (``eps=0`` and
        coincident bodies) is a ``ValueError`` at the first step it appears.

    Returns :class:`Trajectory`. Ctrl-C stops between chunks of steps (about every 0.1 s;
    chunks give the same bits as one run: RK4 carries only the state).
    """
    p, v, m, dt, eps, g, steps = _bodies(pos, vel, mass, dt, eps, g, steps, precision)
    dtype = p.dtype
    if every is not None:
        every = _check.count("every", every, 1, 2**64 - 1)
    _check.choice("mode", mode, ("exact", "fast"))
    _check.device(device)
    checkpoint, checkpoint_every, resume = _check.resume_options(checkpoint, checkpoint_every, resume)
    fn = _native.nbody_integrate_f32 if dtype == np.float32 else _native.nbody_integrate_f64
    xs, vs, es, ks = fn(p, v, m, g, eps, dt, steps, every, bool(energy), mode, device, checkpoint, checkpoint_every, resume)
    return Trajectory(xs, vs, es, ks)


def _bodies(pos, vel, mass, dt, eps, g, steps, precision):
    """The checked arguments of a run (shared with :mod:`lockstep.dist`): positions, velocities
    and masses of one float dtype and matching shapes, ``dt > 0``, ``eps, g ≥ 0``, a step
    count; ``precision`` must match the dtype."""
    p = _check.array("pos", pos, (np.float32, np.float64), ndim=2, shape=(None, 3))
    dtype = p.dtype
    if precision is not None:
        _check.choice("precision", precision, ("f32", "f64"))
        if np.dtype(_DTYPES[precision]) != dtype:
            raise TypeError(f"pos: dtype {dtype} does not match precision={precision!r}")
    n = p.shape[0]
    if n == 0:
        raise ValueError("pos: no bodies (shape (0, 3))")
    v = _check.array("vel", vel, (dtype,), ndim=2, shape=(n, 3))
    m = _check.array("mass", mass, (dtype,), ndim=1, shape=(n,))
    dt = _check.real("dt", dt, positive=True)
    eps = _check.real("eps", eps, nonnegative=True)
    g = _check.real("g", g, nonnegative=True)
    steps = _check.count("steps", steps, 0, 2**64 - 1)
    return p, v, m, dt, eps, g, steps
