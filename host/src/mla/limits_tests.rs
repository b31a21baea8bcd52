//! The launchers' limits at their edges: each largest size a kernel's 32-bit arithmetic holds is
//! taken, and the next is refused, naming the argument; no GPU needed.

use super::*;

const ABSORB: &str = "mla_absorb_q";
const DECOMPRESS: &str = "mla_decompress_v";
const ATTN: &str = "mla_attn_gathered";

fn absorb(t: usize, nh: usize, d_nope: usize, kv_rank: usize) -> Gemv {
    AbsorbShape {
        t,
        nh,
        d_nope,
        kv_rank,
    }
    .gemv()
}

fn decompress(t: usize, nh: usize, d_v: usize, kv_rank: usize) -> Gemv {
    DecompressShape {
        t,
        nh,
        d_v,
        kv_rank,
    }
    .gemv()
}

/// The refusal of `g` at `split`: the argument and why.
fn gemv_refusal(kernel: &'static str, g: Gemv, split: Split) -> (&'static str, String) {
    let err = gemv_config(kernel, &g, split).unwrap_err();
    (err.arg, err.why)
}

#[test]
fn gemv_x_holds_2_pow_31_float4s() {
    // 2 x 2^29 x 8/4 float4s: the last is i32::MAX.
    gemv_config(ABSORB, &absorb(2, 1 << 29, 8, 1), Split::S1).unwrap();
    let (arg, why) = gemv_refusal(ABSORB, absorb(2, (1 << 29) + 1, 8, 1), Split::S1);
    assert_eq!(arg, "q_nope");
    assert_eq!(
        why,
        "t x nh x d_nope/4 - 1 = 2147483651 exceeds i32::MAX (the .cu indexes q_nope's float4s \
         in `int`)"
    );
    let (arg, _) = gemv_refusal(DECOMPRESS, decompress(2, (1 << 29) + 1, 1, 8), Split::S1);
    assert_eq!(arg, "o_lat");
}

#[test]
fn gemv_w_offsets_stop_at_i32() {
    // The last head's offset (nh - 1) x kv_rank x d_nope/4: 2^31 - 2, then 2^31.
    gemv_config(ABSORB, &absorb(1, 1 << 30, 4, 2), Split::S1).unwrap();
    let (arg, why) = gemv_refusal(ABSORB, absorb(1, (1 << 30) + 1, 4, 2), Split::S1);
    assert_eq!(arg, "w_kb");
    assert!(
        why.starts_with("(nh - 1) x kv_rank x d_nope/4 = 2147483648 exceeds"),
        "{why}"
    );
    // A head's last float4, kv_rank x d_nope/4 - 1: i32::MAX, then past it.
    gemv_config(ABSORB, &absorb(1, 1, 8, 1 << 30), Split::S1).unwrap();
    let (arg, why) = gemv_refusal(ABSORB, absorb(1, 1, 8, (1 << 30) + 1), Split::S1);
    assert_eq!(arg, "w_kb");
    assert!(
        why.starts_with("kv_rank x d_nope/4 - 1 = 2147483649 exceeds"),
        "{why}"
    );
    let (arg, _) = gemv_refusal(DECOMPRESS, decompress(1, 1, (1 << 30) + 1, 8), Split::S1);
    assert_eq!(arg, "w_vb");
}

#[test]
fn gemv_y_holds_2_pow_31_floats() {
    // 4 x 2^28 x 2 floats of out: the last is i32::MAX.
    gemv_config(DECOMPRESS, &decompress(4, 1 << 28, 2, 4), Split::S1).unwrap();
    let (arg, why) = gemv_refusal(DECOMPRESS, decompress(4, (1 << 28) + 1, 2, 4), Split::S1);
    assert_eq!(arg, "out");
    assert!(
        why.starts_with("t x nh x d_v - 1 = 2147483655 exceeds"),
        "{why}"
    );
    let (arg, _) = gemv_refusal(ABSORB, absorb(4, (1 << 28) + 1, 4, 2), Split::S1);
    assert_eq!(arg, "q_lat");
}

