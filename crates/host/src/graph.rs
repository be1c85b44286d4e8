//! CUDA graphs built node by node: record a fixed sequence of launches once, replay it with
//! one driver call. cust 0.3.2 has no graph API, so the driver functions come from `cust::sys`
//! (bindgen of `cuda.h`), resolved through our own table ([`crate::driver`]).
//!
//! A [`Graph`] replays exactly the launches recorded — same kernels, same grids, same
//! parameter values (the driver copies them when a node is added) — each node depending on the
//! one before, so its results are the bits the same launches give on the stream. Any family
//! can use it: [`Gpu::record`] hands a [`Recorder`] to a closure that adds launches
//! ([`crate::kernel::Kernel::launch_to`] with [`Target::Graph`]); [`Graph::launch`] enqueues the
//! whole recording on the GPU's stream, in order with everything else there. The graph is
//! built without stream capture, so recording never disturbs other threads' use of the GPU (a
//! capture in progress makes some of their calls fail).
//! What pays: many short kernels (a launch on the stream costs a few µs of host and gap time;
//! inside a graph the kernels follow each other with far smaller gaps).
//!
//! **Edges.** A launch follows the one before it by a full edge (it starts after that one
//! completed), or — for the sm_90 `*_pdl_*` kernels, which wait for the grids before them
//! themselves (`crate::pdl`) — by a programmatic edge ([`Edge::Programmatic`]): its blocks are
//! launched while the one before drains. A driver without programmatic edges (before CUDA
//! 12.3) gets a full edge instead.

use crate::error::{Result, driver};
use crate::gpu::Gpu;
use crate::launch::Dims;
use crate::pdl::Edge;
use cust::function::Function;
use cust::sys::{
    CUDA_KERNEL_NODE_PARAMS, CUgraph, CUgraphExec, CUgraphNode, cuGraphAddDependencies, cuGraphAddKernelNode,
    cuGraphCreate, cuGraphDestroy, cuGraphExecDestroy, cuGraphInstantiateWithFlags, cuGraphLaunch,
};
use std::ffi::c_void;

/// `CUgraphEdgeData` (CUDA 12.3; cust 0.3.2's bindings predate it): what triggers an edge.
#[repr(C)]
struct EdgeData {
    /// `CU_GRAPH_KERNEL_NODE_PORT_*` of the upstream kernel node.
    from_port: u8,
    /// Must be 0.
    to_port: u8,
    /// `CU_GRAPH_DEPENDENCY_TYPE_*`.
    kind: u8,
    /// Must be zero.
    reserved: [u8; 5],
}

/// `CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC` with `CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC`: the
/// edge fires once every block of the upstream kernel signalled (`launch_dependents`) or exited.
const PROGRAMMATIC: EdgeData = EdgeData { from_port: 1, to_port: 0, kind: 1, reserved: [0; 5] };

unsafe extern "C" {
    /// `cuGraphAddDependencies_v2` (CUDA 12.3): edges with their [`EdgeData`]; through the
    /// driver table ([`crate::driver`]) like every other driver call.
    fn cuGraphAddDependencies_v2(
        graph: CUgraph,
        from: *const CUgraphNode,
        to: *const CUgraphNode,
        data: *const EdgeData,
        count: usize,
    ) -> cust::sys::CUresult;
}

/// An instantiated graph of `gpu`'s launches, ready to replay on its stream.
pub(crate) struct Graph<'g> {
    gpu: &'g Gpu,
    graph: CUgraph,
    exec: CUgraphExec,
}

/// Where a launch goes: the GPU's stream now, or a graph being recorded.
pub(crate) enum Target<'r> {
    /// Enqueued on the GPU's stream.
    Stream,
    /// Added to the recording, after everything added before.
    Graph(&'r mut Recorder),
}

/// A graph being built: each added launch depends on the one before.
pub(crate) struct Recorder {
    graph: CUgraph,
    last: Option<CUgraphNode>,
}

