//! CPU twin of the Himeno Jacobi solver (sequential and rayon), calling the same
//! `lockstep-shared` functions as the kernel.

use crate::error::{Error, Result};
use crate::launch::expect_len;
use lockstep_shared::himeno::{self, Coefs, OMEGA, jacobi_point};
use rayon::prelude::*;

/// A Himeno problem: grid extents and every array of the benchmark (plane-major, `k`
/// contiguous: index `m·N + (i·mj + j)·mk + k`, `N = mi·mj·mk`).
#[derive(Clone, Debug, PartialEq)]
pub struct HimenoProblem {
    /// Points along i.
    pub mi: u32,
    /// Points along j.
    pub mj: u32,
    /// Points along k (contiguous).
    pub mk: u32,
    /// 4 planes.
    pub a: Vec<f32>,
    /// 3 planes.
    pub b: Vec<f32>,
    /// 3 planes.
    pub c: Vec<f32>,
    /// 1 plane.
    pub bnd: Vec<f32>,
    /// 1 plane.
    pub wrk1: Vec<f32>,
    /// Initial pressure, 1 plane.
    pub p: Vec<f32>,
}

/// Largest `mi` (the kernel's grid z is `mi − 2` ≤ 65 535).
pub const HIMENO_MAX_MI: u32 = 65_537;

impl HimenoProblem {
    /// Points per plane, after checking the extents: each at least 3 (an interior exists),
    /// `mi ≤ 65 537`, `mj, mk ≤ 2^20`, and 4 planes fit in `u32`-free `usize` arithmetic.
    pub fn plane(mi: u32, mj: u32, mk: u32) -> Result<usize> {
        if mi < 3 || mj < 3 || mk < 3 {
            return Err(Error::InvalidInput {
                what: "Himeno grid",
                why: format!("{mi}×{mj}×{mk}: every extent must be at least 3 (an interior point)"),
            });
        }
        if mi > HIMENO_MAX_MI {
            return Err(Error::TooLarge { what: "Himeno mi", value: mi as u64, max: HIMENO_MAX_MI as u64 });
        }
        for (what, v) in [("Himeno mj", mj), ("Himeno mk", mk)] {
            if v > 1 << 20 {
                return Err(Error::TooLarge { what, value: v as u64, max: 1 << 20 });
            }
        }
        let n = mi as u64 * mj as u64 * mk as u64;
        if n > (1u64 << 40) {
            return Err(Error::TooLarge { what: "Himeno grid points", value: n, max: 1 << 40 });
        }
        Ok(n as usize)
    }

    /// The benchmark's initialisation on an `mi × mj × mk` grid.
    pub fn benchmark(mi: u32, mj: u32, mk: u32) -> Result<Self> {
        let n = Self::plane(mi, mj, mk)?;
        let k = himeno::BENCHMARK_COEFS;
        let fill = |vals: &[f32]| -> Vec<f32> { vals.iter().flat_map(|&v| std::iter::repeat_n(v, n)).collect() };
        let per_i = (mj as usize) * (mk as usize);
        let p = (0..n).map(|idx| himeno::initial_p((idx / per_i) as u32, mi)).collect();
        Ok(HimenoProblem {
            mi,
            mj,
            mk,
            a: fill(&k.a),
            b: fill(&k.b),
            c: fill(&k.c),
            bnd: fill(&[k.bnd]),
            wrk1: fill(&[k.wrk1]),
            p,
        })
    }

    /// The benchmark's initialisation for a size name (XS, S, M, L, XL; case-insensitive).
    pub fn by_name(name: &str) -> Result<Self> {
        let (mi, mj, mk) = grid_of(name)?;
        Self::benchmark(mi, mj, mk)
    }

    /// Checks the extents and every array's length.
    pub fn check(&self) -> Result<usize> {
        let n = Self::plane(self.mi, self.mj, self.mk)?;
        expect_len("a", self.a.len(), 4 * n)?;
        expect_len("b", self.b.len(), 3 * n)?;
        expect_len("c", self.c.len(), 3 * n)?;
        expect_len("bnd", self.bnd.len(), n)?;
        expect_len("wrk1", self.wrk1.len(), n)?;
        expect_len("p", self.p.len(), n)?;
        Ok(n)
    }

    fn coefs(&self, n: usize, idx: usize) -> Coefs {
        Coefs {
            a: [self.a[idx], self.a[n + idx], self.a[2 * n + idx], self.a[3 * n + idx]],
            b: [self.b[idx], self.b[n + idx], self.b[2 * n + idx]],
            c: [self.c[idx], self.c[n + idx], self.c[2 * n + idx]],
            bnd: self.bnd[idx],
            wrk1: self.wrk1[idx],
        }
    }
}

