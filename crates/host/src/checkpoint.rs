//! Checkpoint files: the one container every family's resumable state is written in.
//!
//! A checkpoint is written atomically — to a temporary file in the same folder, flushed to disk
//! (`fsync`), then renamed over the target — so a file at the target path is always whole: an
//! interrupted write leaves the previous checkpoint (or nothing) in place. Reading checks
//! everything before the caller does any work: the magic bytes, the format version, the header's
//! own checksum, the family, the stream version (a checkpoint of another stream version would
//! resume into bits of neither), the run's parameters, the exact file length, and at the end the
//! checksum of the whole file.
//!
//! # Format (version 1, little-endian)
//! | bytes | what |
//! |---|---|
//! | 8 | magic `LSTPCKPT` |
//! | 4 | format version (`u32`, [`FORMAT_VERSION`]) |
//! | 4 | header length `H` (`u32`, at most [`MAX_HEADER`]) |
//! | `H` | header: UTF-8 lines `key=value`: `lockstep` (the version that wrote it), `stream` (its [`crate::STREAM_VERSION`]), `family`, `step`, then the run's parameters |
//! | 8 | XXH64 (seed 0) of every byte above |
//! | 8 | payload length `P` (`u64`) |
//! | `P` | sections, each: tag (8 bytes, ASCII, zero-padded), element type (1 byte: [`Value::CODE`]), 7 zero bytes, element count (`u64`), the elements |
//! | 8 | XXH64 (seed 0) of every byte above (the whole file but these 8) |
//!
//! Each family defines its sections (`nbody::Checkpoint`, `mg::RunState`); parameters are
//! compared as text, so a mismatch names the parameter and both values.

use crate::error::{Error, Result};
use std::fs::File;
use std::hash::Hasher;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use twox_hash::XxHash64;

/// The first 8 bytes of every checkpoint.
pub const MAGIC: [u8; 8] = *b"LSTPCKPT";
/// The container version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The largest header accepted (bytes).
pub const MAX_HEADER: u32 = 1 << 20;
/// lockstep's version, written into every header.
pub const LOCKSTEP_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where and when a resumable run writes checkpoints, and the flag that stops it: one schedule
/// for every family's `run_resumable` ([`crate::mg::run_resumable`],
/// [`crate::nbody::run_resumable`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Schedule<'a> {
    /// The checkpoint file (none: never written).
    pub checkpoint: Option<&'a Path>,
    /// Steps between checkpoints in the family's unit (n-body: steps; Minority Game: game
    /// steps), counted over the whole run from step 0, so a resumed run keeps the schedule (0:
    /// only when stopped). Minority Game models that run whole games checkpoint at the first
    /// trial boundary after each.
    pub every: u64,
    /// The caller's identifying parameters, written into each checkpoint.
    pub extra: &'a [(String, String)],
    /// Checked between the run's pieces (n-body: segments, about every 0.1 s; Minority Game:
    /// passes or batches): when raised, the run checkpoints and stops.
    pub stop: Option<&'a AtomicBool>,
}

impl Schedule<'_> {
    /// Whether the stop flag is raised.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

/// What a checkpoint says about itself: readable (and checked) without its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The lockstep version that wrote it.
    pub lockstep: String,
    /// The stream version of the lockstep that wrote it ([`crate::STREAM_VERSION`]).
    pub stream: u32,
    /// The family (`nbody`, `mg`).
    pub family: String,
    /// The run's progress in the family's unit (n-body: steps done; mg: game steps done).
    pub step: u64,
    /// The run's parameters, in order: what a resumed run must match.
    pub params: Vec<(String, String)>,
}

impl Header {
    /// A header for `family` at `step` with `params`, written by this lockstep.
    pub fn new(family: &str, step: u64, params: Vec<(String, String)>) -> Header {
        Header { lockstep: LOCKSTEP_VERSION.into(), stream: crate::STREAM_VERSION, family: family.into(), step, params }
    }

