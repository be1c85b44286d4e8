//! Philox schedule planning for the fused Philox d = 1 kernels (pure CPU work, done once per
//! plan): which steps compute a Philox block and which word-cache slot keeps each word that a
//! later step reads (`lockstep_shared::bridge::philox::scheduled_word` follows it on the device).

/// The Philox schedule of a strategy whose step `s` reads the normal of row `reads[s]` (d = 1:
/// the steps' `z`; [`Plan::philox_schedule`](super::Plan::philox_schedule) for a plan's): one
/// entry per step for `lockstep_shared::bridge::philox::scheduled_word`, and the number of word-cache slots it uses (slot 0, where unneeded words are discarded,
/// included). The first step that reads a row of a block computes the block and stores each of
/// its words that a later step reads in a free slot (greedy, first free slot: as few slots as
/// the most words ever waiting at once); the later steps read their slot. So each block is
/// computed once per path, whatever the order. `None` when more than `MAX_CACHE_SLOTS` slots
/// would be needed.
pub fn philox_schedule(reads: &[u32]) -> Option<(Vec<u32>, u32)> {
    use lockstep_shared::bridge::philox::{COMPUTE, MAX_CACHE_SLOTS, SLOT_BITS};
    let rows = reads.iter().map(|&r| r as usize + 1).max().unwrap_or(0).div_ceil(4) * 4;
    // The last step that reads each row.
    let mut last = vec![None; rows];
    for (s, &r) in reads.iter().enumerate() {
        last[r as usize] = Some(s);
    }
    let mut computed = vec![false; rows / 4];
    let mut slot_of = vec![0u32; rows];
    // busy[i]: the last step that reads slot i + 1.
    let mut busy: Vec<usize> = Vec::new();
    let mut ops = Vec::with_capacity(reads.len());
    for (s, &r) in reads.iter().enumerate() {
        let b = r as usize / 4;
        if computed[b] {
            ops.push(slot_of[r as usize]);
            continue;
        }
        computed[b] = true;
        let mut op = COMPUTE;
        for k in 0..4 {
            let row = 4 * b + k;
            let Some(l) = last[row].filter(|&l| l > s) else { continue };
            // A slot whose last read came before this step is free.
            let i = match busy.iter().position(|&u| u < s) {
                Some(i) => i,
                None => {
                    busy.push(0);
                    busy.len() - 1
                }
            };
            busy[i] = l;
            slot_of[row] = i as u32 + 1;
            op |= (i as u32 + 1) << (k as u32 * SLOT_BITS);
        }
        ops.push(op);
    }
    let slots = busy.len() + 1;
    (slots <= MAX_CACHE_SLOTS).then_some((ops, slots as u32))
}
