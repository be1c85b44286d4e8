//! CPU twin of the Himeno Jacobi solver (sequential and rayon), calling the same
//! `lockstep-shared` functions as the kernel, and its [`HimenoResult`]. The [`HimenoProblem`] it
//! solves and its validation are the problem's (`problem.rs`).

use super::problem::HimenoProblem;
use crate::error::Result;
use lockstep_shared::himeno::{self, Coefs, OMEGA, jacobi_point};
use rayon::prelude::*;

// The coefficients of point `idx` (`n` points per plane), gathered for the CPU sweep.
impl HimenoProblem {
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