    /// The value of parameter `key`.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn encode(&self) -> Result<String> {
        let mut text =
            format!("lockstep={}\nstream={}\nfamily={}\nstep={}\n", self.lockstep, self.stream, self.family, self.step);
        for (k, v) in &self.params {
            if k.is_empty() || k.contains(['=', '\n']) || v.contains('\n') {
                return Err(Error::InvalidInput {
                    what: "checkpoint parameter",
                    why: format!("`{k}` = `{v}`: keys need no `=` or newline, values no newline"),
                });
            }
            text.push_str(&format!("{k}={v}\n"));
        }
        Ok(text)
    }

    fn decode(text: &str) -> Option<Header> {
        let mut lines = text.lines().map(|l| l.split_once('='));
        let mut next = |key: &str| match lines.next() {
            Some(Some((k, v))) if k == key => Some(v.to_string()),
            _ => None,
        };
        let lockstep = next("lockstep")?;
        let stream = next("stream")?.parse().ok()?;
        let family = next("family")?;
        let step = next("step")?.parse().ok()?;
        let params: Option<Vec<(String, String)>> =
            text.lines().skip(4).map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect();
        Some(Header { lockstep, stream, family, step, params: params? })
    }
}

/// A checkpoint error about `path`.
fn bad(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Checkpoint { path: path.display().to_string(), why: why.to_string() }
}

/// An element type of a section.
pub trait Value: Copy + Default + Send + Sync + 'static {
    /// The type's code in the file (1 u8, 2 u32, 3 i32, 4 u64, 5 f32, 6 f64).
    const CODE: u8;
    /// Bytes per element.
    const SIZE: usize;
    /// Writes the little-endian bytes into `out` (`SIZE` bytes).
    fn put(self, out: &mut [u8]);
    /// Reads the little-endian bytes of `b` (`SIZE` bytes).
    fn get(b: &[u8]) -> Self;
}

macro_rules! value {
    ($t:ty, $code:expr) => {
        impl Value for $t {
            const CODE: u8 = $code;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
value!(u8, 1);
value!(u32, 2);
value!(i32, 3);
value!(u64, 4);
value!(f32, 5);
value!(f64, 6);

/// One section to write: a tag (1–8 ASCII bytes) and its elements.
pub struct Section<'a> {
    tag: &'static str,
    data: Box<dyn Elements + 'a>,
}

impl<'a> Section<'a> {
    /// The elements of `data` under `tag`.
    pub fn new<T: Value>(tag: &'static str, data: &'a [T]) -> Section<'a> {
        Section { tag, data: Box::new(Slice(data)) }
    }
}

struct Slice<'a, T>(&'a [T]);

trait Elements {
    fn code(&self) -> u8;
    fn count(&self) -> u64;
    fn bytes(&self) -> u64;
    fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()>;
}

impl<T: Value> Elements for Slice<'_, T> {
    fn code(&self) -> u8 {
        T::CODE
    }
    fn count(&self) -> u64 {
        self.0.len() as u64
    }
    fn bytes(&self) -> u64 {
        self.0.len() as u64 * T::SIZE as u64
    }
    fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut buf = vec![0u8; T::SIZE * 8192];
        for chunk in self.0.chunks(8192) {
            for (v, out) in chunk.iter().zip(buf.chunks_mut(T::SIZE)) {
                v.put(out);
            }
            w.write_all(&buf[..chunk.len() * T::SIZE])?;
        }
        Ok(())
    }
}

