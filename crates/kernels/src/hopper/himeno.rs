//! The Himeno marching sweep for programmatic dependent launch (`himeno_jacobi_march_pdl`): the
//! portable `himeno_jacobi_march` with two instructions first. Each thread waits for the grids
//! before it (`griddepcontrol.wait`: the sweep before has completed, its pressure and gosa
//! partials visible) before it touches memory, then lets the next sweep's launch begin
//! (`launch_dependents`), whose blocks become resident as this sweep's blocks retire. The
//! arithmetic and the gosa tree are the portable kernel's, so the bits are its own.

use crate::himeno::*;
use lockstep_cuda_std::grid_dependency::{launch_dependents, wait_for_prerequisite_grids};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, block_idx_z, grid_dim_z, thread_idx_y};
use lockstep_shared::himeno::{self, Dims, gosa_via, jacobi_point};
use lockstep_shared::reduce::WARP_TREE_OFFSETS;

himeno_march_kernel!(
    himeno_jacobi_march_pdl,
    prologue: {
        wait_for_prerequisite_grids();
        launch_dependents()
    },
    "Waits for the grids before it first (launched early after the sweep before; a no-op otherwise)."
);