/// The .cu's row loop, step by step: every value it forms from a block's rows (the first trip's
/// rows before the loop, then per group the step and the next group's rows).
fn row_loop_end_by_steps(r: u32, split: u32) -> u64 {
    let mut end = u64::from(r) + u64::from(split) - 1;
    for part in 0..split {
        let (begin, stop) = kernels_gpu::mla::split_range(r, split, part);
        if begin >= stop {
            continue;
        }
        for warp in 0..u64::from(kernels_gpu::mla::gemv::WARPS) {
            let mut first = u64::from(begin) + 2 * warp;
            end = end.max(first + 1);
            while first < u64::from(stop) {
                end = end.max(first + 16 + 1);
                first += 16;
            }
        }
    }
    end
}

#[test]
fn gemv_rows_stop_where_the_row_loop_leaves_i32() {
    for r in (1..300).chain([1 << 20, (1 << 20) + 7]) {
        for split in Split::ALL {
            let s = split.factor();
            assert_eq!(
                gemv_row_loop_end(r, s),
                row_loop_end_by_steps(r, s),
                "r {r} split {s}"
            );
        }
    }
    let (most, past) = ((1u32 << 31) - 16, (1u32 << 31) - 15);
    for split in Split::ALL {
        assert_eq!(gemv_row_loop_end(most, split.factor()), i32::MAX as u64);
        gemv_config(ABSORB, &absorb(1, 1, 4, most as usize), split).unwrap();
        let (arg, why) = gemv_refusal(ABSORB, absorb(1, 1, 4, past as usize), split);
        assert_eq!(arg, "kv_rank");
        assert!(why.contains("row loop"), "{why}");
        let (arg, _) = gemv_refusal(DECOMPRESS, decompress(1, 1, past as usize, 4), split);
        assert_eq!(arg, "d_v");
    }
}

fn attn(nh: usize, kv_rank: usize, d_rope: usize) -> AttnShape {
    AttnShape {
        nh,
        kv_rank,
        d_rope,
    }
}

fn attn_refusal(
    shape: AttnShape,
    (t, n_slots): (usize, usize),
    split: Split,
) -> (&'static str, String) {
    let err = attn_config(ATTN, &shape, (t, n_slots, 1), 1.0, split).unwrap_err();
    (err.arg, err.why)
}

fn attn_ok(shape: AttnShape, (t, n_slots): (usize, usize), split: Split) {
    attn_config(ATTN, &shape, (t, n_slots, 1), 1.0, split).unwrap();
}

#[test]
fn attn_indices_stop_where_the_last_tokens_offset_leaves_i32() {
    // (t - 1) x 2 slots: 2^31 - 2, then 2^31.
    attn_ok(attn(1, 4, 0), (1 << 30, 2), Split::S1);
    let (arg, why) = attn_refusal(attn(1, 4, 0), ((1 << 30) + 1, 2), Split::S1);
    assert_eq!(arg, "idx");
    assert!(
        why.starts_with("(t - 1) x n_slots = 2147483648 exceeds"),
        "{why}"
    );
}

#[test]
fn attn_query_offsets_stop_at_i32() {
    // At one head a block, the last block's first head is t nh - 1: 2^30 - 1 at 2^15 x 2^15,
    // 2 float4s a head of q_lat (kv_rank 8) or of q_pe (d_rope 8).
    assert_eq!(
        attn_last_first_head(1 << 15, 1 << 15, Split::S8),
        (1 << 30) - 1
    );
    attn_ok(attn(1 << 15, 8, 0), (1 << 15, 1), Split::S8);
    let (arg, why) = attn_refusal(attn((1 << 15) + 1, 8, 0), (1 << 15, 1), Split::S8);
    assert_eq!(arg, "q_lat");
    assert!(
        why.starts_with("first x kv_rank/4 = 2147549182 exceeds"),
        "{why}"
    );
    attn_ok(attn(1 << 15, 4, 8), (1 << 15, 1), Split::S8);
    let (arg, _) = attn_refusal(attn((1 << 15) + 1, 4, 8), (1 << 15, 1), Split::S8);
    assert_eq!(arg, "q_pe");
    // The last block's first head is the largest multiple of its heads below nh.
    assert_eq!(attn_last_first_head(3, 15, Split::S1), 2 * 15 + 8);
    assert_eq!(attn_last_first_head(3, 15, Split::S2), 2 * 15 + 12);
    assert_eq!(attn_last_first_head(3, 15, Split::S8), 2 * 15 + 14);
    assert_eq!(attn_last_first_head(1, 64, Split::S1), 56);
}

