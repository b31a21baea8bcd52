//! Step 2, the scores' partials (Thread mapping in `flash`'s docs).

use super::*;

/// Step 2: this warp's part of the k-steps for its slot tiles, as partials into `work` (once
/// every warp has read the queries there).
///
/// # Safety
/// All threads of the block call it, after [`stage`].
#[inline(always)]
pub(super) unsafe fn score_partials<const M_TILES: usize>(
    b: Block,
    rows: Shared<f32>,
    work: Shared<f32>,
) {
    let (warp, lane) = (thread_idx_x() / 32, lane_id());
    let ksteps = b.stride / 8;
    let (part, tile0) = (warp % K_PARTS, warp / K_PARTS * S_TILES);
    let mut acc = [[[0.0f32; 4]; S_TILES as usize]; M_TILES];
    let per = ksteps.div_ceil(K_PARTS);
    let (start, end) = (part * per, ksteps.min((part + 1) * per));
    let queries = |ks: u32| -> [Split<4>; M_TILES] {
        core::array::from_fn(|m| load_a(work.add(16 * m as u32 * b.stride + 8 * ks), b.stride))
    };
    let keys = |ks: u32| -> [Split<2>; S_TILES as usize] {
        let pairs: [[Split<2>; 2]; S_TILES as usize / 2] = core::array::from_fn(|j| {
            let tile = tile0 + 2 * j as u32;
            load_b_pair(rows.add(8 * tile * b.stride + 8 * ks), b.stride)
        });
        core::array::from_fn(|j| pairs[j / 2][j % 2])
    };
    if start < end {
        // Each k-step's fragments are loaded during the previous one's mma.
        let (mut q, mut k) = (queries(start), keys(start));
        let mut ks = start;
        while ks < end {
            let next = (ks + 1).min(end - 1);
            let (q_next, k_next) = (queries(next), keys(next));
            unroll::<M_TILES>(|m| mma_3xtf32(&mut acc[m], q[m], &k));
            (q, k) = (q_next, k_next);
            ks += 1;
        }
    }
    sync_threads();
    let heads = TILE_HEADS * M_TILES as u32;
    let mine = work.add(part * heads * S_STRIDE + lane / 4 * S_STRIDE + 2 * (lane % 4));
    unroll::<M_TILES>(|m| {
        unroll::<{ S_TILES as usize }>(|j| {
            let at = mine.add(16 * m as u32 * S_STRIDE + 8 * (tile0 + j as u32));
            at.cast::<[f32; 2]>().store([acc[m][j][0], acc[m][j][1]]);
            at.add(8 * S_STRIDE)
                .cast::<[f32; 2]>()
                .store([acc[m][j][2], acc[m][j][3]]);
        })
    });
    sync_threads();
}
