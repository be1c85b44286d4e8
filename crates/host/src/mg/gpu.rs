//! Launchers for `crates/kernels/src/mg/`: the Minority Game's distributed models (a kernel
//! launch per step, or one persistent grid-sync kernel on a co-resident grid) and the
//! standalone model (one game per block). Every result equals the CPU twins'
//! (`crate::mg::cpu`) bit for bit; the contract is in `lockstep_shared::mg`.

use crate::error::{Error, Result, cuda};
use crate::gpu::Gpu;
use crate::gpu::{download, upload};
use crate::kernel::{Kernel, KernelArgs, Param};
use crate::launch::{Dims, Grid1d, block_size};
use crate::mg::problem::{
    Outcome, Setup, Trace, draws_of_group, jump_table, setup_share, setups, standalone_block, trial_end, validate,
};
use crate::mg::state::{GameState, normalize_s2, pack_s2, unpack_s2};
use cust::function::FunctionAttribute;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DevicePointer};
use lockstep_shared::mg::{Layout, MgBuffers, MgParams, MgStandaloneBuffers, S2_MAX_P, S2_SIDE_MAX_P};

/// Threads per block of the distributed models unless the caller chooses (the standalone
/// model then picks its own, [`crate::mg::standalone_block`]).
pub const DEFAULT_BLOCK: u32 = 128;

/// Largest trace (draws + used tables) a run may record, in bytes.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// Which distributed model runs the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distributed {
    /// One launch of `mg_step` (`mg_step_s2` for s = 2 without trace) per pass (`p + 1` launches; the kernel boundary is the grid-wide
    /// synchronisation), on a grid with one thread per group (at most 2^32 threads), capped at
    /// the blocks the step kernel keeps resident (threads then stride over the groups).
    KernelPerStep,
    /// One persistent `mg_grid_sync` (`mg_grid_sync_s2`) kernel with a grid-wide barrier; `blocks = None` takes the
    /// largest co-resident grid, a larger request is refused.
    GridSync {
        /// Blocks to launch (co-residency is checked).
        blocks: Option<u32>,
    },
}

/// Device bytes per agent: `s·(W + 1)·4` (tables and scores; 16 for m ≤ 5, s = 2).
pub fn bytes_per_agent(params: &MgParams) -> u64 {
    params.s as u64 * (params.words as u64 + 1) * 4
}

/// Device bytes of one distributed game besides the trace: agents, two generators per group,
/// the vote counts and the barrier.
pub fn game_bytes(params: &MgParams) -> Option<u64> {
    params
        .n
        .checked_mul(bytes_per_agent(params))?
        .checked_add(params.groups.checked_mul(32)?)?
        .checked_add(8 * params.p as u64 + 8)
}

/// Trace bytes of one game: every group's stream (`G·L` words) and `p·n` used-table bytes.
pub fn trace_bytes(params: &MgParams) -> Option<u64> {
    let l = u64::try_from(Layout::of(params).group_stride).ok()?;
    params.groups.checked_mul(l)?.checked_mul(4)?.checked_add(params.n.checked_mul(params.p as u64)?)
}

/// [`game_bytes`], or [`Error::Overflow`] with its terms where the sum passes 2^64 − 1.
fn game_need(params: &MgParams) -> Result<u64> {
    game_bytes(params).ok_or_else(|| Error::Overflow {
        what: "device memory this game needs (bytes)",
        expr: format!(
            "{} agents · {} + 32 · {} groups + 8 · {} steps + 8",
            params.n,
            bytes_per_agent(params),
            params.groups,
            params.p
        ),
    })
}

/// [`trace_bytes`], or [`Error::Overflow`] with its terms where the sum passes 2^64 − 1.
fn trace_need(params: &MgParams) -> Result<u64> {
    trace_bytes(params).ok_or_else(|| Error::Overflow {
        what: "trace size in bytes",
        expr: format!(
            "4 · {} groups · {} words + {} steps · {} agents",
            params.groups,
            Layout::of(params).group_stride,
            params.p,
            params.n
        ),
    })
}

// SAFETY: plain `#[repr(C)]` structs of integers (addresses are `u64`), copied bit for bit to
// the kernel's parameter space, where the kernels read the same layout.
unsafe impl DeviceCopy for Param<MgParams> {}
// SAFETY: as above.
unsafe impl DeviceCopy for Param<MgBuffers> {}
// SAFETY: as above.
unsafe impl DeviceCopy for Param<MgStandaloneBuffers> {}

/// `(params, b, k, h0)`: one pass of the distributed game.
type Step<'g> = Kernel<'g, (Param<MgParams>, Param<MgBuffers>, u32, u32)>;
/// `(params, b, k, h0, n_total)`: one pass of a rank's share of a game split over ranks.
type StepRank<'g> = Kernel<'g, (Param<MgParams>, Param<MgBuffers>, u32, u32, u64)>;
/// `(params, b, h0, bar)`: the persistent grid-sync kernel.
type GridSync<'g> = Kernel<'g, (Param<MgParams>, Param<MgBuffers>, u32, DevicePointer<u32>)>;
/// `(params, sb)`: one game per block.
type Standalone<'g> = Kernel<'g, (Param<MgParams>, Param<MgStandaloneBuffers>)>;

