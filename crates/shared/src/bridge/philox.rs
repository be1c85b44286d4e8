//! Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11): a counter-based generator, so any normal
//! of any path is a pure function of (seed, path, row) and the GPU and CPU agree trivially.
//!
//! Mapping used by the bridge: the normal of row `j` of path `p` is word `j mod 4` of
//! `philox4x32_10([j / 4, p_lo, p_hi, 0], [seed_lo, seed_hi])`, through
//! [`super::normal::normal_from_bits`].

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// Philox4x32 with 10 rounds: the block of 4 words for `counter` under `key`.
#[inline(always)]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    let mut r = 0;
    while r < 10 {
        if r > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let (hi0, lo0) = mulhilo(M0, c0);
        let (hi1, lo1) = mulhilo(M1, c2);
        let n0 = hi1 ^ c1 ^ k0;
        let n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        r += 1;
    }
    [c0, c1, c2, c3]
}

/// The key of a 64-bit seed.
#[inline(always)]
pub fn key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// The counter of row block `j / 4` of path `p`.
#[inline(always)]
pub fn counter(block: u32, path: u64) -> [u32; 4] {
    [block, path as u32, (path >> 32) as u32, 0]
}

/// Normals of one path from Philox, caching the last block of four words.
pub struct PhiloxNormals {
    key: [u32; 2],
    path: u64,
    block: u32,
    words: [u32; 4],
}

impl PhiloxNormals {
    /// The stream of path `path` under `seed`.
    #[inline(always)]
    pub fn new(seed: u64, path: u64) -> Self {
        let key = key(seed);
        PhiloxNormals { key, path, block: 0, words: philox4x32_10(counter(0, path), key) }
    }

    /// The four words of row `row`'s block (computed when the row leaves the cached block).
    #[inline(always)]
    pub fn block(&mut self, row: u32) -> [u32; 4] {
        let b = row / 4;
        if b != self.block {
            self.block = b;
            self.words = philox4x32_10(counter(b, self.path), self.key);
        }
        self.words
    }

    /// The 32-bit word of row `row`.
    #[inline(always)]
    pub fn word(&mut self, row: u32) -> u32 {
        word_of(self.block(row), row)
    }
}

/// Bits of one word-cache slot field of a Philox schedule entry ([`scheduled_word`]).
pub const SLOT_BITS: u32 = 7;

/// Most word-cache slots a Philox schedule may use (slot 0, the discard slot, included).
pub const MAX_CACHE_SLOTS: usize = 1 << SLOT_BITS;

/// Schedule flag: this step computes its row's Philox block (and caches the block's other words).
pub const COMPUTE: u32 = 1 << 31;

/// Field `k < 4` of a schedule entry: on a [`COMPUTE`] step, the cache slot that receives word
/// `k` of the block (0 discards it).
#[inline(always)]
pub fn slot_field(op: u32, k: u32) -> u32 {
    (op >> (k * SLOT_BITS)) & (MAX_CACHE_SLOTS as u32 - 1)
}

/// Word `row % 4` of the block `w` by two levels of selects (a `match` became an indirect
/// branch, `brx`, on the GPU; an indexed load would put the words in local memory).
#[inline(always)]
pub fn word_of(w: [u32; 4], row: u32) -> u32 {
    let odd = row & 1 != 0;
    let (lo, hi) = if odd { (w[1], w[3]) } else { (w[0], w[2]) };
    if row & 2 != 0 { hi } else { lo }
}

/// The word of `row` of path `path` under the schedule entry `op` of its step, with a cache of
/// words `cache` (element = slot): on a [`COMPUTE`] step, the row's block is computed, its word
/// `k` stored in slot [`slot_field`]`(op, k)` and the row's own word returned; otherwise `op` is
/// the slot that holds the row's word (stored by an earlier step). The host plans the entries
/// so that each block is computed once per path (`lockstep::bridge::Plan::philox_schedule`);
/// the words are those of [`PhiloxNormals::word`].
#[inline(always)]
pub fn scheduled_word(key: [u32; 2], path: u64, row: u32, op: u32, cache: &mut impl super::Stack<u32>) -> u32 {
    if op & COMPUTE != 0 {
        let w = philox4x32_10(counter(row / 4, path), key);
        let mut k = 0;
        while k < 4 {
            cache.set(slot_field(op, k as u32), w[k]);
            k += 1;
        }
        word_of(w, row)
    } else {
        cache.get(op)
    }
}

impl<T: super::Real> super::Normals<T> for PhiloxNormals {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        T::normal_from_bits(self.word(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random123_zero_vector() {
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
    }

    #[test]
    fn word_of_row_is_its_blocks_word_row_mod_4() {
        let (seed, path) = (0x1234_5678_9abc_def0, 77);
        let mut g = PhiloxNormals::new(seed, path);
        for row in [0u32, 1, 2, 3, 5, 4, 7, 6, 13, 8, 12] {
            let block = philox4x32_10(counter(row / 4, path), key(seed));
            assert_eq!(g.word(row), block[(row % 4) as usize], "row {row}");
        }
    }
}
