//! CUDA graphs by stream capture: record a fixed sequence of launches once, replay it with one
//! driver call. cust 0.3.2 has no graph API, so the six driver functions come from
//! `cust::sys` (bindgen of `cuda.h`), resolved through our own table ([`crate::driver`]).
//!
//! A [`Graph`] replays exactly the launches recorded — same kernels, same grids, same
//! parameter values (the driver copies them at capture) — so its results are the bits the
//! same launches give on the stream. Any family can use it: [`Gpu::capture`] records what the
//! closure enqueues on the capture's own (non-blocking) stream; [`Graph::launch`] enqueues the
//! whole recording on the GPU's stream, in order with everything else there.
//! What pays: many short kernels (a launch on the stream costs a few µs of host and gap time;
//! inside a graph the kernels follow each other with far smaller gaps).

use crate::error::{Error, Result, cuda};
use crate::gpu::Gpu;
use cust::error::CudaError;
use cust::stream::{Stream, StreamFlags};
use cust::sys::{
    CUgraph, CUgraphExec, CUresult, CUstreamCaptureMode_enum, cuGraphDestroy, cuGraphExecDestroy,
    cuGraphInstantiateWithFlags, cuGraphLaunch, cuStreamBeginCapture_v2, cuStreamEndCapture, cudaError_enum,
};

/// A driver status as a `Result` (cust's own conversion is private): the codes these calls
/// document map to their [`CudaError`]; the stream-capture codes (900–908), which cust 0.3.2
/// has no variant for, become `UnknownError` (the call's name says which step failed).
trait Status {
    fn ok(self, call: impl Fn(CudaError) -> Error) -> Result<()>;
}

impl Status for CUresult {
    fn ok(self, call: impl Fn(CudaError) -> Error) -> Result<()> {
        use cudaError_enum::*;
        let e = match self {
            CUDA_SUCCESS => return Ok(()),
            CUDA_ERROR_INVALID_VALUE => CudaError::InvalidValue,
            CUDA_ERROR_OUT_OF_MEMORY => CudaError::OutOfMemory,
            CUDA_ERROR_NOT_INITIALIZED => CudaError::NotInitialized,
            CUDA_ERROR_DEINITIALIZED => CudaError::Deinitialized,
            CUDA_ERROR_INVALID_CONTEXT => CudaError::InvalidContext,
            CUDA_ERROR_INVALID_HANDLE => CudaError::InvalidHandle,
            CUDA_ERROR_NOT_PERMITTED => CudaError::NotPermitted,
            CUDA_ERROR_NOT_SUPPORTED => CudaError::NotSupported,
            CUDA_ERROR_LAUNCH_FAILED => CudaError::LaunchFailed,
            CUDA_ERROR_ILLEGAL_ADDRESS => CudaError::IllegalAddress,
            _ => CudaError::UnknownError,
        };
        Err(call(e))
    }
}

/// An instantiated graph of `gpu`'s launches, ready to replay on its stream.
pub(crate) struct Graph<'g> {
    gpu: &'g Gpu,
    graph: CUgraph,
    exec: CUgraphExec,
}

impl Gpu {
    /// Records what `enqueue` enqueues on the stream it is given into a [`Graph`] (nothing
    /// runs during the recording). The stream is a fresh non-blocking one of this GPU's
    /// context, used for nothing else: other threads' work on the GPU's own stream or on the
    /// legacy default stream neither joins the recording nor is disturbed by it (a blocking
    /// stream under capture would make their synchronous copies fail). `enqueue` must only
    /// enqueue kernel launches (or async copies and memsets) on that stream — no
    /// synchronisation, no allocation; a call the driver refuses while capturing ends the
    /// capture with an error. The capture ends, and its graph is destroyed, whatever `enqueue`
    /// returns: its error is returned first. The graph runs on the GPU's stream
    /// ([`Graph::launch`]).
    pub(crate) fn capture(&self, enqueue: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph<'_>> {
        self.bind()?;
        let capturing = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cuda("cuStreamCreate"))?;
        let stream = capturing.as_inner();
        // SAFETY: `stream` is a live stream of the current context (bind), not the legacy
        // default stream; relaxed mode restricts no other thread's driver calls.
        unsafe { cuStreamBeginCapture_v2(stream, CUstreamCaptureMode_enum::CU_STREAM_CAPTURE_MODE_RELAXED) }
            .ok(cuda("cuStreamBeginCapture"))?;
        let recorded = enqueue(&capturing);
        let mut graph: CUgraph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above on the same stream; `graph` receives the
        // recorded graph (null when the capture was invalidated).
        let ended = unsafe { cuStreamEndCapture(stream, &mut graph) }.ok(cuda("cuStreamEndCapture"));
        let destroy = |graph: CUgraph| {
            if !graph.is_null() {
                // SAFETY: `graph` came from cuStreamEndCapture and is destroyed once, here.
                unsafe { cuGraphDestroy(graph) };
            }
        };
        if let Err(e) = recorded.and(ended) {
            destroy(graph);
            return Err(e);
        }
        if graph.is_null() {
            return Err(Error::InvalidInput { what: "graph capture", why: "the driver returned no graph".into() });
        }
        let mut exec: CUgraphExec = std::ptr::null_mut();
        // SAFETY: `graph` is a valid graph of this context; `exec` receives the executable.
        if let Err(e) = unsafe { cuGraphInstantiateWithFlags(&mut exec, graph, 0) }.ok(cuda("cuGraphInstantiate")) {
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
    /// the launches' own safety contracts asked of them at capture still holds.
    pub(crate) unsafe fn launch(&self) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: `exec` is this graph's live executable, made in the GPU's context; the stream
        // is that GPU's; the buffers are the caller's contract.
        unsafe { cuGraphLaunch(self.exec, self.gpu.stream().as_inner()) }.ok(cuda("cuGraphLaunch"))
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
