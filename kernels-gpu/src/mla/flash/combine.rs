//! The combine: the sums of a token and head's chunks, folded in pairs, added into its output
//! (its order of operations is in `flash`'s docs).

use super::*;

/// attn_flash's chunks whose statistics and sums a combine thread has in flight at once: four
/// pairs.
#[cfg(target_arch = "nvptx64")]
const FOLD_BATCH: usize = 8;
/// The Hopper entries' pairs whose statistics and sums a pair-combine thread has in flight at
/// once: every pair of 2048 slots, the top-k of both gate geometries, in one round trip.
#[cfg(target_arch = "nvptx64")]
const PAIR_BATCH: usize = 16;
/// Blocks an SM the pair entry declares: four of [`COMBINE_PAIRS_BLOCK`] threads hold the
/// register file with a whole batch in registers.
#[cfg(target_arch = "nvptx64")]
const PAIRS_MIN_BLOCKS: u32 = 4;

#[cfg(target_arch = "nvptx64")]
crate::device::static_shared! {
    /// The combine's shared memory: each thread's batch of sums (slot `u` of thread `i` at
    /// `u * COMBINE_BLOCK + i`), then per group and column a `float4` and its `l`.
    fn combine_shared = FLASH_COMBINE_SHARED: b8[(COMBINE_BLOCK * (16 * FOLD_BATCH as u32 + 20)) as usize] as F32x4
}

/// A pair of chunks' weights: the pair's maximum `m_p`, and each chunk's `expf(m - m_p)` (the
/// second 0 where the pair has one chunk). The combine's first step for attn_flash's chunks, and
/// the Hopper entries' before they store a pair: one function, so the two cannot drift apart.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn pair_weights(m0: f32, m1: f32, second: bool) -> (f32, f32, f32) {
    let mp = if second { max(m0, m1) } else { m0 };
    (mp, expf(m0 - mp), if second { expf(m1 - mp) } else { 0.0 })
}

/// A pair of chunks' `l` from their own and [`pair_weights`]' `w0`, `w1`: `l0 w0`, then the
/// second chunk's added with one `fma`. Shared by the combine and the Hopper entries, as
/// [`pair_weights`] is.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn pair_l((l0, w0): (f32, f32), (l1, w1): (f32, f32), second: bool) -> f32 {
    let lp = l0 * w0;
    if second {
        fma(w1, l1, lp)
    } else {
        lp
    }
}

/// A pair (`m_p`, `l_p`, `o_p`) added into its group's `l` and `a` with its weight `expf(m_p -
/// M)`: the one step both combines take a pair.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fold_unit((mp, lp, op): (f32, f32, F32x4), m: f32, (l, a): (&mut f32, &mut F32x4)) {
    let w = expf(mp - m);
    *l = fma(w, lp, *l);
    *a = op.mul_add(w, *a);
}

/// A combine launch's arguments, `kv_rank` as `float4` columns.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Launch {
    o_part: *const F32x4,
    ml: *const f32,
    out: *mut F32x4,
    heads: NonZeroU32,
    kv4: u32,
    t: u32,
    n_slots: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Launch {
    /// The block's (token, head) and its first column, for blocks of `columns` columns of one
    /// (token, head); `None` for a block past the last.
    #[inline(always)]
    fn place(self, columns: u32) -> Option<(u32, u32)> {
        // SAFETY: the launch has `kv_rank >= 4`.
        let parts = unsafe { NonZeroU32::new_unchecked(self.kv4.div_ceil(columns)) };
        let th = block_idx_x() / parts;
        (th < self.t * self.heads.get()).then(|| (th, block_idx_x() % parts * columns))
    }
}

