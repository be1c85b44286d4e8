#!/usr/bin/env python3
"""Fits the generators' inverse normal CDF (crates/shared/src/bridge/normal.rs) and prints
the coefficient tables as Rust, with the achieved maximum errors.

The generators map a 32-bit word to the nearer half, m = w or !w (m < 2^31), with the uniform
u = (m + 1/2)/2^32 in [2^-33, 1/2). With x = 1 - 2u and v = -log(4u(1 - u)) = -log(1 - x^2),

    Phi^-1(u) = -sqrt(2) erfinv(x) = -x * h(v),    h(v) = sqrt(2) erfinv(x) / x,

and h is a smooth, slowly growing function of v on [0, VMAX], VMAX = -log(4 * 2^-33 (1 - 2^-33))
~ 21.49 (the whole domain of 32-bit words). h is approximated by

    region 1 (v < V1):  a polynomial in (v - C1),
    region 2 (v >= V1): a polynomial in (sqrt(v) - C2),

with coefficients that minimise the maximum relative error (Lawson's iteratively reweighted
least squares on Chebyshev nodes, at 50 digits, against mpmath's erfinv). Each precision (f32,
f64) has its own degrees and split. The logarithm is normal.rs's own, division- and
branch-free (ln_f32, ln_f64): y = 2^k f with f in [sqrt(1/2), sqrt(2)), t = f - 1,
log y = k log 2 + t + t^2 R(t), R fitted here the same way (printed as LN_F32_* / LN_F64_*).
The script then rounds the coefficients to the target precision and emulates the Rust
evaluation (`mul_add` Horner, which is fused and correctly rounded on CPU and GPU; exactly in
f64, with a rare double rounding in the f32 emulation) on a sample of words, reporting the
maximum relative error of the final normal against mpmath's Phi^-1 at high precision.
Paste the output verbatim into normal.rs (after its comment naming this script).

Usage: python3 scripts/fit_inverse_normal.py [--quick]
Needs numpy and mpmath (pip install --user numpy mpmath).
"""

import sys
from fractions import Fraction

import mpmath as mp
import numpy as np

mp.mp.dps = 50

TWO32 = mp.mpf(2) ** 32
VMAX = -mp.log(4 * mp.mpf(2) ** -33 * (1 - mp.mpf(2) ** -33))

# (degree of region 1, V1, degree of region 2) per precision; C1 and C2 are interval centres.
# The f32 path's own logarithm: log(1 + t) = t + t^2 R(t) on t in [sqrt(1/2) - 1, sqrt(2) - 1],
# R a polynomial of this degree in (t - LN_C).
LOG_DEGREE = {"f32": 7, "f64": 18}
LOG_T = {
    "f32": (mp.mpf("-0.29289323"), mp.mpf("0.41421357")),
    "f64": (mp.mpf("-0.29289321881345254"), mp.mpf("0.41421356237309515")),
}

CONFIG = {
    "f32": dict(deg1=9, v1=mp.mpf(6), deg2=9),
    "f64": dict(deg1=21, v1=mp.mpf(6), deg2=22),
}


def h(v):
    """sqrt(2) erfinv(x)/x with 1 - x^2 = exp(-v)."""
    v = mp.mpf(v)
    if v == 0:
        return mp.sqrt(mp.pi / 2)
    x = mp.sqrt(-mp.expm1(-v))
    return mp.sqrt(2) * mp.erfinv(x) / x


def fit(f, a, b, deg, iters=40):
    """Near-minimax relative-error polynomial fit of f on [a, b]: coefficients of (t - c)^k, c."""
    c = (a + b) / 2
    r = (b - a) / 2
    n = 4 * (deg + 1)
    # Chebyshev extrema-like nodes including the endpoints.
    ss = [mp.cos(mp.pi * i / (n - 1)) for i in range(n)]
    ts = [c + r * s for s in ss]
    fs = [f(t) for t in ts]
    rows = [[s**k for k in range(deg + 1)] for s in ss]
    w = [mp.mpf(1)] * n
    coef = None
    for _ in range(iters):
        # weighted least squares on the relative error: min sum w_i ((p(s_i) - f_i)/f_i)^2
        A = mp.matrix(n, deg + 1)
        y = mp.matrix(n, 1)
        for i in range(n):
            sw = mp.sqrt(w[i]) / fs[i]
            for k in range(deg + 1):
                A[i, k] = rows[i][k] * sw
            y[i] = fs[i] * sw
        coef, _ = mp.qr_solve(A, y)
        errs = [abs(sum(coef[k] * rows[i][k] for k in range(deg + 1)) / fs[i] - 1) for i in range(n)]
        tot = sum(w[i] * errs[i] for i in range(n))
        w = [w[i] * errs[i] / tot for i in range(n)]
    # back to powers of (t - c)
    return [coef[k] / r**k for k in range(deg + 1)], c, r


