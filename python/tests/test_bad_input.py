"""Bad input from Python: each refusal's exception type and message (naming the argument)."""

import numpy as np
import pytest

import lockstep
from lockstep.bridge import Plan
from lockstep.histogram import histogram


def test_wrong_dtype_is_a_type_error():
    with pytest.raises(TypeError, match=r"values: dtype float32 is not float64"):
        histogram(np.zeros(10, dtype=np.float32), 4, (0.0, 1.0))
    with pytest.raises(TypeError, match=r"values: expected a numpy.ndarray, got list"):
        histogram([0.1, 0.2], 4, (0.0, 1.0))
    plan = Plan.uniform(4)
    with pytest.raises(TypeError, match=r"source: dtype float64 is not float32"):
        plan.generate(3, source=np.zeros((4, 1, 3)), precision="f32")
    with pytest.raises(TypeError, match=r"vel: dtype float32 is not float64"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3), np.float32), np.ones(2), dt=0.1, steps=1)
    with pytest.raises(TypeError, match=r"b: dtype int32 is not int64"):
        lockstep.matmul.multiply(np.zeros((2, 2), np.int64), np.zeros((2, 2), np.int32))
    with pytest.raises(TypeError, match=r"pos: dtype float64 does not match precision='f32'"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), dt=0.1, steps=1, precision="f32")
    with pytest.raises(TypeError, match=r"paths: expected an int, got float"):
        plan.generate(3.0)


def test_non_contiguous_is_refused_not_copied():
    x = np.zeros(20)[::2]
    with pytest.raises(ValueError, match=r"values: not C-contiguous"):
        histogram(x, 4, (0.0, 1.0))
    pos = np.zeros((3, 6))[:, :3]
    with pytest.raises(ValueError, match=r"pos: not C-contiguous"):
        lockstep.nbody.integrate(pos, np.zeros((3, 3)), np.ones(3), dt=0.1, steps=1)
    a = np.asfortranarray(np.arange(9, dtype=np.int64).reshape(3, 3))
    with pytest.raises(ValueError, match=r"a: not C-contiguous"):
        lockstep.matmul.multiply(a, a)


def test_wrong_shape_names_the_argument():
    plan = Plan.uniform(4)
    with pytest.raises(ValueError, match=r"source: shape \(4, 1, 5\), expected \(4, 1, 3\)"):
        plan.generate(3, source=np.zeros((4, 1, 5), np.float32))
    with pytest.raises(ValueError, match=r"mass: shape \(3,\), expected \(2,\)"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(3), dt=0.1, steps=1)
    with pytest.raises(ValueError, match=r"pos: 1-dimensional, expected 2 dimensions"):
        lockstep.nbody.integrate(np.zeros(6), np.zeros((2, 3)), np.ones(2), dt=0.1, steps=1)
    with pytest.raises(ValueError, match=r"values: 2-dimensional"):
        histogram(np.zeros((2, 2)), 4, (0.0, 1.0))
    with pytest.raises(ValueError, match=r"weights: shape \(3,\), expected \(4,\)"):
        histogram(np.zeros(4), 4, (0.0, 1.0), weights=np.ones(3), counters="fixed")
    with pytest.raises(ValueError, match=r"cov: shape \(2, 3\), expected a square"):
        Plan.uniform(4, cov=np.ones((2, 3)))


def test_nan_is_refused_with_the_rust_message():
    with pytest.raises(ValueError, match=r"invalid .*time"):
        Plan([0.25, float("nan"), 0.75], 1.0)
    with pytest.raises(ValueError, match=r"range\[1\]: nan is not finite"):
        histogram(np.zeros(3), 4, (0.0, float("nan")))
    pos = np.zeros((2, 3))
    pos[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"invalid position"):
        lockstep.nbody.integrate(pos, np.zeros((2, 3)), np.ones(2), dt=0.1, steps=1)
    with pytest.raises(ValueError, match=r"dt: nan is not finite"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), dt=float("nan"), steps=1)
    with pytest.raises(ValueError, match=r"invalid weights: weight 1 is NaN, not finite"):
        histogram(np.zeros(3), 4, (0.0, 1.0), weights=np.array([1.0, np.nan, 1.0]), counters="fixed")


