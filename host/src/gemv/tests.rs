//! The GEMV launchers' checks, as plain functions of sizes: no GPU needed.

use super::*;
use kernels_gpu::gemv::rows_per_block;

const SHAPE: Shape = Shape {
    m: 1,
    in_f: 5120,
    out_f: 12288,
};

fn act(shape: Shape) -> ActivationLens {
    ActivationLens {
        qs: shape.m * shape.in_f,
        d: shape.m * shape.in_f / 32,
    }
}

fn y(shape: Shape) -> usize {
    shape.m * shape.out_f
}

fn q8_0_bytes_of(shape: Shape) -> usize {
    shape.out_f * shape.in_f / 32 * 34
}

fn grid_of(shape: Shape) -> usize {
    shape.out_f.div_ceil(128) * shape.in_f.div_ceil(128)
}

/// Every format's checker on `shape` with every buffer exactly as long as needed.
fn all_formats(shape: Shape) -> [Result<Launch, ArgError>; 4] {
    let (x, y, n) = (act(shape), y(shape), shape.out_f * shape.in_f);
    [
        q8_0_launch(shape, q8_0_bytes_of(shape), x, y),
        q8_0_planar_launch(shape, n, n / 32, x, y),
        e4m3_launch(shape, n, 0.5, x, y),
        e4m3_b128_launch(shape, n, grid_of(shape), x, y),
    ]
}

#[test]
fn exact_buffers_pass_and_pick_the_stamped_kernel() {
    for m in [1, 2, 4, 8] {
        let shape = Shape { m, ..SHAPE };
        let names = all_formats(shape).map(|l| l.unwrap().name);
        let expect = [
            format!("gemv_q8_0_m{m}"),
            format!("gemv_q8_0_planar_m{m}"),
            format!("gemv_e4m3_m{m}"),
            format!("gemv_e4m3_b128_m{m}"),
        ];
        assert_eq!(names.map(String::from), expect);
    }
}

#[test]
fn m_must_be_1_to_8() {
    for (m, hint) in [
        (0, "at least one row"),
        (9, "launches of at most 8 rows"),
        (16, "launches of at most 8 rows"),
    ] {
        for result in all_formats(Shape { m, ..SHAPE }) {
            let err = result.unwrap_err();
            assert_eq!(err.arg, "m", "{err}");
            assert!(err.to_string().contains("1 to 8"), "{err}");
            assert!(err.to_string().contains(hint), "{err}");
        }
    }
}

#[test]
fn every_m_from_1_to_8_takes_the_entry_that_holds_it() {
    for m in 1..=8 {
        let stamped = [1, 2, 4, 8].into_iter().find(|&n| n >= m).unwrap();
        for launch in all_formats(Shape { m, ..SHAPE }) {
            let launch = launch.unwrap();
            assert_eq!(launch.batch.m(), stamped, "{}", launch.name);
            assert_eq!(launch.m, m as i32, "{}", launch.name);
            assert!(
                launch.name.ends_with(&format!("_m{stamped}")),
                "{}",
                launch.name
            );
        }
    }
}

#[test]
fn in_f_must_be_a_positive_multiple_of_32() {
    for in_f in [0, 1, 31, 33, 5119] {
        let shape = Shape { in_f, ..SHAPE };
        for result in all_formats(shape) {
            let err = result.unwrap_err();
            assert_eq!(err.arg, "in_f", "{err}");
            assert!(err.to_string().contains("multiple of 32"), "{err}");
        }
    }
}

#[test]
fn out_f_must_be_positive_and_within_i32() {
    for out_f in [0, i32::MAX as usize + 1] {
        let shape = Shape { out_f, ..SHAPE };
        for result in all_formats(shape) {
            assert_eq!(result.unwrap_err().arg, "out_f");
        }
    }
}

