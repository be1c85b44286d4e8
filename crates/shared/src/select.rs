//! Register-array selects: an element of a small array read or set at a run-time index through
//! a select over constant indices, so that on the GPU the array stays in registers (used by the
//! bridge's normals and the n-body kernels' register-blocked rows).

/// Element `i` of a small array through a select over constant indices, so that on the GPU the
/// array stays in registers whatever `i` is (a dynamic index would put it in local memory).
#[inline(always)]
pub fn pick<T: Copy, const D: usize>(a: &[T; D], i: usize) -> T {
    let mut v = a[0];
    let mut j = 1;
    while j < D {
        if j == i {
            v = a[j];
        }
        j += 1;
    }
    v
}

/// Sets element `i` of a small array through a select over constant indices (see [`pick`]).
#[inline(always)]
pub fn place<T: Copy, const D: usize>(a: &mut [T; D], i: usize, v: T) {
    let mut j = 0;
    while j < D {
        if j == i {
            a[j] = v;
        }
        j += 1;
    }
}

/// Sets element `[j][k]` of a small 2-D array through selects over constant indices.
#[inline(always)]
pub fn place2<T: Copy, const D: usize, const P: usize>(a: &mut [[T; D]; P], j: usize, k: usize, v: T) {
    let mut jj = 0;
    while jj < P {
        if jj == j {
            place(&mut a[jj], k, v);
        }
        jj += 1;
    }
}
