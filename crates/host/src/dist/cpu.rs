//! [`CpuGroup`]: `k` virtual ranks as threads of one process, with collectives that check that
//! every rank called the same one and that fail (never hang) when a rank leaves.

use super::Communicator;
use super::round::{Op, Post, combine};
use crate::error::{Error, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[derive(Debug)]
struct State {
    /// This round's posts, one per rank.
    posted: Vec<Option<Post>>,
    /// This round's result once every rank posted (`Err`: the mismatch, in words).
    result: Option<std::result::Result<Arc<Vec<u8>>, String>>,
    /// Ranks that took this round's result.
    taken: usize,
    /// Why the group is broken (a rank left before the others were done), if it is.
    broken: Option<String>,
}

#[derive(Debug)]
struct Shared {
    size: usize,
    state: Mutex<State>,
    ready: Condvar,
}

/// `k` virtual ranks in one process. [`CpuGroup::run`] runs a closure on each rank's thread;
/// [`CpuGroup::comms`] hands out the ranks' communicators for threads of the caller's own.
#[derive(Clone, Debug)]
pub struct CpuGroup {
    shared: Arc<Shared>,
}

/// One virtual rank of a [`CpuGroup`]. Dropping it (return, error or panic) leaves the run:
/// the other ranks' next collective fails with [`Error::Collective`].
#[derive(Debug)]
pub struct CpuComm {
    rank: usize,
    shared: Arc<Shared>,
}

impl CpuGroup {
    /// A group of `size ≥ 1` ranks.
    pub fn new(size: usize) -> Result<CpuGroup> {
        if size == 0 {
            return Err(Error::InvalidInput { what: "rank count", why: "0 ranks: a run needs at least one".into() });
        }
        Ok(CpuGroup {
            shared: Arc::new(Shared {
                size,
                state: Mutex::new(State { posted: vec![None; size], result: None, taken: 0, broken: None }),
                ready: Condvar::new(),
            }),
        })
    }

    /// The ranks' communicators, rank 0 first (each to be moved to its own thread).
    pub fn comms(&self) -> Vec<CpuComm> {
        (0..self.shared.size).map(|rank| CpuComm { rank, shared: self.shared.clone() }).collect()
    }

    /// Runs `work` on `size` threads, one per rank, and returns their results in rank order.
    /// When ranks fail, the error returned is the first rank's own error (not one that only
    /// reports a peer that left).
    pub fn run<T: Send>(size: usize, work: impl Fn(&CpuComm) -> Result<T> + Sync) -> Result<Vec<T>> {
        let group = CpuGroup::new(size)?;
        let results: Vec<Result<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = group
                .comms()
                .into_iter()
                .map(|comm| {
                    let work = &work;
                    scope.spawn(move || work(&comm))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, h)| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Collective { rank, size, why: "the rank's thread panicked".into() })
                    })
                })
                .collect()
        });
        let consequence = |e: &Error| matches!(e, Error::Collective { why, .. } if why.contains("left the run"));
        if let Some(i) = results.iter().position(|r| matches!(r, Err(e) if !consequence(e))) {
            return Err(results.into_iter().nth(i).and_then(Result::err).expect("an error at i"));
        }
        results.into_iter().collect()
    }
}

impl CpuComm {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a rank panicked while holding it: the state is still
        // consistent (every update is one assignment), so go on and let `broken` speak.
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fail(&self, why: String) -> Error {
        Error::Collective { rank: self.rank, size: self.shared.size, why }
    }

