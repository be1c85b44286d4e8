"""The integer matrix product ``C = A·B`` (wrapping arithmetic, int32 or int64), the same bits
on every device, and the seed's model matrix ``A(r, c) = r + c + 1``.

Example::

    import lockstep
    a = lockstep.matmul.model(512, dtype="int64")
    c = lockstep.matmul.multiply(a, a)                # = numpy's a @ a while nothing wraps
"""

from __future__ import annotations

import numpy as np

from . import _check, _native

__all__ = ["model", "multiply"]


def model(n: int, dtype: str = "int64") -> np.ndarray:
    """The model matrix ``A(r, c) = r + c + 1`` (0-based), ``(n, n)``, 1 ≤ n ≤ 65535."""
    n = _check.count("n", n, 1, 65535)
    _check.choice("dtype", dtype, ("int32", "int64"))
    return _native.matmul_model(n, dtype)


def multiply(a: np.ndarray, b: np.ndarray, device: str = "auto") -> np.ndarray:
    """``a·b`` for square C-contiguous int32 or int64 matrices of one dtype (used in place),
    with wrapping arithmetic. Returns a new ``(n, n)`` array. Ctrl-C: one pass, not stopped
    mid-way."""
    a = _check.array("a", a, (np.int32, np.int64), ndim=2)
    n = a.shape[0]
    if a.shape != (n, n) or n == 0:
        raise ValueError(f"a: shape {a.shape}, expected a square (n, n) matrix with n ≥ 1")
    b = _check.array("b", b, (a.dtype,), ndim=2, shape=(n, n))
    _check.device(device)
    fn = _native.matmul_multiply_i32 if a.dtype == np.int32 else _native.matmul_multiply_i64
    return fn(a, b, device)