#[test]
fn short_buffers_are_named() {
    let (x, y, n) = (act(SHAPE), y(SHAPE), SHAPE.out_f * SHAPE.in_f);
    let short = |r: Result<Launch, ArgError>| r.unwrap_err().arg;
    let q8 = q8_0_bytes_of(SHAPE);
    assert_eq!(short(q8_0_launch(SHAPE, q8 - 1, x, y)), "w");
    assert_eq!(short(q8_0_planar_launch(SHAPE, n - 1, n / 32, x, y)), "wq");
    assert_eq!(short(q8_0_planar_launch(SHAPE, n, n / 32 - 1, x, y)), "wd");
    assert_eq!(short(e4m3_launch(SHAPE, n - 1, 1.0, x, y)), "w");
    let grid = grid_of(SHAPE);
    assert_eq!(short(e4m3_b128_launch(SHAPE, n - 1, grid, x, y)), "w");
    assert_eq!(short(e4m3_b128_launch(SHAPE, n, grid - 1, x, y)), "grid");
    let qs = ActivationLens { qs: x.qs - 1, ..x };
    let d = ActivationLens { d: x.d - 1, ..x };
    for (lens, arg) in [(qs, "qs"), (d, "d")] {
        assert_eq!(short(e4m3_launch(SHAPE, n, 1.0, lens, y)), arg);
        assert_eq!(short(q8_0_launch(SHAPE, q8, lens, y)), arg);
    }
    assert_eq!(short(e4m3_launch(SHAPE, n, 1.0, x, y - 1)), "y");
    assert_eq!(short(q8_0_planar_launch(SHAPE, n, n / 32, x, y - 1)), "y");
}

#[test]
fn a_batch_needs_m_activation_rows_and_m_output_rows() {
    let shape = Shape { m: 4, ..SHAPE };
    let n = shape.out_f * shape.in_f;
    let one_row = act(SHAPE);
    let err = e4m3_launch(shape, n, 1.0, one_row, y(shape)).unwrap_err();
    assert_eq!(err.arg, "qs");
    let err = e4m3_launch(shape, n, 1.0, act(shape), y(SHAPE)).unwrap_err();
    assert_eq!(err.arg, "y");
}

#[test]
fn non_finite_scale_is_refused() {
    let n = SHAPE.out_f * SHAPE.in_f;
    for scale in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let err = e4m3_launch(SHAPE, n, scale, act(SHAPE), y(SHAPE)).unwrap_err();
        assert_eq!(err.arg, "scale");
    }
    e4m3_launch(SHAPE, n, -0.0, act(SHAPE), y(SHAPE)).unwrap();
}

/// A launch of `format` at `m` over `in_f -> out_f` with every buffer long enough: only the
/// limits on the sizes can refuse it.
fn sized(format: Format, m: usize, in_f: usize, out_f: usize) -> Result<Launch, ArgError> {
    let shape = Shape { m, in_f, out_f };
    let (x, any) = (
        ActivationLens {
            qs: usize::MAX,
            d: usize::MAX,
        },
        usize::MAX,
    );
    match format {
        Format::Q8_0 => q8_0_launch(shape, any, x, any),
        Format::Q8_0Planar => q8_0_planar_launch(shape, any, any, x, any),
        Format::E4m3 => e4m3_launch(shape, any, 1.0, x, any),
        Format::E4m3B128 => e4m3_b128_launch(shape, any, any, x, any),
    }
}

const FORMATS: [Format; 4] = [
    Format::Q8_0,
    Format::Q8_0Planar,
    Format::E4m3,
    Format::E4m3B128,
];

