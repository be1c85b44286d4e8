"""Harada & Murata's reproducible Minority Game: XSadd streams placed by GF(2) jump-ahead, one
per group of agents, so a game has the same bits on one CPU thread, many, and the GPU.

Example::

    import lockstep
    r = lockstep.mg.run(n=1001, m=5, s=2, p=500, trials=16, groups=8, seed=1)
    r.ratio.shape, r.checksum                  # (500,), the CLI's winners checksum
    small = lockstep.mg.run(n=11, m=3, s=2, p=20, trials=1, trace=True)
    small.trace["history"], small.trace["winners"]
"""

from __future__ import annotations

import os
from typing import NamedTuple, Optional, Union

import numpy as np

from . import _check, _native

__all__ = ["Result", "run"]


class Result(NamedTuple):
    ratio: np.ndarray
    """Winners / n per step, averaged over the trials (float64, ``(p,)``)."""
    checksum: int
    """The CLI's checksum of the summed winner counts (``lockstep mg`` prints it)."""
    winners: np.ndarray
    """Winner counts per step summed over the trials (uint64, ``(p,)``)."""
    trace: Optional[dict]
    """With ``trace=True``: trial ``first``'s winners, history, tables, used tables, draws."""


def run(
    n: int,
    m: int,
    s: int,
    p: int,
    trials: int = 1,
    groups: int = 1,
    seed: int = 1,
    first: int = 0,
    model: str = "auto",
    trace: bool = False,
    device: str = "auto",
    checkpoint: Optional[Union[str, os.PathLike]] = None,
    checkpoint_every: Optional[int] = None,
    resume: Optional[Union[str, os.PathLike]] = None,
) -> Result:
    """Plays trials ``first .. first + trials`` and averages the winner ratio per step.

    Parameters
    ----------
    n : int
        Agents (odd, ≥ 1). m : memory (1..16). s : tables per agent (1..16).
    p : int
        Steps (1 .. 2^24). trials : games to average (≥ 1). groups : random streams G
        (1 ≤ G ≤ n; agent a is in group a mod G). seed : 32-bit seed.
    model : "auto" | "cpu" | "cpu-seq" | "standalone"
        Which implementation plays: ``auto`` follows ``device``; ``standalone`` is the GPU's
        one-game-per-block model; ``cpu``/``cpu-seq`` the CPU twin (trials in parallel / on
        one thread). Every model gives the same bits.
    trace : bool
        Also return trial ``first``'s trace (small games: at most 256 MiB), played on the CPU.
    device : "auto" | "cpu" | "cpu-seq" | "gpu"
    checkpoint : path, optional
        Write a checkpoint here every ``checkpoint_every`` game steps (counted over all trials)
        and on Ctrl-C (then ``KeyboardInterrupt`` is raised): atomically, with a checksum, the
        CLI's format. Trials are then played in order, each game's groups in parallel on the
        CPU (checkpoints mid-game) or the GPU's standalone model (between trials).
    checkpoint_every : int, optional
        Game steps between checkpoints (None: only on Ctrl-C).
    resume : path, optional
        Continue from a checkpoint written with the same arguments (or by ``lockstep mg`` with
        the same parameters, on any device): the result is bit-identical to an uninterrupted
        run; checkpoints go on to ``checkpoint``, else to this file. A corrupt, truncated or
        mismatched file is a ``ValueError`` before any work.

    Ctrl-C: the CPU stops between rounds of trials (one game per thread per round; a single
    game is not stopped mid-way, so a huge game finishes its round first); the GPU
    plays all trials in one launch and finishes it first.
    """
    n = _check.count("n", n, 1, 2**63 - 1)
    m = _check.count("m", m, 1, 16)
    s = _check.count("s", s, 1, 16)
    p = _check.count("p", p, 1, 1 << 24)
    trials = _check.count("trials", trials, 1, 2**64 - 1)
    groups = _check.count("groups", groups, 1, 2**64 - 1)
    seed = _check.count("seed", seed, 0, 2**32 - 1)
    first = _check.count("first", first, 0, 2**64 - 1)
    _check.choice("model", model, ("auto", "cpu", "cpu-seq", "standalone"))
    _check.device(device)
    if model == "standalone":
        if device not in ("auto", "gpu"):
            raise ValueError(f"model: 'standalone' is the GPU's model, but device={device!r}")
        device = "gpu"
    elif model in ("cpu", "cpu-seq"):
        if device not in ("auto", model):
            raise ValueError(f"model: {model!r} with device={device!r}")
        device = model
    checkpoint, checkpoint_every, resume = _check.resume_options(checkpoint, checkpoint_every, resume)
    if trace and (checkpoint is not None or resume is not None):
        raise ValueError("trace: a trace is recorded by one uninterrupted game; drop checkpoint/resume")
    ratio, checksum, sums, tr = _native.mg_run(
        n, m, s, p, trials, groups, seed, first, bool(trace), device, checkpoint, checkpoint_every, resume
    )
    return Result(ratio, int(checksum), sums, tr)
