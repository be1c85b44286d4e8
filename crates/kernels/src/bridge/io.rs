//! Adapters between `generate_path` and device memory: buffers of normals and outputs (64- and
//! 32-bit indices, and the odd-count f32 quads `QuadNormals`/`QuadSink`), the stack in a scratch
//! buffer or in shared memory, the strategy in global memory.

use super::*;

/// Normals read from a `[row][path]` buffer.
pub(super) struct BufferNormals<T> {
    pub(super) z: *const T,
    pub(super) paths: usize,
    pub(super) p: usize,
}

impl<T: Copy> Normals<T> for BufferNormals<T> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < (N+1)·d and p < paths; the launcher checked z holds (N+1)·d·paths.
        unsafe { *self.z.add(row as usize * self.paths + self.p) }
    }
}

/// Results written to a `[row][path]` buffer.
pub(super) struct BufferSink<T> {
    pub(super) out: *mut T,
    pub(super) paths: usize,
    pub(super) p: usize,
}

impl<T: Copy> Sink<T> for BufferSink<T> {
    #[inline(always)]
    fn put(&mut self, row: u32, v: T) {
        // SAFETY: row < (N+1)·d and p < paths; the launcher checked out holds (N+1)·d·paths.
        unsafe { *self.out.add(row as usize * self.paths + self.p) = v };
    }
}

/// A stack in device memory, `[element][path]`.
pub(super) struct ScratchStack<T> {
    pub(super) base: *mut T,
    pub(super) paths: usize,
    pub(super) p: usize,
}

impl<T: Copy> Stack<T> for ScratchStack<T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        // SAFETY: i < slots·d and the launcher sized scratch to slots·d·paths.
        unsafe { *self.base.add(i as usize * self.paths + self.p) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        // SAFETY: as `get`.
        unsafe { *self.base.add(i as usize * self.paths + self.p) = v };
    }
}

/// A stack in block-shared memory: element `i` of thread `t` at `base[i·stride + t]`.
pub(super) struct SharedStack<T> {
    pub(super) base: *mut T,
    pub(super) stride: usize,
    pub(super) t: usize,
}

impl<T: Copy> Stack<T> for SharedStack<T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        // SAFETY: i·stride + t < slots·d·blockDim ≤ SHARED_STACK (checked before choosing it).
        unsafe { *self.base.add(i as usize * self.stride + self.t) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        // SAFETY: as `get`.
        unsafe { *self.base.add(i as usize * self.stride + self.t) = v };
    }
}

/// Steps read as aligned rows from device memory, or from the block's shared copy
/// ([`stage_table`]).
#[derive(Clone, Copy)]
pub(super) struct DeviceSteps<T> {
    pub(super) coef: *const CoefRow<T>,
    pub(super) idx: *const IndexRow,
}

impl<T: Real> Steps<T> for DeviceSteps<T> {
    #[inline(always)]
    fn step(&self, s: usize) -> Step<T> {
        // SAFETY: s < steps and both tables hold `steps` rows (launcher contract); device
        // allocations are 256-byte aligned, rows 16-byte aligned.
        unsafe { Step::from_rows(&*self.coef.add(s), &*self.idx.add(s)) }
    }
}

/// Normals from a `[row][path]` buffer with 32-bit element indices (the caller checked
/// `rows·paths ≤ 2^32`, so `row·paths + p` cannot wrap): one multiply-add per address instead
/// of 64-bit index arithmetic.
pub(super) struct BufferNormals32<T> {
    pub(super) z: *const T,
    pub(super) paths: u32,
    pub(super) p: u32,
}

impl<T: Copy> Normals<T> for BufferNormals32<T> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < rows and p < paths with rows·paths ≤ 2^32 (checked by the kernel before
        // choosing this type); the launcher checked z holds rows·paths.
        unsafe { *self.z.add((row * self.paths + self.p) as usize) }
    }
}

/// Results to a `[row][path]` buffer with 32-bit element indices (as [`BufferNormals32`]).
pub(super) struct BufferSink32<T> {
    pub(super) out: *mut T,
    pub(super) paths: u32,
    pub(super) p: u32,
}

impl<T: Copy> Sink<T> for BufferSink32<T> {
    #[inline(always)]
    fn put(&mut self, row: u32, v: T) {
        // SAFETY: as `BufferNormals32::normal`, for out.
        unsafe { *self.out.add((row * self.paths + self.p) as usize) = v };
    }
}

