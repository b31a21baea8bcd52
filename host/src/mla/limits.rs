//! The values the family's kernels compute from their sizes in 32 bits, and the checks that keep
//! each within `i32`: the kernels' own limits, which the launchers enforce exactly.
//!
//! Both builds must hold every value: the Rust kernels count in `u32` and form most offsets in
//! 64 bits, the reference .cu in `int` (`size_t` where it says so), so the .cu's `int` values
//! set the limits, and the Rust kernels' `u32` ones are within them. Where a build forms an
//! offset in 64 bits (the cache's rows in both attentions, and everything of attn_flash but its
//! head groups and chunks), nothing is bounded.

use super::{AttnShape, Gemv, Split};
use crate::check;
use crate::error::ArgError;
use kernels_gpu::mla::{attn, split_range};

/// Rows of a GEMV warp's group, and groups a block's warps take at a time (`ROWS_PER_WARP`,
/// `WARPS * ROWS_PER_WARP`).
const GROUP_ROWS: u64 = kernels_gpu::mla::gemv::ROWS_PER_WARP as u64;
const GROUP_STEP: u64 =
    (kernels_gpu::mla::gemv::WARPS * kernels_gpu::mla::gemv::ROWS_PER_WARP) as u64;

/// The largest value the .cu's row bookkeeping of a GEMV over `r` rows at `split` forms:
/// `split_range`'s `r + split - 1`, and, in the blocks that have rows, the row loop's: a warp's
/// groups of two rows start at `begin + 2 n`, the loop steps one past the last (`+ 16`) and
/// loads the next group's first trip behind it, whose second row is `+ 17` past the last group's
/// first row.
pub fn gemv_row_loop_end(r: u32, split: u32) -> u64 {
    let mut end = u64::from(r) + u64::from(split) - 1;
    for part in 0..split {
        let (begin, stop) = split_range(r, split, part);
        if begin < stop {
            let (begin, stop) = (u64::from(begin), u64::from(stop));
            let last = begin + (stop - 1 - begin) / GROUP_ROWS * GROUP_ROWS;
            end = end.max(last + GROUP_STEP + GROUP_ROWS - 1);
        }
    }
    end
}

/// absorb_q's and decompress_v's values past the positivity checks: in the .cu, `x`'s float4
/// index `(t nh + h) k/4 + c`, `w`'s head offset `h r k/4` and row index `(row) k/4 + c`, `y`'s
/// index `(t nh + h) r + row`, and the rows' bookkeeping ([`gemv_row_loop_end`]).
pub(super) fn gemv(kernel: &'static str, g: &Gemv, split: Split) -> Result<(), ArgError> {
    let (t, nh, k4, r) = (
        g.t as u128,
        g.nh as u128,
        (g.k.1 / 4) as u128,
        g.r.1 as u128,
    );
    let ([x, w, y], k, rn) = (g.buffers, g.k.0, g.r.0);
    let float4s = |what: &str| format!("the .cu indexes {what}'s float4s in `int`");
    check::within_i32(
        kernel,
        x,
        t * nh * k4 - 1,
        &format!("t x nh x {k}/4 - 1"),
        &float4s(x),
    )?;
    check::within_i32(
        kernel,
        w,
        (nh - 1) * r * k4,
        &format!("(nh - 1) x {rn} x {k}/4"),
        &format!("the .cu's offset of the last head's {w}, in float4s, in `int`"),
    )?;
    check::within_i32(
        kernel,
        w,
        r * k4 - 1,
        &format!("{rn} x {k}/4 - 1"),
        &float4s(w),
    )?;
    check::within_i32(
        kernel,
        y,
        t * nh * r - 1,
        &format!("t x nh x {rn} - 1"),
        &format!("the .cu indexes {y} in `int`"),
    )?;
    check::within_i32(
        kernel,
        rn,
        u128::from(gemv_row_loop_end(g.r.1 as u32, split.factor())),
        "the last row index the row loop forms",
        "the .cu's split and row loop count rows in `int`",
    )
}

/// The first head of attn_gathered's last block that has heads, as the .cu forms it in `int`
/// (`token nh + h0`): token `t - 1`, and the largest multiple of `8 / split` below `nh`.
pub fn attn_last_first_head(t: usize, nh: usize, split: Split) -> u128 {
    let heads = attn::heads_per_block(split.factor()) as u128;
    let (t, nh) = (t as u128, nh as u128);
    (t - 1) * nh + (nh - 1) / heads * heads
}

/// attn_gathered's values past the positivity checks: in the .cu, the last token's index offset
/// `(t - 1) n_slots`, the last block's query and output offsets `first kv_rank/4` and
/// `first d_rope/4` (`first` = [`attn_last_first_head`]), and the prefetch's slot stride past
/// the last slot, `ceil(nh / 8) split 256 + n_slots - 1` (which also keeps `(nh + 7) / 8`
/// within `i32`). The cache's rows are addressed in 64 bits: the pool's floats are unbounded.
pub(super) fn attn(
    kernel: &'static str,
    shape: &AttnShape,
    (t, n_slots): (usize, usize),
    split: Split,
) -> Result<(), ArgError> {
    let first = attn_last_first_head(t, shape.nh, split);
    let heads = attn::heads_per_block(split.factor());
    check::within_i32(
        kernel,
        "idx",
        (t as u128 - 1) * n_slots as u128,
        "(t - 1) x n_slots",
        "the .cu's offset of the last token's indices, in `int`",
    )?;
    let offsets = |what: &str| {
        format!(
            "{what} = (t - 1) x nh + {heads} x floor((nh - 1) / {heads}) is the last block's \
             first head; the .cu forms the offset in float4s in `int`"
        )
    };
    check::within_i32(
        kernel,
        "q_lat",
        first * (shape.kv_rank / 4) as u128,
        "first x kv_rank/4",
        &offsets("first"),
    )?;
    check::within_i32(
        kernel,
        "q_pe",
        first * (shape.d_rope / 4) as u128,
        "first x d_rope/4",
        &offsets("first"),
    )?;
    let blocks = shape.nh.div_ceil(attn::HEADS as usize) as u128 * u128::from(split.factor());
    check::within_i32(
        kernel,
        "nh",
        blocks * u128::from(attn::BLOCK) + n_slots as u128 - 1,
        "ceil(nh / 8) x split x 256 + n_slots - 1",
        "the .cu's prefetch steps over the slots by all of a token's threads, in `int`",
    )
}

/// attn_flash's values past the positivity checks: the .cu counts head groups
/// (`(nh + 16 tiles - 1) / (16 tiles)`) and chunks (`(n_slots + 63) / 64`) in `int`; every
/// offset is formed in 64 bits.
pub(super) fn flash(
    kernel: &'static str,
    shape: &AttnShape,
    n_slots: usize,
    tiles: u32,
) -> Result<(), ArgError> {
    let heads = kernels_gpu::mla::flash::TILE_HEADS * tiles;
    check::within_i32(
        kernel,
        "nh",
        shape.nh as u128 + u128::from(heads) - 1,
        &format!("nh + {}", heads - 1),
        "the .cu counts head groups in `int`",
    )?;
    let chunk = kernels_gpu::mla::flash::CHUNK;
    check::within_i32(
        kernel,
        "n_slots",
        n_slots as u128 + u128::from(chunk) - 1,
        &format!("n_slots + {}", chunk - 1),
        "the .cu counts chunks in `int`",
    )
}
