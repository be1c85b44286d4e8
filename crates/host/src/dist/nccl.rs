//! NCCL, opened at run time, and [`NcclComm`]: one process per GPU, device collectives through
//! NCCL, host collectives and the rendezvous through another [`Communicator`].
//!
//! **Why our own binding.** NCCL is a C library that few machines have in the loader's path
//! (on ours it ships only inside the Python wheel `nvidia-nccl-cu13`), so — like the CUDA driver
//! (`crate::driver`) — it is opened with `dlopen` when a run first asks for it, never linked:
//! a program that never uses NCCL starts without it. The binding is a table of the nine
//! functions we call. cudarc's `nccl` module would do the opening too, but it takes cudarc's
//! own context and stream types, which would sit beside cust's (ours own the context, module
//! and stream of a [`Gpu`]); a raw stream handle is all NCCL needs, and cust gives it.
//!
//! **Where the library is found** ([`load`]), in order:
//! 1. the file named by `LOCKSTEP_NCCL` — when set, nothing else is tried, and a file that
//!    does not load is an error;
//! 2. `libnccl.so.2` through the loader's path (`LD_LIBRARY_PATH`, the system directories);
//! 3. the Python package: `python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])"`
//!    gives the package's directory, and `<dir>/lib/libnccl.so.2` is tried.
//!
//! The outcome is remembered for the process: later calls return it without searching again.
//!
//! **Invariants.** An [`NcclComm`]'s NCCL communicator is used by one call at a time (a mutex);
//! it is destroyed (aborted, after an error) before the context it lives in is released; a
//! collective is never enqueued on a communicator that reported an error. In debug builds each
//! device collective first checks, through the host communicator, that every rank called the
//! same collective with the same length (NCCL cannot check; a mismatch would hang).

use crate::dist::{Communicator, DeviceCollectives};
use crate::error::{Error, Result, cuda};
use crate::gpu::Gpu;
use std::ffi::{CStr, OsStr, OsString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The library's file name (the soname NCCL 2 installs).
pub const LIBRARY: &str = "libnccl.so.2";

/// The environment variable naming the library's file ([`load`]).
pub const ENV: &str = "LOCKSTEP_NCCL";

/// `ncclResult_t`: `ncclSuccess`.
const SUCCESS: c_int = 0;
/// `ncclResult_t`: `ncclInProgress` (a non-blocking operation still running: not an error).
const IN_PROGRESS: c_int = 7;
/// `ncclDataType_t`: `ncclUint8`.
const UINT8: c_int = 1;
/// `ncclDataType_t`: `ncclUint64`.
const UINT64: c_int = 5;
/// `ncclRedOp_t`: `ncclSum`.
const SUM: c_int = 0;
/// `NCCL_UNIQUE_ID_BYTES`.
const UNIQUE_ID_BYTES: usize = 128;

/// `ncclUniqueId`: opaque bytes made by rank 0 and handed to every rank (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
struct UniqueId {
    internal: [u8; UNIQUE_ID_BYTES],
}

/// `ncclComm_t`.
type RawComm = *mut c_void;
/// `cudaStream_t` (the driver's `CUstream`: the same handle).
type RawStream = *mut c_void;

type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
type GetUniqueId = unsafe extern "C" fn(*mut UniqueId) -> c_int;
type CommInitRank = unsafe extern "C" fn(*mut RawComm, c_int, UniqueId, c_int) -> c_int;
type AllReduce = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int;
type AllGather = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, RawStream) -> c_int;
type CommFree = unsafe extern "C" fn(RawComm) -> c_int;
type CommGetAsyncError = unsafe extern "C" fn(RawComm, *mut c_int) -> c_int;
type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
type GetLastError = unsafe extern "C" fn(RawComm) -> *const c_char;

/// The NCCL library of this process and the functions lockstep calls ([`load`]).
pub struct Nccl {
    /// Where it was found, in words (a path, or the soname through the loader's path).
    origin: String,
    /// `ncclGetVersion`'s code.
    version: i32,
    get_unique_id: GetUniqueId,
    comm_init_rank: CommInitRank,
    all_reduce: AllReduce,
    all_gather: AllGather,
    comm_destroy: CommFree,
    comm_abort: CommFree,
    comm_get_async_error: CommGetAsyncError,
    get_error_string: GetErrorString,
    /// Since NCCL 2.13.
    get_last_error: Option<GetLastError>,
    /// Keeps every function pointer above valid; dropped last.
    _library: libloading::Library,
}

