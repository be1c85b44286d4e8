"""Argument checks shared by the family modules: each names the argument it refuses and
never copies an array."""

from __future__ import annotations

import operator
import os

import numpy as np

DEVICES = ("auto", "cpu", "cpu-seq", "gpu")


def device(value: str) -> str:
    if not isinstance(value, str) or value not in DEVICES:
        raise ValueError(f"device: {value!r} is not one of 'auto', 'cpu', 'cpu-seq', 'gpu'")
    return value


def choice(name: str, value, allowed: tuple) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: {value!r} is not one of {', '.join(repr(a) for a in allowed)}")
    return value


def count(name: str, value, minimum: int = 0, maximum: int | None = None) -> int:
    """A Python/numpy integer (not bool, not float) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    v = operator.index(value)
    if v < minimum:
        raise ValueError(f"{name}: {v} is negative" if minimum == 0 and v < 0 else f"{name}: {v} is below {minimum}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name}: {v} is too large (at most {maximum})")
    return v


def real(name: str, value, *, positive: bool = False, nonnegative: bool = False) -> float:
    """A finite real number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name}: {v} is not finite")
    if positive and not v > 0:
        raise ValueError(f"{name}: {v} must be > 0")
    if nonnegative and v < 0:
        raise ValueError(f"{name}: {v} must be >= 0")
    return v


def array(name: str, value, dtypes: tuple, ndim: int | None = None, shape: tuple | None = None) -> np.ndarray:
    """An ndarray of one of `dtypes`, C-contiguous, of `ndim` dimensions and `shape` (None in a
    shape entry: any length) — returned as is, never copied."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(value).__name__}")
    if value.dtype not in [np.dtype(d) for d in dtypes]:
        want = " or ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(f"{name}: dtype {value.dtype} is not {want} (convert with .astype(); lockstep never converts silently)")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name}: {value.ndim}-dimensional, expected {ndim} dimensions (shape {_show(shape)})")
    if shape is not None and any(w is not None and w != g for w, g in zip(shape, value.shape)):
        raise ValueError(f"{name}: shape {value.shape}, expected {_show(shape)}")
    if not value.flags.c_contiguous:
        raise ValueError(f"{name}: not C-contiguous (use numpy.ascontiguousarray; lockstep never copies silently)")
    return value


def _show(shape) -> str:
    if shape is None:
        return "any"
    return "(" + ", ".join("n" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def path(name: str, value) -> str | None:
    """``None``, or a file path (``str`` or ``os.PathLike``) as ``str``."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{name}: expected a file path (str or os.PathLike) or None, got {type(value).__name__}")


def resume_options(checkpoint, checkpoint_every, resume) -> tuple:
    """Checked ``(checkpoint, checkpoint_every, resume)`` of a resumable call."""
    checkpoint = path("checkpoint", checkpoint)
    resume = path("resume", resume)
    if checkpoint_every is not None:
        checkpoint_every = count("checkpoint_every", checkpoint_every, 1, 2**64 - 1)
        if checkpoint is None and resume is None:
            raise ValueError("checkpoint_every: needs checkpoint= (the file to write)")
    if resume is not None and not os.path.isfile(resume):
        raise ValueError(f"resume: {resume!r} is not a file")
    return checkpoint, checkpoint_every, resume