impl Recorder {
    /// Adds a launch of `function` with `args` (one pointer per parameter; the driver copies
    /// the values now) after the launches added before, following the last one by `edge`.
    ///
    /// # Safety
    /// As [`Gpu::launch`] for the launch when the graph runs: `args` matches the kernel's
    /// parameters, and the device addresses among them stay valid while the graph lives; with
    /// [`Edge::Programmatic`], the kernel waits for the grids before it (`griddepcontrol.wait`)
    /// before any memory access.
    pub(crate) unsafe fn add(
        &mut self,
        function: &Function<'_>,
        dims: impl Into<Dims>,
        shared_bytes: u32,
        args: &[*mut c_void],
        edge: Edge,
    ) -> Result<()> {
        let dims = dims.into();
        if dims.is_empty() {
            return Ok(());
        }
        let params = CUDA_KERNEL_NODE_PARAMS {
            func: function.to_raw(),
            gridDimX: dims.grid[0],
            gridDimY: dims.grid[1],
            gridDimZ: dims.grid[2],
            blockDimX: dims.block[0],
            blockDimY: dims.block[1],
            blockDimZ: dims.block[2],
            sharedMemBytes: shared_bytes,
            kernelParams: args.as_ptr() as *mut *mut c_void,
            extra: std::ptr::null_mut(),
        };
        let mut node: CUgraphNode = std::ptr::null_mut();
        // The node a programmatic edge comes from; without one, `deps` holds the full edge.
        let programmatic = self.last.filter(|_| edge == Edge::Programmatic);
        let deps = if programmatic.is_some() { &[][..] } else { self.last.as_slice() };
        // SAFETY: `graph` is live; `params` and `args` live across the call, which copies the
        // parameter values; `deps` holds 0 or 1 node of this graph.
        let r = unsafe { cuGraphAddKernelNode(&mut node, self.graph, deps.as_ptr(), deps.len(), &params) };
        driver("cuGraphAddKernelNode", r)?;
        if let Some(last) = programmatic {
            // SAFETY: both nodes belong to `graph`, which is live; one edge, not yet present.
            let r = unsafe { cuGraphAddDependencies_v2(self.graph, &last, &node, &PROGRAMMATIC, 1) };
            if r != cust::sys::CUresult::CUDA_SUCCESS {
                // No programmatic edges in this driver: the full edge, always valid.
                // SAFETY: as above.
                let r = unsafe { cuGraphAddDependencies(self.graph, &last, &node, 1) };
                driver("cuGraphAddDependencies", r)?;
            }
        }
        self.last = Some(node);
        Ok(())
    }
}

impl Gpu {
    /// Builds a [`Graph`] of the launches `add` adds to the [`Recorder`] (nothing runs while it
    /// is built; no stream is captured). The graph is destroyed on any error, `add`'s first.
    /// It runs on the GPU's stream ([`Graph::launch`]).
    pub(crate) fn record(&self, add: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<Graph<'_>> {
        self.bind()?;
        let mut graph: CUgraph = std::ptr::null_mut();
        // SAFETY: creates an empty graph; `graph` receives it.
        driver("cuGraphCreate", unsafe { cuGraphCreate(&mut graph, 0) })?;
        let destroy = |graph: CUgraph| {
            // SAFETY: `graph` came from cuGraphCreate and is destroyed once, here.
            unsafe { cuGraphDestroy(graph) };
        };
        let mut recorder = Recorder { graph, last: None };
        if let Err(e) = add(&mut recorder) {
            destroy(graph);
            return Err(e);
        }
        let mut exec: CUgraphExec = std::ptr::null_mut();
        // SAFETY: `graph` is a valid graph of this context; `exec` receives the executable.
        if let Err(e) = driver("cuGraphInstantiate", unsafe { cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
            destroy(graph);
            return Err(e);
        }
        Ok(Graph { gpu: self, graph, exec })
    }
}

impl Graph<'_> {
    /// Enqueues the recorded launches, in their recorded order, on the GPU's stream.
    ///
    /// # Safety
    /// Every device buffer the recorded launches read or write is still allocated, and what
    /// the launches' own safety contracts asked of them when recorded still holds.
    pub(crate) unsafe fn launch(&self) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: `exec` is this graph's live executable, made in the GPU's context; the stream
        // is that GPU's; the buffers are the caller's contract.
        driver("cuGraphLaunch", unsafe { cuGraphLaunch(self.exec, self.gpu.stream().as_inner()) })
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // Work already enqueued keeps running: the driver defers the release of a launched
        // executable until it completes.
        let _ = self.gpu.bind();
        // SAFETY: both handles are live, owned by this value and destroyed once.
        unsafe {
            cuGraphExecDestroy(self.exec);
            cuGraphDestroy(self.graph);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CUgraphEdgeData`: eight bytes, the three ports/type first.
    #[test]
    fn edge_data_has_the_drivers_layout() {
        assert_eq!(size_of::<EdgeData>(), 8);
        assert_eq!(std::mem::offset_of!(EdgeData, kind), 2);
        assert_eq!((PROGRAMMATIC.from_port, PROGRAMMATIC.to_port, PROGRAMMATIC.kind), (1, 0, 1));
    }
}