/// The largest `in_f` whose raw Q8_0 row, `in_f / 32 * 34` bytes, the .cu's `int` holds
/// (`63161283 * 34 = 2147483622`) is taken at every `m`; the next multiple of 32 is not.
#[test]
fn q8_0_rows_up_to_i32_bytes_are_taken_and_no_longer() {
    assert_eq!(2021161056 / 32 * 34, 2147483622);
    for m in [1, 2, 4, 8] {
        sized(Format::Q8_0, m, 2021161056, 3).unwrap();
        let err = sized(Format::Q8_0, m, 2021161088, 3).unwrap_err();
        assert_eq!(err.arg, "in_f");
        assert!(err.why.contains("i32::MAX"), "{err}");
        // 2^31 - 32 values: a multiple of 32 within i32, but 34/32 of it in bytes is not.
        assert_eq!(
            sized(Format::Q8_0, m, (1 << 31) - 32, 3).unwrap_err().arg,
            "in_f"
        );
    }
}

/// Every format takes the largest `in_f` and `out_f` an `i32` holds where nothing else bounds
/// them: no product of sizes is bounded (the kernels form those offsets in 64 bits).
#[test]
fn no_product_of_sizes_is_bounded() {
    for m in [1, 2, 4, 8] {
        for format in [Format::Q8_0Planar, Format::E4m3] {
            if !k::tensor_cores(format, m) {
                sized(format, m, (1 << 31) - 32, 1).unwrap();
            }
            sized(format, m, 32, i32::MAX as usize).unwrap();
            sized(format, m, 1 << 16, 1 << 16).unwrap();
        }
        sized(Format::Q8_0, m, 65536, 65536).unwrap();
        sized(Format::E4m3B128, m, 65536, 65536).unwrap();
    }
}

/// The planar tensor-core kernels (`m` 4, 8) compute `2 * in_f` in the .cu's `int`: `in_f` up
/// to `2^30 - 32`; at `m = 1, 2` the CUDA-core kernels have no such value.
#[test]
fn planar_tensor_core_in_f_stops_where_twice_it_leaves_i32() {
    for m in [4, 8] {
        assert!(k::tensor_cores(Format::Q8_0Planar, m));
        sized(Format::Q8_0Planar, m, (1 << 30) - 32, 1).unwrap();
        let err = sized(Format::Q8_0Planar, m, 1 << 30, 1).unwrap_err();
        assert_eq!(err.arg, "in_f");
        assert!(
            err.why.starts_with("2 x in_f = 2147483648 exceeds"),
            "{err}"
        );
    }
    for m in [1, 2] {
        sized(Format::Q8_0Planar, m, 1 << 30, 1).unwrap();
    }
}

/// Block-128's .cu forms `in_f + 127` and the last tile row's first scale index,
/// `(ceil(out_f / 128) - 1) * ceil(in_f / 128)`, in `int`.
#[test]
fn block_128_tile_offsets_stop_at_i32() {
    for m in [1, 8] {
        sized(Format::E4m3B128, m, (1 << 31) - 128, 1).unwrap();
        let err = sized(Format::E4m3B128, m, (1 << 31) - 96, 1).unwrap_err();
        assert_eq!(err.arg, "in_f");
        assert!(
            err.why.starts_with("in_f + 127 = 2147483679 exceeds"),
            "{err}"
        );
        // 129 tile columns: the last tile row may start at 16647160 * 129 = 2147483640, not at
        // 16647161 * 129.
        let in_f = 128 * 128 + 32;
        assert_eq!(grid_cols(in_f), 129);
        sized(Format::E4m3B128, m, in_f as usize, 128 * 16647161).unwrap();
        let err = sized(Format::E4m3B128, m, in_f as usize, 128 * 16647161 + 1).unwrap_err();
        assert_eq!(err.arg, "grid");
        assert!(err.why.contains("= 2147483769 exceeds"), "{err}");
        assert_eq!(
            sized(Format::E4m3B128, m, 1 << 30, 1 << 30)
                .unwrap_err()
                .arg,
            "grid"
        );
    }
}