def fit_error(f, coef, c, a, b, samples=2000):
    worst = mp.mpf(0)
    for i in range(samples + 1):
        t = a + (b - a) * i / samples
        p = mp.mpf(0)
        for ck in reversed(coef):
            p = p * (t - c) + ck
        worst = max(worst, abs(p / f(t) - 1))
    return worst


def fma64(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def fma32(a, b, c):
    # f32 operands: the product is exact in f64 (48 bits); the sum is rounded to f64 and then
    # to f32 (a double rounding that can differ from the GPU in rare ties: an estimate only).
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


def eval64(m, t1, t2, lnc=None, lnr=None):
    """The f64 generator path of normal.rs for the nearer-half word m, emulated."""
    import math

    (c1, v1, k1), (c2, k2) = t1, t2
    u4 = (m + 0.5) * 2.0**-30  # 4u, exact
    q = 1.0 - (m + 0.5) * 2.0**-32  # 1 - u, exact
    v = -ln64(u4 * q, lnc, lnr)
    x = float((2**32 - 1 - 2 * m)) * 2.0**-32
    if v < v1:
        t = v - c1
        k = k1
    else:
        t = math.sqrt(v) - c2
        k = k2
    p = k[-1]
    for ck in reversed(k[:-1]):
        p = fma64(p, t, ck)
    return -(x * p)


def r_log(t):
    """(log(1 + t) - t)/t^2, the part of log1p that ln_f32 approximates."""
    t = mp.mpf(t)
    return mp.mpf(-0.5) if t == 0 else (mp.log1p(t) - t) / t**2


def ln32(y, lnc, lnr):
    """ln_f32 of normal.rs, emulated: y = 2^k f, f in [sqrt(1/2), sqrt(2)), t = f - 1 exact."""
    bits = int(np.array([y], dtype=np.float32).view(np.uint32)[0])
    k = ((bits - 0x3F3504F3) & 0xFFFFFFFF)
    k = (k - (1 << 32) if k >= 1 << 31 else k) >> 23
    f = np.array([(bits - (k << 23)) & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]
    t = f - np.float32(1)
    tc = t - lnc
    p = lnr[-1]
    for ck in reversed(lnr[:-1]):
        p = fma32(p, tc, ck)
    return fma32(np.float32(k), LN2_F32, fma32(t * t, p, t))


LN2_F32 = np.float32(0.6931471805599453)
LN2_HI = 0.6931471805599453
LN2_LO = float(mp.log(2) - mp.mpf(LN2_HI))


def ln64(y, lnc, lnr):
    """ln_f64 of normal.rs, emulated exactly (fma through exact rationals)."""
    import struct

    bits = struct.unpack("<Q", struct.pack("<d", y))[0]
    k = (bits - 0x3FE6A09E667F3BCD) & ((1 << 64) - 1)
    k = (k - (1 << 64) if k >= 1 << 63 else k) >> 52
    f = struct.unpack("<d", struct.pack("<Q", (bits - (k << 52)) & ((1 << 64) - 1)))[0]
    t = f - 1.0
    tc = t - lnc
    p = lnr[-1]
    for ck in reversed(lnr[:-1]):
        p = fma64(p, tc, ck)
    kf = float(k)
    return fma64(kf, LN2_HI, fma64(kf, LN2_LO, fma64(t * t, p, t)))


def eval32(m, t1, t2, lnc, lnr):
    """The f32 generator path, emulated in numpy float32."""
    f = np.float32
    (c1, v1, k1), (c2, k2) = t1, t2
    a = f(2 * m + 1)  # rounded to 24 bits
    u4 = a * f(2.0**-31)
    q = f(1) - a * f(2.0**-33)
    v = -ln32(u4 * q, lnc, lnr)
    x = f(2**32 - 1 - 2 * m) * f(2.0**-32)
    if v < v1:
        t = v - c1
        k = k1
    else:
        t = np.sqrt(v) - c2
        k = k2
    p = k[-1]
    for ck in reversed(k[:-1]):
        p = fma32(p, t, ck)
    return -(x * p)


def exact(m):
    u = (mp.mpf(m) + mp.mpf(1) / 2) / TWO32
    return -mp.sqrt(2) * mp.erfinv(1 - 2 * u)


def sample_words(n):
    ws = set(int(x) for x in np.linspace(0, 2**31 - 1, n))
    ws |= set(int(x) for x in np.unique(np.geomspace(1, 2**31 - 1, n).astype(np.int64)))
    ws |= {0, 1, 2, 3, 2**31 - 1, 2**31 - 2}
    return sorted(ws)


def main():
    quick = "--quick" in sys.argv
    words = sample_words(400 if quick else 3000)
    for prec, cfg in CONFIG.items():
        up = prec.upper()
        lo, hi = LOG_T[prec]
        kr, lnc_mp, _ = fit(r_log, lo, hi, LOG_DEGREE[prec])
        er = mp.mpf(0)
        for i in range(2001):
            t = lo + (hi - lo) * i / 2000
            p = mp.mpf(0)
            for ck in reversed(kr):
                p = p * (t - lnc_mp) + ck
            er = max(er, abs((p - r_log(t)) * t * t))
        if prec == "f32":
            lnc = np.float32(float(lnc_mp))
            lnr = [np.float32(float(z)) for z in kr]
            fmt = lambda z: str(np.float32(z))
        else:
            lnc = float(lnc_mp)
            lnr = [float(z) for z in kr]
            fmt = lambda z: repr(float(z))
        print(f"// {prec} log: log(1 + t) - t = t^2 R(t), t in [{float(lo)}, {float(hi)}], R of degree "
              f"{LOG_DEGREE[prec]} in t - LN_{up}_C: absolute error of log(1 + t) {float(er):.3e}")
        print(f"const LN_{up}_C: {prec} = {fmt(lnc)};")
        print(f"const LN_{up}_R: [{prec}; {len(lnr)}] = [")
        for z in lnr:
            print(f"    {fmt(z)},")
        print("];")
        deg1, v1, deg2 = cfg["deg1"], cfg["v1"], cfg["deg2"]
        k1, c1, _ = fit(h, mp.mpf(0), v1, deg1)
        e1 = fit_error(h, k1, c1, mp.mpf(0), v1)
        g = lambda t: h(t * t)
        k2, c2, _ = fit(g, mp.sqrt(v1), mp.sqrt(VMAX), deg2)
        e2 = fit_error(g, k2, c2, mp.sqrt(v1), mp.sqrt(VMAX))
        tofl = (lambda z: float(np.float32(float(z)))) if prec == "f32" else float
        r1 = [tofl(z) for z in k1]
        r2 = [tofl(z) for z in k2]
        t1 = (tofl(c1), tofl(v1), r1)
        t2 = (tofl(c2), r2)
        if prec == "f32":
            t1 = (np.float32(t1[0]), np.float32(t1[1]), [np.float32(z) for z in r1])
            t2 = (np.float32(t2[0]), [np.float32(z) for z in r2])
        ev = eval32 if prec == "f32" else eval64
        worst, at = 0.0, None
        for m in words:
            got = ev(m, t1, t2, lnc, lnr)
            want = exact(m)
            rel = float(abs(mp.mpf(float(got)) / want - 1))
            if rel > worst:
                worst, at = rel, m
        eps = 2.0**-23 if prec == "f32" else 2.0**-52
        print(f"// {prec}: region 1 v in [0, {float(v1)}), degree {deg1}, centre {float(c1)}: fit error {float(e1):.3e}")
        print(f"// {prec}: region 2 sqrt(v) in [{float(mp.sqrt(v1)):.6f}, {float(mp.sqrt(VMAX)):.6f}], "
              f"degree {deg2}, centre {float(c2)}: fit error {float(e2):.3e}")
        print(f"// {prec}: evaluated in {prec} over {len(words)} words: max relative error {worst:.3e} "
              f"= {worst / eps:.2f} eps (at m = {at})")
        ty = prec
        print(f"const {up}_V1: {ty} = {fmt(t1[1])};")
        print(f"const {up}_C1: {ty} = {fmt(t1[0])};")
        print(f"const {up}_C2: {ty} = {fmt(t2[0])};")
        for name, ks in (("P1", r1), ("P2", r2)):
            print(f"const {up}_{name}: [{ty}; {len(ks)}] = [")
            for z in ks:
                s = str(np.float32(z)) if prec == "f32" else repr(float(z))
                print(f"    {s},")
            print("];")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
