//! Step 2, the scores' partials (Thread mapping in `flash`'s docs).

use super::*;

/// A warp's score tiles: the 3xTF32 chains of `M` head tiles of queries from `q` (rows `qs`
/// floats apart) against the [`S_TILES`] slot tiles of rows from `k` (rows `kst` floats apart),
/// over the `steps` k-steps from those columns, each chain in ascending k-steps from zero.
///
/// # Safety
/// All 32 lanes of the warp call it together; the tiles were staged before the last barrier.
#[inline(always)]
pub(super) unsafe fn score_tiles<const M: usize>(
    (q, qs): (Shared<f32>, u32),
    (k, kst): (Shared<f32>, u32),
    steps: u32,
) -> [[[f32; 4]; S_TILES as usize]; M] {
    let mut acc = [[[0.0f32; 4]; S_TILES as usize]; M];
    let queries = |ks: u32| -> [Split<4>; M] {
        core::array::from_fn(|m| load_a(q.add(16 * m as u32 * qs + 8 * ks), qs))
    };
    let keys = |ks: u32| -> [Split<2>; S_TILES as usize] {
        let pairs: [[Split<2>; 2]; S_TILES as usize / 2] =
            core::array::from_fn(|j| load_b_pair(k.add(16 * j as u32 * kst + 8 * ks), kst));
        core::array::from_fn(|j| pairs[j / 2][j % 2])
    };
    if steps > 0 {
        // Each k-step's fragments are loaded during the previous one's mma.
        let (mut q, mut k) = (queries(0), keys(0));
        let mut ks = 0;
        while ks < steps {
            let next = (ks + 1).min(steps - 1);
            let (q_next, k_next) = (queries(next), keys(next));
            unroll::<M>(|m| mma_3xtf32(&mut acc[m], q[m], &k));
            (q, k) = (q_next, k_next);
            ks += 1;
        }
    }
    acc
}

/// Stores a warp's score tiles: head tile `m`'s row `r`, slot `s` of slot tile `j` at `dst +
/// (16 m + r) S_STRIDE + 8 j + s`.
///
/// # Safety
/// All 32 lanes of the warp call it together; nothing reads those floats until the next barrier.
#[inline(always)]
pub(super) unsafe fn store_scores<const M: usize>(
    acc: &[[[f32; 4]; S_TILES as usize]; M],
    dst: Shared<f32>,
) {
    let lane = lane_id();
    let mine = dst.add(lane / 4 * S_STRIDE + 2 * (lane % 4));
    unroll::<M>(|m| {
        unroll::<{ S_TILES as usize }>(|j| {
            let at = mine.add(16 * m as u32 * S_STRIDE + 8 * j as u32);
            at.cast::<[f32; 2]>().store([acc[m][j][0], acc[m][j][1]]);
            at.add(8 * S_STRIDE)
                .cast::<[f32; 2]>()
                .store([acc[m][j][2], acc[m][j][3]]);
        })
    });
}

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
    let warp = thread_idx_x() / 32;
    let ksteps = b.stride / 8;
    let (part, tile0) = (warp % K_PARTS, warp / K_PARTS * S_TILES);
    let per = ksteps.div_ceil(K_PARTS);
    let (start, end) = (part * per, ksteps.min((part + 1) * per));
    let acc = score_tiles::<M_TILES>(
        (work.add(8 * start), b.stride),
        (rows.add(8 * tile0 * b.stride + 8 * start), b.stride),
        end.saturating_sub(start),
    );
    sync_threads();
    let heads = TILE_HEADS * M_TILES as u32;
    store_scores(&acc, work.add(part * heads * S_STRIDE + 8 * tile0));
    sync_threads();
}