def test_rust_validation_messages_come_through():
    with pytest.raises(ValueError, match=r"not positive definite|positive definite"):
        Plan.uniform(4, cov=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match=r"construction order: entry 1 repeats time index 1"):
        Plan([1.0, 2.0, 3.0], 4.0, order=[1, 1, 2])
    with pytest.raises(ValueError, match=r"agent count n: n = 10 is even"):
        lockstep.mg.run(n=10, m=2, s=2, p=5)
    with pytest.raises(ValueError, match=r"group count: 9 groups for n = 5"):
        lockstep.mg.run(n=5, m=2, s=2, p=5, groups=9)
    with pytest.raises(ValueError, match=r"Himeno size: no size named \"XXL\""):
        lockstep.himeno.run("XXL", 1)
    with pytest.raises(ValueError, match=r"size\[0\]: 2 is below 3"):
        lockstep.himeno.run((2, 9, 9), 1)
    with pytest.raises(ValueError, match=r"fast mode runs on the GPU only"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), dt=0.1, steps=1, mode="fast", device="cpu")


def test_negative_sizes():
    with pytest.raises(ValueError, match=r"paths: -1 is negative"):
        Plan.uniform(4).generate(-1)
    with pytest.raises(ValueError, match=r"bins: 0 is below 1"):
        histogram(np.zeros(3), 0, (0.0, 1.0))
    with pytest.raises(ValueError, match=r"steps: -5 is negative"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), dt=0.1, steps=-5)
    with pytest.raises(ValueError, match=r"sweeps: -1 is negative"):
        lockstep.himeno.run("XS", -1)
    with pytest.raises(ValueError, match=r"trials: 0 is below 1"):
        lockstep.mg.run(n=5, m=2, s=2, p=5, trials=0)
    with pytest.raises(ValueError, match=r"mass"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.array([1.0, -1.0]), dt=0.1, steps=1)


def test_huge_sizes_are_refused_before_allocating():
    plan = Plan.uniform(64, dims=2)
    with pytest.raises(MemoryError, match=r"the output \(\(N\+1\)·d·paths values\) would need \d+ bytes.*refused before allocating"):
        plan.generate(2**32 - 1, precision="f64")
    with pytest.raises(ValueError, match=r"paths is 4294967296, but at most 4294967295"):
        Plan.uniform(2).generate(2**32)
    with pytest.raises(ValueError, match=r"paths: 18446744073709551616 is too large"):
        plan.generate(2**64)
    with pytest.raises(MemoryError, match=r"the trajectory .* refused before allocating"):
        lockstep.nbody.integrate(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), dt=0.1, steps=2**62, every=1)
    with pytest.raises(MemoryError, match=r"the Himeno grid .* refused before allocating"):
        lockstep.himeno.run((4096, 4096, 4096), 1)
    with pytest.raises(ValueError, match=r"trace: .* traces are for small games"):
        lockstep.mg.run(n=10**7 + 1, m=2, s=2, p=1000, trace=True)
    with pytest.raises(ValueError, match=r"matrix size N is 70000, but at most 65535|n: 70000 is too large"):
        lockstep.matmul.model(70000)


def test_bad_choices():
    with pytest.raises(ValueError, match=r"device: 'tpu' is not one of"):
        histogram(np.zeros(3), 4, (0.0, 1.0), device="tpu")
    with pytest.raises(ValueError, match=r"source: 'mersenne' is not one of 'philox', 'philox-bm', 'sobol'"):
        Plan.uniform(4).generate(3, source="mersenne")
    with pytest.raises(ValueError, match=r"precision: 'f16'"):
        Plan.uniform(4).generate(3, precision="f16")
    with pytest.raises(ValueError, match=r"gosa: 'avg'"):
        lockstep.himeno.run("XS", 1, gosa="avg")
    with pytest.raises(ValueError, match=r"range: lo = 1.0 is not below hi = 0.0"):
        histogram(np.zeros(3), 4, (1.0, 0.0))


def test_inputs_are_borrowed_not_copied_and_not_modified():
    pos, vel, mass = lockstep.nbody.plummer(16, seed=1)
    before = pos.copy()
    lockstep.nbody.integrate(pos, vel, mass, dt=1e-3, steps=3)
    assert np.array_equal(pos, before)
    z = np.random.default_rng(0).standard_normal((4, 1, 8)).astype(np.float32)
    x = Plan.uniform(4).generate(8, source=z)
    assert x.flags.c_contiguous and x.flags.writeable
