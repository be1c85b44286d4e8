//! [`Pinned`]: page-locked host memory of one [`Gpu`], which the GPU copies into and out of at
//! the link's speed (a pageable vector is copied through the driver's staging buffers and, when
//! fresh, paged in as it is written). Worth it for a buffer reused across many copies (the
//! CLI's bridge chunks); allocating it costs more than one copy.

use crate::error::{Result, cuda};
use crate::gpu::Gpu;
use cust::memory::{DeviceCopy, LockedBuffer};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

/// `len` values in page-locked host memory, allocated in (and freed in) `gpu`'s context. Reads
/// and writes as a slice.
pub struct Pinned<'g, T: DeviceCopy> {
    buf: ManuallyDrop<LockedBuffer<T>>,
    gpu: &'g Gpu,
}

impl<'g, T: DeviceCopy + Default> Pinned<'g, T> {
    /// `len` default values (`len` ≥ 1; 0 is refused as cust refuses it). Errors: the driver's
    /// (`cuMemAllocHost`), e.g. when the system cannot lock that much memory.
    pub fn new(gpu: &'g Gpu, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(crate::error::Error::InvalidInput {
                what: "pinned buffer length",
                why: "must be at least 1".into(),
            });
        }
        gpu.bind()?;
        let buf = LockedBuffer::new(&T::default(), len).map_err(cuda("cuMemAllocHost"))?;
        Ok(Pinned { buf: ManuallyDrop::new(buf), gpu })
    }
}

impl<T: DeviceCopy> Deref for Pinned<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf
    }
}

impl<T: DeviceCopy> DerefMut for Pinned<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf
    }
}

impl<T: DeviceCopy> Drop for Pinned<'_, T> {
    fn drop(&mut self) {
        // cuMemFreeHost needs the allocating context current on this thread (the buffer may
        // be dropped on another thread than the one that made it). A failure leaks the buffer,
        // as cust's own drop does.
        let _ = self.gpu.bind();
        // SAFETY: `buf` is dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.buf) }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Pinned<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinned").field("len", &self.buf.len()).field("gpu", &self.gpu.ordinal()).finish()
    }
}