/// The grid of a Himeno size name, or an error listing the names.
pub fn grid_of(name: &str) -> Result<(u32, u32, u32)> {
    himeno::size(name).ok_or_else(|| Error::InvalidInput {
        what: "Himeno size",
        why: format!("no size named {name:?}; use one of XS, S, M, L, XL"),
    })
}

/// After `iterations` sweeps: the pressure, the deterministic (tree) gosa of the last sweep,
/// and the benchmark's sequential gosa (Σ in i, j, k order, f32) of the last sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct HimenoResult {
    /// Pressure after the last sweep.
    pub p: Vec<f32>,
    /// gosa of the last sweep by the two-level tree (bit-identical to the GPU's tree mode).
    pub gosa_tree: f32,
    /// gosa of the last sweep summed sequentially, as himenoBMTxpa.c does.
    pub gosa_seq: f32,
}

/// One sweep of row `(i, j)`: writes the new pressure and `ss` of each interior `k`.
fn sweep_row(pr: &HimenoProblem, n: usize, p: &[f32], i: usize, j: usize, out_row: &mut [f32], ss_row: &mut [f32]) {
    let (mj, mk) = (pr.mj as usize, pr.mk as usize);
    let (si, sj) = ((mj * mk) as isize, mk as isize);
    for k in 1..mk - 1 {
        let idx = (i * mj + j) * mk + k;
        let at = |di: isize, dj: isize, dk: isize| p[(idx as isize + di * si + dj * sj + dk) as usize];
        let (ss, new) = jacobi_point(at, &pr.coefs(n, idx), OMEGA);
        out_row[k] = new;
        ss_row[k - 1] = ss;
    }
}

fn finish(pr: &HimenoProblem, ss: &[f32]) -> (f32, f32) {
    let rows = (pr.mi as usize - 2) * (pr.mj as usize - 2);
    let mut partials = vec![0.0f32; rows * himeno::chunks_per_row(pr.mk) as usize];
    let tree = himeno::gosa_tree(ss, pr.mk, &mut partials);
    let seq = ss.iter().fold(0.0f32, |g, s| g + s * s);
    (tree, seq)
}

/// `iterations` Jacobi sweeps on one thread.
pub fn himeno_seq(pr: &HimenoProblem, iterations: u32) -> Result<HimenoResult> {
    let n = pr.check()?;
    let (mi, mj, mk) = (pr.mi as usize, pr.mj as usize, pr.mk as usize);
    let mut p = pr.p.clone();
    let mut next = pr.p.clone();
    let row = mk - 2;
    let mut ss = vec![0.0f32; (mi - 2) * (mj - 2) * row];
    let mut gosa = (0.0, 0.0);
    for _ in 0..iterations {
        for i in 1..mi - 1 {
            for j in 1..mj - 1 {
                let r = (i - 1) * (mj - 2) + (j - 1);
                let start = (i * mj + j) * mk;
                sweep_row(pr, n, &p, i, j, &mut next[start..start + mk], &mut ss[r * row..(r + 1) * row]);
            }
        }
        std::mem::swap(&mut p, &mut next);
        gosa = finish(pr, &ss);
    }
    Ok(HimenoResult { p, gosa_tree: gosa.0, gosa_seq: gosa.1 })
}

/// `iterations` Jacobi sweeps with rayon (rows in parallel); the same bits as [`himeno_seq`].
pub fn himeno_par(pr: &HimenoProblem, iterations: u32) -> Result<HimenoResult> {
    let n = pr.check()?;
    let (mj, mk) = (pr.mj as usize, pr.mk as usize);
    let mut p = pr.p.clone();
    let mut next = pr.p.clone();
    let row = mk - 2;
    let mut ss = vec![0.0f32; (pr.mi as usize - 2) * (mj - 2) * row];
    let mut gosa = (0.0, 0.0);
    for _ in 0..iterations {
        {
            let p_ref = &p;
            // Interior planes i = 1..mi−1 of `next` in parallel, each with its rows of `ss`.
            next.par_chunks_mut(mj * mk)
                .enumerate()
                .skip(1)
                .take(pr.mi as usize - 2)
                .zip(ss.par_chunks_mut((mj - 2) * row))
                .for_each(|((i, plane), ss_plane)| {
                    for j in 1..mj - 1 {
                        let r = j - 1;
                        sweep_row(
                            pr,
                            n,
                            p_ref,
                            i,
                            j,
                            &mut plane[j * mk..(j + 1) * mk],
                            &mut ss_plane[r * row..(r + 1) * row],
                        );
                    }
                });
        }
        std::mem::swap(&mut p, &mut next);
        gosa = finish(pr, &ss);
    }
    Ok(HimenoResult { p, gosa_tree: gosa.0, gosa_seq: gosa.1 })
}