/// The Minority Game kernels, loaded and ready.
pub struct Mg<'g> {
    gpu: &'g Gpu,
    block: u32,
    /// Whether the standalone model picks its block size ([`Mg::new`]) instead of `block`.
    auto: bool,
    init: Kernel<'g, (Param<MgParams>, Param<MgBuffers>)>,
    step: Step<'g>,
    grid_sync: GridSync<'g>,
    standalone: Standalone<'g>,
    step_s2: Step<'g>,
    grid_sync_s2: GridSync<'g>,
    standalone_s2: Standalone<'g>,
    standalone_s2t: Standalone<'g>,
    step_rank: StepRank<'g>,
    step_rank_s2: StepRank<'g>,
}

/// Whether the lean `*_s2` kernels run a game: `s = 2`, no trace and `p ≤ S2_MAX_P` (their
/// per-agent state is one `i16`, see `lockstep_shared::mg::choose_s2`).
fn lean(params: &MgParams, trace: bool) -> bool {
    params.s == 2 && !trace && params.p <= S2_MAX_P
}

/// Whether the standalone model runs `mg_standalone_s2t` (tables transposed after the build,
/// the played side in the state: about 4 bytes of memory traffic per agent-step instead of
/// 12): a lean game with `p ≤ S2_SIDE_MAX_P` (its packed state's range) and a multiple of 32
/// groups (a warp's 32 agents then share one table word; other group counts would play one
/// agent a round trip there, so they keep `mg_standalone_s2`'s batches).
fn transposed(params: &MgParams, trace: bool) -> bool {
    lean(params, trace) && params.p <= S2_SIDE_MAX_P && params.groups.is_multiple_of(32)
}

/// A game's trace on the device: the draws, the used tables and the draw stride `L`.
type DeviceTrace = (DeviceBuffer<u32>, DeviceBuffer<u8>, u64);

/// The kernels' `(trace_draws, trace_used, draw_stride)` of `trace`: zeros when there is none.
fn trace_addresses(trace: &Option<DeviceTrace>) -> (u64, u64, u64) {
    trace.as_ref().map_or((0, 0, 0), |(draws, used, stride)| {
        (draws.as_device_ptr().as_raw(), used.as_device_ptr().as_raw(), *stride)
    })
}

/// A distributed game's device state, ready to run (again: [`Mg::run_on_device`] resets it).
pub struct Game {
    params: MgParams,
    seed: u32,
    trial: u64,
    /// The next pass of the kernel-per-step model (`p + 1` after a whole run).
    next: u32,
    /// The agent count the minority is taken of: `params.n`, or for a rank's share
    /// ([`Mg::prepare_share`]) the whole game's.
    whole: u64,
    setup: Setup,
    rng0: Vec<u32>,
    tables: DeviceBuffer<u32>,
    scores: DeviceBuffer<i32>,
    rng: DeviceBuffer<u32>,
    rng_prev: DeviceBuffer<u32>,
    ones: DeviceBuffer<u64>,
    bar: DeviceBuffer<u32>,
    trace: Option<DeviceTrace>,
}

impl Game {
    /// The game's parameters.
    pub fn params(&self) -> &MgParams {
        &self.params
    }

    /// The next pass (`0`: tables built or not yet; `p + 1`: over).
    pub fn next_pass(&self) -> u32 {
        self.next
    }

    /// The device buffers of a game (`params`: the game's or a share's, the minority taken of
    /// `whole` agents) from its generators' set-up, scores and votes zero, pass 0 next.
    fn allocate(
        params: MgParams,
        whole: u64,
        seed: u32,
        trial: u64,
        setup: Setup,
        trace: Option<DeviceTrace>,
    ) -> Result<Game> {
        let rng0 = flatten(&setup.states);
        Ok(Game {
            tables: alloc(params.n * (params.s * params.words) as u64)?,
            scores: alloc(params.n * params.s as u64)?,
            rng: upload(&rng0)?,
            rng_prev: upload(&rng0)?,
            ones: alloc(params.p as u64)?,
            bar: alloc(2)?,
            params,
            seed,
            trial,
            next: 0,
            whole,
            setup,
            rng0,
            trace,
        })
    }

    /// The device's vote counts (`p` of them): a share's all-reduce target.
    pub fn ones(&self) -> &DeviceBuffer<u64> {
        &self.ones
    }

    /// The vote counts, writable: a share's counts replaced by the whole game's between passes
    /// (what an all-reduce does in place).
    pub fn ones_mut(&mut self) -> &mut DeviceBuffer<u64> {
        &mut self.ones
    }

    /// Refuses `what` on a rank's share (the operation needs the whole game's agents).
    fn whole_only(&self, what: &str) -> Result<()> {
        if self.whole != self.params.n {
            return Err(Error::InvalidInput {
                what: "Minority Game share",
                why: format!("{what} needs the whole game; a rank's share runs pass by pass"),
            });
        }
        Ok(())
    }