impl std::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The process's NCCL, opened on the first call ([module docs](self) say where it looks).
///
/// Errors: [`Error::Nccl`] (call `dlopen`) listing every place tried and how to fix it (set
/// `LOCKSTEP_NCCL`, or `pip install nvidia-nccl-cu13`). The outcome is remembered.
pub fn load() -> Result<&'static Nccl> {
    static LOADED: OnceLock<Result<Nccl, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| search(std::env::var_os(ENV), OsStr::new(LIBRARY), &mut python_package_dir))
        .as_ref()
        .map_err(|why| Error::Nccl { call: "dlopen", why: why.clone() })
}

/// Opens NCCL from the first place that works: `env` (the value of `LOCKSTEP_NCCL`; when
/// given, the only place), else `loader_name` through the loader's path, else
/// `<python_dir()>/lib/libnccl.so.2`. The error lists what was tried and how to fix it.
fn search(
    env: Option<OsString>,
    loader_name: &OsStr,
    python_dir: &mut dyn FnMut() -> Result<PathBuf, String>,
) -> Result<Nccl, String> {
    if let Some(file) = env {
        return open(&file, &file.to_string_lossy()).map_err(|why| {
            format!(
                "{ENV}={} does not load NCCL: {why}. Point {ENV} at NCCL's libnccl.so.2 (the \
                 nvidia-nccl-cu13 Python package has it at site-packages/nvidia/nccl/lib/libnccl.so.2), \
                 or unset it to search the loader's path and that package",
                file.to_string_lossy()
            )
        });
    }
    let mut tried = Vec::new();
    let through_loader = format!("{} (through the loader's path)", loader_name.to_string_lossy());
    match open(loader_name, &through_loader) {
        Ok(nccl) => return Ok(nccl),
        Err(why) => tried.push(format!("{through_loader}: {why}")),
    }
    match python_dir() {
        Ok(dir) => {
            let file = dir.join("lib").join(LIBRARY);
            let shown = file.display().to_string();
            match open(file.as_os_str(), &format!("{shown} (Python package nvidia-nccl-cu13)")) {
                Ok(nccl) => return Ok(nccl),
                Err(why) => tried.push(format!("{shown} (Python package nvidia-nccl-cu13): {why}")),
            }
        }
        Err(why) => tried.push(format!("the Python package nvidia-nccl-cu13: {why}")),
    }
    Err(format!(
        "NCCL not found; tried {}. Install it with `pip install nvidia-nccl-cu13` (for the python3 on \
         PATH), or set {ENV} to the path of libnccl.so.2",
        tried.join("; ")
    ))
}

