//! The n-body split stage kernels for programmatic dependent launch (`nbody_split_pdl_*`): the
//! portable split kernels (`crate::nbody`) with two instructions first. Each thread waits for
//! the grids before it (`griddepcontrol.wait`: they completed and their writes are visible)
//! before it touches memory, then lets the next stage's launch begin (`launch_dependents`). In
//! a graph whose edges between stages are programmatic, a stage's blocks are launched while the
//! stage before drains, and only its wait stands between them. The pair sums are the split
//! kernels' own, so the bits are theirs (and the CPU twin's).

use crate::nbody::{Exact, Fast, MAX_TILE, nbody_split_kernels};
use lockstep_cuda_std::grid_dependency::{launch_dependents, wait_for_prerequisite_grids};
use lockstep_cuda_std::prelude::*;
use lockstep_shared::nbody::V4;

nbody_split_kernels!(
    prologue: {
        wait_for_prerequisite_grids();
        launch_dependents()
    },
    early: true,
    "Waits for the grids before it before its first memory access (launched early after a programmatic edge; a no-op otherwise), then loads what its finish reads at once.";
    (nbody_split_pdl_f32, NBODY_SPLIT_PDL_TILE_F32, f32, Exact, "f32, exact"),
    (nbody_split_pdl_f64, NBODY_SPLIT_PDL_TILE_F64, f64, Exact, "f64, exact"),
    (nbody_split_pdl_f32_fast, NBODY_SPLIT_PDL_TILE_F32_FAST, f32, Fast, "f32, fast (FMA, rsqrt.approx)"),
    (nbody_split_pdl_f64_fast, NBODY_SPLIT_PDL_TILE_F64_FAST, f64, Fast, "f64, fast (FMA, rsqrt.approx; ptxas refines it)"),
);
