//! The cache rows a token's slots name, and their prefetch into L2 at entry.

use super::*;

/// One token's gathered rows.
#[derive(Clone, Copy)]
pub(super) struct Gather {
    pub(super) cache: *const F32x4,
    /// The token's `n_slots` indices.
    pub(super) idx: *const i32,
    pub(super) n_slots: u32,
    pub(super) pool: i32,
    /// `float4` chunks per cache row.
    pub(super) d4: u32,
}

impl Gather {
    /// The cache row of slot `i`: its index, clamped into the pool.
    ///
    /// # Safety
    /// `i < n_slots`.
    #[inline(always)]
    pub(super) unsafe fn slot_row(self, i: u32) -> u32 {
        load_nc_i32(self.idx.add(i as usize))
            .max(0)
            .min(self.pool - 1) as u32
    }

    /// Cache row `r`.
    ///
    /// # Safety
    /// `r < pool`.
    #[inline(always)]
    pub(super) unsafe fn row(self, r: u32) -> *const F32x4 {
        self.cache.add(r as usize * self.d4 as usize)
    }
}

/// Asks L2 for the token's gathered rows, shared among the `blocks` blocks that read them (all
/// of the token's groups and parts): thread `i` of block `part` takes the slots `part * BLOCK +
/// i + m * blocks * BLOCK`, and for each loads its index once and prefetches every 128-byte line
/// of its row. A block scores its rows in dependent trips, one round trip each; with the rows
/// already on their way to L2 at entry, a trip waits for L2 instead of DRAM, and the rows' DRAM
/// reads overlap each other instead of following the trips.
///
/// # Safety
/// As [`Gather::slot_row`] for every slot.
#[inline(always)]
pub(super) unsafe fn prefetch_rows(g: Gather, blocks: u32, part: u32) {
    let mut slot = part * BLOCK + thread_idx_x();
    while slot < g.n_slots {
        let row = g.row(g.slot_row(slot)).cast::<u8>();
        let mut line = 0;
        while line < 16 * g.d4 {
            prefetch_l2(row.add(line as usize));
            line += 128;
        }
        slot += blocks * BLOCK;
    }
}