/// The directory of the Python package `nvidia.nccl` (a namespace package), as the `python3`
/// on `PATH` sees it.
fn python_package_dir() -> Result<PathBuf, String> {
    let output = std::process::Command::new("python3")
        .args(["-c", "import nvidia.nccl as m; print(list(m.__path__)[0])"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3 ({e})"))?;
    if !output.status.success() {
        return Err(format!("python3 cannot import nvidia.nccl ({})", output.status));
    }
    let text = String::from_utf8(output.stdout).map_err(|_| "python3 printed a path that is not UTF-8".to_string())?;
    match text.lines().last().map(str::trim) {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Err("python3 printed no directory for nvidia.nccl".into()),
    }
}

/// Opens `file` and resolves the functions lockstep calls; `origin` says where it came from.
fn open(file: &OsStr, origin: &str) -> Result<Nccl, String> {
    // SAFETY: loading NCCL runs its initialisers, which have no preconditions on the calling
    // program (they read the environment and register nothing we rely on).
    let library = unsafe { libloading::Library::new(file) }.map_err(|e| format!("cannot open it ({e})"))?;
    // SAFETY: each `resolve` gives the function's signature in nccl.h, and the pointers live
    // in the returned `Nccl` beside the library that holds them.
    unsafe {
        let get_version: GetVersion = resolve(&library, "ncclGetVersion")?;
        let mut version = 0;
        let result = get_version(&mut version);
        if result != SUCCESS {
            return Err(format!("ncclGetVersion failed (result {result})"));
        }
        Ok(Nccl {
            origin: origin.to_string(),
            version,
            get_unique_id: resolve(&library, "ncclGetUniqueId")?,
            comm_init_rank: resolve(&library, "ncclCommInitRank")?,
            all_reduce: resolve(&library, "ncclAllReduce")?,
            all_gather: resolve(&library, "ncclAllGather")?,
            comm_destroy: resolve(&library, "ncclCommDestroy")?,
            comm_abort: resolve(&library, "ncclCommAbort")?,
            comm_get_async_error: resolve(&library, "ncclCommGetAsyncError")?,
            get_error_string: resolve(&library, "ncclGetErrorString")?,
            get_last_error: resolve(&library, "ncclGetLastError").ok(),
            _library: library,
        })
    }
}

/// The function `name` of `library`.
///
/// # Safety
/// `T` is the function's C signature; the result is not called after `library` is dropped.
unsafe fn resolve<T: Copy>(library: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: forwarded from the caller.
    unsafe { library.get::<T>(name.as_bytes()) }
        .map(|symbol| *symbol)
        .map_err(|e| format!("it lacks `{name}`: not NCCL, or an NCCL older than 2.4 ({e})"))
}

/// `ncclGetVersion`'s code as `major.minor.patch`: `X·10000 + Y·100 + Z` since 2.9,
/// `X·1000 + Y·100 + Z` before.
fn version_text(code: i32) -> String {
    if code >= 10_000 {
        format!("{}.{}.{}", code / 10_000, code / 100 % 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code / 100 % 10, code % 100)
    }
}

/// A C string of NCCL's (`None` for a null pointer or an empty string).
///
/// # Safety
/// `text` is null or a NUL-terminated string alive for the call.
unsafe fn c_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: forwarded from the caller.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy().trim().to_string();
    (!text.is_empty()).then_some(text)
}

impl Nccl {
    /// `ncclGetVersion`'s code (`22803` for NCCL 2.28.3).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// The version and where the library was found: `NCCL 2.28.3 from /…/libnccl.so.2`.
    pub fn describe(&self) -> String {
        format!("NCCL {} from {}", version_text(self.version), self.origin)
    }

    /// [`Error::Nccl`] for `result` of `call`: NCCL's text for the code and its last error.
    fn error(&self, call: &'static str, result: c_int, comm: RawComm) -> Error {
        // SAFETY: both return NUL-terminated static or thread-local strings, or null; the
        // comm argument is a live communicator or null (which both accept).
        let (text, last) =
            unsafe { (c_text((self.get_error_string)(result)), self.get_last_error.and_then(|f| c_text(f(comm)))) };
        let text = text.unwrap_or_else(|| "unknown error".into());
        let why = match last {
            Some(last) => format!("{text} (ncclResult_t {result}): {last}"),
            None => format!("{text} (ncclResult_t {result})"),
        };
        Error::Nccl { call, why }
    }

    /// `Ok` for `ncclSuccess`, else [`Nccl::error`].
    fn check(&self, call: &'static str, result: c_int, comm: RawComm) -> Result<()> {
        if result == SUCCESS { Ok(()) } else { Err(self.error(call, result, comm)) }
    }
}

/// The raw communicator, owned by one [`NcclComm`].
struct Handle(RawComm);

// SAFETY: an NCCL communicator is not tied to the thread that made it; NCCL forbids only
// concurrent calls on one communicator, and `NcclComm` reaches the handle only through its
// mutex (or `&mut self` in `Drop`), so calls are never concurrent. With `Handle: Send`,
// `Mutex<Handle>` is `Send + Sync`, and so is `NcclComm`: no `unsafe impl` is needed there.
unsafe impl Send for Handle {}

/// A device collective, as the debug check compares it across ranks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    AllReduceU64 { count: usize },
    AllGather { bytes: usize },
}

