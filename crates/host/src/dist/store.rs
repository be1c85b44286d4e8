//! [`StoreComm`]: one process per rank, host collectives through the run's store — TCP
//! connections from every rank to rank 0, which serves the rendezvous and combines every
//! collective (std only).
//!
//! **Rendezvous.** Rank 0 listens on the [`Launch`]'s `master` address (on every interface at
//! its port unless its host is a loopback one; the store trusts its network, as NCCL does: no
//! authentication beyond the hello) and accepts `size − 1` connections; every other rank
//! connects (retrying until the rendezvous timeout, 60 s unless `LOCKSTEP_RENDEZVOUS_TIMEOUT`
//! gives seconds) and says hello with its rank, the size and the run's token (the master
//! address as it was given). Rank 0 refuses a wrong size, a rank out of
//! range, a rank claimed twice or another token: every rank that took part gets
//! [`Error::Collective`] with the same reason. A connection that does not say a lockstep hello is
//! dropped (a port scanner). `connect` returns on every rank once all ranks are in.
//!
//! **Wire.** Every message is a frame: its length (`u32`, little-endian, at most 1 GiB plus a
//! header) and a body whose first byte is its kind. A collective is one round: each rank sends
//! (collective, root, length, bytes) to rank 0 (rank 0's own goes through a channel); once every
//! rank has posted, rank 0 checks that all called the same collective with the same root and
//! length, combines (wrapping sum / concatenation in rank order / the root's bytes / nothing)
//! and sends the result to every rank, or sends every rank the mismatch ("collective mismatch:
//! rank 0 called barrier, rank 1 called all_reduce_u64 (8 bytes)", the wording of
//! [`super::CpuGroup`]). After a mismatch the run is broken: later collectives fail at once.
//!
//! **Threads.** Rank 0 runs a hub thread (the rounds) and one reader thread per peer; every other
//! rank runs one reader thread for its connection. They are always reading, so a connection that
//! closes is seen at once, whatever the main threads are doing: a rank whose process dies (its
//! kernel closes the socket) or that drops its `StoreComm` without [`StoreComm::finish`] makes
//! rank 0 tell every other rank ("rank 1 of 4 died (connection closed)"), and rank 0's death is
//! seen by every rank directly. The current or next collective of every other rank then fails
//! with [`Error::Collective`] naming the rank, and the callback given to [`StoreComm::watch`] is
//! called (the watchdog of ranks blocked in a GPU call). Deaths are found by end of connection,
//! never by a timeout: a collective may wait as long as a slow rank computes. A host that
//! vanishes without closing its connections (power loss, a cut cable) is not detected; the
//! launcher or the batch system must stop such a run.
//!
//! **Finishing.** [`StoreComm::finish`] is the last collective: every rank says goodbye, and
//! once all have, rank 0 acknowledges to each, so that a rank's exit after it is not taken for
//! a death and rank 0 does not close before everyone is done.
//!
//! **Invariants.** One round at a time: a rank's collective returns only after the round's
//! result (or failure) reached it; collectives on one `StoreComm` are serialised by a mutex.
//! Every failure is reported to every rank, and none of them hangs on it. The watch callback is
//! called at most once per rank, only for a rank's death or departure (not for a mismatch, which
//! every rank's collective reports), and never after this rank finished or dropped its
//! `StoreComm`. Nothing a peer sends can make a rank panic or allocate more than the cap.

use super::Communicator;
use super::env::{Launch, check_master};
use super::round::{Op, Post, combine};
use crate::error::{Error, Result};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The environment variable that sets the rendezvous timeout, in seconds.
pub const TIMEOUT_VAR: &str = "LOCKSTEP_RENDEZVOUS_TIMEOUT";
/// The rendezvous timeout without [`TIMEOUT_VAR`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The most bytes one rank's part or one result of a host collective may hold.
pub const MAX_MESSAGE: usize = 1 << 30;

/// The frame cap: a message plus its header.
const MAX_FRAME: usize = MAX_MESSAGE + 64;
/// The frame cap during the rendezvous (a hello or its answer).
const MAX_HELLO: usize = 1 << 16;
/// How long rank 0 waits for a new connection's hello.
const HELLO_WAIT: Duration = Duration::from_secs(10);
/// How long a rank whose post to rank 0 failed waits for its reader to report why (rank 0's
/// abort, read in order) before it names rank 0's connection itself.
const WRITE_FAILURE_GRACE: Duration = Duration::from_secs(2);
const MAGIC: &[u8; 8] = b"lockstep";
const PROTOCOL: u32 = 1;

// ---- messages and frames ------------------------------------------------------------------

/// What travels between a rank and rank 0.
#[derive(Debug)]
enum Msg {
    /// A rank's first message: who it is and which run it belongs to.
    Hello { protocol: u32, rank: u64, size: u64, token: String },
    /// Rank 0: every rank is in.
    Welcome,
    /// Rank 0: the rendezvous failed, and why.
    Refuse(String),
    /// A rank's part of a collective.
    Post(Post),
    /// A rank leaves without finishing (it dropped its communicator): why, after "rank R of N ".
    Leave(String),
    /// Rank 0: the round's result.
    Result(Vec<u8>),
    /// Rank 0: the round failed (a mismatch); the run is broken.
    Fail(String),
    /// Rank 0: a rank died or left; the run is broken.
    Abort(String),
    /// Rank 0: every rank finished; the connection may close.
    Finished,
}