    fn buffers(&self) -> MgBuffers {
        let (trace_draws, trace_used, draw_stride) = trace_addresses(&self.trace);
        MgBuffers {
            tables: self.tables.as_device_ptr().as_raw(),
            scores: self.scores.as_device_ptr().as_raw(),
            rng: self.rng.as_device_ptr().as_raw(),
            rng_prev: self.rng_prev.as_device_ptr().as_raw(),
            ones: self.ones.as_device_ptr().as_raw(),
            trace_draws,
            trace_used,
            draw_stride,
        }
    }
}

/// The parameters of groups `groups` of `whole` stored as a game of their own: group `g` of
/// the share is group `groups.start + g` of the whole game and has as many agents (the longer
/// groups, `ceil(n/G)` agents, come first in both), so the share's strided layout and group
/// lengths are the whole game's, restricted.
pub(crate) fn share_params(whole: &MgParams, groups: std::ops::Range<u64>) -> MgParams {
    let (q, r) = (whole.n / whole.groups, whole.n % whole.groups);
    let long = groups.end.min(r).saturating_sub(groups.start);
    let len = groups.end - groups.start;
    MgParams::new(len * q + long, whole.m, whole.s, whole.p, len)
}

fn flatten(states: &[lockstep_shared::xsadd::Xsadd]) -> Vec<u32> {
    states.iter().flat_map(|x| x.s).collect()
}

fn alloc<T: DeviceCopy + cust::memory::bytemuck::Zeroable>(len: u64) -> Result<DeviceBuffer<T>> {
    let len = usize::try_from(len).map_err(|_| Error::TooLarge {
        what: "buffer length",
        value: len,
        max: usize::MAX as u64,
    })?;
    crate::gpu::zeroed(len.max(1))
}