/// attn_flash's chunks combined: `out` `[t, nh, kv_rank]` from its `o_part` and `ml`, as
/// `flash`'s docs say: thread `(group, column)` of a block folds the pairs of its group, chunks
/// two by two, for one `float4` column of one (token, head).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn combine_chunks(launch: Launch) {
    let Launch {
        o_part,
        ml,
        out,
        heads,
        kv4,
        n_slots,
        ..
    } = launch;
    let (group, column) = (
        thread_idx_x() / COMBINE_COLUMNS,
        thread_idx_x() % COMBINE_COLUMNS,
    );
    let Some((th, c0)) = launch.place(COMBINE_COLUMNS) else {
        return;
    };
    let c = c0 + column;
    let (token, h) = (th / heads, th % heads);
    // The workspace's chunks, two to a pair.
    let (pairs, span) = (pairs(n_slots), 2);
    let (nh, units) = (heads.get() as usize, chunks(n_slots));
    // A chunk's statistics and sums are `2 nh` floats and `nh kv4` float4s after the previous one's.
    let (stat_step, part_step) = (2 * nh, nh * kv4 as usize);
    let stats = ml.add(2 * (token as usize * units as usize * nh + h as usize));
    // Past the row for a column past it, and past the workspace for a unit past the group's
    // end: such addresses are formed, never read, hence `wrapping_add`.
    let part = o_part.wrapping_add(
        (token as usize * units as usize * nh + h as usize) * kv4 as usize + c as usize,
    );
    let per = pairs.div_ceil(COMBINE_GROUPS) * span;
    let (first, end) = (group * per, units.min((group + 1) * per));
    let live_column = c < kv4;
    let shared = combine_shared();
    let staged = shared.add(thread_idx_x());
    let partials = shared.add(COMBINE_BLOCK * FOLD_BATCH as u32);
    // A batch of this group's chunks from `k`: the sums copied into the thread's slots (zeros for
    // a column past the row) and the statistics loaded, all in flight together. The sums land in
    // shared memory without passing through the thread, so a thread's state stays small and more
    // blocks fit an SM. A chunk past the group's end copies and loads nothing and adds nothing.
    let issue = |k: u32| -> ([bool; FOLD_BATCH], [f32; FOLD_BATCH], [f32; FOLD_BATCH]) {
        let live: [bool; FOLD_BATCH] = core::array::from_fn(|u| k + (u as u32) < end);
        let (stats, part) = (
            stats.wrapping_add(k as usize * stat_step),
            part.wrapping_add(k as usize * part_step),
        );
        unroll::<FOLD_BATCH>(|u| {
            if live[u] {
                cp_async_16_zfill(
                    live_column,
                    staged.add(u as u32 * COMBINE_BLOCK),
                    part.wrapping_add(u * part_step).cast(),
                );
            }
        });
        cp_async_commit();
        let ms = core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.wrapping_add(u * stat_step)));
        let ls =
            core::array::from_fn(|u| ld_nc_f32_if(live[u], stats.wrapping_add(u * stat_step + 1)));
        (live, ms, ls)
    };
    // The first batch is in flight while M is found: one round trip for both.
    let mut batch = issue(first);
    // M: each warp's lanes take the units `lane + 32 i`, then the warp's maximum (no barrier:
    // every warp finds the same M).
    let mut m = f32::NEG_INFINITY;
    let mut k = lane_id();
    while k < units {
        m = max(m, ld_nc_f32(stats.add(k as usize * stat_step)));
        k += 32;
    }
    let m = warp_max(m);
    // This group's pairs in order, a batch at a time (a thread reads only its own copies; a
    // batch holds whole pairs, as `first` and the batch are even).
    let (mut l, mut a) = (0.0f32, F32x4::default());
    let mut k = first;
    loop {
        let (live, ms, ls) = batch;
        cp_async_wait_group::<0>();
        let sum = |u: usize| staged.add(u as u32 * COMBINE_BLOCK).load();
        unroll::<FOLD_BATCH>(|u| {
            if u % span as usize != 0 || !live[u] {
                return;
            }
            let second = live[u + 1];
            let (mp, w0, w1) = pair_weights(ms[u], ms[u + 1], second);
            let lp = pair_l((ls[u], w0), (ls[u + 1], w1), second);
            let op = sum(u) * w0;
            let op = if second {
                sum(u + 1).mul_add(w1, op)
            } else {
                op
            };
            let w = expf(mp - m);
            l = fma(w, lp, l);
            a = op.mul_add(w, a);
        });
        k += FOLD_BATCH as u32;
        if k >= end {
            break;
        }
        batch = issue(k);
    }
    let ls = partials.add(COMBINE_BLOCK).cast::<f32>();
    partials.add(thread_idx_x()).store(a);
    ls.add(thread_idx_x()).store(l);
    sync_threads();
    if group == 0 && live_column {
        unroll::<{ COMBINE_GROUPS as usize - 1 }>(|g| {
            let at = thread_idx_x() + (g as u32 + 1) * COMBINE_COLUMNS;
            a += partials.add(at).load();
            l += ls.add(at).load();
        });
        *out.add(th as usize * kv4 as usize + c as usize) = a * rcp(l);
    }
}

/// A pair-combine thread's groups of `ceil(pairs / 4)` pairs: the sum of those closed (`l`,
/// `a`: the first group's as it is, each later one's added in group order) and the open one's
/// (`gl`, `ga`, from zero).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Default)]
struct Groups {
    l: f32,
    a: F32x4,
    gl: f32,
    ga: F32x4,
    closed: u32,
}

#[cfg(target_arch = "nvptx64")]
impl Groups {
    /// The open group added to the sum, and the next one opened.
    #[inline(always)]
    fn close(&mut self) {
        if self.closed == 0 {
            (self.l, self.a) = (self.gl, self.ga);
        } else {
            self.l += self.gl;
            self.a += self.ga;
        }
        (self.gl, self.ga) = (0.0, F32x4::default());
        self.closed += 1;
    }
}

