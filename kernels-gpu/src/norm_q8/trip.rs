//! A thread's trips over a row (Thread mapping in `norm_q8`'s docs): the column groups of each
//! trip and their loads.

use super::*;

/// One loop trip of a thread over a row: the groups `first + k * B`, `k < UNROLL`.
///
/// A thread's groups are `tid + j * B`, visited [`UNROLL`] per trip in ascending order (as a
/// plain strided loop visits them, so sums do not depend on the unrolling). Whether a group
/// exists is uniform across each 8-lane q8_1 group (`n4` is a multiple of 8, `B` of 32), so code
/// that uses a trip may shuffle within its 8-lane group.
#[derive(Clone, Copy)]
pub(super) struct Trip {
    first: i32,
    n4: i32,
}

impl Trip {
    /// Column group `k` of the trip, or `None` past the row.
    #[inline(always)]
    pub(super) fn col(self, k: usize) -> Option<usize> {
        let c = self.first + k as i32 * block_dim_x() as i32;
        (c < self.n4).then_some(c as usize)
    }

    /// Loads every group of the trip before any is used (zeros past the row), so that enough
    /// bytes are in flight to keep HBM busy.
    ///
    /// # Safety
    /// `p` points at `n4` readable groups that the grid does not write.
    #[inline(always)]
    pub(super) unsafe fn load(self, p: *const F32x4) -> [F32x4; UNROLL as usize] {
        let mut v = [F32x4::default(); UNROLL as usize];
        unroll::<{ UNROLL as usize }>(|k| {
            if let Some(c) = self.col(k) {
                v[k] = load_nc(p.add(c));
            }
        });
        v
    }

    /// Whether column group `k` of the trip is in the row.
    #[inline(always)]
    fn live(self, k: usize) -> bool {
        self.col(k).is_some()
    }

    /// Column group `k` of the trip, in the row or not (an address formed from it past the row
    /// must not be read).
    #[inline(always)]
    pub(super) fn col_unchecked(self, k: usize) -> usize {
        (self.first + k as i32 * block_dim_x() as i32) as usize
    }

    /// [`Trip::load`] as straight-line code: each group's load predicated inside its
    /// instruction (`device::load_nc_if`), a group past the row left unset rather than zeroed,
    /// so that no zeroing moves and no branch come between the loads.
    ///
    /// # Safety
    /// As [`Trip::load`].
    #[inline(always)]
    pub(super) unsafe fn load_if(self, p: *const F32x4) -> [F32x4; UNROLL as usize] {
        let mut v = [F32x4::default(); UNROLL as usize];
        unroll::<{ UNROLL as usize }>(|k| {
            v[k] = load_nc_if(self.live(k), p.wrapping_add(self.col_unchecked(k)));
        });
        v
    }

    /// Whether every group of the trip is in the row in every lane of the warp: the last
    /// group of the warp's last lane (`first | 31` is that lane's `first`, `blockDim.x` being a
    /// multiple of 32) is. The same in every lane of the warp.
    #[inline(always)]
    pub(super) fn warp_live(self) -> bool {
        (self.first | 31) + (UNROLL as i32 - 1) * (block_dim_x() as i32) < self.n4
    }

    /// The trip after this one.
    #[inline(always)]
    pub(super) fn next(self) -> Self {
        Trip {
            first: self.first + UNROLL as i32 * block_dim_x() as i32,
            ..self
        }
    }

    pub(super) fn in_row(self) -> bool {
        self.first < self.n4
    }
}

/// This thread's first trip over a row of `ncols` floats.
#[inline(always)]
pub(super) fn first_trip(ncols: i32) -> Trip {
    Trip {
        first: thread_idx_x() as i32,
        n4: ncols / 4,
    }
}