impl Call {
    /// Sixteen bytes: kind, then length (little-endian `u64`s).
    #[cfg(debug_assertions)]
    fn encode(self) -> [u8; 16] {
        let (kind, len) = match self {
            Call::AllReduceU64 { count } => (1u64, count),
            Call::AllGather { bytes } => (2, bytes),
        };
        let mut out = [0; 16];
        out[..8].copy_from_slice(&kind.to_le_bytes());
        out[8..].copy_from_slice(&(len as u64).to_le_bytes());
        out
    }

    /// What [`Call::encode`] wrote, in words.
    #[cfg(debug_assertions)]
    fn decode(bytes: &[u8]) -> String {
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
        match word(0) {
            1 => Call::AllReduceU64 { count: word(8) as usize }.to_string(),
            2 => Call::AllGather { bytes: word(8) as usize }.to_string(),
            kind => format!("an unknown device collective ({kind})"),
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::AllReduceU64 { count } => write!(f, "device all_reduce_u64 of {count} u64"),
            Call::AllGather { bytes } => write!(f, "device all_gather of {bytes} bytes"),
        }
    }
}

/// One process per GPU joined by NCCL: device collectives on the GPU's stream through NCCL,
/// host collectives through the communicator it was made with (the run's store).
pub struct NcclComm {
    nccl: &'static Nccl,
    comm: Mutex<Handle>,
    /// Why the communicator is unusable (set on the first NCCL error; then `Drop` aborts).
    broken: OnceLock<String>,
    host: Box<dyn Communicator>,
    ordinal: u32,
    /// The debug check's gather buffer: 16 bytes per rank, allocated once.
    #[cfg(debug_assertions)]
    calls: Mutex<Vec<u8>>,
    /// The GPU's primary context, retained so that it outlives the NCCL communicator in it
    /// (fields drop after `Drop::drop`, which destroys the communicator).
    context: cust::context::Context,
}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclComm")
            .field("rank", &self.host.rank())
            .field("size", &self.host.size())
            .field("gpu", &self.ordinal)
            .field("nccl", &self.nccl.describe())
            .finish()
    }
}

/// Refuses a run of several ranks unless NVLink multicast is off (`NCCL_NVLS_ENABLE=0`).
fn nvls_off() -> Result<()> {
    match std::env::var("NCCL_NVLS_ENABLE") {
        Ok(v) if v.trim() == "0" => Ok(()),
        other => Err(Error::Nccl {
            call: "ncclCommInitRank",
            why: format!(
                "refused: NCCL_NVLS_ENABLE is {}, and NVLink multicast (NVLS) must stay off on these \
                 machines; set NCCL_NVLS_ENABLE=0 in every rank's environment (`lockstep run` does)",
                match other {
                    Ok(v) => format!("`{v}`"),
                    Err(_) => "not set".into(),
                }
            ),
        }),
    }
}

