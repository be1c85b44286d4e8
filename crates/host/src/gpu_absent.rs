//! [`Gpu`] when lockstep is built without its `gpu` feature: it cannot be made, so every GPU
//! branch is unreachable and [`Gpu::new`] says how to get one.

use crate::error::{Error, Result};

/// A GPU ready to run lockstep's kernels — never, in this build (feature `gpu` is off).
#[derive(Debug)]
pub struct Gpu {
    pub(crate) never: std::convert::Infallible,
}

impl Gpu {
    /// Always [`Error::NoDriver`]: this build has no GPU support.
    pub fn new() -> Result<Gpu> {
        Err(Error::NoDriver {
            reason: "lockstep was built without its `gpu` feature (add `features = [\"gpu\"]` to the dependency)"
                .into(),
        })
    }

    /// The device's name (unreachable: no `Gpu` exists in this build).
    pub fn name(&self) -> &str {
        match self.never {}
    }
}