fn tag_bytes(tag: &str) -> Result<[u8; 8]> {
    if tag.is_empty() || tag.len() > 8 || !tag.is_ascii() {
        return Err(Error::InvalidInput {
            what: "checkpoint section tag",
            why: format!("`{tag}`: 1 to 8 ASCII bytes"),
        });
    }
    let mut b = [0u8; 8];
    b[..tag.len()].copy_from_slice(tag.as_bytes());
    Ok(b)
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hash: XxHash64,
    count: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.write(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The temporary file a checkpoint of `path` is written to first (same folder, so the rename
/// stays on one file system).
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "checkpoint".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes a checkpoint of `header` and `sections` to `path` atomically (temporary file in the
/// same folder, `fsync`, rename, `fsync` of the folder): the file at `path` is either the old
/// one or the new one, whole. On an error the temporary file is removed and `path` untouched.
pub fn write(path: &Path, header: &Header, sections: &[Section<'_>]) -> Result<()> {
    let text = header.encode()?;
    if text.len() > MAX_HEADER as usize {
        return Err(Error::InvalidInput { what: "checkpoint header", why: format!("{} bytes", text.len()) });
    }
    let mut tags = Vec::with_capacity(sections.len());
    let mut payload = 0u64;
    for s in sections {
        tags.push(tag_bytes(s.tag)?);
        payload = payload.checked_add(24 + s.data.bytes()).ok_or_else(|| Error::Overflow {
            what: "checkpoint payload (bytes)",
            expr: format!("{payload} + 24 + {} (section `{}`)", s.data.bytes(), s.tag),
        })?;
    }
    let tmp = temp_path(path);
    let result = (|| -> std::io::Result<()> {
        let file = File::create(&tmp)?;
        let mut w = Hashing { inner: BufWriter::with_capacity(1 << 20, file), hash: XxHash64::with_seed(0), count: 0 };
        w.write_all(&MAGIC)?;
        w.write_all(&FORMAT_VERSION.to_le_bytes())?;
        w.write_all(&(text.len() as u32).to_le_bytes())?;
        w.write_all(text.as_bytes())?;
        let head = w.hash.finish();
        w.write_all(&head.to_le_bytes())?;
        w.write_all(&payload.to_le_bytes())?;
        for (s, tag) in sections.iter().zip(&tags) {
            w.write_all(tag)?;
            w.write_all(&[s.data.code(), 0, 0, 0, 0, 0, 0, 0])?;
            w.write_all(&s.data.count().to_le_bytes())?;
            s.data.write_to(&mut w)?;
        }
        let sum = w.hash.finish();
        let mut inner = w.inner;
        inner.write_all(&sum.to_le_bytes())?;
        let file = inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        // The rename itself reaches the disk with the folder's metadata.
        let dir = path.parent().map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d });
        if let Some(Ok(d)) = dir.map(File::open) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        bad(path, format!("cannot be written ({e}); the previous file, if any, is left as it was"))
    })
}

/// A checkpoint being read: its header checked, its sections read in order, its checksum
/// checked by [`Reader::finish`].
pub struct Reader {
    path: PathBuf,
    file: BufReader<File>,
    hash: XxHash64,
    header: Header,
    left: u64,
}

impl Reader {
    /// Opens `path`: checks the magic, the format version, the header checksum, that the header
    /// is of `family`, and that the file has exactly the length its header says (a truncated or
    /// extended file is refused here, before its payload is read).
    pub fn open(path: &Path, family: &str) -> Result<Reader> {
        let file = File::open(path).map_err(|e| bad(path, format!("cannot be opened ({e})")))?;
        let len = file.metadata().map_err(|e| bad(path, e))?.len();
        let mut file = BufReader::with_capacity(1 << 20, file);
        let mut hash = XxHash64::with_seed(0);
        let mut fixed = [0u8; 16];
        let short = |what: &str| bad(path, format!("truncated: {len} bytes end inside the {what}"));
        file.read_exact(&mut fixed).map_err(|_| short("file's first 16 bytes"))?;
        if fixed[..8] != MAGIC {
            return Err(bad(path, "not a lockstep checkpoint (its first bytes are not LSTPCKPT)"));
        }
        let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
        if version != FORMAT_VERSION {
            return Err(bad(
                path,
                format!(
                    "checkpoint format version {version}; this lockstep ({LOCKSTEP_VERSION}) reads version {FORMAT_VERSION} only"
                ),
            ));
        }
        let hlen = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
        if hlen > MAX_HEADER {
            return Err(bad(path, format!("corrupt: a header of {hlen} bytes (at most {MAX_HEADER})")));
        }
        let mut text = vec![0u8; hlen as usize];
        file.read_exact(&mut text).map_err(|_| short("header"))?;
        hash.write(&fixed);
        hash.write(&text);
        let mut tail = [0u8; 16];
        file.read_exact(&mut tail).map_err(|_| short("header"))?;
        if hash.finish() != u64::from_le_bytes(tail[..8].try_into().unwrap_or_default()) {
            return Err(bad(path, "corrupt: the header's checksum does not match"));
        }
        hash.write(&tail);
        let payload = u64::from_le_bytes(tail[8..].try_into().unwrap_or_default());
        let header = std::str::from_utf8(&text)
            .ok()
            .and_then(Header::decode)
            .ok_or_else(|| bad(path, "corrupt: the header is not lockstep's key=value lines"))?;
        if header.family != family {
            return Err(bad(path, format!("a checkpoint of `{}`, not of `{family}`", header.family)));
        }
        if header.stream != crate::STREAM_VERSION {
            return Err(bad(
                path,
                format!(
                    "written by lockstep {} of stream version {}; this lockstep ({LOCKSTEP_VERSION}) produces stream version {}, so resuming would give the bits of neither: finish it with lockstep {}",
                    header.lockstep,
                    header.stream,
                    crate::STREAM_VERSION,
                    header.lockstep
                ),
            ));
        }
        let want = (16 + hlen as u64 + 16).checked_add(payload).and_then(|v| v.checked_add(8));
        if want != Some(len) {
            let what = if want.is_some_and(|w| len < w) { "truncated" } else { "corrupt" };
            return Err(bad(
                path,
                format!(
                    "{what}: {len} bytes, but its header says {}",
                    want.map_or("more than 2^64".into(), |w| w.to_string())
                ),
            ));
        }
        Ok(Reader { path: path.to_path_buf(), file, hash, header, left: payload })
    }

    /// The header (already checked for its family).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Refuses the checkpoint unless each `(key, value)` of `params` is in its header with
    /// that value (the error names the parameter and both values).
    pub fn expect(&self, params: &[(String, String)]) -> Result<()> {
        for (k, v) in params {
            match self.header.param(k) {
                Some(have) if have == v => {}
                Some(have) => {
                    return Err(bad(
                        &self.path,
                        format!(
                            "written for another run: {k} = {have} there, {v} here; resume with the same parameters"
                        ),
                    ));
                }
                None => return Err(bad(&self.path, format!("written for another run: it has no parameter {k}"))),
            }
        }
        Ok(())
    }

    fn take(&mut self, buf: &mut [u8]) -> Result<()> {
        if (buf.len() as u64) > self.left {
            return Err(bad(&self.path, "corrupt: a section runs past the payload"));
        }
        self.file.read_exact(buf).map_err(|e| bad(&self.path, format!("truncated or unreadable ({e})")))?;
        self.hash.write(buf);
        self.left -= buf.len() as u64;
        Ok(())
    }

    /// The next section, which must be `tag` with elements of type `T`; at most `max` elements
    /// (the caller's bound from the parameters already checked).
    pub fn values<T: Value>(&mut self, tag: &'static str, max: u64) -> Result<Vec<T>> {
        let mut head = [0u8; 24];
        self.take(&mut head)?;
        let want = tag_bytes(tag)?;
        if head[..8] != want {
            let got = String::from_utf8_lossy(&head[..8]).trim_end_matches('\0').to_string();
            return Err(bad(&self.path, format!("corrupt: section `{got}` where `{tag}` belongs")));
        }
        if head[8] != T::CODE || head[9..16] != [0; 7] {
            return Err(bad(&self.path, format!("corrupt: section `{tag}` has element type {}", head[8])));
        }
        let count = u64::from_le_bytes(head[16..24].try_into().unwrap_or_default());
        if count > max || count.saturating_mul(T::SIZE as u64) > self.left {
            return Err(bad(&self.path, format!("corrupt: section `{tag}` claims {count} elements")));
        }
        let mut out = Vec::with_capacity(count as usize);
        let mut buf = vec![0u8; T::SIZE * 8192];
        let mut rest = count as usize;
        while rest > 0 {
            let k = rest.min(8192);
            self.take(&mut buf[..k * T::SIZE])?;
            out.extend(buf[..k * T::SIZE].chunks_exact(T::SIZE).map(T::get));
            rest -= k;
        }
        Ok(out)
    }

    /// Checks that the payload was read to its end and the file's checksum matches.
    pub fn finish(mut self) -> Result<()> {
        if self.left != 0 {
            return Err(bad(&self.path, format!("corrupt: {} payload bytes after the last section", self.left)));
        }
        let mut sum = [0u8; 8];
        self.file.read_exact(&mut sum).map_err(|_| bad(&self.path, "truncated: the checksum is missing"))?;
        if self.hash.finish() != u64::from_le_bytes(sum) {
            return Err(bad(&self.path, "corrupt: the checksum does not match its contents"));
        }
        Ok(())
    }
}