#[test]
fn attn_prefetch_stride_stops_at_i32() {
    // (2^23 - 1) blocks a token x 256 threads + 255: i32::MAX exactly.
    let nh = (1 << 26) - 8;
    attn_ok(attn(nh, 4, 0), (1, 256), Split::S1);
    let (arg, why) = attn_refusal(attn(nh + 1, 4, 0), (1, 256), Split::S1);
    assert_eq!(arg, "nh");
    assert!(why.contains("+ n_slots - 1 = 2147483903 exceeds"), "{why}");
    assert_eq!(attn_refusal(attn(nh, 4, 0), (1, 257), Split::S1).0, "nh");
    // At split 8, a block a head: 2^23 - 8 heads and 2048 slots, then one slot more.
    let nh = (1 << 23) - 8;
    attn_ok(attn(nh, 4, 0), (1, 2048), Split::S8);
    assert_eq!(attn_refusal(attn(nh, 4, 0), (1, 2049), Split::S8).0, "nh");
}

/// The most slots attn_gathered's shared memory holds at kv_rank 512 (rows up to 1024 floats
/// stage their queries in the 4 KiB a head the partial outputs take): the shared-memory formula
/// `max(16 h ceil(d4 / 8) 8, 4096 h) + (4 h + 4) n_slots + 68 h <= 227 KiB`, `h = 8 / split`.
#[test]
fn attn_slots_stop_where_shared_memory_does() {
    for (split, most) in [
        (Split::S1, 5531),
        (Split::S2, 10789),
        (Split::S4, 18676),
        (Split::S8, 28535),
    ] {
        let h = 8 / split.factor() as usize;
        let formula = |n: usize| 4096 * h + (4 * h + 4) * n + 68 * h;
        assert!(formula(most) <= 227 * 1024 && formula(most + 1) > 227 * 1024);
        for d_rope in [0, 64, 512] {
            attn_ok(attn(64, 512, d_rope), (1, most), split);
            let (arg, why) = attn_refusal(attn(64, 512, d_rope), (1, most + 1), split);
            assert_eq!(arg, "n_slots");
            assert!(why.contains("bytes of shared memory per block"), "{why}");
        }
    }
}

#[test]
fn slot_indices_are_not_bounded_in_number() {
    // 2^16 x 2^16 indices are past i32::MAX: the kernels' limits, not the indices', decide.
    let err = check_slot_indices(&[], 1 << 16, 1 << 16, 1).unwrap_err();
    assert_eq!(err.arg, "idx");
    assert!(
        err.why
            .starts_with("holds 0 indices; t x n_slots is 65536 x 65536"),
        "{err}"
    );
}

fn flash_why(shape: AttnShape, (t, n_slots): (usize, usize), heads: FlashHeads) -> String {
    let err = flash_config(&shape, (t, n_slots, 1), 1.0, heads).unwrap_err();
    format!("{}: {}", err.arg, err.why)
}

#[test]
fn flash_counts_head_groups_and_chunks_within_i32() {
    for (heads, most) in [
        (FlashHeads::H16, (1usize << 31) - 16),
        (FlashHeads::H32, (1 << 31) - 32),
        (FlashHeads::H64, (1 << 31) - 64),
    ] {
        flash_config(&attn(most, 4, 0), (1, 1, 1), 1.0, heads).unwrap();
        let why = flash_why(attn(most + 1, 4, 0), (1, 1), heads);
        assert!(
            why.starts_with("nh: nh + ") && why.contains("= 2147483648 exceeds"),
            "{why}"
        );
        flash_config(&attn(64, 512, 0), (1, (1 << 31) - 64, 1), 1.0, heads).unwrap();
        let why = flash_why(attn(64, 512, 0), (1, (1 << 31) - 63), heads);
        assert!(
            why.starts_with("n_slots: n_slots + 63 = 2147483648 exceeds"),
            "{why}"
        );
    }
}

#[test]
fn flash_buffers_are_not_bounded_in_elements() {
    // 2^20 tokens of 64 heads of 576 floats (2^35 floats of q_lat), 4096 slots each (2^32
    // indices): all addressed in 64 bits, on grids within `i32`.
    let (main, combine, _) =
        flash_config(&attn(64, 512, 64), (1 << 20, 4096, 1), 1.0, FlashHeads::H16).unwrap();
    assert_eq!((main.grid_dim.0, combine.grid_dim.0), (1 << 28, 1 << 27));
}