/// The .cu's grid-stride loop (raw Q8_0 at `m = 1, 2`, a row a warp) forms `out_f - 1 + 4 grid`
/// in `int`, so `out_f` goes up to `2^31 - 4 grid`; the other kernels (the tensor-core ones
/// count their tiles in `unsigned`) take any `out_f` at any grid.
#[test]
fn the_grid_stride_loop_stops_at_i32() {
    let grid = |f, m, out_f: u32, blocks| {
        let batch = batch("k", m).unwrap();
        check_grid("k", f, batch, out_f, blocks)
    };
    for (f, m) in [(Format::Q8_0, 1), (Format::Q8_0, 2)] {
        grid(f, m, (1 << 31) - 4224, 1056).unwrap();
        let err = grid(f, m, (1 << 31) - 4223, 1056).unwrap_err();
        assert_eq!(err.arg, "out_f");
        assert!(err.why.contains("= 2147483648 exceeds i32::MAX"), "{err}");
    }
    for (f, m) in [
        (Format::Q8_0Planar, 1),
        (Format::Q8_0Planar, 2),
        (Format::Q8_0Planar, 8),
        (Format::Q8_0, 4),
        (Format::E4m3, 1),
        (Format::E4m3B128, 8),
    ] {
        grid(f, m, i32::MAX as u32, u32::MAX).unwrap();
    }
    // The launchers' grid on a device of 132 SMs at eight blocks each, over a short matrix and
    // the largest one.
    for f in FORMATS {
        for m in [1, 2, 4, 8] {
            for out_f in [12288, i32::MAX as u32 - 8448] {
                let blocks = k::launch_blocks(f, m, out_f, 8, 132);
                grid(f, m, out_f, blocks).unwrap();
            }
        }
    }
}

/// The tensor-core pipelines (`kernels-gpu/src/gemv/mma.rs`'s `run`, the .cu's `gemv_q8_0_mma`
/// and `gemv_e4m3_mma`) compare with their rows, in 32-bit unsigned, a cursor that runs ahead of
/// the trip they compute: the weights `stages - 1` trips, the Q8_0 activation's own ring
/// (`m = 8`) `stages` trips; over rows of one trip (`in_f <= 1024`) a grid stride a trip. For the
/// Q8_0 formats that is the ABI table's `rows - 1 + 32 * grid <= 2^32 - 1`, which every grid the
/// launchers give meets (eight blocks an SM at most, here on up to 1024 SMs) and the largest grid
/// `grid_blocks` allows does not; the e4m3 pipelines, one trip ahead, stay within `u32` at any.
#[test]
fn the_tensor_core_look_ahead_stays_within_u32_at_the_launchers_grids() {
    let ahead = |format: Format, m: usize| match format {
        Format::Q8_0 | Format::Q8_0Planar if k::mma_x_ring(m) => k::mma_stages(m),
        Format::Q8_0 | Format::Q8_0Planar => k::mma_stages(m) - 1,
        Format::E4m3 | Format::E4m3B128 => k::FP8_MMA_STAGES - 1,
    };
    // The largest cursor compared: a plain launch counts `out_f` rows, a GLU `2 out_f`, both
    // `tile` rows a block.
    let last = |format: Format, m: usize, glu: bool, out_f: u32, grid: u32| {
        let (rows, tile) = if glu {
            (2 * u64::from(out_f), k::glu_rows_per_block(format, m))
        } else {
            (u64::from(out_f), rows_per_block(format, m))
        };
        if matches!(format, Format::Q8_0 | Format::Q8_0Planar) {
            assert_eq!(ahead(format, m) * tile, 32, "the table's bound");
        }
        rows - 1 + u64::from(ahead(format, m)) * u64::from(grid) * u64::from(tile)
    };
    for format in FORMATS {
        for m in [1, 2, 4, 8] {
            for glu in [false, true] {
                if !glu && !k::tensor_cores(format, m) {
                    continue;
                }
                let max = if glu {
                    GLU_MAX_ROWS as u32
                } else {
                    i32::MAX as u32
                };
                for out_f in [1, 12288, max - 8448, max] {
                    for (per_sm, sms) in [(1, 1), (3, 132), (8, 132), (16, 1024)] {
                        let grid = if glu {
                            k::glu_launch_blocks(format, m, out_f, per_sm, sms)
                        } else {
                            k::launch_blocks(format, m, out_f, per_sm, sms)
                        };
                        assert!(
                            last(format, m, glu, out_f, grid) <= u64::from(u32::MAX),
                            "{format:?} m={m} glu={glu} out_f={out_f} grid={grid}"
                        );
                    }
                }
                let grid = if glu {
                    k::glu_grid_blocks(format, m, max)
                } else {
                    k::grid_blocks(format, m, max)
                };
                let fits = last(format, m, glu, max, grid) <= u64::from(u32::MAX);
                let q8 = matches!(format, Format::Q8_0 | Format::Q8_0Planar);
                assert_eq!(fits, !q8, "{format:?} m={m} glu={glu}");
            }
        }
    }
}