impl NcclComm {
    /// Joins the ranks of `host` in an NCCL communicator on `gpu` (every rank calls it, in the
    /// same order as its other collectives): rank 0 makes NCCL's unique id, `host` broadcasts
    /// it, and every rank calls `ncclCommInitRank` with `gpu`'s context current. Before that,
    /// every rank learns whether every other is ready (NCCL loaded, id made), so no rank waits
    /// in NCCL for a peer that failed.
    ///
    /// Errors: [`Error::Nccl`] when NCCL cannot be loaded ([`load`]), for a run of several
    /// ranks without `NCCL_NVLS_ENABLE=0`, or when an NCCL call fails; [`Error::Collective`]
    /// when another rank failed (its own error says why) or a host collective failed.
    pub fn init(host: Box<dyn Communicator>, gpu: &Gpu) -> Result<NcclComm> {
        let (rank, size) = (host.rank(), host.size());
        let nranks = c_int::try_from(size)
            .map_err(|_| Error::InvalidInput { what: "NCCL ranks", why: format!("{size} is beyond NCCL's int") })?;
        let mut id = UniqueId { internal: [0; UNIQUE_ID_BYTES] };
        let ready = (|| -> Result<(&'static Nccl, cust::context::Context)> {
            let nccl = load()?;
            if size > 1 {
                nvls_off()?;
            }
            gpu.bind()?;
            let device = cust::device::Device::get_device(gpu.ordinal()).map_err(cuda("cuDeviceGet"))?;
            let context = cust::context::Context::new(device).map_err(cuda("cuDevicePrimaryCtxRetain"))?;
            if rank == 0 {
                // SAFETY: `id` is a live ncclUniqueId for NCCL to fill.
                nccl.check("ncclGetUniqueId", unsafe { (nccl.get_unique_id)(&mut id) }, std::ptr::null_mut())?;
            }
            Ok((nccl, context))
        })();
        let (nccl, context) = agree(&*host, ready, "set up NCCL")?;
        host.broadcast_bytes(0, &mut id.internal)?;

        gpu.bind()?;
        let mut comm: RawComm = std::ptr::null_mut();
        // SAFETY: `comm` is written by NCCL; `id` is rank 0's id, the same on every rank; the
        // GPU's context is current, so NCCL takes its device.
        let result = unsafe { (nccl.comm_init_rank)(&mut comm, nranks, id, rank as c_int) };
        let made = nccl.check("ncclCommInitRank", result, std::ptr::null_mut());
        let comm = NcclComm {
            nccl,
            comm: Mutex::new(Handle(if made.is_ok() { comm } else { std::ptr::null_mut() })),
            broken: OnceLock::new(),
            host,
            ordinal: gpu.ordinal(),
            #[cfg(debug_assertions)]
            calls: Mutex::new(vec![0; 16 * size]),
            context,
        };
        // Every rank keeps its communicator only if every rank made one (else `Drop` aborts it).
        if let Err(e) = agree(&*comm.host, made, "create the NCCL communicator") {
            let _ = comm.broken.set(e.to_string());
            return Err(e);
        }
        Ok(comm)
    }

    /// This rank, `0..size()` (the host communicator's).
    pub fn rank(&self) -> usize {
        self.host.rank()
    }

    /// Ranks in the run (the host communicator's).
    pub fn size(&self) -> usize {
        self.host.size()
    }

    /// The NCCL library this communicator uses.
    pub fn nccl(&self) -> &'static Nccl {
        self.nccl
    }

    /// The communicator, for one NCCL call: refused for another GPU than the one it was made
    /// on, or after an NCCL error.
    fn lock(&self, call: &'static str, gpu: &Gpu) -> Result<MutexGuard<'_, Handle>> {
        if gpu.ordinal() != self.ordinal {
            return Err(Error::InvalidInput {
                what: "GPU",
                why: format!("the NCCL communicator is on GPU {}, called with GPU {}", self.ordinal, gpu.ordinal()),
            });
        }
        if let Some(why) = self.broken.get() {
            return Err(Error::Nccl { call, why: format!("not enqueued: the communicator failed earlier ({why})") });
        }
        let comm = self.comm.lock().map_err(|_| Error::Nccl {
            call,
            why: "not enqueued: a thread panicked while calling NCCL on this communicator".into(),
        })?;
        if comm.0.is_null() {
            return Err(Error::Nccl { call, why: "not enqueued: the communicator was never created".into() });
        }
        Ok(comm)
    }

    /// `result` of enqueueing `call`, then the communicator's asynchronous state: either error
    /// marks the communicator broken.
    fn finish(&self, call: &'static str, result: c_int, comm: RawComm) -> Result<()> {
        let mut state = SUCCESS;
        let outcome = self.nccl.check(call, result, comm).and_then(|()| {
            // SAFETY: `comm` is live (the caller holds its lock); `state` is written by NCCL.
            let asked = unsafe { (self.nccl.comm_get_async_error)(comm, &mut state) };
            self.nccl.check("ncclCommGetAsyncError", asked, comm)?;
            match state {
                SUCCESS | IN_PROGRESS => Ok(()),
                failed => Err(match self.nccl.error(call, failed, comm) {
                    Error::Nccl { why, .. } => {
                        Error::Nccl { call: "ncclCommGetAsyncError", why: format!("after {call}: {why}") }
                    }
                    other => other,
                }),
            }
        });
        if let Err(e) = &outcome {
            let _ = self.broken.set(e.to_string());
        }
        outcome
    }

    /// Debug builds: every rank called the same device collective with the same length (NCCL
    /// cannot tell, and would hang); [`Error::Collective`] on every rank otherwise.
    #[cfg(debug_assertions)]
    fn same_call_everywhere(&self, call: Call) -> Result<()> {
        let mine = call.encode();
        let mut all = self.calls.lock().map_err(|_| Error::Collective {
            rank: self.rank(),
            size: self.size(),
            why: format!("{call}: a thread panicked during an earlier check"),
        })?;
        self.host.all_gather_bytes(&mine, &mut all)?;
        match all.chunks_exact(16).position(|theirs| theirs != mine) {
            None => Ok(()),
            Some(other) => Err(Error::Collective {
                rank: self.rank(),
                size: self.size(),
                why: format!(
                    "rank {} called {call}, rank {other} called {}",
                    self.rank(),
                    Call::decode(&all[16 * other..16 * other + 16])
                ),
            }),
        }
    }

    /// Release builds: the families call device collectives in a fixed order (no check).
    #[cfg(not(debug_assertions))]
    fn same_call_everywhere(&self, _: Call) -> Result<()> {
        Ok(())
    }
}

