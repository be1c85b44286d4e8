import os
import numpy as np
import pytest

import lockstep


def bits(a):
    return a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


# ---- matmul: the model matrix's product against its closed form ----
def closed_form(n):
    # C(r, c) = Σ_k (r + k + 1)(k + c + 1), k = 0..n-1
    r = np.arange(n, dtype=object)[:, None]
    c = np.arange(n, dtype=object)[None, :]
    s0, s1, s2 = n, n * (n - 1) // 2, (n - 1) * n * (2 * n - 1) // 6
    return (r + 1) * (c + 1) * s0 + (r + c + 2) * s1 + s2


@pytest.mark.parametrize("n", [1, 2, 17, 64])
def test_integer_model_product_equals_closed_form(n):
    a = lockstep.matmul.model(n)
    assert np.array_equal(a, np.add.outer(np.arange(n), np.arange(n)) + 1)
    c = lockstep.matmul.multiply(a, a, device="cpu")
    assert np.array_equal(c.astype(object), closed_form(n))
    assert np.array_equal(c, a @ a)


def test_matmul_int32_wraps_like_numpy():
    a = np.random.default_rng(1).integers(-(2**31), 2**31, size=(33, 33), dtype=np.int32)
    assert np.array_equal(lockstep.matmul.multiply(a, a), a @ a)


# ---- himeno ----
def test_himeno_threads_equal_one_thread_and_chunks():
    p, g = lockstep.himeno.run("XS", 5, device="cpu")
    q, h = lockstep.himeno.run("XS", 5, device="cpu-seq")
    assert p.shape == lockstep.himeno.grid("XS") and p.dtype == np.float32
    assert (bits(p) == bits(q)).all() and np.float32(g) == np.float32(h)


