"""Ctrl-C during a long CPU run is honoured within a second (`_thread.interrupt_main` raises
the same KeyboardInterrupt a terminal's SIGINT does)."""

import _thread
import signal
import threading
import time

import numpy as np
import pytest

import lockstep


def interrupted_within(seconds, fn):
    # Python's own Ctrl-C handler, as in a terminal: a process started in the background without
    # job control (`cmd &` in a script, `nohup`) inherits SIGINT ignored, and then
    # `interrupt_main` does nothing and the run would go on for hours.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    t = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fn()
            time.sleep(5)  # the call finished first: wait for the interrupt so it is not stray
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    elapsed = time.perf_counter() - t
    assert elapsed < 0.3 + seconds, f"took {elapsed:.2f} s"


def test_ctrl_c_stops_himeno():
    interrupted_within(1.0, lambda: lockstep.himeno.run("M", 100_000, device="cpu"))


def test_ctrl_c_stops_nbody():
    pos, vel, mass = lockstep.nbody.plummer(2000, seed=1)
    interrupted_within(1.0, lambda: lockstep.nbody.integrate(pos, vel, mass, dt=1e-4, steps=10**9, energy=False, device="cpu"))


def test_ctrl_c_stops_bridge_between_blocks():
    plan = lockstep.bridge.Plan.uniform(64)
    interrupted_within(1.0, lambda: [plan.generate(2_000_000, precision="f32", device="cpu") for _ in range(100)])


def test_ctrl_c_stops_mg():
    interrupted_within(1.0, lambda: lockstep.mg.run(n=2001, m=8, s=4, p=500, trials=10**6, device="cpu"))


def test_ctrl_c_stops_histogram():
    x = np.random.default_rng(0).normal(size=4_000_000)
    interrupted_within(1.0, lambda: [lockstep.histogram.histogram(x, 10, (-1.0, 1.0), device="cpu") for _ in range(10**4)])