/// How thread `q` of the d = 1 quad path at a path count that is not a multiple of 4 (an odd
/// one, `LaunchShape::buffer_lanes`; the code takes any count) reaches its
/// elements `e..e + 4` of a row, `e = row·paths + 4q`: the class `(row·paths) mod 4` is the same
/// for every thread of the grid (it changes only from row to row), so each warp takes one way
/// and its footprint stays one contiguous 512-byte span. Returns `e` and the way: `0` one
/// 16-byte access, `2` two 8-byte ones, `1`/`3` a 4-, an 8- and a 4-byte one (at `e`, `e + 1`,
/// `e + 3`), `4..=7` (the last thread, `tail = 4`: fewer than four of its paths exist) one
/// 4-byte access per existing path. The accesses are inline `ld/st.global` (`memory`): with
/// plain loads LLVM hoisted the first element's scalar load, common to every way, out of the
/// switch and split the 16-byte access.
#[inline(always)]
pub(super) fn quad_way(paths: u32, q4: u32, tail: u32, row: u32) -> (u32, u32) {
    let e = row * paths + q4;
    (e, (e & 3) | tail)
}

/// `4` for the thread whose quad `4q..4q + 4` passes `paths` (the last one when `paths` is not a
/// multiple of 4), else `0` (see [`quad_way`]).
#[inline(always)]
pub(super) fn quad_tail(paths: u32, q4: u32) -> u32 {
    if paths - q4 < 4 { 4 } else { 0 }
}

/// Normals of paths `4q..min(4q + 4, paths)` from a `[row][path]` f32 buffer of any path count
/// (32-bit element indices, as [`BufferNormals32`]), as one [`F32x4`] per row: aligned vector
/// loads where the row allows ([`quad_way`]); the last thread's missing paths read as `0.0`
/// (their lanes are computed and never stored).
pub(super) struct QuadNormals {
    pub(super) z: *const f32,
    pub(super) paths: u32,
    pub(super) q4: u32,
    pub(super) tail: u32,
}

impl Normals<F32x4> for QuadNormals {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> F32x4 {
        let (e, way) = quad_way(self.paths, self.q4, self.tail, row);
        let z = self.z;
        // Element e + i of each existing path 4q + i < paths is inside z and does not wrap (row
        // < rows, rows·paths ≤ 2^32 checked by the kernel, z holds rows·paths). z is a 16-byte
        // aligned global address (`LaunchShape::buffer_lanes_at` chose quads): element e is 16-byte aligned when
        // e ≡ 0 (mod 4), and e, e + 2 (way 2) and e + 1 (ways 1, 3) are 8-byte aligned.
        // SAFETY: in bounds and aligned for each access (above).
        unsafe {
            match way {
                0 => {
                    let [a, b, c, d] = load_global_v4_f32(z, e);
                    F32x4(a, b, c, d)
                }
                2 => {
                    let ([a, b], [c, d]) = (load_global_v2_f32(z, e), load_global_v2_f32(z, e + 2));
                    F32x4(a, b, c, d)
                }
                1 | 3 => {
                    let (a, [b, c], d) =
                        (load_global_f32(z, e), load_global_v2_f32(z, e + 1), load_global_f32(z, e + 3));
                    F32x4(a, b, c, d)
                }
                _ => {
                    let n = self.paths - self.q4;
                    let b = if n > 1 { load_global_f32(z, e + 1) } else { 0.0 };
                    let c = if n > 2 { load_global_f32(z, e + 2) } else { 0.0 };
                    F32x4(load_global_f32(z, e), b, c, 0.0)
                }
            }
        }
    }
}

/// Results of paths `4q..min(4q + 4, paths)` to a `[row][path]` f32 buffer of any path count,
/// the accesses of [`QuadNormals`]; the last thread stores only its existing paths.
pub(super) struct QuadSink {
    pub(super) out: *mut f32,
    pub(super) paths: u32,
    pub(super) q4: u32,
    pub(super) tail: u32,
}

impl Sink<F32x4> for QuadSink {
    #[inline(always)]
    fn put(&mut self, row: u32, v: F32x4) {
        let (e, way) = quad_way(self.paths, self.q4, self.tail, row);
        let out = self.out;
        // SAFETY: as `QuadNormals::normal`, for out.
        unsafe {
            match way {
                0 => store_global_v4_f32(out, e, [v.0, v.1, v.2, v.3]),
                2 => {
                    store_global_v2_f32(out, e, [v.0, v.1]);
                    store_global_v2_f32(out, e + 2, [v.2, v.3]);
                }
                1 | 3 => {
                    store_global_f32(out, e, v.0);
                    store_global_v2_f32(out, e + 1, [v.1, v.2]);
                    store_global_f32(out, e + 3, v.3);
                }
                _ => {
                    let n = self.paths - self.q4;
                    store_global_f32(out, e, v.0);
                    if n > 1 {
                        store_global_f32(out, e + 1, v.1);
                    }
                    if n > 2 {
                        store_global_f32(out, e + 2, v.2);
                    }
                }
            }
        }
    }
}