/// The Hopper entries' pairs combined: `out` `[t, nh, kv_rank]` from their `o_part` and `ml`,
/// in the order `flash`'s docs say. Thread `c` of a block takes `float4` column `c` of one (token,
/// head) and every pair of it, its groups one after another: the first [`PAIR_BATCH`] pairs'
/// sums and statistics are loaded at once (one round trip at 2048 slots, with no barrier and no
/// partner thread), `M` is found from them and the maxima of any pairs past them, then the pairs
/// are folded in order, each group's `l` and `a` from zero and added to the groups' before in
/// group order. A load past the last pair reads the last pair again, so every address is in the
/// workspace and the maximum needs no guard; such a pair is not folded. The loads are coherent:
/// the workspace is the flash launch's output, read after the wait for it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn combine_pairs(launch: Launch) {
    let (heads, kv4) = (launch.heads, launch.kv4);
    let Some((th, c0)) = launch.place(COMBINE_PAIRS_BLOCK) else {
        return;
    };
    let c = c0 + thread_idx_x();
    if c >= kv4 {
        return;
    }
    let (token, h) = (th / heads, th % heads);
    let pairs = pairs(launch.n_slots);
    let nh = heads.get() as usize;
    let first = token as usize * pairs as usize * nh + h as usize;
    let (stats, part) = (
        launch.ml.add(2 * first),
        launch.o_part.add(first * kv4 as usize + c as usize),
    );
    // Pair `k`'s `m_p`, `l_p` and `o_p` (`k` at most the last pair).
    let m_at = |k: u32| ld_f32(stats.add(k as usize * 2 * nh));
    let l_at = |k: u32| ld_f32(stats.add(k as usize * 2 * nh + 1));
    let o_at = |k: u32| {
        let [x, y, z, w] = ld_v4_u32(part.add(k as usize * nh * kv4 as usize).cast());
        F32x4 {
            x: f32::from_bits(x),
            y: f32::from_bits(y),
            z: f32::from_bits(z),
            w: f32::from_bits(w),
        }
    };
    let last = pairs - 1;
    let batch = |k: u32| -> [(f32, f32, F32x4); PAIR_BATCH] {
        let mut units = [(0.0, 0.0, F32x4::default()); PAIR_BATCH];
        unroll::<PAIR_BATCH>(|u| {
            let k = (k + u as u32).min(last);
            units[u] = (m_at(k), l_at(k), o_at(k));
        });
        units
    };
    let mut units = batch(0);
    let mut m = units[0].0;
    unroll::<PAIR_BATCH>(|u| m = max(m, units[u].0));
    let mut k = PAIR_BATCH as u32;
    while k < pairs {
        let mut ms = [0.0; PAIR_BATCH];
        unroll::<PAIR_BATCH>(|u| ms[u] = m_at((k + u as u32).min(last)));
        unroll::<PAIR_BATCH>(|u| m = max(m, ms[u]));
        k += PAIR_BATCH as u32;
    }
    let per = pairs.div_ceil(COMBINE_GROUPS);
    let (mut groups, mut next_group) = (Groups::default(), per);
    let mut k = 0;
    loop {
        unroll::<PAIR_BATCH>(|u| {
            let k = k + u as u32;
            if k >= pairs {
                return;
            }
            if k == next_group {
                groups.close();
                next_group += per;
            }
            fold_unit(units[u], m, (&mut groups.gl, &mut groups.ga));
        });
        k += PAIR_BATCH as u32;
        if k >= pairs {
            break;
        }
        units = batch(k);
    }
    while groups.closed < COMBINE_GROUPS {
        groups.close();
    }
    let Groups { l, a, .. } = groups;
    *launch.out.add(th as usize * kv4 as usize + c as usize) = a * rcp(l);
}

/// The combine of the workspace `P` says ([`Partials::Pairs`] or [`Partials::Chunks`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn combine<const P: bool>(
    o_part: *const F32x4,
    ml: *const f32,
    out: *mut F32x4,
    nh: i32,
    kv_rank: i32,
    t: i32,
    n_slots: i32,
) {
    if P {
        launch_bounds::<COMBINE_PAIRS_BLOCK, PAIRS_MIN_BLOCKS>();
    }
    // Launched as a programmatic dependent of the flash kernel: nothing of its workspace is read
    // before that kernel has finished; and the kernel after it may launch early in turn.
    crate::chain_entry();
    let launch = Launch {
        o_part,
        ml,
        out,
        // SAFETY: the launch has `nh >= 1`.
        heads: NonZeroU32::new_unchecked(nh as u32),
        kv4: kv_rank as u32 / 4,
        t: t as u32,
        n_slots: n_slots as u32,
    };
    if P {
        combine_pairs(launch)
    } else {
        combine_chunks(launch)
    }
}

variants! {
    /// The sums of a flash workspace combined: `out` `[t, nh, kv_rank]` from its `o_part` and
    /// `ml`, as `flash`'s docs say.
    ///
    /// # Launch
    /// grid [`combine_grid`]`(t, nh, kv_rank, partials)`, block [`combine_block`]`(partials)`,
    /// no dynamic shared memory; the same `nh`, `kv_rank`, `t` and `n_slots` as the flash launch
    /// that wrote the workspace, and the entry of what it wrote (`partials`).
    ///
    /// # Safety
    /// The buffers hold the extents above, and the flash launch has finished.
    combine(
        o_part: *const F32x4,
        ml: *const f32,
        out: *mut F32x4,
        nh: i32,
        kv_rank: i32,
        t: i32,
        n_slots: i32,
    ) for Combine: Partials {
        mla_attn_flash_combine = Partials::Chunks => [false];
        mla_attn_flash_combine_pairs = Partials::Pairs => [true];
    }
}
