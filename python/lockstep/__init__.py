"""lockstep: GPU kernels in Rust whose output equals a CPU twin bit for bit.

One module per family, numpy arrays in and out:

- :mod:`lockstep.bridge`     Brownian bridge paths (``Plan`` once, ``plan.generate(paths, ...)``)
- :mod:`lockstep.histogram`  histograms like ``numpy.histogram``, with the dropped NaN/below/above
- :mod:`lockstep.himeno`     the Himeno benchmark's Jacobi sweeps
- :mod:`lockstep.nbody`      all-pairs N-body with RK4
- :mod:`lockstep.mg`         the Minority Game (reproducible on every device)
- :mod:`lockstep.matmul`     the wrapping integer matrix product
- :mod:`lockstep.dist`       the Minority Game, n-body and the bridge split over ranks
  (``python -m lockstep.dist --gpus N script.py``, ``mpirun``, ``srun``), the same bits

Every computation takes ``device="auto" | "cpu" | "cpu-seq" | "gpu"`` (auto: the GPU when one
is present, else every CPU thread) and gives the same bits on each. It runs with the GIL
released; Ctrl-C stops it within about a second (see each function for what is stopped
mid-way). Bad input raises ``TypeError``/``ValueError`` naming the argument; errors from Rust
carry the Rust message (``ValueError`` for bad input, :class:`GpuUnavailableError` for a
missing driver or device, :class:`LockstepError` otherwise).
"""

from ._native import GpuUnavailableError, LockstepError
from ._native import gpu_info as _gpu_info
from . import bridge, histogram, himeno, matmul, mg, nbody

__all__ = [
    "GpuUnavailableError",
    "LockstepError",
    "bridge",
    "dist",
    "gpu_available",
    "gpu_info",
    "histogram",
    "himeno",
    "matmul",
    "mg",
    "nbody",
]


def gpu_info() -> dict:
    """The GPU and the embedded PTX module.

    Returns a dict with ``available`` (bool), ``ptx_arch`` and ``kernels`` (the embedded
    module), and with a GPU ``name``, ``ordinal``, ``memory_free``, ``memory_total`` (bytes) and
    ``compute_capability``; without one ``reason`` (the driver's or loader's message). The GPU
    is opened on the first call that needs it (the PTX module is JIT-compiled then).
    """
    return dict(_gpu_info())


def gpu_available() -> bool:
    """Whether a GPU can run lockstep's kernels (``gpu_info()["available"]``)."""
    return bool(_gpu_info()["available"])


def __getattr__(name: str):
    # `lockstep.dist` is imported on first use, so that `python -m lockstep.dist` (its
    # launcher) runs a module the package has not imported yet.
    if name == "dist":
        import importlib

        return importlib.import_module(".dist", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
