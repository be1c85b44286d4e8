"""Runs split over ranks (processes, one per GPU or CPU share) with the bits of the one-process
functions.

Every rank runs the same script and calls the same :mod:`lockstep.dist` functions in the same
order with the same arguments; each computes its share (the Minority Game's groups, n-body's
bodies, the bridge's paths) and every rank returns the whole result, bit for bit what
:func:`lockstep.mg.run`, :func:`lockstep.nbody.integrate` and
:meth:`lockstep.bridge.Plan.generate` give in one process, on any number of ranks, on the CPU
and the GPU. Example, ``sim.py``::

    import hashlib, lockstep
    me = lockstep.dist.rank()                  # {'rank': 0, 'size': 4, 'device': 'gpu', …}
    r = lockstep.dist.mg_run(n=100_001, m=5, s=2, p=500, trials=4, groups=1024, seed=1)
    plan = lockstep.bridge.Plan.uniform(64, cov=[[1.0, 0.5], [0.5, 2.0]])
    x = lockstep.dist.bridge_generate(plan, 1_000_000, seed=7)
    if me["rank"] == 0:                        # every rank holds the results: one writes
        print(r.checksum, hashlib.sha256(x.tobytes()).hexdigest())

Starting the ranks, on one host::

    python -m lockstep.dist --gpus 4 sim.py [args]     # 4 ranks, rank i on GPU i
    python -m lockstep.dist --ranks 3 sim.py [args]    # 3 ranks on the CPU
    python -m lockstep.dist --ranks 2 -m pkg.module [args]

The launcher starts N copies of ``python -u sim.py args`` (this interpreter) with
``LOCKSTEP_RANK``, ``LOCKSTEP_WORLD_SIZE``, ``LOCKSTEP_LOCAL_RANK``, ``LOCKSTEP_MASTER``
(``127.0.0.1`` and a free port), ``LOCKSTEP_DEVICE`` (``gpu`` for ``--gpus``, ``cpu`` for
``--ranks``) and ``NCCL_NVLS_ENABLE=0``, as ``lockstep run`` does; every other variable passes
through. Each line a rank writes goes to the launcher's stdout or stderr prefixed with
``[rank R] ``; stdin is closed. When a rank fails, the others get SIGTERM and, 5 s later,
SIGKILL; the launcher prints one line ``error: rank R exited with status S; stopped the other
K ranks`` and exits 1 (R: the first rank that failed, not counting ranks with status 3 — how a
rank ends when it learns that another died; S: its exit code, or 128 + the signal for a rank
killed by one). SIGINT or SIGTERM to the launcher is forwarded to the ranks (a second one, or
30 s, kills them). Bad launcher arguments: one ``error:`` line, exit 2, nothing started. The
launcher starts the ranks of one host; over several hosts, use mpirun or srun.

**Under mpirun, srun and others.** The same script runs unchanged under ``mpirun -n N python
sim.py`` (Open MPI's ``OMPI_COMM_WORLD_*``, MPICH/Intel MPI's ``PMI_*`` variables) or ``srun
-n N python sim.py`` (``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``): the rank, size and
local rank come from them (no MPI library is used; ranks meet at a TCP rendezvous served by
rank 0). On one host that address defaults to ``127.0.0.1:29517``; **a run over several hosts
must set** ``LOCKSTEP_MASTER=host:port`` (or ``MASTER_ADDR`` and ``MASTER_PORT``), an address of
rank 0's host that every rank reaches, the same on every rank. The place is
``LOCKSTEP_DEVICE`` (``gpu``/``cpu``), else the GPU when one is visible; a GPU rank takes GPU
``local_rank mod count`` and joins the others through NCCL when every rank has a GPU of its own
(ranks sharing a GPU, or ``LOCKSTEP_COLLECTIVES=host``: through the rendezvous; the same bits).

**Rules.** The first call of any function here joins the run (it waits for every rank).
Every rank calls the same functions in the same order with the same arguments: a rank that
calls another function than the others gets a ``LockstepError`` naming both calls, and after a
failed call the run cannot go on. At exit each rank says goodbye (:func:`finish`, called by
``atexit``) so that ranks ending at different moments are not taken for dead; a rank that ends
with an uncaught exception does not, and the others stop. (``sys.exit(n)`` is an exit like any
other: it says goodbye, so when the other ranks are in a call, that call fails on every rank.)
When another rank dies, this process prints one ``error:`` line and exits with status 3 within
seconds, even while it is blocked in a collective. Ctrl-C is seen when a call returns
(``mg_run``: between trials); a rank that stops ends the run. Outside a launched run
:func:`rank` is ``None`` and the family functions raise ``LockstepError``: use the one-process
functions there.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import List, NamedTuple, Optional, Union

import numpy as np

from . import _check, _native
from . import bridge as _bridge
from . import mg as _mg
from .nbody import _bodies

__all__ = ["Game", "State", "bridge_generate", "finish", "main", "mg_play", "mg_run", "nbody_run", "rank"]

_DTYPES = {"f32": np.float32, "f64": np.float64}


class Game(NamedTuple):
    """One trial of the Minority Game (:func:`mg_play`)."""

    h0: int
    """The initial history."""
    ones: np.ndarray
    """Votes for side 1 per step (uint64, ``(p,)``); the minority is the winners."""


class State(NamedTuple):
    """The bodies after :func:`nbody_run`."""

    pos: np.ndarray
    """Positions, ``(n, 3)``."""
    vel: np.ndarray
    """Velocities, ``(n, 3)``."""


def rank() -> Optional[dict]:
    """This process's place in the launched run, or ``None`` outside one (no launcher
    variables set).

    Returns a dict: ``rank`` (0 .. size − 1), ``size``, ``local_rank`` (among the ranks of its
    host), ``device`` (``"gpu"`` or ``"cpu"``), ``gpu`` (its name, or None), ``transport``
    (how device data travels: NCCL and its version, or the rendezvous' host collectives),
    ``launcher`` (whose variables were read: ``"lockstep"``, ``"Open MPI"``, ``"PMI"``,
    ``"Slurm"``) and ``master`` (the rendezvous address). The first call joins the run: it
    returns once every rank has joined. Bad launcher variables are a ``ValueError`` naming
    the variable; a rank that cannot reach the others a ``LockstepError``.
    """
    info = _native.dist_rank()
    return None if info is None else dict(info)


def finish() -> bool:
    """Says this rank's goodbye: returns once every rank has said it, after which no rank's
    exit is taken for a death; no collective call may follow. Called at exit (``atexit``)
    unless the process ends with an uncaught exception; call it yourself to end the run
    earlier. Returns False when there was nothing to say (no run joined, or already said).
    """
    return bool(_native.dist_finish())


def mg_play(n: int, m: int, s: int, p: int, groups: int = 1, seed: int = 1, trial: int = 0) -> Game:
    """Trial ``trial`` of the Minority Game, each rank playing its share of the ``groups``
    (one all-reduce of the votes per step): the initial history and the votes per step, the
    bits of the one-process game (``lockstep.mg.run(..., first=trial, trace=True)``'s
    ``trace["h0"]`` and ``trace["ones"]``) on every rank.

    Parameters as :func:`lockstep.mg.run`; ``groups`` must be at least the number of ranks
    (each rank needs one group; a ``ValueError`` otherwise).
    """
    n, m, s, p, groups, seed = _mg_args(n, m, s, p, groups, seed)
    trial = _check.count("trial", trial, 0, 2**64 - 1)
    h0, ones = _native.dist_mg_play(n, m, s, p, groups, seed, trial)
    return Game(int(h0), ones)


def mg_run(
    n: int, m: int, s: int, p: int, trials: int = 1, groups: int = 1, seed: int = 1, first: int = 0
) -> _mg.Result:
    """:func:`lockstep.mg.run` over the ranks: trials ``first .. first + trials`` one after the
    other, each split over the ranks as :func:`mg_play`; returns the same
    :class:`lockstep.mg.Result` (``trace`` is None) on every rank. ``groups`` must be at least
    the number of ranks. Ctrl-C stops between trials.
    """
    n, m, s, p, groups, seed = _mg_args(n, m, s, p, groups, seed)
    trials = _check.count("trials", trials, 1, 2**64 - 1)
    first = _check.count("first", first, 0, 2**64 - 1)
    ratio, checksum, sums = _native.dist_mg_run(n, m, s, p, trials, groups, seed, first)
    return _mg.Result(ratio, int(checksum), sums, None)


def _mg_args(n, m, s, p, groups, seed) -> tuple:
    return (
        _check.count("n", n, 1, 2**63 - 1),
        _check.count("m", m, 1, 16),
        _check.count("s", s, 1, 16),
        _check.count("p", p, 1, 1 << 24),
        _check.count("groups", groups, 1, 2**64 - 1),
        _check.count("seed", seed, 0, 2**32 - 1),
    )


def nbody_run(
    pos: np.ndarray,
    vel: np.ndarray,
    mass: np.ndarray,
    dt: float,
    steps: int,
    eps: float = 0.0,
    g: float = 1.0,
    precision: Optional[str] = None,
    method: str = "shared",
) -> State:
    """``steps`` exact RK4 steps of ``dt``, each rank integrating its share of the bodies
    (the stage positions all-gathered before every force evaluation): the bodies' new
    positions and velocities on every rank, the bits of ``lockstep.nbody.integrate(...,
    mode="exact")``'s last frame.

    Parameters as :func:`lockstep.nbody.integrate` (exact mode only); rank 0's arrays are
    broadcast first, so every rank starts from its bits (the others' must have the same
    shape). ``method``: ``"shared"`` or ``"global"``, the GPU kernels' way of reading the
    bodies (the same bits). Runs of k and then m steps equal one of k + m steps: call it once
    per frame you want.
    """
    p, v, m, dt, eps, g, steps = _bodies(pos, vel, mass, dt, eps, g, steps, precision)
    dtype = p.dtype
    _check.choice("method", method, ("shared", "global"))
    fn = _native.dist_nbody_run_f32 if dtype == np.float32 else _native.dist_nbody_run_f64
    x, u = fn(p, v, m, g, eps, dt, steps, method)
    return State(x, u)


def bridge_generate(
    plan: _bridge.Plan,
    paths: int,
    source: Union[str, np.ndarray] = "philox",
    seed: int = 1,
    precision: str = "f32",
    output: str = "paths",
) -> np.ndarray:
    """``plan.generate(paths, source, seed, precision, output)`` over the ranks: rank r
    generates paths ``paths·r/k .. paths·(r+1)/k`` and the ranks all-gather them; every rank
    returns the whole ``(N+1, d, paths)`` array, the bits of the one-process call.

    Parameters as :meth:`lockstep.bridge.Plan.generate`; an ndarray ``source`` holds the
    whole run's normals on every rank (each reads its columns).
    """
    if not isinstance(plan, _bridge.Plan):
        raise TypeError(f"plan: expected a lockstep.bridge.Plan, got {type(plan).__name__}")
    paths = _check.count("paths", paths, 0, 2**64 - 1)
    _check.choice("precision", precision, ("f32", "f64"))
    _check.choice("output", output, ("paths", "increments"))
    dtype = _DTYPES[precision]
    z = None
    if isinstance(source, np.ndarray):
        shape = (plan.steps, plan.dims, paths) if source.ndim == 3 else (plan.rows, paths)
        z = _check.array("source", source, (dtype,), ndim=source.ndim if source.ndim in (2, 3) else 3, shape=shape)
        kind = "buffer"
    else:
        kind = _check.choice("source", source, ("philox", "philox-bm", "sobol"))
    seed = _check.count("seed", seed, 0, 2**64 - 1)
    fn = _native.dist_bridge_generate_f32 if precision == "f32" else _native.dist_bridge_generate_f64
    return fn(plan._plan, paths, kind, seed, z, output)


def _goodbye() -> None:
    """At exit: the goodbye, unless the process ends with an uncaught exception (then the
    others learn of this rank's exit and stop). A goodbye that fails (the others are in
    another call, or gone) is one ``error:`` line; the exit status stays the process's own."""
    if getattr(sys, "last_value", None) is not None or getattr(sys, "last_exc", None) is not None:
        return
    try:
        _native.dist_finish()
    except Exception as e:  # noqa: BLE001 — reported, not raised: the process is ending
        print(f"error: {e}", file=sys.stderr)


atexit.register(_goodbye)


# --- the launcher: python -m lockstep.dist (--gpus N | --ranks N) script.py [args] ------------

_USAGE = """\
usage: python -m lockstep.dist (--gpus N | --ranks N) SCRIPT [ARGS...]
       python -m lockstep.dist (--gpus N | --ranks N) -m MODULE [ARGS...]

Starts N ranks on this host, each running `python -u SCRIPT ARGS...` (or `-m MODULE`):
  --gpus N    one rank per GPU: rank i takes GPU i (LOCKSTEP_DEVICE=gpu)
  --ranks N   N ranks on the CPU (LOCKSTEP_DEVICE=cpu)
Each rank's output lines are prefixed with `[rank R] `; when one fails the others are stopped.
Under mpirun or srun, run the script directly: see `help(lockstep.dist)`."""

_FAILURE_GRACE = 5.0
_SIGNAL_GRACE = 30.0


class _Usage(Exception):
    pass


def _parse(args: List[str]):
    """``(count, device, command)`` from the launcher's arguments, or None for --help."""
    count = device = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            return None
        name, eq, value = a.partition("=")
        if name in ("--gpus", "--ranks"):
            if not eq:
                if i + 1 >= len(args):
                    raise _Usage(f"{name} needs a number of ranks")
                i += 1
                value = args[i]
            if device is not None:
                raise _Usage("give exactly one of --gpus N and --ranks N")
            if not value.strip().isdigit() or int(value) < 1:
                raise _Usage(f"{name} {value}: give a whole number of ranks, 1 or more")
            count, device = int(value), ("gpu" if name == "--gpus" else "cpu")
            i += 1
            continue
        if device is None:
            if a.startswith("-") and a != "-m":
                raise _Usage(f"unexpected argument {a!r}")
            raise _Usage("give one of --gpus N and --ranks N before the script")
        if a == "-m":
            if i + 1 >= len(args):
                raise _Usage("-m needs a module name")
            return count, device, ["-m", *args[i + 1 :]]
        if a == "--":
            i += 1
            if i >= len(args):
                break
            a = args[i]
        elif a.startswith("-"):
            raise _Usage(f"unexpected argument {a!r} (the launcher's flags come before the script)")
        if not os.path.isfile(a):
            raise _Usage(f"{a}: no such script")
        return count, device, [a, *args[i + 1 :]]
    if device is None:
        raise _Usage("give one of --gpus N and --ranks N, and the script every rank runs")
    raise _Usage("no script given: give the Python script every rank runs (or -m MODULE)")


def _pump(stream, prefix: bytes, to, lock: threading.Lock) -> threading.Thread:
    """Copies ``stream`` line by line to ``to`` (a binary stream), each line prefixed."""

    def run() -> None:
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            with lock:
                try:
                    to.write(prefix + line)
                    to.flush()
                except (OSError, ValueError):
                    pass  # the launcher's reader left: the line is dropped, the rank goes on
        stream.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _describe(code: int) -> str:
    """An exit status as a shell prints it: the code, or 128 + the signal with its name."""
    if code >= 0:
        return str(code)
    sig = -code
    try:
        name = f", {signal.Signals(sig).name}"
    except ValueError:
        name = ""
    return f"{128 + sig} (signal {sig}{name})"


def _signal(procs, exits, sig) -> None:
    """Sends ``sig`` to every rank that has not exited."""
    for i, p in enumerate(procs):
        if i not in exits:
            try:
                p.send_signal(sig)
            except OSError:
                pass


def _launch(count: int, device: str, command: List[str]) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{s.getsockname()[1]}"
    received: List[str] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, lambda signum, _frame: received.append(signal.Signals(signum).name))
        except ValueError:
            pass  # not the main thread: signals stay as they are
    out = getattr(sys.stdout, "buffer", sys.stdout)
    err = getattr(sys.stderr, "buffer", sys.stderr)
    locks = (threading.Lock(), threading.Lock())
    procs: List[subprocess.Popen] = []
    threads: List[threading.Thread] = []
    exits = {}  # rank -> (when it exited, its returncode), written by the waiters
    changed = threading.Condition()

    def wait_for(i: int, p: subprocess.Popen) -> None:
        code = p.wait()
        with changed:
            exits[i] = (time.monotonic(), code)
            changed.notify_all()

    try:
        for i in range(count):
            env = dict(os.environ)
            env.update(
                LOCKSTEP_RANK=str(i),
                LOCKSTEP_WORLD_SIZE=str(count),
                LOCKSTEP_LOCAL_RANK=str(i),
                LOCKSTEP_MASTER=master,
                LOCKSTEP_DEVICE=device,
                NCCL_NVLS_ENABLE="0",
            )
            try:
                p = subprocess.Popen(
                    [sys.executable, "-u", *command],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,  # Ctrl-C reaches the launcher alone; it forwards it
                )
            except OSError as e:
                _signal(procs, exits, signal.SIGKILL)
                for t in threads:
                    t.join()
                print(f"error: starting rank {i} ({sys.executable}): {e}", file=sys.stderr)
                return 1
            procs.append(p)
            prefix = f"[rank {i}] ".encode()
            threads.append(_pump(p.stdout, prefix, out, locks[0]))
            threads.append(_pump(p.stderr, prefix, err, locks[1]))
            waiter = threading.Thread(target=wait_for, args=(i, p), daemon=True)
            waiter.start()
            threads.append(waiter)

        failure = None  # (rank, returncode)
        interrupted = None
        deadline = None
        while True:
            with changed:
                changed.wait(timeout=0.02)
                done = dict(exits)
            while received:
                name = received.pop(0)
                if interrupted is not None:
                    _signal(procs, exits, signal.SIGKILL)  # a second signal: stop at once
                else:
                    interrupted = name
                    _signal(procs, exits, signal.SIGINT if name == "SIGINT" else signal.SIGTERM)
                    deadline = deadline or time.monotonic() + _SIGNAL_GRACE
            if failure is None and interrupted is None and any(c != 0 for _, c in done.values()):
                # Ranks that fail together (a death makes the others fail): a moment for them to
                # be seen, then the cause: the first to exit, not counting status 3 (how a rank
                # ends when it learns that another died, possibly before that one is reaped).
                time.sleep(0.05)
                with changed:
                    done = dict(exits)
                failed = [i for i, (_, c) in done.items() if c != 0]
                first = min([i for i in failed if done[i][1] != 3] or failed, key=lambda i: done[i][0])
                failure = (first, done[first][1])
                _signal(procs, exits, signal.SIGTERM)
                deadline = deadline or time.monotonic() + _FAILURE_GRACE
            if len(done) == count:
                break
            if deadline is not None and time.monotonic() >= deadline:
                _signal(procs, exits, signal.SIGKILL)
                deadline = time.monotonic() + 3600
        for t in threads:
            t.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.stdout.flush()
    others = {0: "", 1: "; stopped the other rank"}.get(count - 1, f"; stopped the other {count - 1} ranks")
    if failure is not None:
        print(f"error: rank {failure[0]} exited with status {_describe(failure[1])}{others}", file=sys.stderr)
        return 1
    if interrupted is not None:
        bad = next((i for i in range(count) if exits[i][1] != 0), None)
        if bad is not None:
            s = "" if count == 1 else "s"
            print(
                f"error: interrupted by {interrupted}: forwarded to the {count} rank{s} "
                f"(rank {bad} exited with status {_describe(exits[bad][1])})",
                file=sys.stderr,
            )
            return 1
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """The launcher (``python -m lockstep.dist``); returns the exit status: 0 when every rank
    exited 0, 1 when one failed, 2 for bad arguments (nothing started)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        parsed = _parse(args)
    except _Usage as e:
        print(f"error: {e} (see python -m lockstep.dist --help)", file=sys.stderr)
        return 2
    if parsed is None:
        print(_USAGE)
        return 0
    return _launch(*parsed)


if __name__ == "__main__":
    sys.exit(main())