#[test]
fn geometry_covers_every_row_in_whole_warps() {
    for m in [1, 2, 4, 8] {
        for out_f in [1, 2, 7, 8, 9, 129, 1024, 5120, 12288, 17408] {
            let shape = Shape { m, out_f, ..SHAPE };
            for (format, launch) in [
                Format::Q8_0,
                Format::Q8_0Planar,
                Format::E4m3,
                Format::E4m3B128,
            ]
            .into_iter()
            .zip(all_formats(shape))
            {
                let cfg = launch.unwrap().cfg;
                let rows = rows_per_block(format, m) as usize;
                let blocks = cfg.grid_dim.0 as usize;
                assert_eq!(cfg.block_dim, (128, 1, 1));
                assert_eq!((cfg.grid_dim.1, cfg.grid_dim.2), (1, 1));
                assert!(blocks * rows >= out_f, "{format:?} m={m} out_f={out_f}");
                assert!(
                    (blocks - 1) * rows < out_f,
                    "{format:?} m={m} out_f={out_f}"
                );
                assert_eq!(cfg.shared_mem_bytes, k::dynamic_shared_bytes(format, m));
            }
        }
    }
}

/// What the ABI table says each format's wide reads need: `xq` 16 bytes, the planar quants and
/// the e4m3 bytes 16, raw Q8_0 blocks 2; and the refusal names the argument and both numbers.
#[test]
fn wide_reads_want_the_alignment_the_abi_table_gives() {
    assert_eq!(k::XQ_ALIGN, 16);
    assert_eq!(k::weight_align(Format::Q8_0), 2);
    for f in [Format::Q8_0Planar, Format::E4m3, Format::E4m3B128] {
        assert_eq!(k::weight_align(f), 16);
    }
    assert!(check::aligned("k", "xq", 0x7000_0010, 16).is_ok());
    let err = check::aligned("k", "xq", 0x7000_0008, 16).unwrap_err();
    assert_eq!(err.arg, "xq");
    assert!(
        err.why.contains("0x70000008 is not 16-byte aligned"),
        "{err}"
    );
}

/// The wide reads the launch checks name real parameters of every entry: a name that matched
/// none would drop its alignment check without a word.
#[test]
fn the_wide_reads_name_each_entrys_parameters() {
    use kernels_gpu::abi::Group;
    use kernels_gpu::gemv::{GemvE4m3, GemvE4m3B128, GemvQ8_0, GemvQ8_0Planar};
    for batch in Batch::ALL {
        for (args, weights) in [
            (GemvQ8_0::entry(batch).args, "w"),
            (GemvQ8_0Planar::entry(batch).args, "wq"),
            (GemvE4m3::entry(batch).args, "w"),
            (GemvE4m3B128::entry(batch).args, "w"),
        ] {
            assert!(args.contains(&weights) && args.contains(&"xq"), "{args:?}");
        }
        let glu = [
            GemvQ8_0Glu::entry(batch).args,
            GemvQ8_0PlanarGlu::entry(batch).args,
            GemvE4m3Glu::entry(batch).args,
            GemvE4m3B128Glu::entry(batch).args,
        ];
        for (args, wide) in glu.iter().zip([
            &["wg", "wu"][..],
            &["wgq", "wuq", "wgd", "wud"],
            &["wg", "wu"],
            &["wg", "wu"],
        ]) {
            assert!(wide.iter().all(|w| args.contains(w)), "{args:?}");
        }
    }
}