impl Msg {
    fn encode(&self) -> Vec<u8> {
        let text = |tag: u8, s: &str| [&[tag][..], s.as_bytes()].concat();
        match self {
            Msg::Hello { protocol, rank, size, token } => {
                let mut b = vec![0];
                b.extend_from_slice(MAGIC);
                b.extend_from_slice(&protocol.to_le_bytes());
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&size.to_le_bytes());
                b.extend_from_slice(token.as_bytes());
                b
            }
            Msg::Welcome => vec![1],
            Msg::Refuse(s) => text(2, s),
            Msg::Post(p) => {
                let mut b = Vec::with_capacity(18 + p.data.len());
                b.push(3);
                b.push(p.op.code());
                b.extend_from_slice(&(p.root as u64).to_le_bytes());
                b.extend_from_slice(&(p.len as u64).to_le_bytes());
                b.extend_from_slice(&p.data);
                b
            }
            Msg::Leave(s) => text(4, s),
            Msg::Result(d) => [&[5][..], d].concat(),
            Msg::Fail(s) => text(6, s),
            Msg::Abort(s) => text(7, s),
            Msg::Finished => vec![8],
        }
    }

    /// The message in `body`, or `None` when it is not one (a stray or damaged peer).
    fn decode(body: &[u8]) -> Option<Msg> {
        let (&tag, rest) = body.split_first()?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let u64_at =
            |b: &[u8], at: usize| -> Option<u64> { Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?)) };
        Some(match tag {
            0 => {
                if rest.get(..8)? != MAGIC {
                    return None;
                }
                let protocol = u32::from_le_bytes(rest.get(8..12)?.try_into().ok()?);
                let rank = u64_at(rest, 12)?;
                let size = u64_at(rest, 20)?;
                Msg::Hello { protocol, rank, size, token: text(rest.get(28..)?) }
            }
            1 if rest.is_empty() => Msg::Welcome,
            2 => Msg::Refuse(text(rest)),
            3 => {
                let op = Op::from_code(*rest.first()?)?;
                let root = usize::try_from(u64_at(rest, 1)?).ok()?;
                let len = usize::try_from(u64_at(rest, 9)?).ok()?;
                let data = rest.get(17..)?.to_vec();
                let ok = data.len() == len || (op == Op::Broadcast && data.is_empty());
                if !ok || len > MAX_MESSAGE || (op == Op::AllReduce && len % 8 != 0) {
                    return None;
                }
                Msg::Post(Post { op, root, len, data })
            }
            4 => Msg::Leave(text(rest)),
            5 => Msg::Result(rest.to_vec()),
            6 => Msg::Fail(text(rest)),
            7 => Msg::Abort(text(rest)),
            8 if rest.is_empty() => Msg::Finished,
            _ => return None,
        })
    }
}

/// Writes one frame holding `body`.
fn write_frame(mut to: &TcpStream, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "message beyond the store's cap"))?;
    to.write_all(&len.to_le_bytes())?;
    to.write_all(body)?;
    to.flush()
}

fn write_msg(to: &TcpStream, msg: &Msg) -> io::Result<()> {
    write_frame(to, &msg.encode())
}

/// Reads one message of at most `cap` bytes. A connection closed by the peer is
/// `ErrorKind::UnexpectedEof`; a frame beyond the cap or a body that is no message is
/// `ErrorKind::InvalidData`.
fn read_msg(mut from: &TcpStream, cap: usize) -> io::Result<Msg> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > cap {
        return Err(io::Error::new(ErrorKind::InvalidData, format!("a message of {len} bytes (the cap is {cap})")));
    }
    let mut body = vec![0u8; len];
    from.read_exact(&mut body)?;
    Msg::decode(&body).ok_or_else(|| io::Error::new(ErrorKind::InvalidData, "a message lockstep does not know"))
}

/// Why a connection ended, in words after "rank R of N ".
fn ended(e: &io::Error) -> String {
    match e.kind() {
        ErrorKind::UnexpectedEof => "died (connection closed)".into(),
        ErrorKind::InvalidData => format!("sent a damaged message ({e})"),
        _ => format!("died (connection lost: {e})"),
    }
}

// ---- one rank's mailbox -------------------------------------------------------------------

/// The callback of [`StoreComm::watch`].
type OnAbort = Box<dyn Fn(String) + Send>;

struct State {
    /// The reply to this rank's outstanding post.
    reply: Option<std::result::Result<Vec<u8>, String>>,
    /// Why the run is broken, if it is.
    broken: Option<String>,
    /// `broken` is a rank's death or departure (the watchdog's business), not a mismatch.
    died: bool,
    on_abort: Option<OnAbort>,
    /// Every rank finished (this rank's `finish` returned or is about to).
    finished: bool,
    /// This rank dropped its `StoreComm`.
    closing: bool,
}

/// What a rank's main thread and its reader (or rank 0's hub) share.
struct Shared {
    rank: usize,
    size: usize,
    state: Mutex<State>,
    ready: Condvar,
}