impl<'g> Mg<'g> {
    /// Looks up the kernels; 128 threads per block in the distributed models, and in the
    /// standalone model the block size [`crate::mg::standalone_block`] picks for the run from
    /// the kernel's occupancy on this GPU (the same bits with any block size).
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Mg { auto: true, ..Self::with_block_size(gpu, DEFAULT_BLOCK)? })
    }

    /// As [`Mg::new`] with `threads` per block (a multiple of 32 up to 1024) in every model.
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = block_size(threads)?;
        let mg = Mg {
            gpu,
            block,
            auto: false,
            init: gpu.kernel("mg_init_tables")?,
            step: gpu.kernel("mg_step")?,
            grid_sync: gpu.kernel("mg_grid_sync")?,
            standalone: gpu.kernel("mg_standalone")?,
            step_s2: gpu.kernel("mg_step_s2")?,
            grid_sync_s2: gpu.kernel("mg_grid_sync_s2")?,
            standalone_s2: gpu.kernel("mg_standalone_s2")?,
            standalone_s2t: gpu.kernel("mg_standalone_s2t")?,
            step_rank: gpu.kernel("mg_step_rank")?,
            step_rank_s2: gpu.kernel("mg_step_rank_s2")?,
        };
        Ok(mg)
    }

    /// Threads per block (of the distributed models; of the standalone model too unless it
    /// picks its own, see [`StandaloneRun::threads`]).
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// Refuses a block size `f`'s registers do not allow (the general, trace-capable kernels
    /// need more registers than the `*_s2` ones, so their largest block is smaller).
    fn check_block<A: KernelArgs>(&self, f: &Kernel<'_, A>) -> Result<()> {
        self.check_threads(f, self.block)
    }

    /// As [`Mg::check_block`] for `threads` per block.
    fn check_threads<A: KernelArgs>(&self, f: &Kernel<'_, A>, threads: u32) -> Result<()> {
        let max = f.max_threads()?;
        if threads > max {
            return Err(Error::TooLarge {
                what: "threads per block for this Minority Game kernel (its registers allow fewer)",
                value: threads as u64,
                max: max as u64,
            });
        }
        Ok(())
    }

    /// The standalone kernel that plays `params` (with or without `trace`).
    fn standalone_kernel(&self, params: &MgParams, trace: bool) -> &Standalone<'g> {
        if transposed(params, trace) {
            &self.standalone_s2t
        } else if lean(params, trace) {
            &self.standalone_s2
        } else {
            &self.standalone
        }
    }

    /// Threads per block of a standalone run of `trials` trials on `blocks` blocks: the chosen
    /// block size, or with [`Mg::new`] the one [`standalone_block`] picks from the kernel's
    /// occupancy on this GPU (the chosen size if none is resident).
    fn standalone_threads(&self, params: &MgParams, trace: bool, blocks: u32, trials: u64) -> Result<u32> {
        if !self.auto {
            return Ok(self.block);
        }
        let f = self.standalone_kernel(params, trace);
        let max = f.max_threads()?;
        let mut resident = Vec::new();
        for threads in (32..=max.min(crate::launch::MAX_THREADS_PER_BLOCK)).step_by(32) {
            resident.push(self.resident_blocks_at(f, threads)? as u64);
        }
        let at = |threads: u32| resident.get((threads / 32 - 1) as usize).copied().unwrap_or(0);
        Ok(standalone_block(params.groups, blocks as u64, trials, max, at).unwrap_or(self.block))
    }

    /// The most blocks of the grid-sync kernel that runs a game of `params` (with or without
    /// `trace`: they are different kernels) that can be resident at once on this GPU: blocks
    /// per multiprocessor (occupancy at this block size) × multiprocessors.
    pub fn grid_sync_capacity(&self, params: &MgParams, trace: bool) -> Result<u32> {
        self.resident_blocks(if lean(params, trace) { &self.grid_sync_s2 } else { &self.grid_sync })
    }

    /// The kernel that plays standalone run `run`: its registers per thread and how many of
    /// its blocks of [`StandaloneRun::threads`] can be resident at once on this GPU (per SM ×
    /// SMs; a run on more blocks than that needs a second wave).
    pub fn standalone_occupancy(&self, run: &StandaloneRun) -> Result<(u32, u32)> {
        let f = self.standalone_kernel(&run.params, run.trace.is_some());
        let regs = f.function().get_attribute(FunctionAttribute::NumRegisters).map_err(cuda("cuFuncGetAttribute"))?;
        Ok((regs.max(0) as u32, self.resident_blocks_at(f, run.threads)?))
    }

    /// Blocks of `f` resident at once on this GPU (occupancy at this block size × SMs).
    fn resident_blocks<A: KernelArgs>(&self, f: &Kernel<'_, A>) -> Result<u32> {
        self.resident_blocks_at(f, self.block)
    }

    /// Blocks of `f` of `threads` threads resident at once on this GPU (occupancy × SMs).
    fn resident_blocks_at<A: KernelArgs>(&self, f: &Kernel<'_, A>, threads: u32) -> Result<u32> {
        f.resident_blocks(self.gpu, threads, 0)
    }

    fn check_memory(&self, need: u64) -> Result<()> {
        let (free, _) = self.gpu.memory_info()?;
        // Keep 64 MiB for the context and the driver.
        let room = (free as u64).saturating_sub(64 << 20);
        if need > room {
            return Err(Error::TooLarge { what: "device memory this game needs (bytes)", value: need, max: room });
        }
        Ok(())
    }

    /// Allocates a distributed game (trial `trial` of `seed`) after checking the parameters and
    /// the device memory; `trace` also allocates the trace buffers (small games only).
    pub fn prepare(&self, params: &MgParams, seed: u32, trial: u64, trace: bool) -> Result<Game> {
        let params = validate(params.n, params.m, params.s, params.p, params.groups)?;
        let trace_len = if trace { trace_need(&params)? } else { 0 };
        if trace_len > MAX_TRACE_BYTES {
            return Err(Error::TooLarge { what: "trace size in bytes", value: trace_len, max: MAX_TRACE_BYTES });
        }
        let game_len = game_need(&params)?;
        self.check_memory(game_len.checked_add(trace_len).ok_or_else(|| Error::Overflow {
            what: "device memory this game needs (bytes)",
            expr: format!("{game_len} + {trace_len} trace"),
        })?)?;
        let setup = setups(&params, seed, trial, 1)
            .pop()
            .ok_or(Error::InvalidInput { what: "trial", why: "no setup".into() })?;
        let trace = if trace {
            let stride = u64::try_from(Layout::of(&params).group_stride).unwrap_or(u64::MAX);
            Some((alloc::<u32>(params.groups * stride)?, alloc::<u8>(params.n * params.p as u64)?, stride))
        } else {
            None
        };
        Game::allocate(params, params.n, seed, trial, setup, trace)
    }

    /// A rank's share of a distributed game (trial `trial` of `seed`) split over ranks: groups
    /// `groups` of `params`, stored as a game of their own (its agents in the same strided
    /// layout, its own generators), the minority taken of the whole game's `n`. Run it pass by
    /// pass with [`Mg::begin_on_device`] and [`Mg::passes_on_device`], summing every rank's
    /// `ones[k]` (the game's vote counts, [`Game::ones`]) between passes `k` and `k + 1`
    /// (`lockstep::mg::dist`). Errors: as [`Mg::prepare`]; an empty or out-of-range share.
    pub fn prepare_share(
        &self,
        params: &MgParams,
        seed: u32,
        trial: u64,
        groups: std::ops::Range<u64>,
    ) -> Result<Game> {
        let whole = validate(params.n, params.m, params.s, params.p, params.groups)?;
        if groups.is_empty() || groups.end > whole.groups {
            return Err(Error::InvalidInput {
                what: "groups of a share",
                why: format!("{groups:?} of {} groups: a share needs at least one group", whole.groups),
            });
        }
        let params = share_params(&whole, groups.clone());
        self.check_memory(game_need(&params)?)?;
        let setup = setup_share(&whole, seed, trial, groups);
        Game::allocate(params, whole.n, seed, trial, setup, None)
    }

    /// The kernel-per-step grid of `game`: one thread per group, but no more blocks than the
    /// step kernel keeps resident (the kernels stride over groups): a launch is one wave.
    fn step_grid(&self, game: &Game) -> Result<Dims> {
        let mut grid = Grid1d::for_len(game.params.groups, self.block)?;
        let step = if lean(&game.params, game.trace.is_some()) { &self.step_s2 } else { &self.step };
        grid.blocks = grid.blocks.min(self.resident_blocks(step)?.max(1));
        Ok(Dims::from(grid))
    }

    /// Resets `game` to its start (generators at their first table draw, scores and votes zero).
    fn reset(&self, game: &mut Game) -> Result<()> {
        game.rng.copy_from(&game.rng0[..]).map_err(cuda("cuMemcpyHtoD"))?;
        game.rng_prev.copy_from(&game.rng0[..]).map_err(cuda("cuMemcpyHtoD"))?;
        game.scores.set_32(0).map_err(cuda("cuMemsetD32"))?;
        game.ones.set_32(0).map_err(cuda("cuMemsetD32"))?;
        game.bar.set_32(0).map_err(cuda("cuMemsetD32"))?;
        game.next = 0;
        Ok(())
    }

    /// Resets `game` and enqueues the whole game in model `model` (checks the grid first).
    /// A rank's share runs pass by pass only ([`Mg::passes_on_device`]).
    pub fn run_on_device(&self, game: &mut Game, model: Distributed) -> Result<()> {
        game.whole_only("run_on_device")?;
        let params = game.params;
        let blocks = match model {
            Distributed::KernelPerStep => {
                self.begin_on_device(game)?;
                return self.passes_on_device(game, params.p + 1);
            }
            Distributed::GridSync { blocks } => blocks,
        };
        let cap = self.grid_sync_capacity(&params, game.trace.is_some())?;
        let want = blocks.unwrap_or(cap);
        if want == 0 {
            return Err(Error::InvalidInput { what: "grid-sync blocks", why: "0 blocks".into() });
        }
        if want > cap {
            return Err(Error::TooLarge {
                what: "grid-sync blocks (more cannot all be resident at once, and the grid barrier would deadlock)",
                value: want as u64,
                max: cap as u64,
            });
        }
        let grid = Dims::from(Grid1d { blocks: want, threads: self.block });
        let fast = lean(&params, game.trace.is_some());
        self.check_block(if fast { &self.grid_sync_s2 } else { &self.grid_sync })?;
        self.reset(game)?;
        let b = game.buffers();
        let h0 = game.setup.h0;
        let bar = game.bar.as_device_ptr();
        let sync = if fast { &self.grid_sync_s2 } else { &self.grid_sync };
        // SAFETY: parameters mirror `(params, b, h0: u32, bar: *mut u32)` of both kernels
        // (_s2: s = 2, no trace); every buffer in `b` was allocated by `prepare` with the sizes
        // MgBuffers documents for params; bar is two zeroed u32; grid ≤ that kernel's capacity.
        unsafe { sync.launch(self.gpu, grid, 0, (Param(params), Param(b), h0, bar))? };
        game.next = params.p + 1;
        Ok(())
    }

    /// The kernel-per-step model's start: resets `game` and enqueues the table build (pass 0
    /// next). Continue with [`Mg::passes_on_device`].
    pub fn begin_on_device(&self, game: &mut Game) -> Result<()> {
        let grid = self.step_grid(game)?;
        self.check_block(&self.init)?;
        self.reset(game)?;
        let b = game.buffers();
        // SAFETY: parameters mirror `(params: MgParams, b: MgBuffers)`; every buffer in `b` was
        // allocated by `prepare` with the sizes MgBuffers documents for params.
        unsafe { self.init.launch(self.gpu, grid, 0, (Param(game.params), Param(b))) }
    }

    /// Enqueues the kernel-per-step passes from `game`'s next pass up to (not including) `end`
    /// (at most `p + 1`, the end of the game); the game can stop between any two and export its
    /// state ([`Mg::export_state`]).
    pub fn passes_on_device(&self, game: &mut Game, end: u32) -> Result<()> {
        let params = game.params;
        let end = end.min(params.p + 1);
        if game.next >= end {
            return Ok(());
        }
        let grid = self.step_grid(game)?;
        let fast = lean(&params, game.trace.is_some());
        let b = game.buffers();
        let h0 = game.setup.h0;
        if game.whole != params.n {
            let step = if fast { &self.step_rank_s2 } else { &self.step_rank };
            self.check_block(step)?;
            for k in game.next..end {
                // SAFETY: parameters mirror `(params, b, k: u32, h0: u32, n_total: u64)` of both
                // rank kernels (the _s2 one only for s = 2, no trace: shares have none); buffers as
                // in `begin_on_device`, holding the share's state after passes 0..k and ones[0..k]
                // the whole game's counts (the caller's all-reduces, in stream order).
                unsafe { step.launch(self.gpu, grid, 0, (Param(params), Param(b), k, h0, game.whole))? };
                game.next = k + 1;
            }
            return Ok(());
        }
        let step = if fast { &self.step_s2 } else { &self.step };
        self.check_block(step)?;
        for k in game.next..end {
            // SAFETY: parameters mirror `(params, b, k: u32, h0: u32)` of both step kernels (the
            // _s2 one only for s = 2, no trace); buffers as in `begin_on_device`, holding the
            // state after passes 0..k (one stream, launches in order).
            unsafe { step.launch(self.gpu, grid, 0, (Param(params), Param(b), k, h0))? };
            game.next = k + 1;
        }
        Ok(())
    }

    /// The model-independent state of `game` between passes (waits for the device): tables,
    /// scores, generators and votes downloaded; for the lean `s = 2` kernels the agent states
    /// are unpacked and the previous generators derived ([`unpack_s2`]).
    pub fn export_state(&self, game: &Game) -> Result<GameState> {
        game.whole_only("export_state")?;
        self.gpu.synchronize()?;
        let params = game.params;
        let n = params.n as usize;
        let mut tables = download(&game.tables)?;
        tables.truncate(n * (params.s * params.words) as usize);
        let mut ones = download(&game.ones)?;
        ones.truncate(params.p as usize);
        let rng = download(&game.rng)?;
        let words = download(&game.scores)?;
        if lean(&params, game.trace.is_some()) {
            // The i16 states sit in the first 2n bytes of the scores buffer (little-endian).
            let packed: Vec<i16> = (0..n)
                .map(|a| {
                    let w = words[a / 2] as u32;
                    (if a % 2 == 0 { w & 0xffff } else { w >> 16 }) as u16 as i16
                })
                .collect();
            let (seed, trial, next, h0) = (game.seed, game.trial, game.next, game.setup.h0);
            return Ok(unpack_s2(&params, seed, trial, next, h0, &packed, tables, rng, ones, jump_table()));
        }
        let mut scores = words;
        scores.truncate(n * params.s as usize);
        normalize_s2(&params, &mut scores);
        let rng_prev = download(&game.rng_prev)?;
        Ok(GameState {
            params,
            seed: game.seed,
            trial: game.trial,
            next: game.next,
            h0: game.setup.h0,
            ones,
            tables,
            scores,
            rng,
            rng_prev,
        })
    }

    /// A game of the kernel-per-step model that continues from `state` (exported by any model:
    /// the CPU twins or this one) at pass `state.next`; checks the state against its parameters,
    /// seed and trial, and the device memory, before allocating.
    pub fn prepare_from(&self, state: &GameState) -> Result<Game> {
        state.check()?;
        let mut game = self.prepare(&state.params, state.seed, state.trial, false)?;
        if game.setup.h0 != state.h0 {
            return Err(Error::InvalidInput {
                what: "Minority Game state",
                why: format!(
                    "initial history {} but seed {} and trial {} give {}",
                    state.h0, state.seed, state.trial, game.setup.h0
                ),
            });
        }
        game.tables.copy_from(&state.tables[..]).map_err(cuda("cuMemcpyHtoD"))?;
        if lean(&game.params, false) {
            let packed = pack_s2(state);
            let words: Vec<i32> = (0..state.scores.len())
                .map(|i| {
                    let half = |a: usize| packed.get(a).map_or(0, |&x| x as u16 as u32);
                    (half(2 * i) | (half(2 * i + 1) << 16)) as i32
                })
                .collect();
            game.scores.copy_from(&words[..]).map_err(cuda("cuMemcpyHtoD"))?;
        } else {
            game.scores.copy_from(&state.scores[..]).map_err(cuda("cuMemcpyHtoD"))?;
        }
        game.rng.copy_from(&state.rng[..]).map_err(cuda("cuMemcpyHtoD"))?;
        game.rng_prev.copy_from(&state.rng_prev[..]).map_err(cuda("cuMemcpyHtoD"))?;
        game.ones.copy_from(&state.ones[..]).map_err(cuda("cuMemcpyHtoD"))?;
        game.bar.set_32(0).map_err(cuda("cuMemsetD32"))?;
        game.next = state.next;
        Ok(game)
    }

    /// The outcome of the last run of `game` (waits for it).
    pub fn outcome(&self, game: &Game) -> Result<Outcome> {
        self.gpu.synchronize()?;
        let mut ones = download(&game.ones)?;
        ones.truncate(game.params.p as usize);
        Ok(Outcome { h0: game.setup.h0, ones })
    }

    /// The five reproducibility items of the last run of a game prepared with `trace`.
    pub fn trace(&self, game: &Game) -> Result<Trace> {
        let outcome = self.outcome(game)?;
        let Some((draws_buf, used_buf, stride)) = &game.trace else {
            return Err(Error::InvalidInput { what: "trace", why: "the game was prepared without a trace".into() });
        };
        let params = &game.params;
        let all = download(draws_buf)?;
        let mut draws = Vec::with_capacity(params.groups as usize);
        for g in 0..params.groups {
            let start = (g * stride) as usize;
            let mut d = all[start..start + draws_of_group(params, g) as usize].to_vec();
            if g == 0 {
                d[0] = game.setup.h0_draw;
            }
            draws.push(d);
        }
        let mut used = download(used_buf)?;
        used.truncate((params.n * params.p as u64) as usize);
        let mut tables = download(&game.tables)?;
        tables.truncate((params.n * (params.s * params.words) as u64) as usize);
        Ok(Trace { winners: outcome.winners(params.n), history: outcome.history(params), outcome, tables, used, draws })
    }

    /// Plays one distributed game and returns its outcome (and its trace with `trace`).
    pub fn play(
        &self,
        params: &MgParams,
        seed: u32,
        trial: u64,
        model: Distributed,
        trace: bool,
    ) -> Result<(Outcome, Option<Trace>)> {
        let mut game = self.prepare(params, seed, trial, trace)?;
        self.run_on_device(&mut game, model)?;
        let outcome = self.outcome(&game)?;
        let tr = if trace { Some(self.trace(&game)?) } else { None };
        Ok((outcome, tr))
    }

    /// Plays trials `first..first + trials` in the standalone model (one game per block, at
    /// most `blocks` blocks each looping over trials; `None`: one block per trial as memory
    /// allows). Returns each trial's outcome, and its trace with `trace`.
    pub fn play_standalone(
        &self,
        params: &MgParams,
        seed: u32,
        first: u64,
        trials: u64,
        blocks: Option<u32>,
        trace: bool,
    ) -> Result<Vec<(Outcome, Option<Trace>)>> {
        let mut run = self.prepare_standalone(params, seed, first, trials, blocks, trace)?;
        self.run_standalone_on_device(&mut run)?;
        self.standalone_results(&run)
    }

    /// Allocates a standalone run (see [`Mg::play_standalone`]).
    pub fn prepare_standalone(
        &self,
        params: &MgParams,
        seed: u32,
        first: u64,
        trials: u64,
        blocks: Option<u32>,
        trace: bool,
    ) -> Result<StandaloneRun> {
        let params = validate(params.n, params.m, params.s, params.p, params.groups)?;
        if trials == 0 {
            return Err(Error::InvalidInput { what: "trial count", why: "0 trials".into() });
        }
        trial_end(first, trials)?;
        if blocks == Some(0) {
            return Err(Error::InvalidInput { what: "standalone blocks", why: "0 blocks".into() });
        }
        let per_block =
            params.n.checked_mul(bytes_per_agent(&params)).and_then(|b| b.checked_add(params.groups.checked_mul(32)?));
        let trace_per_trial = if trace { trace_need(&params)? } else { 0 };
        let trace_len = trace_per_trial.checked_mul(trials).ok_or_else(|| Error::Overflow {
            what: "trace size in bytes",
            expr: format!("{trials} trials · {trace_per_trial}"),
        })?;
        if trace_len > MAX_TRACE_BYTES {
            return Err(Error::TooLarge { what: "trace size in bytes", value: trace_len, max: MAX_TRACE_BYTES });
        }
        let (free, _) = self.gpu.memory_info()?;
        let room = (free as u64).saturating_sub(64 << 20);
        // Per trial: its generators' first states (16 bytes a group), its vote counts (8 a step),
        // its h0 (4) and its trace.
        let fixed = params
            .groups
            .checked_mul(16)
            .and_then(|g| g.checked_add(8 * params.p as u64 + 4 + trace_per_trial))
            .and_then(|t| t.checked_mul(trials))
            .ok_or_else(|| Error::Overflow {
                what: "device memory the trials need besides their blocks (bytes)",
                expr: format!(
                    "{trials} trials · (16 · {} groups + 8 · {} steps + 4 + {trace_per_trial})",
                    params.groups, params.p
                ),
            })?;
        let Some(per_block) = per_block else {
            return Err(Error::Overflow {
                what: "device memory per game (bytes)",
                expr: format!("{} agents · {} + 32 · {} groups", params.n, bytes_per_agent(&params), params.groups),
            });
        };
        let fit = room.saturating_sub(fixed) / per_block.max(1);
        let want = blocks.map_or(trials.min(crate::launch::MAX_GRID_X), |b| b as u64);
        if fit == 0 || (blocks.is_some() && want > fit) {
            return Err(Error::TooLarge {
                what: "device memory this standalone run needs (bytes)",
                value: fixed.saturating_add(want.saturating_mul(per_block)),
                max: room,
            });
        }
        let nblocks = want.min(fit).min(trials) as u32;
        let setups = setups(&params, seed, first, trials);
        let rng_init: Vec<u32> = setups.iter().flat_map(|s| flatten(&s.states)).collect();
        let h0: Vec<u32> = setups.iter().map(|s| s.h0).collect();
        let stride = u64::try_from(Layout::of(&params).group_stride).unwrap_or(u64::MAX);
        let trace = if trace {
            Some((
                alloc::<u32>(trials * params.groups * stride)?,
                alloc::<u8>(trials * params.n * params.p as u64)?,
                stride,
            ))
        } else {
            None
        };
        let threads = self.standalone_threads(&params, trace.is_some(), nblocks, trials)?;
        let nb = nblocks as u64;
        Ok(StandaloneRun {
            params,
            trials,
            blocks: nblocks,
            threads,
            setups,
            tables: alloc(nb * params.n * (params.s * params.words) as u64)?,
            scores: alloc(nb * params.n * params.s as u64)?,
            rng: alloc(nb * params.groups * 4)?,
            rng_prev: alloc(nb * params.groups * 4)?,
            rng_init: upload(&rng_init)?,
            h0: upload(&h0)?,
            ones: alloc(trials * params.p as u64)?,
            trace,
        })
    }

    /// Enqueues a standalone run.
    pub fn run_standalone_on_device(&self, run: &mut StandaloneRun) -> Result<()> {
        let params = run.params;
        let (trace_draws, trace_used, draw_stride) = trace_addresses(&run.trace);
        let sb = MgStandaloneBuffers {
            trials: run.trials,
            tables: run.tables.as_device_ptr().as_raw(),
            scores: run.scores.as_device_ptr().as_raw(),
            rng: run.rng.as_device_ptr().as_raw(),
            rng_prev: run.rng_prev.as_device_ptr().as_raw(),
            rng_init: run.rng_init.as_device_ptr().as_raw(),
            h0: run.h0.as_device_ptr().as_raw(),
            ones: run.ones.as_device_ptr().as_raw(),
            trace_draws,
            trace_used,
            draw_stride,
        };
        let dims = Dims::new([run.blocks, 1, 1], [run.threads, 1, 1])?;
        let f = self.standalone_kernel(&params, run.trace.is_some());
        self.check_threads(f, run.threads)?;
        // SAFETY: parameters mirror `(params: MgParams, sb: MgStandaloneBuffers)` of the three
        // kernels (_s2: s = 2, no trace; _s2t also p ≤ S2_SIDE_MAX_P, and `Dims` holds a block of
        // a multiple of 32 threads: `block_size` or `standalone_block`); buffers allocated by
        // `prepare_standalone` for `run.blocks` workspaces and `run.trials`.
        unsafe { f.launch(self.gpu, dims, 0, (Param(params), Param(sb))) }
    }

    /// Outcomes (and traces) of a standalone run, in trial order (waits for it).
    pub fn standalone_results(&self, run: &StandaloneRun) -> Result<Vec<(Outcome, Option<Trace>)>> {
        self.gpu.synchronize()?;
        let params = &run.params;
        let p = params.p as usize;
        let ones = download(&run.ones)?;
        let traces = match &run.trace {
            Some((d, u, stride)) => Some((download(d)?, download(u)?, *stride)),
            None => None,
        };
        let tables_all =
            if run.trace.is_some() && run.blocks as u64 >= run.trials { Some(download(&run.tables)?) } else { None };
        let words = (params.n * (params.s * params.words) as u64) as usize;
        let mut out = Vec::with_capacity(run.trials as usize);
        for (t, setup) in run.setups.iter().enumerate() {
            let outcome = Outcome { h0: setup.h0, ones: ones[t * p..(t + 1) * p].to_vec() };
            let trace = match &traces {
                Some((d, u, stride)) => {
                    let per = (params.groups * stride) as usize;
                    let mut draws = Vec::with_capacity(params.groups as usize);
                    for g in 0..params.groups {
                        let start = t * per + (g * stride) as usize;
                        let mut v = d[start..start + draws_of_group(params, g) as usize].to_vec();
                        if g == 0 {
                            v[0] = setup.h0_draw;
                        }
                        draws.push(v);
                    }
                    let nu = (params.n * params.p as u64) as usize;
                    let tables =
                        tables_all.as_ref().map_or_else(Vec::new, |all| all[t * words..(t + 1) * words].to_vec());
                    Some(Trace {
                        winners: outcome.winners(params.n),
                        history: outcome.history(params),
                        outcome: outcome.clone(),
                        tables,
                        used: u[t * nu..(t + 1) * nu].to_vec(),
                        draws,
                    })
                }
                None => None,
            };
            out.push((outcome, trace));
        }
        Ok(out)
    }
}

/// A standalone run's device state.
pub struct StandaloneRun {
    params: MgParams,
    trials: u64,
    blocks: u32,
    threads: u32,
    setups: Vec<Setup>,
    tables: DeviceBuffer<u32>,
    scores: DeviceBuffer<i32>,
    rng: DeviceBuffer<u32>,
    rng_prev: DeviceBuffer<u32>,
    rng_init: DeviceBuffer<u32>,
    h0: DeviceBuffer<u32>,
    ones: DeviceBuffer<u64>,
    trace: Option<DeviceTrace>,
}

impl StandaloneRun {
    /// Blocks launched (each a game at a time).
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Threads per block (chosen, or picked for the run: see [`Mg::new`]).
    pub fn threads(&self) -> u32 {
        self.threads
    }
}
