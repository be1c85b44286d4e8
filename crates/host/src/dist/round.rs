//! One round of a collective, as every host communicator runs it: each rank posts its call
//! ([`Post`]: which collective, root, length, bytes); once every rank has, the posts are checked
//! to be the same call (else the mismatch, in words naming both calls) and combined — wrapping
//! sums, concatenation in rank order, the root's bytes, nothing. [`super::CpuGroup`] runs rounds
//! between threads, [`super::StoreComm`] at rank 0 between processes.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Barrier,
    AllReduce,
    AllGather,
    Broadcast,
    Finish,
}

impl Op {
    const ALL: [Op; 5] = [Op::Barrier, Op::AllReduce, Op::AllGather, Op::Broadcast, Op::Finish];

    pub(super) fn code(self) -> u8 {
        self as u8
    }

    pub(super) fn from_code(c: u8) -> Option<Op> {
        Op::ALL.get(usize::from(c)).copied()
    }

    fn name(self) -> &'static str {
        match self {
            Op::Barrier => "barrier",
            Op::AllReduce => "all_reduce_u64",
            Op::AllGather => "all_gather",
            Op::Broadcast => "broadcast",
            Op::Finish => "finish",
        }
    }
}

/// A collective as one rank posted it. `data` holds `len` bytes, except a broadcast's from a
/// rank other than the root, which is empty.
#[derive(Clone, Debug)]
pub(super) struct Post {
    pub(super) op: Op,
    pub(super) root: usize,
    pub(super) len: usize,
    pub(super) data: Vec<u8>,
}

impl Post {
    pub(super) fn new(op: Op, data: Vec<u8>) -> Post {
        Post { op, root: 0, len: data.len(), data }
    }

    pub(super) fn describe(&self) -> String {
        match self.op {
            Op::Broadcast => format!("broadcast from rank {} ({} bytes)", self.root, self.len),
            Op::Barrier | Op::Finish => self.op.name().into(),
            op => format!("{} ({} bytes)", op.name(), self.len),
        }
    }
}

/// One round's result from every rank's posts (rank order), or the mismatch in words.
pub(super) fn combine(posts: &[Post]) -> std::result::Result<Vec<u8>, String> {
    let first = &posts[0];
    if let Some((r, p)) =
        posts.iter().enumerate().find(|(_, p)| p.op != first.op || p.root != first.root || p.len != first.len)
    {
        return Err(format!(
            "collective mismatch: rank 0 called {}, rank {r} called {}",
            first.describe(),
            p.describe()
        ));
    }
    Ok(match first.op {
        Op::Barrier | Op::Finish => Vec::new(),
        Op::AllReduce => {
            let mut acc = vec![0u64; first.len / 8];
            for p in posts {
                for (a, c) in acc.iter_mut().zip(p.data.chunks_exact(8)) {
                    *a = a.wrapping_add(u64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")));
                }
            }
            acc.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        Op::AllGather => posts.iter().flat_map(|p| p.data.iter().copied()).collect(),
        Op::Broadcast => match posts.get(first.root) {
            Some(p) if p.data.len() == first.len => p.data.clone(),
            _ => return Err(format!("protocol error: rank {} sent no data for its broadcast", first.root)),
        },
    })
}
