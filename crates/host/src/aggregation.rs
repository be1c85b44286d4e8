//! How an atomic reduction adds into its counters — the warp-aggregation methods of the seed
//! paper (issue #4): one enum shared by the histograms and the foundation's aggregation probes,
//! so neither family imports the other.

use lockstep_shared::histogram::via;

/// How a histogram (or a probe) adds into its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// One native atomic per value.
    Plain,
    /// Warp aggregation through shared memory (paper Fig. 3).
    Shared,
    /// Warp aggregation through shuffles (paper Fig. 5).
    Shfl,
    /// Warp aggregation through `match.any.sync` (the recommended one).
    Match,
    /// Block aggregation with barriers (paper Fig. 4).
    Block,
    /// Match aggregation of unit increments (counts and unit weights only).
    Count,
    /// f64 only: a 64-bit CAS loop per value.
    Cas,
    /// f64 only: the CAS loop behind match aggregation.
    CasAggregated,
    /// Per-block counters in shared memory (match-aggregated), then one global add per bin
    /// (histograms only; `k` ≤ 12 288 for counts, 6 144 for f64 and fixed point).
    Private,
    /// Counts only: every bin of a block as a 16-bit counter in up to the GPU's opt-in shared
    /// memory (116 224 bins on an H100), added to the global counters every ≤ 65 535 values.
    Wide,
    /// Counts only, many bins (up to 2^25): the values' bins sorted by bin range per chunk of
    /// 8 192, then one block per range counts its bins in shared memory and adds them to the
    /// global counters with plain stores — no global atomic per value (histograms only).
    Partition,
}

impl Method {
    /// Every method, in the order of the benchmark tables.
    pub const ALL: [Method; 11] = [
        Method::Plain,
        Method::Shared,
        Method::Shfl,
        Method::Match,
        Method::Block,
        Method::Count,
        Method::Cas,
        Method::CasAggregated,
        Method::Private,
        Method::Wide,
        Method::Partition,
    ];

    /// A short name (`plain`, `shared`, `shfl`, `match`, `block`, `count`, `cas`, `cas-agg`,
    /// `private`, `wide`, `partition`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Plain => "plain",
            Method::Shared => "shared",
            Method::Shfl => "shfl",
            Method::Match => "match",
            Method::Block => "block",
            Method::Count => "count",
            Method::Cas => "cas",
            Method::CasAggregated => "cas-agg",
            Method::Private => "private",
            Method::Wide => "wide",
            Method::Partition => "partition",
        }
    }

    /// The method of a name, or `None`.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    pub(crate) fn code(self) -> u32 {
        match self {
            Method::Plain => via::PLAIN,
            Method::Shared => via::SHARED,
            Method::Shfl => via::SHFL,
            Method::Match => via::MATCH,
            Method::Block => via::BLOCK,
            Method::Count => via::COUNT,
            Method::Cas => via::CAS,
            Method::CasAggregated => via::CAS_AGGREGATED,
            Method::Private | Method::Wide | Method::Partition => u32::MAX,
        }
    }
}