/// Every format's GLU checker on `shape` with every buffer exactly as long as needed.
fn all_glu_formats(shape: Shape) -> [Result<Launch, ArgError>; 4] {
    let (x, y, n) = (act(shape), y(shape), shape.out_f * shape.in_f);
    let q8_0 = q8_0_bytes_of(shape);
    [
        q8_0_glu_launch(shape, q8_0, q8_0, x, y),
        q8_0_planar_glu_launch(shape, (n, n / 32), (n, n / 32), x, y),
        e4m3_glu_launch(shape, (n, 0.5), (n, 2.0), x, y),
        e4m3_b128_glu_launch(shape, (n, grid_of(shape)), (n, grid_of(shape)), x, y),
    ]
}

#[test]
fn glu_launches_take_the_tensor_core_tiles_of_both_matrices() {
    for m in [1, 2, 4, 8] {
        let shape = Shape { m, ..SHAPE };
        for (launch, format) in all_glu_formats(shape).into_iter().zip([
            Format::Q8_0,
            Format::Q8_0Planar,
            Format::E4m3,
            Format::E4m3B128,
        ]) {
            let launch = launch.unwrap();
            assert!(launch.glu && launch.name.ends_with(&format!("_glu_m{m}")));
            // A tile takes half its rows from each matrix.
            let rows = k::glu_rows_per_block(format, m) / 2;
            assert_eq!(
                launch.cfg.grid_dim.0 as usize,
                SHAPE.out_f.div_ceil(rows as usize)
            );
            assert_eq!(launch.cfg.shared_mem_bytes, k::glu_shared_bytes(format, m));
        }
    }
}

#[test]
fn glu_launches_refuse_what_either_matrix_lacks() {
    let (x, y, n) = (act(SHAPE), y(SHAPE), SHAPE.out_f * SHAPE.in_f);
    let q8_0 = q8_0_bytes_of(SHAPE);
    let err = q8_0_glu_launch(SHAPE, q8_0, q8_0 - 1, x, y).unwrap_err();
    assert_eq!((err.kernel, err.arg), ("gemv_q8_0_glu_m1", "wu"));
    let err = e4m3_glu_launch(SHAPE, (n, f32::NAN), (n, 1.0), x, y).unwrap_err();
    assert_eq!(err.arg, "gate_scale");
    assert!(err.why.contains("finite"), "{}", err.why);
    let err = e4m3_glu_launch(SHAPE, (n, 1.0), (n - 1, 1.0), x, y).unwrap_err();
    assert_eq!(err.arg, "wu");
    let err = e4m3_b128_glu_launch(SHAPE, (n, 1), (n, grid_of(SHAPE)), x, y).unwrap_err();
    assert_eq!(err.arg, "gate_grid");
    let err = q8_0_planar_glu_launch(SHAPE, (n, n / 32), (n - 1, n / 32), x, y).unwrap_err();
    assert_eq!(err.arg, "wuq");
    let err = q8_0_planar_glu_launch(SHAPE, (n, n / 32 - 1), (n, n / 32), x, y).unwrap_err();
    assert_eq!(err.arg, "wgd");
    let err = q8_0_glu_launch(SHAPE, q8_0, q8_0, x, y - 1).unwrap_err();
    assert_eq!(err.arg, "y");
}

