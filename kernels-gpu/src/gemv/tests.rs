use super::*;
use core::mem::{align_of, offset_of, size_of};

const FORMATS: [Format; 4] = [
    Format::Q8_0,
    Format::Q8_0Planar,
    Format::E4m3,
    Format::E4m3B128,
];

#[test]
fn e4m3_table_edges() {
    let f16 = |b: u8| E4M3_F16[b as usize].0;
    assert_eq!((f16(0x00), f16(0x80)), (0x0000, 0x8000), "+0 and -0");
    assert_eq!(f16(0x01), 0x1800, "smallest subnormal, 2^-9");
    assert_eq!(f16(0x07), 0x2300, "largest subnormal, 7/8 * 2^-6");
    assert_eq!(f16(0x08), 0x2400, "smallest normal, 2^-6");
    assert_eq!(f16(0x38), 0x3C00, "1.0");
    assert_eq!(
        (f16(0x7E), f16(0xFE)),
        (0x5F00, 0xDF00),
        "+-448, the largest"
    );
    assert_eq!((f16(0x7F), f16(0xFF)), (0x7FFF, 0x7FFF), "both NaN codes");
}

#[test]
fn grid_indexing_covers_partial_tiles() {
    assert_eq!((grid_rows(1), grid_cols(32)), (1, 1));
    assert_eq!((grid_rows(128), grid_cols(128)), (1, 1));
    assert_eq!((grid_rows(129), grid_cols(160)), (2, 2));
    assert_eq!((grid_rows(12288), grid_cols(5120)), (96, 40));
    assert_eq!((grid_rows(5120), grid_cols(17408)), (40, 136));
    let in_f = 160;
    assert_eq!(grid_index(0, 0, in_f), 0);
    assert_eq!(grid_index(127, 127, in_f), 0);
    assert_eq!(grid_index(127, 128, in_f), 1);
    assert_eq!(grid_index(128, 0, in_f), 2);
    assert_eq!(grid_index(128, 159, in_f), 3);
    for (out_f, in_f) in [(1, 32), (129, 160), (300, 544), (1024, 5120)] {
        let last = grid_index(out_f - 1, in_f - 1, in_f);
        assert_eq!(
            last + 1,
            grid_rows(out_f) * grid_cols(in_f),
            "{out_f}x{in_f}"
        );
    }
    // A lane's block b (32 columns) lies in one tile: its first and last column agree.
    for b in 0..544 / QK {
        assert_eq!(grid_index(5, b * QK, 544), grid_index(5, b * QK + 31, 544));
    }
}

#[test]
fn q8_0_block_has_the_ggml_layout() {
    assert_eq!(size_of::<BlockQ8_0>(), Q8_0_BLOCK_BYTES as usize);
    assert_eq!(align_of::<BlockQ8_0>(), 2);
    assert_eq!(offset_of!(BlockQ8_0, qs), 2);
    assert_eq!(q8_0_row_bytes(5120), 5440);
    assert_eq!(
        q8_0_row_bytes(256) % 16,
        0,
        "in_f % 256 == 0 rows start 16-aligned"
    );
    assert_ne!(q8_0_row_bytes(160) % 16, 0);
}

#[test]
fn planar_repack_round_trips() {
    let blocks: [BlockQ8_0; 5] = core::array::from_fn(|n| BlockQ8_0 {
        d: F16(0x2000 + 17 * n as u16),
        qs: core::array::from_fn(|k| {
            (n as i8)
                .wrapping_mul(37)
                .wrapping_add((k as i8).wrapping_mul(5))
        }),
    });
    let mut qs = [0i8; 5 * 32];
    let mut d = [F16(0); 5];
    q8_0_to_planar(&blocks, &mut qs, &mut d);
    for (n, block) in blocks.iter().enumerate() {
        let back = BlockQ8_0 {
            d: d[n],
            qs: qs[32 * n..32 * n + 32].try_into().unwrap(),
        };
        assert_eq!(back, *block);
    }
}

#[test]
#[should_panic(expected = "one scale per block")]
fn planar_repack_wants_a_scale_per_block() {
    q8_0_to_planar(&[BlockQ8_0::default(); 2], &mut [0; 64], &mut [F16(0); 1]);
}

/// The device bodies unroll rows, trips and batches up to these bounds.
#[test]
fn geometry_fits_the_bodies() {
    for format in FORMATS {
        for m in BATCHES.map(|m| m as usize) {
            let trip = blocks_per_trip(format, m);
            assert!((1..=4).contains(&trip), "{format:?} m={m}: {trip} blocks");
        }
    }
    for m in BATCHES.map(|m| m as usize) {
        assert_eq!(blocks_per_trip(Format::Q8_0, m), Q8_0_STAGE_BLOCKS as usize);
        // The two e4m3 kernels differ in the tile scale, and block-128 in its sets at one row.
        assert_eq!(
            rows_per_block(Format::E4m3, m) * fp8_mma_sets(Format::E4m3B128, m),
            rows_per_block(Format::E4m3B128, m)
        );
    }
    assert_eq!(Q8_0_STAGE_BYTES % 16, 0, "stages take 16-byte copies");
}

#[test]
fn grid_blocks_cover_every_row_once() {
    for format in FORMATS {
        for m in BATCHES.map(|m| m as usize) {
            let rows = rows_per_block(format, m);
            for out_f in [1, 2, 3, 7, 8, 9, 129, 1024, 12288, 17408] {
                let blocks = grid_blocks(format, m, out_f);
                assert!(blocks * rows >= out_f && (blocks - 1) * rows < out_f);
            }
        }
    }
}

