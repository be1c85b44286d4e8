"""lockstep.dist: runs split over ranks equal the one-process functions bit for bit (SHA-256 of
the results' bytes, computed by every rank of `python -m lockstep.dist --ranks K` for K = 1,
2, 3, and by Open MPI's variables without the launcher), on the CPU and — with a GPU —
`--gpus`; `rank()` outside a launch; the launcher's failures, signals and bad arguments."""

import hashlib
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import lockstep

# Every variable a launcher sets: cleared for the launches here (the tests may run under one).
_LAUNCHER_VARS = ("LOCKSTEP_RANK", "LOCKSTEP_WORLD_SIZE", "LOCKSTEP_LOCAL_RANK", "LOCKSTEP_MASTER",
                  "LOCKSTEP_DEVICE", "MASTER_ADDR", "MASTER_PORT", "MPI_LOCALRANKID")
_LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "SLURM_")

MG_PLAY = dict(n=101, m=3, s=2, p=40, groups=6, seed=7, trial=2)
MG_RUN = dict(n=257, m=5, s=3, p=25, trials=3, groups=16, seed=2026, first=1)
NBODY = dict(n=33, seed=5, dt=1e-3, steps=4, eps=0.05, g=1.1)
BRIDGE_PATHS = 13
BRIDGE_CASES = [
    ("philox", "f32", "paths"),
    ("philox-bm", "f64", "increments"),
    ("sobol", "f64", "paths"),
    ("buffer", "f32", "increments"),
    ("buffer", "f64", "paths"),
]

# The script every rank runs: one line `name hash` per result.
SCRIPT = f"""
import hashlib, os
import numpy as np
import lockstep
from lockstep import dist

def h(*arrays):
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()

me = dist.rank()
print("rank", me["rank"], me["size"], me["local_rank"], me["device"], me["launcher"])
print("env", *(os.environ.get(v, "-") for v in ("LOCKSTEP_DEVICE", "NCCL_NVLS_ENABLE")))
g = dist.mg_play(**{MG_PLAY!r})
print("mg_play", g.h0, h(g.ones))
r = dist.mg_run(**{MG_RUN!r})
print("mg_run", r.checksum, h(r.ratio, r.winners), r.trace)
nb = {NBODY!r}
pos, vel, mass = lockstep.nbody.plummer(nb["n"], seed=nb["seed"])
for t in (np.float64, np.float32):
    st = dist.nbody_run(pos.astype(t), vel.astype(t), mass.astype(t), dt=nb["dt"], steps=nb["steps"],
                        eps=nb["eps"], g=nb["g"])
    print("nbody", np.dtype(t).name, h(st.pos, st.vel))
plan = lockstep.bridge.Plan.uniform(8, cov=[[1.0, 0.5], [0.5, 2.0]])
z = np.random.default_rng(3).standard_normal((plan.rows, {BRIDGE_PATHS}))
for source, precision, output in {BRIDGE_CASES!r}:
    src = z.astype(np.float32 if precision == "f32" else np.float64) if source == "buffer" else source
    x = dist.bridge_generate(plan, {BRIDGE_PATHS}, source=src, seed=3, precision=precision, output=output)
    print("bridge", source, precision, output, h(x))
"""


def _h(*arrays) -> str:
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()


@pytest.fixture(scope="module")
def expected():
    """The lines SCRIPT prints after `rank`/`env`, from the one-process functions on the CPU."""
    lines = []
    a = dict(MG_PLAY)
    trial = a.pop("trial")
    t = lockstep.mg.run(**a, trials=1, first=trial, trace=True, device="cpu").trace
    lines.append(f"mg_play {t['h0']} {_h(t['ones'])}")
    r = lockstep.mg.run(**MG_RUN, device="cpu")
    lines.append(f"mg_run {r.checksum} {_h(r.ratio, r.winners)} None")
    pos, vel, mass = lockstep.nbody.plummer(NBODY["n"], seed=NBODY["seed"])
    for dt in (np.float64, np.float32):
        tr = lockstep.nbody.integrate(pos.astype(dt), vel.astype(dt), mass.astype(dt), dt=NBODY["dt"],
                                      steps=NBODY["steps"], eps=NBODY["eps"], g=NBODY["g"], energy=False,
                                      device="cpu")
        lines.append(f"nbody {np.dtype(dt).name} {_h(tr.pos[-1], tr.vel[-1])}")
    plan = lockstep.bridge.Plan.uniform(8, cov=[[1.0, 0.5], [0.5, 2.0]])
    z = np.random.default_rng(3).standard_normal((plan.rows, BRIDGE_PATHS))
    for source, precision, output in BRIDGE_CASES:
        src = z.astype(np.float32 if precision == "f32" else np.float64) if source == "buffer" else source
        x = plan.generate(BRIDGE_PATHS, source=src, seed=3, precision=precision, output=output, device="cpu")
        lines.append(f"bridge {source} {precision} {output} {_h(x)}")
    return lines


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in _LAUNCHER_VARS and not k.startswith(_LAUNCHER_PREFIXES)}
    env.update(extra)
    return env


def _launch(tmp_path, *args, script=SCRIPT, timeout=300):
    (tmp_path / "script.py").write_text(script)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "lockstep.dist", *args], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=timeout)
    return out, time.monotonic() - started


def _per_rank(stdout: str, ranks: int) -> dict:
    """Each rank's lines (the prefix removed), in order; every line carries a prefix."""
    lines = {r: [] for r in range(ranks)}
    for line in stdout.splitlines():
        assert line.startswith("[rank "), f"an unprefixed line: {line!r}"
        tag, _, rest = line.partition("] ")
        lines[int(tag[len("[rank "):])].append(rest)
    return lines