/// The block-128 GLU indexes a tile scale whole in `int`: at `in_f = 2^31 - 128` (2^24 - 1 tile
/// columns) 128 tile rows are within it and 129 are not, where the plain kernel, which indexes only
/// the last tile row's first scale so, takes 129.
#[test]
fn a_block_128_glu_refuses_tile_scales_past_i32() {
    let any = usize::MAX;
    let x = ActivationLens { qs: any, d: any };
    let (in_f, cols) = ((1usize << 31) - 128, (1usize << 24) - 1);
    let glu = |out_f| {
        let shape = Shape { m: 1, in_f, out_f };
        e4m3_b128_glu_launch(shape, (any, any), (any, any), x, any)
    };
    assert!(128 * cols - 1 <= i32::MAX as usize && 129 * cols - 1 > i32::MAX as usize);
    glu(128 * 128).unwrap();
    assert_eq!(glu(129 * 128).unwrap_err().arg, "out_f");
    sized(Format::E4m3B128, 1, in_f, 129 * 128).unwrap();
}

#[test]
fn a_planar_glu_takes_whole_scale_rows_of_16_bytes_and_no_glu_passes_2_to_the_30_rows() {
    let shape = Shape {
        in_f: 5120 + 32,
        ..SHAPE
    };
    let n = shape.out_f * shape.in_f;
    let err =
        q8_0_planar_glu_launch(shape, (n, n / 32), (n, n / 32), act(shape), y(shape)).unwrap_err();
    assert_eq!(err.arg, "in_f");
    assert!(err.why.contains("multiple of 256"), "{}", err.why);
    // On the tensor cores at m = 1 too: the .cu's `2 * in_f` in `int` bounds it.
    let wide = Shape {
        m: 1,
        in_f: 1 << 30,
        out_f: 1,
    };
    let n = wide.in_f;
    let err =
        q8_0_planar_glu_launch(wide, (n, n / 32), (n, n / 32), act(wide), y(wide)).unwrap_err();
    assert_eq!(err.arg, "in_f");
    assert!(err.why.contains("2 x in_f"), "{}", err.why);
    let big = Shape {
        m: 1,
        in_f: 256,
        out_f: GLU_MAX_ROWS + 1,
    };
    for result in all_glu_formats(big) {
        let err = result.unwrap_err();
        assert_eq!(err.arg, "out_f", "{err:?}");
    }
    let edge = Shape {
        out_f: GLU_MAX_ROWS,
        ..big
    };
    assert!(all_glu_formats(edge).iter().all(|r| r.is_ok()));
}

#[test]
fn parts_must_add_up_to_out_f_and_lie_back_to_back() {
    let whole = Parts::whole(12288);
    assert_eq!(whole.firsts("k", 12288), Ok([12288, 12288]));
    assert_eq!(whole.range(0, 3), 0..3 * 12288);
    // q, k and v of the 27B sheet at m = 5: each an [m][rows] matrix after the one before.
    let qkv = Parts([12288, 1024, 1024]);
    assert_eq!(qkv.firsts("k", 14336), Ok([12288, 13312]));
    assert_eq!(
        [0, 1, 2].map(|p| qkv.range(p, 5)),
        [0..61440, 61440..66560, 66560..71680]
    );
    // A part may be empty.
    assert_eq!(Parts([0, 7, 0]).firsts("k", 7), Ok([0, 7]));
    for (parts, out_f, why) in [
        (
            Parts([12288, 1024, 1024]),
            14335,
            "12288 + 1024 + 1024 rows = 14336, not out_f = 14335",
        ),
        (Parts([1, 1, 1]), 4, "1 + 1 + 1 rows = 3, not out_f = 4"),
        (
            Parts([usize::MAX, 2, 0]),
            1,
            "rows = 18446744073709551617, not out_f = 1",
        ),
    ] {
        let e = parts.firsts("gemv_q8_0_m1", out_f).unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
        assert!(e.to_string().contains("parts"), "{e}");
    }
}