def test_himeno_one_sweep_against_numpy():
    mi, mj, mk = 9, 9, 17
    p1, _ = lockstep.himeno.run((mi, mj, mk), 1, device="cpu")
    p0, _ = lockstep.himeno.run((mi, mj, mk), 0, device="cpu")
    # The benchmark's coefficients: a = (1, 1, 1, 1/6), b = 0, c = 1, bnd = 1, wrk1 = 0, ω = 0.8
    p = p0.astype(np.float64)
    s0 = (p[2:, 1:-1, 1:-1] + p[1:-1, 2:, 1:-1] + p[1:-1, 1:-1, 2:] + p[:-2, 1:-1, 1:-1] + p[1:-1, :-2, 1:-1]
          + p[1:-1, 1:-1, :-2])
    ss = (s0 * (1 / 6) - p[1:-1, 1:-1, 1:-1])
    want = p[1:-1, 1:-1, 1:-1] + 0.8 * ss
    assert np.allclose(p1[1:-1, 1:-1, 1:-1], want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(p1[0], p0[0]) and np.array_equal(p1[:, 0], p0[:, 0])


def test_himeno_gpu_equals_cpu(gpu):
    p, g = lockstep.himeno.run("S", 7, device="cpu")
    q, h = lockstep.himeno.run("S", 7, device="gpu")
    assert (bits(p) == bits(q)).all() and np.float32(g).view(np.uint32) == np.float32(h).view(np.uint32)


# ---- nbody ----
def test_nbody_two_body_circular_orbit_against_numpy():
    pos = np.array([[-0.5, 0, 0], [0.5, 0, 0]], dtype=np.float64)
    v = np.sqrt(1.0 / 2.0) / 1.0 * 0.5 ** 0.5  # circular: v² = G m_other / (4 r)… with m = 1, d = 1
    v = 0.5 ** 0.5
    vel = np.array([[0, -v, 0], [0, v, 0]], dtype=np.float64)
    mass = np.array([1.0, 1.0])
    t = lockstep.nbody.integrate(pos, vel, mass, dt=1e-3, steps=1000, every=100, device="cpu")
    assert t.pos.shape == (11, 2, 3) and list(t.step) == list(range(0, 1001, 100))
    r = np.linalg.norm(t.pos[:, 0] - t.pos[:, 1], axis=1)
    assert np.allclose(r, 1.0, atol=1e-6)
    assert np.allclose(t.energy, -0.5, atol=1e-9)  # ½·2·v²... − 1 = 0.5 − 1
    assert np.array_equal(t.pos[0], pos)


def test_nbody_every_does_not_change_bits_and_threads_agree():
    pos, vel, mass = lockstep.nbody.plummer(100, seed=3)
    pos32, vel32, mass32 = pos.astype(np.float32), vel.astype(np.float32), mass.astype(np.float32)
    a = lockstep.nbody.integrate(pos32, vel32, mass32, dt=1e-3, steps=20, eps=0.01, device="cpu")
    b = lockstep.nbody.integrate(pos32, vel32, mass32, dt=1e-3, steps=20, eps=0.01, every=3, device="cpu-seq")
    assert a.pos.dtype == np.float32
    assert (bits(a.pos[-1]) == bits(b.pos[-1])).all() and (bits(a.vel[-1]) == bits(b.vel[-1])).all()
    assert b.pos.shape[0] == 1 + 7


def test_nbody_gpu_exact_equals_cpu(gpu):
    pos, vel, mass = lockstep.nbody.plummer(1000, seed=5)
    for dtype in (np.float32, np.float64):
        args = (pos.astype(dtype), vel.astype(dtype), mass.astype(dtype))
        a = lockstep.nbody.integrate(*args, dt=1e-3, steps=5, eps=0.01, device="cpu")
        b = lockstep.nbody.integrate(*args, dt=1e-3, steps=5, eps=0.01, device="gpu")
        assert (bits(a.pos) == bits(b.pos)).all() and (bits(a.vel) == bits(b.vel)).all()
    f = lockstep.nbody.integrate(*args, dt=1e-3, steps=5, eps=0.01, mode="fast", device="gpu")
    assert np.allclose(f.pos, a.pos, atol=1e-10 * np.abs(a.pos).max())


# ---- mg ----
def test_mg_trace_matches_the_ratio_and_threads_agree():
    r = lockstep.mg.run(n=101, m=3, s=2, p=50, trials=6, groups=4, seed=2, trace=True, device="cpu")
    q = lockstep.mg.run(n=101, m=3, s=2, p=50, trials=6, groups=4, seed=2, device="cpu-seq")
    assert np.array_equal(bits(r.ratio), bits(q.ratio)) and r.checksum == q.checksum
    assert np.array_equal(r.ratio, r.winners / (101 * 6))
    one = lockstep.mg.run(n=101, m=3, s=2, p=50, trials=1, groups=4, seed=2)
    ones = one.trace if one.trace is not None else r.trace
    # Winners are the minority: n − max(ones, n − ones)… the trace's winners for trial 0
    w = np.minimum(r.trace["ones"], 101 - r.trace["ones"])
    assert np.array_equal(r.trace["winners"], w)
    assert np.array_equal(one.winners, r.trace["winners"])
    assert (r.ratio < 0.5).all()


def test_mg_checksum_is_the_clis_fold():
    r = lockstep.mg.run(n=21, m=2, s=2, p=30, trials=3, seed=5)
    h = 0
    for v in r.winners.tolist():
        h = ((h << 7) | (h >> 57)) & (2**64 - 1)
        h ^= v
    assert h == r.checksum


def test_mg_gpu_equals_cpu(gpu):
    a = lockstep.mg.run(n=1001, m=5, s=2, p=200, trials=8, groups=8, seed=3, device="cpu")
    b = lockstep.mg.run(n=1001, m=5, s=2, p=200, trials=8, groups=8, seed=3, device="gpu")
    assert np.array_equal(bits(a.ratio), bits(b.ratio)) and a.checksum == b.checksum


def test_gpu_info_and_matmul_gpu(gpu):
    assert gpu["available"] and gpu["name"]
    # the loaded image: the cubin of the device's architecture, or the PTX (forced or fallback)
    assert gpu["module"] in ("sm_70 PTX", "sm_80 cubin", "sm_90 cubin"), gpu["module"]
    if os.environ.get("LOCKSTEP_MODULE") == "ptx":
        assert gpu["module"] == "sm_70 PTX"
    assert gpu["module_load_ms"] >= 0
    a = lockstep.matmul.model(100)
    assert np.array_equal(lockstep.matmul.multiply(a, a, device="gpu"), lockstep.matmul.multiply(a, a, device="cpu"))


def test_gpu_info_without_gpu_names_the_reason():
    info = lockstep.gpu_info()
    assert info["ptx_arch"].startswith("sm_") and info["kernels"] > 0
    if not info["available"]:
        assert info["reason"]
        with pytest.raises(lockstep.GpuUnavailableError, match="no CUDA"):
            lockstep.histogram.histogram(np.zeros(3), 2, (0.0, 1.0), device="gpu")