impl Shared {
    fn new(rank: usize, size: usize) -> Arc<Shared> {
        Arc::new(Shared {
            rank,
            size,
            state: Mutex::new(State {
                reply: None,
                broken: None,
                died: false,
                on_abort: None,
                finished: false,
                closing: false,
            }),
            ready: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few assignments: a poisoned lock still holds a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The reply to this rank's outstanding post.
    fn deliver(&self, reply: std::result::Result<Vec<u8>, String>) {
        self.lock().reply = Some(reply);
        self.ready.notify_all();
    }

    /// The round failed (a mismatch): the reply to this rank's post, and the run is broken —
    /// both at once, so that this rank's next collective cannot miss it.
    fn fail_round(&self, why: String) {
        let mut st = self.lock();
        st.reply = Some(Err(why.clone()));
        if st.broken.is_none() {
            st.broken = Some(why);
            st.died = false;
            st.on_abort = None;
        }
        drop(st);
        self.ready.notify_all();
    }

    /// Every rank finished: the reply to this rank's `finish`.
    fn finished(&self) {
        let mut st = self.lock();
        st.finished = true;
        st.on_abort = None;
        st.reply = Some(Ok(Vec::new()));
        drop(st);
        self.ready.notify_all();
    }

    /// A rank died or left: the run is broken. The first reason stays; the watch callback
    /// runs (on this thread, outside the lock) if the run was whole until now.
    fn died(&self, why: String) {
        let mut st = self.lock();
        if st.broken.is_some() || st.finished || st.closing {
            return;
        }
        st.broken = Some(why.clone());
        st.died = true;
        let callback = st.on_abort.take();
        drop(st);
        self.ready.notify_all();
        if let Some(callback) = callback {
            callback(format!("{why}; stopping this rank"));
        }
    }

    fn error(&self, why: String) -> Error {
        Error::Collective { rank: self.rank, size: self.size, why }
    }
}

// ---- rank 0's hub -------------------------------------------------------------------------

/// What rank 0's hub hears.
enum Event {
    /// A rank's part of the current round.
    Post { rank: usize, post: Post },
    /// A peer's connection ended; `why` follows "rank R of N ".
    Closed { rank: usize, why: String },
    /// Rank 0 dropped its `StoreComm`; `notice` (after "rank 0 of N ") goes to the others
    /// unless the run is finished or already broken (`None`: close without a word).
    Stop { notice: Option<String> },
}

struct Hub {
    size: usize,
    events: Receiver<Event>,
    /// Write halves of the peers' connections (index: rank; 0 and departed ranks: `None`).
    peers: Vec<Option<TcpStream>>,
    local: Arc<Shared>,
    posted: Vec<Option<Post>>,
    broken: bool,
    finished: bool,
}

impl Hub {
    fn run(mut self) {
        while let Ok(event) = self.events.recv() {
            match event {
                Event::Post { rank, post } => self.post(rank, post),
                Event::Closed { rank, why } => {
                    if let Some(peer) = self.peers.get_mut(rank).and_then(Option::take) {
                        let _ = peer.shutdown(Shutdown::Both);
                    }
                    if !self.finished {
                        self.abort(format!("rank {rank} of {} {why}", self.size));
                    }
                }
                Event::Stop { notice } => {
                    if let Some(notice) = notice.filter(|_| !self.finished) {
                        self.abort(format!("rank 0 of {} {notice}", self.size));
                    }
                    for peer in self.peers.iter_mut().filter_map(Option::take) {
                        let _ = peer.shutdown(Shutdown::Both);
                    }
                    return;
                }
            }
        }
    }

    fn post(&mut self, rank: usize, post: Post) {
        if self.broken || self.finished {
            // Every rank was told already; a post in flight meanwhile needs no answer.
            return;
        }
        let Some(slot) = self.posted.get_mut(rank) else { return };
        if slot.is_some() {
            self.abort(format!("rank {rank} of {} posted twice in one round (protocol error)", self.size));
            return;
        }
        *slot = Some(post);
        if self.posted.iter().any(Option::is_none) {
            return;
        }
        let posts: Vec<Post> = self.posted.iter_mut().filter_map(Option::take).collect();
        let finish = posts[0].op == Op::Finish;
        match combine(&posts) {
            Ok(_) if finish => {
                self.finished = true;
                self.send_all(&Msg::Finished);
                self.local.finished();
            }
            Ok(result) => {
                let frame = Msg::Result(result).encode();
                for peer in self.peers.iter().flatten() {
                    let _ = write_frame(peer, &frame);
                }
                let result = frame[1..].to_vec();
                self.local.deliver(Ok(result));
            }
            Err(why) => {
                self.broken = true;
                self.send_all(&Msg::Fail(why.clone()));
                self.local.fail_round(why);
            }
        }
    }

    /// A rank died or left: every other rank is told (peers first, then rank 0's own watch).
    fn abort(&mut self, why: String) {
        if self.broken {
            return;
        }
        self.broken = true;
        self.send_all(&Msg::Abort(why.clone()));
        self.local.died(why);
    }

    /// Sends `msg` to every peer still connected (a write to a dead peer fails quietly: its
    /// reader reports the death).
    fn send_all(&self, msg: &Msg) {
        let frame = msg.encode();
        for peer in self.peers.iter().flatten() {
            let _ = write_frame(peer, &frame);
        }
    }
}

// ---- the communicator ---------------------------------------------------------------------

/// How this rank reaches the round.
enum Link {
    /// A run of one rank: every collective is local.
    Alone,
    /// Rank 0: its posts go to its hub thread.
    Hub(Sender<Event>),
    /// Every other rank: its connection to rank 0.
    Peer(TcpStream),
}

/// One rank of a run of one process per rank, joined through the run's store (TCP to rank 0).
/// See the module documentation for the protocol, the watchdog and the invariants.
pub struct StoreComm {
    shared: Arc<Shared>,
    /// Held for a whole collective: one round at a time.
    link: Mutex<Link>,
    master: String,
}

impl std::fmt::Debug for StoreComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreComm")
            .field("rank", &self.shared.rank)
            .field("size", &self.shared.size)
            .field("master", &self.master)
            .finish_non_exhaustive()
    }
}

/// The rendezvous timeout: [`TIMEOUT_VAR`] (seconds, > 0), else [`DEFAULT_TIMEOUT`].
pub fn rendezvous_timeout() -> Result<Duration> {
    let Some(text) = std::env::var(TIMEOUT_VAR).ok().filter(|t| !t.trim().is_empty()) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::InvalidInput {
            what: "rendezvous timeout",
            why: format!("{TIMEOUT_VAR}=`{text}` is not a number of seconds > 0"),
        }),
    }
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl StoreComm {
    /// Joins the run `launch` describes: rank 0 listens on `launch.master`, every other rank
    /// connects to it; returns once every rank is in, or fails after the rendezvous timeout
    /// ([`rendezvous_timeout`]) with [`Error::Collective`] saying what was missing. A run of
    /// one rank opens no connection.
    pub fn connect(launch: &Launch) -> Result<StoreComm> {
        StoreComm::connect_within(launch, rendezvous_timeout()?)
    }

    /// [`StoreComm::connect`] with the rendezvous timeout given.
    pub fn connect_within(launch: &Launch, timeout: Duration) -> Result<StoreComm> {
        check_launch(launch)?;
        if launch.size == 1 {
            return Ok(StoreComm {
                shared: Shared::new(0, 1),
                link: Mutex::new(Link::Alone),
                master: launch.master.clone(),
            });
        }
        if launch.rank == 0 {
            let listener = listen(launch)?;
            serve(listener, launch, timeout)
        } else {
            join(launch, timeout)
        }
    }

    /// Calls `on_abort` (once, on a background thread) when another rank dies or leaves
    /// without finishing, even while this rank's main thread is blocked elsewhere (a GPU call
    /// waiting for the dead peer); the message reads "rank 1 of 4 died (connection closed);
    /// stopping this rank". Typically it prints the message and exits the process. Called at
    /// once, on this thread, when a rank already died; never for a collective mismatch (every
    /// rank's collective returns that error), nor after this rank finished. A second call
    /// replaces the callback. A run of one rank has nobody to watch.
    pub fn watch(&self, on_abort: impl Fn(String) + Send + 'static) -> Result<()> {
        let mut st = self.shared.lock();
        if st.finished || st.closing {
            return Ok(());
        }
        match (&st.broken, st.died) {
            (Some(why), true) => {
                let why = why.clone();
                drop(st);
                on_abort(format!("{why}; stopping this rank"));
            }
            (Some(_), false) => {}
            (None, _) => st.on_abort = Some(Box::new(on_abort)),
        }
        Ok(())
    }

    /// Says goodbye: the last collective of every rank. Returns once every rank called it, so
    /// that no rank's exit is taken for a death and rank 0 closes after everyone. Afterwards
    /// collectives fail, and a second `finish` returns at once. Dropping a `StoreComm` without
    /// it counts as leaving the run: the others fail.
    pub fn finish(&self) -> Result<()> {
        if self.shared.lock().finished {
            return Ok(());
        }
        self.collective(Post::new(Op::Finish, Vec::new())).map(|_| ())
    }

    /// Posts this rank's part of a round and returns the round's result.
    fn collective(&self, post: Post) -> Result<Vec<u8>> {
        let mine = post.describe();
        let link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut st = self.shared.lock();
            if st.finished {
                return Err(self.shared.error(format!("{mine} after finish: this rank has left the run")));
            }
            if let Some(why) = &st.broken {
                return Err(self.shared.error(format!("{mine} failed: {why}")));
            }
            st.reply = None;
        }
        let expected = post.op;
        match &*link {
            Link::Alone => {
                let out = combine(std::slice::from_ref(&post)).map_err(|why| self.shared.error(why))?;
                if expected == Op::Finish {
                    self.shared.finished();
                }
                return Ok(out);
            }
            Link::Hub(events) => {
                if events.send(Event::Post { rank: 0, post }).is_err() {
                    self.shared.died("rank 0's store thread stopped".into());
                }
            }
            Link::Peer(stream) => {
                if let Err(e) = write_msg(stream, &Msg::Post(post)) {
                    // The connection broke under this post. Rank 0 may have said why first
                    // (another rank's death: its abort precedes its close), and this rank's
                    // reader reads that in order: it gets a moment to report the first cause
                    // before rank 0's connection is named (seen in CI: "rank 0 of 3 died
                    // (connection lost: Broken pipe)" where rank 1 had died).
                    let st = self.shared.lock();
                    let waited = self
                        .shared
                        .ready
                        .wait_timeout_while(st, WRITE_FAILURE_GRACE, |st| st.broken.is_none() && st.reply.is_none());
                    drop(waited.unwrap_or_else(|e| e.into_inner()));
                    self.shared.died(format!("rank 0 of {} {}", self.shared.size, ended(&e)));
                }
            }
        }
        let mut st = self.shared.lock();
        loop {
            if let Some(reply) = st.reply.take() {
                return reply.map_err(|why| self.shared.error(why));
            }
            if let Some(why) = &st.broken {
                return Err(self.shared.error(format!("{mine} failed: {why}")));
            }
            st = self.shared.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn check_size(&self, what: &'static str, bytes: usize) -> Result<()> {
        if bytes > MAX_MESSAGE {
            return Err(Error::TooLarge { what, value: bytes as u64, max: MAX_MESSAGE as u64 });
        }
        Ok(())
    }

    /// The result of a round, checked to have the length this rank expects.
    fn expect(&self, what: &str, out: Vec<u8>, len: usize) -> Result<Vec<u8>> {
        if out.len() != len {
            return Err(self
                .shared
                .error(format!("{what}: rank 0 sent {} bytes for a result of {len} (protocol error)", out.len())));
        }
        Ok(out)
    }

    /// Closes without a word, as a process that died would (tests).
    #[cfg(test)]
    fn vanish(self) {
        self.shared.lock().closing = true;
        match &*self.link.lock().unwrap_or_else(|e| e.into_inner()) {
            Link::Alone => {}
            Link::Hub(events) => {
                let _ = events.send(Event::Stop { notice: None });
            }
            Link::Peer(stream) => {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        std::mem::forget(self);
    }
}

impl Drop for StoreComm {
    fn drop(&mut self) {
        let finished = {
            let mut st = self.shared.lock();
            st.closing = true;
            st.on_abort = None;
            st.finished
        };
        let how = if std::thread::panicking() { "panicked" } else { "dropped its communicator without finish" };
        let notice = (!finished).then(|| format!("left the run ({how})"));
        match &*self.link.get_mut().unwrap_or_else(|e| e.into_inner()) {
            Link::Alone => {}
            Link::Hub(events) => {
                let _ = events.send(Event::Stop { notice });
            }
            Link::Peer(stream) => {
                if let Some(how) = notice {
                    let _ = write_msg(stream, &Msg::Leave(how));
                }
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Communicator for StoreComm {
    fn finish(&self) -> Result<()> {
        StoreComm::finish(self)
    }

    fn rank(&self) -> usize {
        self.shared.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_reduce_u64(&self, values: &mut [u64]) -> Result<()> {
        let bytes = std::mem::size_of_val(values);
        self.check_size("all-reduce length (bytes)", bytes)?;
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = self.collective(Post::new(Op::AllReduce, data))?;
        let out = self.expect("all_reduce_u64", out, bytes)?;
        for (v, c) in values.iter_mut().zip(out.chunks_exact(8)) {
            *v = u64::from_le_bytes(c.try_into().expect("chunks of 8 bytes"));
        }
        Ok(())
    }

    fn all_gather_bytes(&self, mine: &[u8], all: &mut [u8]) -> Result<()> {
        let total = mine.len().saturating_mul(self.shared.size);
        crate::launch::expect_len("all-gather output (bytes)", all.len(), total)?;
        self.check_size("all-gather result (bytes)", total)?;
        let out = self.collective(Post::new(Op::AllGather, mine.to_vec()))?;
        all.copy_from_slice(&self.expect("all_gather", out, total)?);
        Ok(())
    }

    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        super::check_root(root, self.shared.size)?;
        self.check_size("broadcast length (bytes)", buf.len())?;
        let data = if self.shared.rank == root { buf.to_vec() } else { Vec::new() };
        let out = self.collective(Post { op: Op::Broadcast, root, len: buf.len(), data })?;
        buf.copy_from_slice(&self.expect("broadcast", out, buf.len())?);
        Ok(())
    }

    fn barrier(&self) -> Result<()> {
        self.collective(Post::new(Op::Barrier, Vec::new())).map(|_| ())
    }
}

// ---- the rendezvous -----------------------------------------------------------------------

fn check_launch(launch: &Launch) -> Result<()> {
    if launch.size == 0 || launch.rank >= launch.size {
        return Err(Error::InvalidInput {
            what: "launch",
            why: format!("rank {} of {} ranks: need size ≥ 1 and rank < size", launch.rank, launch.size),
        });
    }
    check_master("master", &launch.master)
}

fn rendezvous_error(launch: &Launch, why: String) -> Error {
    Error::Collective {
        rank: launch.rank,
        size: launch.size,
        why: format!("rendezvous at {} failed: {why}", launch.master),
    }
}

/// Rank 0's listener for `launch.master`: on that address when its host is a loopback one
/// (`127.0.0.1`, `::1`, `localhost`: a one-host run stays off the network), else on every
/// interface at its port — a host name may resolve to another address on rank 0's own host
/// (Debian maps it to 127.0.1.1) or sit behind NAT, and the other hosts must reach it.
fn listen(launch: &Launch) -> Result<TcpListener> {
    let addrs: Vec<SocketAddr> = launch
        .master
        .to_socket_addrs()
        .map_err(|e| rendezvous_error(launch, format!("cannot resolve the master address: {e}")))?
        .collect();
    let Some(first) = addrs.first() else {
        return Err(rendezvous_error(launch, "the master address resolves to no address".into()));
    };
    let host = launch.master.rsplit_once(':').map_or("", |(h, _)| h).trim_matches(['[', ']']);
    let loopback = host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let bound = if loopback {
        TcpListener::bind(&addrs[..])
    } else if first.is_ipv6() {
        TcpListener::bind((Ipv6Addr::UNSPECIFIED, first.port()))
    } else {
        TcpListener::bind((Ipv4Addr::UNSPECIFIED, first.port()))
    };
    bound.map_err(|e| listen_error(launch, &e))
}

fn listen_error(launch: &Launch, e: &io::Error) -> Error {
    let hint = if e.kind() == ErrorKind::AddrInUse {
        "; another run (or program) uses this port: give every rank another LOCKSTEP_MASTER"
    } else {
        ""
    };
    rendezvous_error(launch, format!("rank 0 cannot listen there: {e}{hint}"))
}

/// "2, 3" (at most ten, then "…").
fn list_ranks(ranks: &[usize]) -> String {
    let mut s: Vec<String> = ranks.iter().take(10).map(usize::to_string).collect();
    if ranks.len() > 10 {
        s.push(format!("… ({} in all)", ranks.len()));
    }
    s.join(", ")
}

/// Rank 0: accepts every other rank on `listener`, then starts the hub.
fn serve(listener: TcpListener, launch: &Launch, timeout: Duration) -> Result<StoreComm> {
    let size = launch.size;
    let deadline = Instant::now() + timeout;
    let mut peers: Vec<Option<TcpStream>> = (0..size).map(|_| None).collect();
    let fail = |peers: &[Option<TcpStream>], why: String| {
        let refusal = Msg::Refuse(why.clone());
        for peer in peers.iter().flatten() {
            let _ = write_msg(peer, &refusal);
        }
        rendezvous_error(launch, why)
    };
    listener.set_nonblocking(true).map_err(|e| rendezvous_error(launch, format!("listener: {e}")))?;
    while peers.iter().skip(1).any(Option::is_none) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> = (1..size).filter(|&r| peers[r].is_none()).collect();
                    let hint = if launch.source == "Slurm" { " (under Slurm, start every rank with srun)" } else { "" };
                    return Err(fail(
                        &peers,
                        format!(
                            "rank{} {} of {size} did not connect within {}{hint}",
                            if missing.len() == 1 { "" } else { "s" },
                            list_ranks(&missing),
                            seconds(timeout)
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => return Err(fail(&peers, format!("accepting connections: {e}"))),
        };
        // A connection that says no lockstep hello in time is not a rank: drop it.
        let hello = stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(Some(HELLO_WAIT)))
            .and_then(|()| read_msg(&stream, MAX_HELLO));
        let Ok(Msg::Hello { protocol, rank, size: their_size, token }) = hello else { continue };
        let refuse = |why: String| {
            let _ = write_msg(&stream, &Msg::Refuse(why.clone()));
            fail(&peers, why)
        };
        if protocol != PROTOCOL {
            return Err(refuse(format!(
                "rank {rank} speaks store protocol {protocol}, rank 0 speaks {PROTOCOL}: run the same lockstep on every rank"
            )));
        }
        if their_size != size as u64 {
            return Err(refuse(format!(
                "rank {rank} was told the run has {their_size} ranks, rank 0 was told {size}: give every rank the same world size"
            )));
        }
        if token != launch.master {
            return Err(refuse(format!(
                "rank {rank} was given the master address {token}, rank 0 {}: give every rank the same address",
                launch.master
            )));
        }
        let r = match usize::try_from(rank) {
            Ok(0) => return Err(refuse(format!("a second process claims rank 0 of {size}"))),
            Ok(r) if r < size => r,
            _ => return Err(refuse(format!("a process claims rank {rank}, but the run has ranks 0 to {}", size - 1))),
        };
        if peers[r].is_some() {
            return Err(refuse(format!(
                "two processes claim rank {r} of {size} (is another run using {}?)",
                launch.master
            )));
        }
        peers[r] = Some(stream);
    }
    drop(listener);
    for peer in peers.iter().flatten() {
        let ready = peer.set_read_timeout(None).and_then(|()| peer.set_nodelay(true));
        if let Err(e) = ready.and_then(|()| write_msg(peer, &Msg::Welcome)) {
            return Err(fail(&peers, format!("a rank's connection failed during the rendezvous: {e}")));
        }
    }
    start_hub(launch, peers)
}

/// Rank 0 after the rendezvous: a reader thread per peer and the hub.
fn start_hub(launch: &Launch, peers: Vec<Option<TcpStream>>) -> Result<StoreComm> {
    let size = launch.size;
    let shared = Shared::new(0, size);
    let (events, inbox) = mpsc::channel();
    let spawn_error = |e: io::Error| rendezvous_error(launch, format!("starting the store's threads: {e}"));
    for (rank, peer) in peers.iter().enumerate() {
        let Some(peer) = peer else { continue };
        let stream = peer.try_clone().map_err(spawn_error)?;
        let events = events.clone();
        std::thread::Builder::new()
            .name(format!("lockstep-store-rank{rank}"))
            .spawn(move || {
                loop {
                    let (rank, why) = match read_msg(&stream, MAX_FRAME) {
                        Ok(Msg::Post(post)) => {
                            if events.send(Event::Post { rank, post }).is_err() {
                                return;
                            }
                            continue;
                        }
                        Ok(Msg::Leave(why)) => (rank, why),
                        Ok(_) => (rank, "sent a message out of turn (protocol error)".into()),
                        Err(e) => (rank, ended(&e)),
                    };
                    let _ = events.send(Event::Closed { rank, why });
                    return;
                }
            })
            .map_err(spawn_error)?;
    }
    let hub = Hub {
        size,
        events: inbox,
        peers,
        local: shared.clone(),
        posted: (0..size).map(|_| None).collect(),
        broken: false,
        finished: false,
    };
    std::thread::Builder::new().name("lockstep-store-hub".into()).spawn(move || hub.run()).map_err(spawn_error)?;
    Ok(StoreComm { shared, link: Mutex::new(Link::Hub(events)), master: launch.master.clone() })
}

/// Every rank but 0: connects to rank 0 (retrying until the timeout), says hello and waits
/// for everyone.
fn join(launch: &Launch, timeout: Duration) -> Result<StoreComm> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no address");
    let stream = 'connect: loop {
        match launch.master.to_socket_addrs() {
            Ok(addrs) => {
                for addr in addrs {
                    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(10));
                    match TcpStream::connect_timeout(&addr, left.min(Duration::from_secs(5))) {
                        Ok(s) => break 'connect s,
                        Err(e) => last = e.to_string(),
                    }
                }
            }
            Err(e) => last = format!("cannot resolve the address: {e}"),
        }
        if Instant::now() >= deadline {
            return Err(rendezvous_error(
                launch,
                format!(
                    "could not reach rank 0 within {} ({last}); is rank 0 running, and was every rank given the same LOCKSTEP_MASTER (or MASTER_ADDR and MASTER_PORT)?",
                    seconds(timeout)
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())));
    };
    let hello = Msg::Hello {
        protocol: PROTOCOL,
        rank: launch.rank as u64,
        size: launch.size as u64,
        token: launch.master.clone(),
    };
    // Rank 0 answers once every rank is in, or when its own timeout passes; wait a little
    // longer than that for it.
    let answer = stream
        .set_nodelay(true)
        .and_then(|()| write_msg(&stream, &hello))
        .and_then(|()| stream.set_read_timeout(Some(timeout + HELLO_WAIT)))
        .and_then(|()| read_msg(&stream, MAX_HELLO));
    match answer {
        Ok(Msg::Welcome) => {}
        Ok(Msg::Refuse(why)) => return Err(rendezvous_error(launch, why)),
        Ok(_) => return Err(rendezvous_error(launch, "rank 0 answered out of turn (protocol error)".into())),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
            return Err(rendezvous_error(
                launch,
                format!("rank 0 did not answer within {}", seconds(timeout + HELLO_WAIT)),
            ));
        }
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
            return Err(rendezvous_error(
                launch,
                "rank 0 closed the connection (not a lockstep rank 0 of this run, or it failed)".into(),
            ));
        }
        Err(e) => return Err(rendezvous_error(launch, format!("the connection to rank 0 failed: {e}"))),
    }
    let spawn_error = |e: io::Error| rendezvous_error(launch, format!("starting the store's reader: {e}"));
    stream.set_read_timeout(None).map_err(spawn_error)?;
    let shared = Shared::new(launch.rank, launch.size);
    let reader = stream.try_clone().map_err(spawn_error)?;
    let mailbox = shared.clone();
    std::thread::Builder::new()
        .name("lockstep-store-reader".into())
        .spawn(move || read_replies(&reader, &mailbox))
        .map_err(spawn_error)?;
    Ok(StoreComm { shared, link: Mutex::new(Link::Peer(stream)), master: launch.master.clone() })
}

/// A peer's reader: rank 0's replies to this rank's mailbox, until the connection ends.
fn read_replies(stream: &TcpStream, shared: &Shared) {
    let size = shared.size;
    loop {
        match read_msg(stream, MAX_FRAME) {
            Ok(Msg::Result(data)) => shared.deliver(Ok(data)),
            Ok(Msg::Fail(why)) => shared.fail_round(why),
            Ok(Msg::Abort(why)) => shared.died(why),
            Ok(Msg::Finished) => {
                shared.finished();
                return;
            }
            Ok(_) => {
                shared.died(format!("rank 0 of {size} sent a message out of turn (protocol error)"));
                return;
            }
            Err(e) => {
                shared.died(format!("rank 0 of {size} {}", ended(&e)));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{CpuGroup, all_gather, broadcast, sum_u64};
    use std::sync::mpsc::RecvTimeoutError;

    const SHORT: Duration = Duration::from_secs(20);

    fn launch(rank: usize, size: usize, master: &str) -> Launch {
        Launch { rank, size, local_rank: rank, master: master.into(), source: "lockstep" }
    }

    /// A listener on a free loopback port, and its address.
    fn free_listener() -> (TcpListener, String) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("127.0.0.1:{}", l.local_addr().unwrap().port());
        (l, addr)
    }

    /// Runs `work` on `size` ranks joined by a store on loopback, one thread per rank.
    fn on_ranks<T: Send>(size: usize, work: impl Fn(StoreComm) -> T + Sync) -> Vec<T> {
        let (listener, master) = free_listener();
        let mut listener = Some(listener);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let l = launch(rank, size, &master);
                    let listener = if rank == 0 { listener.take() } else { None };
                    let work = &work;
                    s.spawn(move || {
                        let comm = match listener {
                            Some(listener) if size > 1 => serve(listener, &l, SHORT),
                            _ => StoreComm::connect_within(&l, SHORT),
                        }
                        .unwrap();
                        work(comm)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// A sum, a sum of wrapping values, gathers of `u32` and bytes, and broadcasts.
    type Outcome = (u64, Vec<u32>, Vec<u64>, Vec<u8>);

    fn workload(c: &dyn Communicator) -> Result<Outcome> {
        let k = c.size();
        let s = sum_u64(c, c.rank() as u64 + 1)?;
        let mut big = [u64::MAX - c.rank() as u64, 3, c.rank() as u64 * 7];
        c.all_reduce_u64(&mut big)?;
        let g = all_gather(c, &[c.rank() as u32, 7])?;
        let mut b = [if c.rank() == k - 1 { 42u64 } else { 0 }];
        broadcast(c, k - 1, &mut b)?;
        let mut empty: [u8; 0] = [];
        broadcast(c, 0, &mut empty)?;
        let bytes = all_gather(c, &[c.rank() as u8; 3])?;
        c.barrier()?;
        Ok((s, g, vec![big[0], big[1], big[2], b[0]], bytes))
    }

    #[test]
    fn collectives_match_the_cpu_group() {
        for k in [1usize, 2, 3, 5] {
            let want = CpuGroup::run(k, |c| workload(c)).unwrap();
            let got = on_ranks(k, |c| {
                let out = workload(&c).unwrap();
                c.finish().unwrap();
                out
            });
            assert_eq!(got, want, "{k} ranks");
        }
    }

    #[test]
    fn a_mismatched_collective_names_both_calls_on_every_rank() {
        let errs = on_ranks(3, |c| {
            let e = if c.rank() == 1 { sum_u64(&c, 1).map(|_| ()) } else { c.barrier() }.unwrap_err().to_string();
            // The run stays broken: the next collective fails at once, not hangs.
            let next = c.barrier().unwrap_err().to_string();
            (e, next)
        });
        for (e, next) in &errs {
            assert!(
                e.contains("collective mismatch: rank 0 called barrier, rank 1 called all_reduce_u64 (8 bytes)"),
                "{e}"
            );
            assert!(next.contains("barrier failed: collective mismatch"), "{next}");
        }
    }

    #[test]
    fn a_broadcast_from_another_root_is_a_mismatch() {
        let errs = on_ranks(2, |c| {
            let mut b = [0u8; 4];
            broadcast(&c, c.rank(), &mut b).unwrap_err().to_string()
        });
        for e in &errs {
            assert!(
                e.contains("rank 0 called broadcast from rank 0 (4 bytes), rank 1 called broadcast from rank 1"),
                "{e}"
            );
        }
    }

    /// Ranks 0..size each run `work`; the watch messages they got within 10 s.
    fn departure(size: usize, leaver: usize, how: fn(StoreComm)) -> Vec<(usize, String, String)> {
        on_ranks(size, |c| {
            c.barrier().unwrap();
            if c.rank() == leaver {
                how(c);
                return (leaver, String::new(), String::new());
            }
            let (tx, rx) = mpsc::channel();
            c.watch(move |m| {
                let _ = tx.send(m);
            })
            .unwrap();
            // The main thread is busy elsewhere (a GPU call): the watchdog still speaks.
            let t = Instant::now();
            let msg = match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => "no abort".into(),
            };
            assert!(t.elapsed() < Duration::from_secs(10));
            let next = c.barrier().unwrap_err().to_string();
            (c.rank(), msg, next)
        })
    }

    /// Rank `dead` of `size` vanishes: every other rank is told within seconds, and its next
    /// barrier fails naming the dead rank.
    fn a_death_stops_the_others(size: usize, dead: usize) {
        for (rank, msg, next) in departure(size, dead, StoreComm::vanish) {
            if rank == dead {
                continue;
            }
            let died = format!("rank {dead} of {size} died");
            assert_eq!(msg, format!("{died} (connection closed); stopping this rank"), "rank {rank}");
            assert!(next.contains(&format!("rank {rank} of {size}: barrier failed: {died}")), "{next}");
        }
    }

    #[test]
    fn a_rank_that_dies_stops_the_others_within_seconds() {
        a_death_stops_the_others(4, 2);
    }

    #[test]
    fn rank_0_dying_stops_the_others() {
        a_death_stops_the_others(3, 0);
    }

    #[test]
    fn a_rank_that_drops_without_finishing_stops_the_others() {
        for leaver in [0, 1] {
            for (rank, msg, next) in departure(3, leaver, drop) {
                if rank == leaver {
                    continue;
                }
                let want = format!("rank {leaver} of 3 left the run (dropped its communicator without finish)");
                assert!(msg.starts_with(&want) && msg.ends_with("; stopping this rank"), "{msg}");
                assert!(next.contains(&want), "{next}");
            }
        }
    }

    #[test]
    fn a_rank_waiting_in_a_collective_fails_when_another_dies() {
        let out = on_ranks(3, |c| {
            if c.rank() == 1 {
                c.vanish();
                return String::new();
            }
            let t = Instant::now();
            let e = c.barrier().unwrap_err().to_string();
            assert!(t.elapsed() < Duration::from_secs(10));
            e
        });
        for e in [&out[0], &out[2]] {
            assert!(e.contains("barrier failed: rank 1 of 3 died (connection closed)"), "{e}");
        }
    }

    #[test]
    fn finishing_is_no_death() {
        let out = on_ranks(3, |c| {
            let (tx, rx) = mpsc::channel();
            c.watch(move |m| {
                let _ = tx.send(m);
            })
            .unwrap();
            if c.rank() == 2 {
                std::thread::sleep(Duration::from_millis(300));
            }
            c.finish().unwrap();
            c.finish().unwrap();
            let after = c.barrier().unwrap_err().to_string();
            drop(c);
            std::thread::sleep(Duration::from_millis(300));
            (rx.try_recv().ok(), after)
        });
        for (abort, after) in out {
            assert_eq!(abort, None);
            assert!(after.contains("after finish"), "{after}");
        }
    }

    #[test]
    fn a_finish_against_a_collective_is_a_mismatch() {
        let errs = on_ranks(2, |c| if c.rank() == 0 { c.finish() } else { c.barrier() }.unwrap_err().to_string());
        for e in &errs {
            assert!(e.contains("collective mismatch: rank 0 called finish, rank 1 called barrier"), "{e}");
        }
    }

    #[test]
    fn connecting_to_nothing_times_out() {
        let (listener, master) = free_listener();
        drop(listener);
        let t = Instant::now();
        let e = StoreComm::connect_within(&launch(1, 2, &master), Duration::from_millis(500)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5));
        let text = e.to_string();
        assert!(matches!(e, Error::Collective { rank: 1, size: 2, .. }), "{e:?}");
        assert!(
            text.contains(&format!("rendezvous at {master} failed: could not reach rank 0 within 0.5 s")),
            "{text}"
        );
    }

    #[test]
    fn rank_0_alone_times_out_naming_the_missing_ranks() {
        let (listener, master) = free_listener();
        let e = serve(listener, &launch(0, 4, &master), Duration::from_millis(300)).unwrap_err().to_string();
        assert!(e.contains("ranks 1, 2, 3 of 4 did not connect within 0.3 s"), "{e}");
    }

    /// Rank 0 of `size` and the given peers (rank, size they claim, master they give).
    fn rendezvous(size: usize, peers: &[(usize, usize, Option<&str>)]) -> (String, Vec<String>) {
        let (listener, master) = free_listener();
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, &launch(0, size, &master), Duration::from_secs(5)).map(|_| ()));
            let hs: Vec<_> = peers
                .iter()
                .map(|&(rank, their_size, token)| {
                    let l = launch(rank, their_size, token.unwrap_or(&master));
                    let master = master.clone();
                    s.spawn(move || {
                        let mut l = l;
                        // The token differs, the address is the same.
                        let token = l.master.clone();
                        l.master = master;
                        let stream = TcpStream::connect(&l.master).unwrap();
                        let hello =
                            Msg::Hello { protocol: PROTOCOL, rank: rank as u64, size: their_size as u64, token };
                        write_msg(&stream, &hello).unwrap();
                        match read_msg(&stream, MAX_HELLO) {
                            Ok(Msg::Refuse(why)) => why,
                            other => format!("{other:?}"),
                        }
                    })
                })
                .collect();
            let root = root.join().unwrap().unwrap_err().to_string();
            (root, hs.into_iter().map(|h| h.join().unwrap()).collect())
        })
    }

    #[test]
    fn the_rendezvous_refuses_a_wrong_size() {
        let (root, peers) = rendezvous(2, &[(1, 3, None)]);
        assert!(root.contains("rank 1 was told the run has 3 ranks, rank 0 was told 2"), "{root}");
        assert!(peers[0].contains("rank 1 was told the run has 3 ranks"), "{}", peers[0]);
    }

    #[test]
    fn the_rendezvous_refuses_a_rank_out_of_range_or_claimed_twice() {
        let (root, peers) = rendezvous(3, &[(5, 3, None)]);
        assert!(root.contains("a process claims rank 5, but the run has ranks 0 to 2"), "{root}");
        assert!(peers[0].contains("claims rank 5"), "{}", peers[0]);
        let (root, _) = rendezvous(3, &[(0, 3, None)]);
        assert!(root.contains("a second process claims rank 0"), "{root}");
        let (listener, master) = free_listener();
        // Through the real join: the first rank 1 is in, the second is refused, both fail.
        let errs: Vec<String> = std::thread::scope(|s| {
            let l0 = launch(0, 3, &master);
            let root = s.spawn(move || serve(listener, &l0, Duration::from_secs(5)).map(|_| ()));
            let a = s.spawn(|| StoreComm::connect_within(&launch(1, 3, &master), SHORT).map(|_| ()));
            std::thread::sleep(Duration::from_millis(200));
            let b = s.spawn(|| StoreComm::connect_within(&launch(1, 3, &master), SHORT).map(|_| ()));
            [root, a, b].into_iter().map(|h| h.join().unwrap().unwrap_err().to_string()).collect()
        });
        for e in &errs {
            assert!(e.contains("two processes claim rank 1 of 3"), "{e}");
        }
    }

    #[test]
    fn the_rendezvous_refuses_another_runs_token() {
        let (root, peers) = rendezvous(2, &[(1, 2, Some("otherhost:1"))]);
        assert!(root.contains("rank 1 was given the master address otherhost:1"), "{root}");
        assert!(peers[0].contains("give every rank the same address"), "{}", peers[0]);
    }

    #[test]
    fn a_stray_connection_is_ignored() {
        let (listener, master) = free_listener();
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, &launch(0, 2, &master), SHORT));
            let mut stray = TcpStream::connect(&master).unwrap();
            stray.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let peer = StoreComm::connect_within(&launch(1, 2, &master), SHORT).unwrap();
            let root = root.join().unwrap().unwrap();
            let zero = s.spawn(move || sum_u64(&root, 1).unwrap());
            assert_eq!(sum_u64(&peer, 2).unwrap(), 3);
            assert_eq!(zero.join().unwrap(), 3);
        });
    }

    #[test]
    fn bad_launches_and_oversized_messages_are_refused_locally() {
        assert!(StoreComm::connect_within(&launch(2, 2, "127.0.0.1:1"), SHORT).is_err());
        assert!(StoreComm::connect_within(&launch(0, 2, "nowhere"), SHORT).is_err());
        let c = StoreComm::connect_within(&launch(0, 1, "127.0.0.1:1"), SHORT).unwrap();
        let mut b = [1u8];
        assert!(c.broadcast_bytes(1, &mut b).is_err());
        assert_eq!(sum_u64(&c, 5).unwrap(), 5);
        let mut out = [0u8; 2];
        assert!(c.all_gather_bytes(&[1, 2, 3], &mut out).is_err());
        c.watch(|_| panic!("nobody to watch")).unwrap();
        c.finish().unwrap();
        assert!(c.barrier().is_err());
    }

    #[test]
    fn damaged_messages_are_refused() {
        assert!(Msg::decode(&[]).is_none());
        assert!(Msg::decode(&[9]).is_none());
        assert!(Msg::decode(&[0, b'x']).is_none());
        // A post whose data is shorter than its length.
        let mut p = Msg::Post(Post::new(Op::AllGather, vec![1, 2, 3])).encode();
        p.pop();
        assert!(Msg::decode(&p).is_none());
        // An all-reduce of a length that is no multiple of 8.
        assert!(Msg::decode(&Msg::Post(Post::new(Op::AllReduce, vec![0; 7])).encode()).is_none());
        assert!(Msg::decode(&[3, 42]).is_none());
        match Msg::decode(&Msg::Post(Post::new(Op::AllReduce, vec![0; 16])).encode()) {
            Some(Msg::Post(p)) => assert_eq!((p.op, p.len), (Op::AllReduce, 16)),
            other => panic!("{other:?}"),
        }
    }
}