/// Every rank's `mine` as a verdict on `step`: this rank's own error, or
/// [`Error::Collective`] naming the ranks that failed, or the value when every rank succeeded.
fn agree<T>(host: &dyn Communicator, mine: Result<T>, step: &str) -> Result<T> {
    let mut failed = vec![0u8; host.size()];
    host.all_gather_bytes(&[u8::from(mine.is_err())], &mut failed)?;
    let value = mine?;
    let ranks: Vec<String> = failed.iter().enumerate().filter(|(_, f)| **f != 0).map(|(r, _)| r.to_string()).collect();
    if ranks.is_empty() {
        Ok(value)
    } else {
        Err(Error::Collective {
            rank: host.rank(),
            size: host.size(),
            why: format!("could not {step}: rank(s) {} failed (their errors say why)", ranks.join(", ")),
        })
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        let comm = match self.comm.get_mut() {
            Ok(handle) => handle.0,
            Err(poisoned) => poisoned.into_inner().0,
        };
        if comm.is_null() {
            return;
        }
        // NCCL frees device memory in the GPU's context: make it current (it is retained by
        // `self.context` until after this).
        let _ = cust::context::CurrentContext::set_current(&self.context);
        let poisoned = self.comm.is_poisoned();
        // SAFETY: `comm` is live and no other call can use it (`&mut self`); it is not used again.
        let _ = unsafe {
            if self.broken.get().is_some() || poisoned {
                (self.nccl.comm_abort)(comm)
            } else {
                (self.nccl.comm_destroy)(comm)
            }
        };
    }
}

impl Communicator for NcclComm {
    fn rank(&self) -> usize {
        self.host.rank()
    }
    fn size(&self) -> usize {
        self.host.size()
    }
    fn all_reduce_u64(&self, values: &mut [u64]) -> Result<()> {
        self.host.all_reduce_u64(values)
    }
    fn all_gather_bytes(&self, mine: &[u8], all: &mut [u8]) -> Result<()> {
        self.host.all_gather_bytes(mine, all)
    }
    fn finish(&self) -> Result<()> {
        self.host.finish()
    }
    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        self.host.broadcast_bytes(root, buf)
    }
    fn barrier(&self) -> Result<()> {
        self.host.barrier()
    }
    fn device(&self) -> Option<&dyn DeviceCollectives> {
        Some(self)
    }
}

impl DeviceCollectives for NcclComm {
    unsafe fn all_reduce_u64(&self, gpu: &Gpu, buf: u64, count: usize) -> Result<()> {
        const CALL: &str = "ncclAllReduce";
        self.same_call_everywhere(Call::AllReduceU64 { count })?;
        let comm = self.lock(CALL, gpu)?;
        gpu.bind()?;
        let stream = gpu.stream().as_inner() as RawStream;
        let buf = buf as usize as *mut c_void;
        // SAFETY: the caller guarantees `count` u64 of `gpu`'s context at `buf` until the
        // stream passes this call; the communicator is live and locked; in place is allowed.
        let result = unsafe { (self.nccl.all_reduce)(buf, buf, count, UINT64, SUM, comm.0, stream) };
        self.finish(CALL, result, comm.0)
    }

