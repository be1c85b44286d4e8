"""Checkpoint and resume from Python (issue #25): a call checkpointed mid-way and resumed from
the file equals an uninterrupted call bit for bit (n-body, the Minority Game; also on the GPU,
and GPU → CPU); corrupt and mismatched checkpoints are a ValueError before any work."""

import os

import numpy as np
import pytest

import lockstep


def _same(a, b):
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert (x.view(np.uint8) == y.view(np.uint8)).all()


def _nbody(tmp_path, first_device, then_device, dtype):
    pos, vel, mass = lockstep.nbody.plummer(40, seed=4)
    args = [a.astype(dtype) for a in (pos, vel, mass)]
    kw = dict(dt=2e-3, steps=60, eps=0.02, every=7)
    want = lockstep.nbody.integrate(*args, device="cpu", **kw)
    ck = tmp_path / "nbody.ckpt"
    full = lockstep.nbody.integrate(*args, device=first_device, checkpoint=ck, checkpoint_every=25, **kw)
    _same(full[:2], want[:2])
    assert ck.exists()  # the last checkpoint, at step 50
    rest = lockstep.nbody.integrate(*args, device=then_device, resume=ck, **kw)
    _same(rest[:2], want[:2])
    assert (rest.step == want.step).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nbody_resume_equals_uninterrupted(tmp_path, dtype):
    _nbody(tmp_path, "cpu", "cpu-seq", dtype)


def test_nbody_gpu_checkpoint_resumes_on_cpu(tmp_path, gpu):
    _nbody(tmp_path, "gpu", "cpu", np.float64)
    _nbody(tmp_path, "cpu", "gpu", np.float32)


def _mg(tmp_path, first_device, then_device):
    kw = dict(n=301, m=4, s=2, p=80, trials=5, groups=6, seed=9)
    want = lockstep.mg.run(device="cpu", **kw)
    ck = tmp_path / "mg.ckpt"
    lockstep.mg.run(device=first_device, checkpoint=ck, checkpoint_every=130, **kw)
    rest = lockstep.mg.run(device=then_device, resume=ck, **kw)
    assert rest.checksum == want.checksum
    assert (rest.winners == want.winners).all()


def test_mg_resume_equals_uninterrupted(tmp_path):
    _mg(tmp_path, "cpu", "cpu-seq")


def test_mg_gpu_checkpoint_resumes_on_cpu(tmp_path, gpu):
    _mg(tmp_path, "gpu", "cpu")
    _mg(tmp_path, "cpu", "gpu")


def test_bad_checkpoints_are_value_errors(tmp_path):
    kw = dict(n=101, m=3, s=2, p=40, trials=3, seed=1)
    ck = tmp_path / "x.ckpt"
    lockstep.mg.run(device="cpu", checkpoint=ck, checkpoint_every=50, **kw)
    with pytest.raises(ValueError, match="seed = 1 there, 2 here"):
        lockstep.mg.run(device="cpu", resume=ck, **{**kw, "seed": 2})
    data = bytearray(ck.read_bytes())
    data[-12] ^= 1
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        lockstep.mg.run(device="cpu", resume=bad, **kw)
    short = tmp_path / "short.ckpt"
    short.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(ValueError, match="truncated"):
        lockstep.mg.run(device="cpu", resume=short, **kw)
    with pytest.raises(ValueError, match="checkpoint_every"):
        lockstep.mg.run(device="cpu", checkpoint_every=5, **kw)
    with pytest.raises(ValueError, match="resume"):
        lockstep.mg.run(device="cpu", resume=os.fspath(tmp_path / "none.ckpt"), **kw)
    pos, vel, mass = lockstep.nbody.plummer(4, seed=1)
    with pytest.raises(ValueError, match="not of `nbody`"):
        lockstep.nbody.integrate(pos, vel, mass, dt=1e-3, steps=5, resume=ck)