    /// Posts this rank's part of a collective, waits for every rank's, and returns the result
    /// ([`combine`]: the same checks and arithmetic as the store's rounds).
    fn collective(&self, post: Post) -> Result<Arc<Vec<u8>>> {
        let size = self.shared.size;
        let mut st = self.lock();
        // Wait until the previous round is taken by everyone.
        while st.result.is_some() && st.broken.is_none() {
            st = self.shared.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(why) = &st.broken {
            return Err(self.fail(format!("{} failed: {why}", post.describe())));
        }
        let mine = post.describe();
        st.posted[self.rank] = Some(post);
        if st.posted.iter().all(Option::is_some) {
            let posts: Vec<Post> = st.posted.iter_mut().filter_map(Option::take).collect();
            st.result = Some(combine(&posts).map(Arc::new));
            self.shared.ready.notify_all();
        }
        while st.result.is_none() && st.broken.is_none() {
            st = self.shared.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let Some(result) = st.result.clone() else {
            let why = st.broken.clone().unwrap_or_default();
            return Err(self.fail(format!("{mine} failed: {why}")));
        };
        st.taken += 1;
        if st.taken == size {
            st.result = None;
            st.taken = 0;
            self.shared.ready.notify_all();
        }
        drop(st);
        result.map_err(|why| self.fail(why))
    }
}

impl Drop for CpuComm {
    fn drop(&mut self) {
        let how = if std::thread::panicking() { "panicked" } else { "returned or failed" };
        let rank = self.rank;
        let mut st = self.lock();
        if st.broken.is_none() {
            st.broken = Some(format!("rank {rank} left the run ({how})"));
        }
        self.shared.ready.notify_all();
    }
}

impl Communicator for CpuComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_reduce_u64(&self, values: &mut [u64]) -> Result<()> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let sums = self.collective(Post::new(Op::AllReduce, data))?;
        for (v, c) in values.iter_mut().zip(sums.chunks_exact(8)) {
            *v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        Ok(())
    }

    fn all_gather_bytes(&self, mine: &[u8], all: &mut [u8]) -> Result<()> {
        crate::launch::expect_len("all-gather output (bytes)", all.len(), mine.len() * self.shared.size)?;
        all.copy_from_slice(&self.collective(Post::new(Op::AllGather, mine.to_vec()))?);
        Ok(())
    }

    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        super::check_root(root, self.shared.size)?;
        let data = if self.rank == root { buf.to_vec() } else { Vec::new() };
        let out = self.collective(Post { op: Op::Broadcast, root, len: buf.len(), data })?;
        buf.copy_from_slice(&out);
        Ok(())
    }

    fn barrier(&self) -> Result<()> {
        self.collective(Post::new(Op::Barrier, Vec::new())).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{all_gather, broadcast, sum_u64};

    #[test]
    fn collectives_give_every_rank_the_same_answer() {
        for k in [1usize, 2, 3, 5] {
            let out = CpuGroup::run(k, |c| {
                let s = sum_u64(c, c.rank() as u64 + 1)?;
                let g = all_gather(c, &[c.rank() as u32, 7])?;
                let mut b = [if c.rank() == k - 1 { 42u64 } else { 0 }];
                broadcast(c, k - 1, &mut b)?;
                c.barrier()?;
                Ok((s, g, b[0]))
            })
            .unwrap();
            for (s, g, b) in out {
                assert_eq!(s, (k * (k + 1) / 2) as u64);
                assert_eq!(g, (0..k as u32).flat_map(|r| [r, 7]).collect::<Vec<_>>());
                assert_eq!(b, 42);
            }
        }
    }

    #[test]
    fn a_mismatched_collective_names_itself_on_every_rank() {
        let group = CpuGroup::new(2).unwrap();
        let errs: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = group
                .comms()
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        if c.rank() == 0 { c.barrier() } else { sum_u64(&c, 1).map(|_| ()) }.unwrap_err().to_string()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for e in &errs {
            assert!(e.contains("collective mismatch") && e.contains("barrier") && e.contains("all_reduce_u64"), "{e}");
        }
    }

    #[test]
    fn a_rank_that_leaves_fails_the_others_instead_of_hanging() {
        let err = CpuGroup::run(3, |c| {
            if c.rank() == 1 {
                return Err(Error::InvalidInput { what: "test", why: "rank 1 gives up".into() });
            }
            c.barrier()?;
            c.barrier()
        })
        .unwrap_err();
        assert!(err.to_string().contains("rank 1 gives up"), "{err}");
        let panicked = CpuGroup::run(2, |c| {
            if c.rank() == 0 {
                panic!("test panic");
            }
            c.barrier()
        });
        assert!(panicked.is_err());
    }
}