    unsafe fn all_gather(&self, gpu: &Gpu, send: u64, recv: u64, bytes: usize) -> Result<()> {
        const CALL: &str = "ncclAllGather";
        self.same_call_everywhere(Call::AllGather { bytes })?;
        let comm = self.lock(CALL, gpu)?;
        gpu.bind()?;
        let stream = gpu.stream().as_inner() as RawStream;
        let (send, recv) = (send as usize as *const c_void, recv as usize as *mut c_void);
        // SAFETY: the caller guarantees `bytes` bytes at `send` and `size·bytes` at `recv`
        // (overlapping only as this rank's slot, which NCCL allows) until the stream passes
        // this call; the communicator is live and locked.
        let result = unsafe { (self.nccl.all_gather)(send, recv, bytes, UINT8, comm.0, stream) };
        self.finish(CALL, result, comm.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_python() -> Result<PathBuf, String> {
        Err("python3 cannot import nvidia.nccl (test)".into())
    }

    #[test]
    fn an_unloadable_env_file_is_an_error_naming_the_variable() {
        let mut asked = false;
        let e = search(Some("/nonexistent".into()), OsStr::new("/nonexistent/libnccl.so.2"), &mut || {
            asked = true;
            no_python()
        })
        .unwrap_err();
        assert!(e.contains("LOCKSTEP_NCCL=/nonexistent"), "{e}");
        assert!(e.contains("cannot open"), "{e}");
        assert!(!asked, "with LOCKSTEP_NCCL set, nothing else is tried");
    }

    #[test]
    fn a_library_that_is_not_nccl_is_refused() {
        // libm is in every glibc process already; it has no NCCL symbols.
        let e = search(Some("libm.so.6".into()), OsStr::new(LIBRARY), &mut no_python).unwrap_err();
        assert!(e.contains("lacks `ncclGetVersion`"), "{e}");
    }

    #[test]
    fn none_found_lists_every_place_and_the_fixes() {
        let e = search(None, OsStr::new("/nonexistent/libnccl.so.2"), &mut || Ok(PathBuf::from("/nowhere/nccl")))
            .unwrap_err();
        assert!(e.contains("/nonexistent/libnccl.so.2 (through the loader's path)"), "{e}");
        assert!(e.contains("/nowhere/nccl/lib/libnccl.so.2 (Python package nvidia-nccl-cu13)"), "{e}");
        assert!(e.contains("pip install nvidia-nccl-cu13"), "{e}");
        assert!(e.contains("LOCKSTEP_NCCL"), "{e}");
        let e = search(None, OsStr::new("/nonexistent/libnccl.so.2"), &mut no_python).unwrap_err();
        assert!(e.contains("python3 cannot import nvidia.nccl"), "{e}");
    }

    #[test]
    fn versions_read_in_both_encodings() {
        assert_eq!(version_text(22803), "2.28.3");
        assert_eq!(version_text(21803), "2.18.3");
        assert_eq!(version_text(2708), "2.7.8");
    }

    #[cfg(debug_assertions)]
    #[test]
    fn device_calls_round_trip_through_the_check_encoding() {
        for call in [Call::AllReduceU64 { count: 5 }, Call::AllGather { bytes: 40 }] {
            assert_eq!(Call::decode(&call.encode()), call.to_string());
        }
        assert_ne!(Call::AllReduceU64 { count: 5 }.encode(), Call::AllGather { bytes: 5 }.encode());
    }

    #[test]
    fn several_ranks_need_nvlink_multicast_off() {
        // Read-only: the test does not change the environment (other tests run beside it).
        let off = std::env::var("NCCL_NVLS_ENABLE").is_ok_and(|v| v.trim() == "0");
        match nvls_off() {
            Ok(()) => assert!(off),
            Err(e) => {
                assert!(!off);
                assert!(e.to_string().contains("NCCL_NVLS_ENABLE=0"), "{e}");
            }
        }
    }
}
