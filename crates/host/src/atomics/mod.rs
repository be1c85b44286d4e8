//! Warp-aggregated atomics: the CPU twins and the one launcher behind [`crate::histogram`],
//! [`crate::himeno`] and the aggregation probes of [`crate::foundation`].

pub(crate) mod cpu;
#[cfg(feature = "gpu")]
pub(crate) mod gpu;