/// Every row group taken once by some warp (every tile by some block, on the tensor cores),
/// none taking more than the fewest a resident grid allows, and the grid within the device
/// (at most [`ANY_GRID_BLOCKS_PER_SM`] an SM).
#[test]
fn launch_blocks_take_every_group_in_balanced_turns() {
    for format in FORMATS {
        for m in BATCHES.map(|m| m as usize) {
            let (r, takers) = if tensor_cores(format, m) {
                (rows_per_block(format, m), 1)
            } else {
                (1, WARPS_PER_BLOCK)
            };
            for out_f in [1, 129, 1024, 5120, 12288, 17408, 40_000, 1 << 24] {
                for (per_sm, sms) in [(0, 132), (1, 1), (4, 132), (9, 132), (16, 132), (8, 0)] {
                    let full = grid_blocks(format, m, out_f);
                    let blocks = launch_blocks(format, m, out_f, per_sm, sms);
                    if !takes_any_grid(format, m) {
                        assert_eq!(blocks, full, "{format:?}: one group a warp");
                        continue;
                    }
                    let resident = (per_sm.min(ANY_GRID_BLOCKS_PER_SM) * sms).max(1);
                    let (groups, warps) = (out_f.div_ceil(r), blocks * takers);
                    let fewest = groups.div_ceil(resident * takers);
                    assert!(blocks >= 1 && blocks <= full.min(resident));
                    assert_eq!(groups.div_ceil(warps), fewest, "{format:?} m={m} {out_f}");
                    assert!(warps - takers < groups.div_ceil(fewest), "no idle block");
                }
            }
        }
    }
}

/// The tensor cores take the Q8_0 formats from four rows and the e4m3 formats at every `m`, in
/// tiles of 16 rows and of one or two sets of `2m` rows (which divide the 128 rows of a scale
/// tile; a block holds one tile a warp up to `m = 2`), and their stages fit a block.
#[test]
fn tensor_core_geometry() {
    for format in FORMATS {
        let q8 = matches!(format, Format::Q8_0 | Format::Q8_0Planar);
        for m in BATCHES.map(|m| m as usize) {
            let tc = tensor_cores(format, m);
            assert_eq!(tc, !q8 || m > 2);
            let (tile, tiles) = if q8 {
                (MMA_ROWS, 1)
            } else {
                let sets = fp8_mma_sets(format, m);
                (2 * m as u32 * sets, WARPS_PER_BLOCK / fp8_mma_warps(m))
            };
            assert_eq!(rows_per_block(format, m) == tile * tiles, tc);
            assert!(TILE.is_multiple_of(tile));
            assert_eq!(dynamic_shared_bytes(format, m) > 0, tc);
            assert!(dynamic_shared_bytes(format, m) <= 227 * 1024);
        }
    }
    // The launcher deepens the Q8_0 eight-row grids of at most a block an SM whose stages fit a
    // block, and nothing else.
    for format in FORMATS {
        for m in BATCHES.map(|m| m as usize) {
            let q8_0 = matches!(format, Format::Q8_0 | Format::Q8_0Planar);
            assert_eq!(deepens(format, m), q8_0 && m == 8, "{format:?} m = {m}");
            let deep = mma_deep_bytes(m);
            let h100 = deep_shared_bytes(format, m, 132, 132, 227 * 1024);
            assert_eq!(h100, deepens(format, m).then_some(deep));
            if deepens(format, m) {
                assert!(deep > dynamic_shared_bytes(format, m) && deep <= 227 * 1024);
                assert_eq!(deep_shared_bytes(format, m, 133, 132, 227 * 1024), None);
                assert_eq!(deep_shared_bytes(format, m, 1, 132, deep - 1), None);
            }
        }
    }
    assert_eq!(fp8_mma_sets(Format::E4m3B128, 1), 2);
    // The blocks the two-set entries declare fit an SM's shared memory, each with the driver's
    // reserve.
    let per_block = dynamic_shared_bytes(Format::E4m3B128, 1) + 1024;
    assert!(FP8_SETS_MIN_BLOCKS * per_block <= 228 * 1024);
    for m in BATCHES.map(|m| m as usize) {
        // The blocks the launch bounds declare fit an SM's shared memory, each with the driver's
        // reserve.
        let per_block = mma_shared_bytes(m) + 1024;
        assert!(MMA_MIN_BLOCKS * per_block <= 228 * 1024, "m = {m}");
        assert_eq!(mma_stage_bytes(m) % 16, 0, "stages take 16-byte copies");
    }
    assert_eq!(MMA_ROWS, 16, "the m of mma.m16n8k32");
    assert_eq!(launch_blocks(Format::Q8_0, 8, 12288, 3, 132), 384);
}

/// The 27B sheet's shapes past a wave: the fewest blocks that take no more tiles (e4m3: four
/// two-row tiles a block, one a warp; block-128's four-row tiles at its declared blocks an SM) or
/// row groups (raw Q8_0) each; planar Q8_0 keeps one a warp.
#[test]
fn launch_blocks_at_the_27b_shapes() {
    assert_eq!(launch_blocks(Format::E4m3, 1, 12288, 9, 132), 768);
    assert_eq!(launch_blocks(Format::E4m3B128, 1, 17408, 6, 132), 544);
    assert_eq!(launch_blocks(Format::E4m3B128, 1, 12288, 6, 132), 768);
    assert_eq!(launch_blocks(Format::E4m3, 1, 5120, 9, 132), 640);
    assert_eq!(launch_blocks(Format::Q8_0, 1, 12288, 12, 132), 1024);
    assert_eq!(launch_blocks(Format::Q8_0Planar, 1, 12288, 10, 132), 3072);
}
