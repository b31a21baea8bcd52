//! A block's shared memory, at the offsets of [`Layout`], and the per-head values kept in it.

use super::*;

/// Shared memory addresses of a block of `HEADS_PER_BLOCK` heads (see [`Layout`]).
#[derive(Clone, Copy)]
pub(super) struct Smem<const HEADS_PER_BLOCK: usize> {
    pub(super) work: Shared<F32x4>,
    pub(super) scores: Shared<f32>,
    pub(super) warp_max: Shared<f32>,
    pub(super) warp_sum: Shared<f32>,
    pub(super) inv: Shared<f32>,
    pub(super) rows: Shared<u32>,
}

impl<const HEADS_PER_BLOCK: usize> Smem<HEADS_PER_BLOCK> {
    #[inline(always)]
    pub(super) fn new(n_slots: u32, d4: u32) -> Self {
        let base = dynamic_shared();
        let l = layout(n_slots, d4, HEADS_PER_BLOCK as u32);
        Smem {
            work: base.byte_add(l.work as u32),
            scores: base.byte_add(l.scores as u32),
            warp_max: base.byte_add(l.warp_max as u32),
            warp_sum: base.byte_add(l.warp_sum as u32),
            inv: base.byte_add(l.inv as u32),
            rows: base.byte_add(l.rows as u32),
        }
    }

    /// Where slot `i`'s values (one per head) are, in `scores`.
    #[inline(always)]
    pub(super) fn slot(self, i: u32) -> Shared<f32> {
        self.scores.add(HEADS_PER_BLOCK as u32 * i)
    }
}

/// The `HEADS_PER_BLOCK` floats at `addr`: `float4` loads where `HEADS_PER_BLOCK` is a multiple of
/// 4, one float at a time otherwise.
///
/// # Safety
/// As [`Shared::load`], for `HEADS_PER_BLOCK` floats.
#[inline(always)]
pub(super) unsafe fn ld_heads<const HEADS_PER_BLOCK: usize>(
    addr: Shared<f32>,
) -> [f32; HEADS_PER_BLOCK] {
    let mut v = [0.0f32; HEADS_PER_BLOCK];
    if HEADS_PER_BLOCK % 4 == 0 {
        unroll::<2>(|k| {
            if 4 * k < HEADS_PER_BLOCK {
                let q = addr.cast::<F32x4>().add(k as u32).load();
                [v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]] = [q.x, q.y, q.z, q.w];
            }
        });
    } else {
        unroll::<HEADS_PER_BLOCK>(|h| v[h] = addr.add(h as u32).load());
    }
    v
}

/// Stores `HEADS_PER_BLOCK` floats at `addr`, as [`ld_heads`] loads them.
///
/// # Safety
/// As [`Shared::store`], for `HEADS_PER_BLOCK` floats.
#[inline(always)]
pub(super) unsafe fn st_heads<const HEADS_PER_BLOCK: usize>(
    addr: Shared<f32>,
    v: [f32; HEADS_PER_BLOCK],
) {
    if HEADS_PER_BLOCK % 4 == 0 {
        unroll::<2>(|k| {
            if 4 * k < HEADS_PER_BLOCK {
                let q = F32x4 {
                    x: v[4 * k],
                    y: v[4 * k + 1],
                    z: v[4 * k + 2],
                    w: v[4 * k + 3],
                };
                addr.cast::<F32x4>().add(k as u32).store(q);
            }
        });
    } else {
        unroll::<HEADS_PER_BLOCK>(|h| addr.add(h as u32).store(v[h]));
    }
}