def _check_ranks(stdout: str, ranks: int, device: str, launcher: str, expected: list) -> None:
    got = _per_rank(stdout, ranks)
    for r in range(ranks):
        head, results = got[r][:2], got[r][2:]
        assert head[0] == f"rank {r} {ranks} {r} {device} {launcher}", head
        assert results == expected, f"rank {r} of {ranks}: the bits differ from the one-process run"


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_cpu_ranks_give_the_one_process_bits(tmp_path, expected, ranks):
    out, _ = _launch(tmp_path, "--ranks", str(ranks), "script.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""
    _check_ranks(out.stdout, ranks, "cpu", "lockstep", expected)
    env = [line for line in out.stdout.splitlines() if "] env " in line]
    assert len(env) == ranks and all(line.endswith("env cpu 0") for line in env), env


@pytest.mark.parametrize("ranks", [1, 2])
def test_gpu_ranks_give_the_one_process_bits(tmp_path, expected, gpu, ranks):
    # Two ranks on a one-GPU machine share it (device data through the rendezvous), on two
    # GPUs they join through NCCL: the same bits either way.
    out, _ = _launch(tmp_path, "--gpus", str(ranks), "script.py")
    assert out.returncode == 0, out.stdout + out.stderr
    _check_ranks(out.stdout, ranks, "gpu", "lockstep", expected)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_open_mpi_variables_without_the_launcher(tmp_path, expected):
    # What `mpirun -n 2 python script.py` gives each process (no MPI library is used).
    (tmp_path / "script.py").write_text(SCRIPT)
    port = str(_free_port())
    procs = [
        subprocess.Popen([sys.executable, "script.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=_env(OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE="2",
                                  OMPI_COMM_WORLD_LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                                  MASTER_PORT=port, LOCKSTEP_DEVICE="cpu"))
        for r in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (stdout, stderr)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, stdout + stderr
        lines = stdout.splitlines()
        assert lines[0] == f"rank {r} 2 {r} cpu Open MPI"
        assert lines[2:] == expected


def test_rank_is_none_outside_a_launch(tmp_path):
    code = """
import lockstep, numpy as np
from lockstep import dist
assert dist.rank() is None
assert dist.rank() is None
try:
    dist.mg_play(11, 3, 2, 5)
except lockstep.LockstepError as e:
    assert "not a rank of a launched run" in str(e), e
else:
    raise AssertionError("mg_play ran outside a launch")
try:
    dist.nbody_run([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]], [1.0], dt=0.1, steps=1)
except TypeError as e:
    assert "pos" in str(e), e
assert dist.finish() is False
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stdout + out.stderr


def test_a_failing_rank_stops_the_others(tmp_path):
    # Ranks 0 and 2 wait (no collective): the launcher itself stops them.
    script = """
import time, lockstep
me = lockstep.dist.rank()
if me["rank"] == 1:
    raise RuntimeError("rank 1 fails on purpose")
time.sleep(120)
"""
    out, secs = _launch(tmp_path, "--ranks", "3", "script.py", script=script, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert secs < 30, f"{secs:.1f} s"
    assert "[rank 1] RuntimeError: rank 1 fails on purpose" in out.stderr.splitlines()
    assert out.stderr.splitlines()[-1] == "error: rank 1 exited with status 1; stopped the other 2 ranks"


def test_a_failing_rank_ends_the_collectives_of_the_others(tmp_path):
    # The others are in a long game's collectives when rank 1 leaves; they learn of its death.
    script = """
import lockstep
me = lockstep.dist.rank()
if me["rank"] == 1:
    raise ValueError("rank 1 fails on purpose")
lockstep.dist.mg_run(101, 3, 2, 40, trials=10**9, groups=6)
"""
    out, secs = _launch(tmp_path, "--ranks", "3", "script.py", script=script, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert secs < 30, f"{secs:.1f} s"
    assert out.stderr.splitlines()[-1] == "error: rank 1 exited with status 1; stopped the other 2 ranks"


def test_a_rank_killed_by_a_signal_and_one_that_ignores_sigterm(tmp_path):
    script = """
import os, signal, time
if os.environ["LOCKSTEP_RANK"] == "0":  # not joined: no watchdog ends it, only the launcher
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(120)
os.kill(os.getpid(), signal.SIGKILL)
"""
    out, secs = _launch(tmp_path, "--ranks", "2", "script.py", script=script, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert 4 < secs < 30, f"{secs:.1f} s: SIGKILL 5 s after SIGTERM"
    last = out.stderr.splitlines()[-1]
    assert last == "error: rank 1 exited with status 137 (signal 9, SIGKILL); stopped the other rank", last


def test_module_form_and_script_arguments(tmp_path):
    (tmp_path / "echo_args.py").write_text("import sys, os\nprint(os.environ['LOCKSTEP_RANK'], sys.argv[1:])\n")
    out, _ = _launch(tmp_path, "--ranks", "2", "-m", "echo_args", "a", "--b")
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(out.stdout.splitlines()) == ["[rank 0] 0 ['a', '--b']", "[rank 1] 1 ['a', '--b']"]


@pytest.mark.parametrize(
    "args",
    [
        ["--ranks", "0", "script.py"],
        [],
        ["--ranks", "2"],
        ["script.py"],
        ["--ranks", "2", "--gpus", "2", "script.py"],
        ["--ranks", "two", "script.py"],
        ["--ranks", "2", "missing.py"],
        ["--ranks", "2", "--verbose", "script.py"],
    ],
)
def test_bad_launcher_arguments_exit_2(tmp_path, args):
    out, _ = _launch(tmp_path, *args, script="print('started')\n", timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("error: "), out.stderr
