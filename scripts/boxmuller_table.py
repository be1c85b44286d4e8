"""The high-precision table of tests/boxmuller_reference.rs: Box–Muller normals of chosen word
pairs at 40 significant digits (mpmath), each written as an f64 pair hi + lo (hi the nearest f64,
lo the nearest f64 to the rest), so the test measures f64 results to a small fraction of an ulp.

Map: u = (w0 + 1/2)/2^32, r = sqrt(-2 ln u), theta = 2 pi w1/2^32; (r cos theta, r sin theta).
Usage: python3 scripts/boxmuller_table.py > tests/data/boxmuller_mp.txt
"""
import mpmath as mp

mp.mp.dps = 40
words = [0, 1, 2, 3, 255, 256, 2**16, 2**24 - 1, 2**24, 2**24 + 1, 2**31 - 1, 2**31, 2**32 - 256,
         2**32 - 3, 2**32 - 2, 2**32 - 1]
angles = [0, 1, 2**29 - 1, 2**29, 2**29 + 1, 2**30 - 1, 2**30, 2**30 + 1, 2**31 - 1, 2**31,
          3 * 2**30 - 1, 3 * 2**30, 2**32 - 1, 0x2AAAAAAA, 0x55555555]
pairs = [(a, b) for a in words for b in angles]
x = 0x243F6A88
for _ in range(4000):
    x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
    pairs.append((x >> 32, (x >> 7) & 0xFFFFFFFF))


def split(v):
    hi = float(v)
    lo = float(v - mp.mpf(hi))
    return f"{hi!r} {lo!r}"


print("# w0 w1 cos_hi cos_lo sin_hi sin_lo  (scripts/boxmuller_table.py, mpmath 40 digits)")
for w0, w1 in pairs:
    u = (mp.mpf(w0) + mp.mpf(1) / 2) / 2**32
    r = mp.sqrt(-2 * mp.log(u))
    t = 2 * mp.pi * mp.mpf(w1) / 2**32
    print(w0, w1, split(r * mp.cos(t)), split(r * mp.sin(t)))
