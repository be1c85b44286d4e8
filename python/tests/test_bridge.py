import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lockstep
from lockstep.bridge import Plan


def bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def test_covariance_across_paths_is_sigma_min_s_t():
    sigma = np.array([[1.0, 0.6], [0.6, 2.0]])
    plan = Plan.uniform(8, t_end=2.0, cov=sigma)
    x = plan.generate(200_000, seed=3, precision="f64", device="cpu")
    assert x.shape == (8, 2, 200_000) and x.dtype == np.float64
    t = plan.grid[1:]
    for a, b in [(0, 0), (3, 7), (7, 7), (2, 5)]:
        got = np.cov(x[a], x[b])[:2, 2:]  # cov(X_{t_a}, X_{t_b}) between the d components
        want = sigma * min(t[a], t[b])
        assert np.allclose(got, want, atol=0.03 * max(t[a], t[b])), (a, b, got, want)
    assert np.allclose(x[-1].mean(axis=1), 0, atol=0.02)


def test_increments_are_scaled_differences():
    plan = Plan.uniform(16, dims=1)
    x = plan.generate(1000, seed=5, precision="f64")
    dx = plan.generate(1000, seed=5, precision="f64", output="increments")
    dt = np.diff(plan.grid)
    first = np.concatenate([np.zeros((1, 1, 1000)), x[:-1]])
    assert np.allclose(dx, (x - first) / dt[:, None, None], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("source", ["philox", "sobol"])
def test_cpu_threads_equal_one_thread(precision, source):
    plan = Plan.uniform(33, cov=[[2.0, 0.3], [0.3, 1.0]], order="forward")
    a = plan.generate(5000, source=source, seed=9, precision=precision, device="cpu")
    b = plan.generate(5000, source=source, seed=9, precision=precision, device="cpu-seq")
    assert (bits(a) == bits(b)).all()


def test_buffer_source_used_in_place_and_both_shapes():
    plan = Plan([0.25, 0.5, 0.75], 1.0)
    z = np.random.default_rng(0).standard_normal((4, 1, 10))
    a = plan.generate(10, source=z, precision="f64")
    b = plan.generate(10, source=z.reshape(4, 10), precision="f64")
    assert (bits(a) == bits(b)).all()
    # X_T = sqrt(T)·Z_0 for a standard motion from 0
    assert np.array_equal(a[-1, 0], z[0, 0])


def test_custom_order_and_start():
    plan = Plan([1.0, 2.0, 3.0], 4.0, order=[2, 1, 3], start=[1.5], chol=[[2.0]], t0=0.5)
    assert plan.order == [2, 1, 3] and plan.dims == 1 and plan.steps == 4
    x = plan.generate(3, seed=1)
    assert x.shape == (4, 1, 3) and np.isfinite(x).all()


def _cli():
    exe = os.environ.get("LOCKSTEP_CLI")
    if exe:
        return exe
    root = Path(__file__).resolve().parents[2]
    for p in (root / "target/debug/lockstep", root / "target/release/lockstep"):
        if p.exists():
            return str(p)
    return shutil.which("lockstep")


@pytest.mark.parametrize("precision,order,increments", [("f32", "bisection", False), ("f64", "forward", True)])
def test_bit_identical_to_the_cli_npy(tmp_path, precision, order, increments):
    exe = _cli()
    if exe is None:
        pytest.skip("no lockstep CLI binary (set LOCKSTEP_CLI or build lockstep-cli)")
    helptext = subprocess.run([exe, "bridge", "--help"], capture_output=True, text=True, check=True).stdout
    flags = ["--paths", "--steps", "--dims", "--precision", "--source", "--seed", "--out", "--order"]
    missing = [f for f in flags if f not in helptext]
    assert not missing, f"`lockstep bridge` lost the flags {missing}; update this test"
    cov = tmp_path / "sigma.txt"
    cov.write_text("1.0 0.3\n0.3 0.5\n")
    out = tmp_path / "x.npy"
    args = [exe, "bridge", "--paths", "777", "--steps", "17", "--dims", "2", "--precision", precision,
            "--source", "philox", "--seed", "42", "--order", order, "--out", str(out)]
    if "--cov" in helptext:
        args += ["--cov", str(cov)]
    if increments:
        args.append("--increments")
    if "--cpu" in helptext:
        args.append("--cpu")
    env = dict(os.environ)
    subprocess.run(args, check=True, capture_output=True, env=env)
    want = np.load(out)
    sigma = [[1.0, 0.3], [0.3, 0.5]] if "--cov" in helptext else None
    plan = Plan.uniform(17, dims=2, order=order, cov=sigma)
    got = plan.generate(777, seed=42, precision=precision, output="increments" if increments else "paths", device="cpu")
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (bits(got) == bits(want)).all()


def test_gpu_equals_cpu(gpu):
    for precision in ("f32", "f64"):
        for source in ("philox", "sobol"):
            plan = Plan.uniform(64, cov=[[1.0, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 1.0]])
            a = plan.generate(4099, source=source, seed=11, precision=precision, device="cpu")
            b = plan.generate(4099, source=source, seed=11, precision=precision, device="gpu")
            assert (bits(a) == bits(b)).all(), (precision, source)
    z = np.random.default_rng(2).standard_normal((64, 1, 1001)).astype(np.float32)
    plan = Plan.uniform(64)
    a = plan.generate(1001, source=z, precision="f32", output="increments", device="cpu")
    b = plan.generate(1001, source=z, precision="f32", output="increments", device="gpu")
    assert (bits(a) == bits(b)).all()


@pytest.mark.parametrize("source", ["philox", "philox-bm", "sobol"])
def test_chunks_equal_one_shot(source):
    plan = Plan.uniform(16, t_end=1.0, cov=[[1.0, 0.3], [0.3, 2.0]])
    whole = plan.generate(1000, source=source, seed=11, precision="f32", device="cpu")
    parts = [plan.generate(n, source=source, seed=11, precision="f32", device="cpu", first=f)
             for f, n in ((0, 333), (333, 333), (666, 334))]
    assert np.array_equal(bits(np.concatenate(parts, axis=2)), bits(whole))


@pytest.mark.parametrize("source", ["philox", "philox-bm", "sobol"])
def test_chunks_on_the_gpu_equal_the_cpu(gpu, source):
    plan = Plan.uniform(16, t_end=1.0)
    for precision in ("f32", "f64"):
        want = plan.generate(500, source=source, seed=5, precision=precision, device="cpu", first=700)
        got = plan.generate(500, source=source, seed=5, precision=precision, device="gpu", first=700)
        assert np.array_equal(bits(got), bits(want))


def test_first_past_the_last_path_is_refused():
    plan = Plan.uniform(4)
    with pytest.raises(ValueError, match="first"):
        plan.generate(10, first=2**32 - 5, device="cpu")
