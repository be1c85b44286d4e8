//! How a family's items (groups, bodies, paths) are split over ranks: contiguous ranges in rank
//! order, so concatenating the ranks' pieces gives the one-rank order.

use std::ops::Range;

/// A rank's contiguous share `start..end` of `total` items, and the equal piece length the
/// all-gathers use (`piece ≥ end − start`; NCCL's all-gather moves equal pieces, so a split
/// whose shares differ pads each to `piece`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Items of the whole run.
    pub total: u64,
    /// This rank's items.
    pub range: Range<u64>,
    /// The padded piece length (the same on every rank).
    pub piece: u64,
}

impl Split {
    /// Items of this rank.
    pub fn len(&self) -> u64 {
        self.range.end - self.range.start
    }

    /// Whether this rank holds no items (more ranks than items).
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
}

/// `total` items over `size` ranks as evenly as possible: rank `r` holds
/// `total·r/size .. total·(r+1)/size` (shares differ by at most one; ranks beyond `total` hold
/// nothing). `piece` is the largest share.
pub fn split_even(total: u64, size: usize, rank: usize) -> Split {
    let at = |r: usize| ((total as u128 * r as u128) / size.max(1) as u128) as u64;
    Split { total, range: at(rank)..at(rank + 1), piece: total.div_ceil(size.max(1) as u64) }
}

/// `total` items in pieces of `ceil(total/size)`: rank `r` holds `r·piece .. min(total,
/// (r+1)·piece)`, so the pieces laid end to end (each padded to `piece`) put item `i` at `i`:
/// what an in-place all-gather of equal pieces needs (n-body positions).
pub fn split_padded(total: u64, size: usize, rank: usize) -> Split {
    let piece = total.div_ceil(size.max(1) as u64);
    let start = (piece * rank as u64).min(total);
    Split { total, range: start..(start + piece).min(total), piece }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_every_item_once_in_order() {
        for total in [0u64, 1, 2, 3, 7, 10, 11, 1000] {
            for size in 1..=7usize {
                for f in [split_even, split_padded] {
                    let mut next = 0;
                    for r in 0..size {
                        let s = f(total, size, r);
                        assert!(s.len() <= s.piece, "{total} {size} {r}");
                        if !s.is_empty() {
                            assert_eq!(s.range.start, next);
                            next = s.range.end;
                        }
                    }
                    assert_eq!(next, total, "{total} over {size}");
                }
            }
        }
        assert_eq!(split_even(10, 3, 0).range, 0..3);
        assert_eq!(split_even(10, 3, 2).range, 6..10);
        assert_eq!(split_padded(10, 3, 2).range, 8..10);
        assert_eq!(split_padded(2, 5, 4).range, 2..2);
    }
}
