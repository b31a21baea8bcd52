use super::*;
use kernels_gpu::mla::split_range;

const ABSORB: &str = "mla_absorb_q";
const ATTN: &str = "mla_attn_gathered";

/// The gate's geometry: 64 heads, kv_rank 512, d_nope and d_v 256.
fn absorb(t: usize) -> AbsorbShape {
    AbsorbShape {
        t,
        nh: 64,
        d_nope: 256,
        kv_rank: 512,
    }
}

fn decompress(t: usize) -> DecompressShape {
    DecompressShape {
        t,
        nh: 64,
        d_v: 256,
        kv_rank: 512,
    }
}

fn attn_shape(d_rope: usize) -> AttnShape {
    AttnShape {
        nh: 64,
        kv_rank: 512,
        d_rope,
    }
}

fn gemv_arg(g: Gemv) -> &'static str {
    gemv_config(ABSORB, &g, Split::S1).unwrap_err().arg
}

fn attn_arg(shape: AttnShape, sizes: (usize, usize, usize), scale: f32) -> &'static str {
    attn_config(ATTN, &shape, sizes, scale, Split::S1)
        .unwrap_err()
        .arg
}

#[test]
fn splits_are_1_2_4_8_only() {
    for (factor, want) in [
        (1, Split::S1),
        (2, Split::S2),
        (4, Split::S4),
        (8, Split::S8),
    ] {
        assert_eq!(split(ABSORB, factor).unwrap(), want);
        assert_eq!(want.factor() as usize, factor);
    }
    for bad in [0, 3, 5, 6, 16, usize::MAX] {
        let err = split(ABSORB, bad).unwrap_err();
        assert_eq!(err.arg, "split", "{err}");
    }
}

#[test]
fn every_kernel_and_split_names_its_own_entry() {
    let mut names = std::collections::BTreeSet::new();
    for kernel in MlaKernel::ALL {
        for split in Split::ALL {
            let name = entry(kernel, split);
            assert!(
                name.starts_with(&format!("mla_{}", kernel.name())),
                "{name}"
            );
            assert_eq!(name.ends_with("_s2"), split == Split::S2, "{name}");
            assert!(names.insert(name), "{name} twice");
        }
    }
    names.insert(kernels_gpu::mla::flash::mla_attn_gathered_flash::NAME);
    names.insert(kernels_gpu::mla::flash::mla_attn_gathered_flash_h32::NAME);
    names.insert(kernels_gpu::mla::flash::mla_attn_gathered_flash_h64::NAME);
    use kernels_gpu::mla::flash::Combine;
    names.extend(Combine::ENTRIES.iter().map(|(_, name)| *name));
    use kernels_gpu::mla::flash::wgmma::{mla_attn_flash_wgmma_queries, AttnFlashWgmma};
    names.insert(mla_attn_flash_wgmma_queries::NAME);
    names.extend(AttnFlashWgmma::ENTRIES.iter().map(|(_, name)| *name));
    let family: std::collections::BTreeSet<&str> =
        kernels_gpu::mla::KERNELS.iter().map(|k| k.name).collect();
    assert_eq!(
        names, family,
        "the family's KernelSpec table lists its entries"
    );
}

#[test]
fn serving_splits_cover_t_1_to_8_and_refuse_the_rest() {
    let table = ServingTable::DEFAULT;
    for kernel in MlaKernel::ALL {
        for t in 1..=MAX_T_Q {
            let s = serving_split(&table, kernel, ATTN, t, 0).unwrap();
            assert_eq!(Some(s), table.split(kernel, t, 0));
        }
        for t in [0, MAX_T_Q + 1, 100] {
            let err = serving_split(&table, kernel, ATTN, t, 0).unwrap_err();
            assert_eq!(err.arg, "t");
            assert!(err.why.contains("beyond the serving table"), "{err}");
        }
    }
}

#[test]
fn the_default_table_prints_in_the_documented_format() {
    let text = ServingTable::DEFAULT.to_string();
    assert_eq!(
        text,
        "# MLA decode serving table: the split each kernel launches with, per query width t_q.\n\
         t_q             1  2  3  4  5  6  7  8\n\
         absorb_q        8  8  8  8  8  8  8  8\n\
         decompress_v    8  8  8  8  8  8  8  8\n\
         attn_gathered   8  8  4  4  2  2  2  2\n"
    );
}

#[test]
fn tables_round_trip_through_their_text() {
    let mut table = ServingTable::uniform(Split::S1);
    for (i, kernel) in MlaKernel::ALL.into_iter().enumerate() {
        for t in 1..=MAX_T_Q {
            table = table
                .with(kernel, t, Split::ALL[(i + t) % 4])
                .expect("t in range");
        }
    }
    for table in [
        ServingTable::DEFAULT,
        table,
        ServingTable::uniform(Split::S4),
    ] {
        let text = table.to_string();
        assert_eq!(ServingTable::parse(&text), Ok(table), "{text}");
        assert_eq!(text.parse::<ServingTable>(), Ok(table));
    }
    assert_eq!(table.with(MlaKernel::AbsorbQ, 0, Split::S2), None);
    assert_eq!(table.with(MlaKernel::AbsorbQ, 9, Split::S2), None);
    assert_eq!(table.split(MlaKernel::AttnGathered, 0, 0), None);
}

#[test]
fn tables_skip_comments_and_blank_lines_and_take_rows_in_any_order() {
    let text = "\n# measured\n\nt_q 1 2 3 4 5 6 7 8\n  # attention first\n\
                attn_gathered 1 1 1 1 1 1 1 1\n\
                decompress_v  2 2 2 2 2 2 2 2\n\n\
                absorb_q      4 4 4 4 4 4 4 8   # trailing words are not allowed\n";
    let err = ServingTable::parse(text).unwrap_err();
    assert_eq!(
        (err.line, err.fault),
        (9, TableFault::SplitCount { found: 14 })
    );
    let text = text.replace("   # trailing words are not allowed", "");
    let table = ServingTable::parse(&text).unwrap();
    assert_eq!(table.split(MlaKernel::AttnGathered, 3, 0), Some(Split::S1));
    assert_eq!(table.split(MlaKernel::DecompressV, 5, 0), Some(Split::S2));
    assert_eq!(table.split(MlaKernel::AbsorbQ, 8, 0), Some(Split::S8));
    assert_eq!(table.split(MlaKernel::AbsorbQ, 1, 0), Some(Split::S4));
}

#[test]
fn bad_tables_are_refused_with_the_line_at_fault() {
    let header = "t_q 1 2 3 4 5 6 7 8\n";
    let row = |k: &str| format!("{k} 8 8 8 8 8 8 8 8\n");
    let full = format!(
        "{header}{}{}{}",
        row("absorb_q"),
        row("decompress_v"),
        row("attn_gathered")
    );
    ServingTable::parse(&full).unwrap();
    let cases: Vec<(String, usize, TableFault)> = vec![
        (String::new(), 1, TableFault::Header),
        ("# only a comment\n".into(), 2, TableFault::Header),
        ("t_q 1 2 3 4 5 6 7\n".into(), 1, TableFault::Header),
        ("t_q 1 2 3 4 5 6 7 8 9\n".into(), 1, TableFault::Header),
        ("t_q 0 1 2 3 4 5 6 7\n".into(), 1, TableFault::Header),
        (row("absorb_q"), 1, TableFault::Header),
        (
            header.into(),
            2,
            TableFault::MissingKernel(MlaKernel::AbsorbQ),
        ),
        (
            format!("{header}{}{}", row("absorb_q"), row("attn_gathered")),
            4,
            TableFault::MissingKernel(MlaKernel::DecompressV),
        ),
        (
            format!("{header}{}", row("absorb_qq")),
            2,
            TableFault::UnknownKernel,
        ),
        (
            format!("{header}{}{}", row("decompress_v"), row("decompress_v")),
            3,
            TableFault::DuplicateKernel(MlaKernel::DecompressV),
        ),
        (
            format!("{header}absorb_q 8 8 8 8 8 8 8\n"),
            2,
            TableFault::SplitCount { found: 7 },
        ),
        (
            format!("{header}absorb_q 8 8 8 8 8 8 8 8 8\n"),
            2,
            TableFault::SplitCount { found: 9 },
        ),
        (
            format!("{header}absorb_q 8 8 3 8 8 8 8 8\n"),
            2,
            TableFault::BadSplit { t_q: 3 },
        ),
        (
            format!("{header}absorb_q 8 8 8 8 8 8 8 x\n"),
            2,
            TableFault::BadSplit { t_q: 8 },
        ),
        (
            format!("{header}absorb_q 0 8 8 8 8 8 8 8\n"),
            2,
            TableFault::BadSplit { t_q: 1 },
        ),
        (
            format!("{header}absorb_q 16 8 8 8 8 8 8 8\n"),
            2,
            TableFault::BadSplit { t_q: 1 },
        ),
        (
            format!("{full}{}", row("absorb_q>=4096")),
            5,
            TableFault::BadDeepRow,
        ),
        (
            format!("{full}{}", row("attn_gathered>=0")),
            5,
            TableFault::BadDeepRow,
        ),
        (
            format!("{full}{}", row("attn_gathered>=4k")),
            5,
            TableFault::BadDeepRow,
        ),
        (
            format!(
                "{full}{}{}",
                row("attn_gathered>=9"),
                row("attn_gathered>=99")
            ),
            6,
            TableFault::DuplicateDeepRow,
        ),
        (
            format!("{full}attn_gathered>=9 8 8\n"),
            5,
            TableFault::SplitCount { found: 2 },
        ),
    ];
    for (text, line, fault) in cases {
        let err = ServingTable::parse(&text).unwrap_err();
        assert_eq!((err.line, err.fault), (line, fault), "{text:?}: {err}");
        assert!(err.to_string().starts_with(&format!("line {line}: ")));
    }
}

#[test]
fn a_deep_pool_row_serves_attention_over_pools_from_its_depth() {
    let deep = DeepRow {
        from_pool: 262144,
        splits: [
            Split::S8,
            Split::S8,
            Split::S2,
            Split::S2,
            Split::S2,
            Split::S2,
            Split::S2,
            Split::S2,
        ],
    };
    let table = ServingTable::DEFAULT.with_deep(Some(deep));
    let text = table.to_string();
    assert!(
        text.ends_with("attn_gathered>=262144  8  8  2  2  2  2  2  2\n"),
        "{text}"
    );
    assert_eq!(ServingTable::parse(&text), Ok(table));
    let attn = |t, pool| table.split(MlaKernel::AttnGathered, t, pool);
    assert_eq!(attn(3, 262143), Some(Split::S4));
    assert_eq!(attn(3, 262144), Some(Split::S2));
    assert_eq!(attn(1, 1 << 20), Some(Split::S8));
    // The GEMVs read no pool: their rows serve every depth.
    assert_eq!(table.split(MlaKernel::AbsorbQ, 3, 1 << 20), Some(Split::S8));
    assert_eq!(
        serving_split(&table, MlaKernel::AttnGathered, ATTN, 4, 300_000),
        Ok(Split::S2)
    );
}

#[test]
fn table_files_are_written_and_read_back() {
    let dir = std::env::temp_dir().join(format!("mla-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("serving.txt");
    let table = ServingTable::DEFAULT
        .with(MlaKernel::AttnGathered, 8, Split::S1)
        .unwrap();
    write_table(&path, &table).unwrap();
    assert_eq!(read_table(&path).unwrap(), table);

    std::fs::write(&path, "t_q 1 2 3 4 5 6 7 8\nabsorb_q 8 8 8 8 8 8 8 7\n").unwrap();
    let err = read_table(&path).unwrap_err().to_string();
    assert!(err.contains("serving.txt"), "{err}");
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("`absorb_q 8 8 8 8 8 8 8 7`"), "{err}");

    std::fs::write(&path, "t_q 1 2 3 4 5 6 7 8\n").unwrap();
    let err = read_table(&path).unwrap_err().to_string();
    assert!(err.ends_with("line 2: no row for absorb_q"), "{err}");

    let missing = dir.join("missing.txt");
    assert!(matches!(read_table(&missing), Err(Error::TableFile { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gemv_geometry_is_split_blocks_per_head() {
    for t in 1..=8 {
        for split in Split::ALL {
            let s = split.factor();
            let (cfg, ints) = gemv_config(ABSORB, &absorb(t).gemv(), split).unwrap();
            assert_eq!(cfg.grid_dim, (64 * s, 1, 1));
            assert_eq!(cfg.block_dim, (gemv::BLOCK, 1, 1));
            assert_eq!(cfg.shared_mem_bytes as usize, t * 256 * 4);
            assert_eq!(ints, [t as i32, 64, 256, 512], "(t, nh, d_nope, kv_rank)");

            let (cfg, ints) = gemv_config(ABSORB, &decompress(t).gemv(), split).unwrap();
            assert_eq!(cfg.grid_dim, (64 * s, 1, 1));
            assert_eq!(cfg.shared_mem_bytes as usize, t * 512 * 4);
            assert_eq!(ints, [t as i32, 64, 256, 512], "(t, nh, d_v, kv_rank)");
        }
    }
    assert_eq!(
        absorb(2).gemv().lens(),
        [2 * 64 * 256, 64 * 512 * 256, 2 * 64 * 512]
    );
    assert_eq!(
        decompress(2).gemv().lens(),
        [2 * 64 * 512, 64 * 256 * 512, 2 * 64 * 256]
    );
}

#[test]
fn gemv_refusals_name_the_argument() {
    let a = |f: fn(&mut AbsorbShape)| {
        let mut s = absorb(1);
        f(&mut s);
        gemv_arg(s.gemv())
    };
    let d = |f: fn(&mut DecompressShape)| {
        let mut s = decompress(1);
        f(&mut s);
        gemv_arg(s.gemv())
    };
    assert_eq!(a(|s| s.t = 0), "t");
    assert_eq!(a(|s| s.t = 9), "t");
    assert_eq!(a(|s| s.nh = 0), "nh");
    assert_eq!(a(|s| s.d_nope = 0), "d_nope");
    assert_eq!(a(|s| s.d_nope = 254), "d_nope");
    assert_eq!(a(|s| s.kv_rank = 0), "kv_rank");
    assert_eq!(a(|s| s.nh = 1 << 20), "w_kb");
    assert_eq!(a(|s| s.kv_rank = 1 << 31), "kv_rank");
    assert_eq!(
        a(|s| {
            s.t = 8;
            s.d_nope = 8192;
            s.kv_rank = 1;
            s.nh = 1;
        }),
        "d_nope",
        "8 x 8192 floats of shared memory"
    );
    assert_eq!(d(|s| s.d_v = 0), "d_v");
    assert_eq!(d(|s| s.kv_rank = 510), "kv_rank");
    assert_eq!(d(|s| s.nh = 1 << 20), "w_vb");
    // 8 x 2^20 x 512 float4s of o_lat: past the .cu's `int` index, within 227 KiB of staging.
    assert_eq!(
        d(|s| {
            s.t = 8;
            s.nh = 1 << 20;
            s.d_v = 1;
            s.kv_rank = 2048;
        }),
        "o_lat"
    );
    assert_eq!(
        d(|s| {
            s.t = 8;
            s.nh = 1 << 19;
            s.d_v = 513;
            s.kv_rank = 4;
        }),
        "out"
    );
}

#[test]
fn short_gemv_buffers_are_named() {
    let g = absorb(2).gemv();
    let [x, w, y] = g.lens();
    check_gemv_buffers(ABSORB, &g, [x, w, y]).unwrap();
    for (at, name) in ["q_nope", "w_kb", "q_lat"].into_iter().enumerate() {
        let mut have = [x, w, y];
        have[at] -= 1;
        assert_eq!(check_gemv_buffers(ABSORB, &g, have).unwrap_err().arg, name);
    }
    let g = decompress(1).gemv();
    let mut have = g.lens();
    have[2] = 0;
    assert_eq!(check_gemv_buffers(ABSORB, &g, have).unwrap_err().arg, "out");
}

#[test]
fn slot_indices_are_checked_against_the_pool() {
    let idx: Vec<i32> = (0..2 * 7).map(|i| i * 3 % 20).collect();
    check_slot_indices(&idx, 2, 7, 20).unwrap();
    check_slot_indices(&[0], 1, 1, 1).unwrap();
    assert_eq!(check_slot_indices(&[], 0, 7, 20).unwrap_err().arg, "t");
    assert_eq!(
        check_slot_indices(&[], 2, 0, 20).unwrap_err().arg,
        "n_slots"
    );
    assert_eq!(check_slot_indices(&idx, 2, 7, 0).unwrap_err().arg, "pool");
    let huge = i32::MAX as usize + 1;
    assert_eq!(
        check_slot_indices(&idx, 2, 7, huge).unwrap_err().arg,
        "pool"
    );
    let err = check_slot_indices(&idx[1..], 2, 7, 20).unwrap_err();
    assert_eq!(err.arg, "idx");
    assert!(err.why.contains("holds 13 indices"), "{err}");

    let mut bad = idx.clone();
    bad[9] = 20;
    let err = check_slot_indices(&bad, 2, 7, 20).unwrap_err();
    assert_eq!(err.arg, "idx");
    assert_eq!(
        err.to_string(),
        "mla_attn_gathered: argument `idx`: idx[1][2] = 20 is outside the pool of 20 rows"
    );
    bad[9] = -1;
    let err = check_slot_indices(&bad, 2, 7, 20).unwrap_err();
    assert!(err.why.contains("= -1 is outside"), "{err}");
}

#[test]
fn attn_geometry_is_a_block_per_token_and_share_of_a_head_group() {
    for t in [1, 2, 3, 4, 8] {
        for split in Split::ALL {
            for d_rope in [0, 64] {
                let sizes = (t, 2048, 32768);
                let (cfg, n) = attn_config(ATTN, &attn_shape(d_rope), sizes, 0.04, split).unwrap();
                assert_eq!(cfg.grid_dim, (t as u32 * 8 * split.factor(), 1, 1));
                assert_eq!(cfg.block_dim, (attn::BLOCK, 1, 1));
                // 4 KiB of work space a head, a score a head and a row a slot, 2 floats a warp
                // and a reciprocal a head.
                let h = 8 / split.factor() as u64;
                assert_eq!(
                    u64::from(cfg.shared_mem_bytes),
                    4096 * h + 2048 * (4 * h + 4) + 2 * 8 * 4 * h + 4 * h
                );
                assert_eq!(
                    n,
                    AttnInts {
                        nh: 64,
                        kv_rank: 512,
                        d_rope: d_rope as i32,
                        t: t as i32,
                        n_slots: 2048,
                        pool: 32768,
                    }
                );
            }
        }
    }
    // A head group past nh is a partial group; one slot still needs a head's whole work space.
    let shape = AttnShape {
        nh: 9,
        kv_rank: 16,
        d_rope: 0,
    };
    let (cfg, _) = attn_config(ATTN, &shape, (3, 1, 1), 1.0, Split::S8).unwrap();
    assert_eq!(cfg.grid_dim, (3 * 2 * 8, 1, 1));
    assert_eq!(cfg.shared_mem_bytes, 4096 + 8 + 2 * 8 * 4 + 4);
    assert_eq!(
        attn_shape(64).lens(2, 100),
        [2 * 64 * 512, 2 * 64 * 64, 100 * 576, 2 * 64 * 512]
    );
}

#[test]
fn attn_refusals_name_the_argument() {
    let ok = (1, 2048, 4096);
    let with = |f: fn(&mut AttnShape)| {
        let mut s = attn_shape(0);
        f(&mut s);
        s
    };
    assert_eq!(attn_arg(with(|s| s.nh = 0), ok, 1.0), "nh");
    assert_eq!(attn_arg(with(|s| s.kv_rank = 0), ok, 1.0), "kv_rank");
    assert_eq!(attn_arg(with(|s| s.kv_rank = 510), ok, 1.0), "kv_rank");
    assert_eq!(attn_arg(with(|s| s.d_rope = 63), ok, 1.0), "d_rope");
    assert_eq!(attn_arg(attn_shape(0), (0, 2048, 4096), 1.0), "t");
    assert_eq!(attn_arg(attn_shape(0), (1, 0, 4096), 1.0), "n_slots");
    assert_eq!(attn_arg(attn_shape(0), (1, 2048, 0), 1.0), "pool");
    assert_eq!(attn_arg(attn_shape(0), ok, f32::NAN), "scale");
    assert_eq!(attn_arg(attn_shape(0), ok, f32::INFINITY), "scale");
    assert_eq!(attn_arg(attn_shape(0), (1, 6300, 4096), 1.0), "n_slots");
    // A pool past i32::MAX floats (2^22 rows of 576) is the kernels' to address in 64 bits.
    attn_config(ATTN, &attn_shape(64), (1, 2048, 1 << 22), 1.0, Split::S1).unwrap();
    // 2^18 tokens of 64 heads: 2^33 floats of q_lat, the last block's queries from float4
    // (2^24 - 8) x 128 = 2^31 - 1024, within `i32`; one more token is past it.
    attn_config(ATTN, &attn_shape(0), (1 << 18, 1, 1), 1.0, Split::S1).unwrap();
    assert_eq!(attn_arg(attn_shape(0), ((1 << 18) + 1, 1, 1), 1.0), "q_lat");
    assert_eq!(
        attn_arg(attn_shape(0), (1 << 15, 1 << 16, 1), 1.0),
        "n_slots"
    );
    // Rows whose staged queries pass u32 bytes (the layout counts them in 32 bits, as the
    // kernels do) are refused, not taken for the small size a wrapped count gives.
    for (kv_rank, split) in [(1 << 27, Split::S1), (1 << 30, Split::S8)] {
        let huge = AttnShape {
            nh: 1,
            kv_rank,
            d_rope: 0,
        };
        assert_eq!(attn_arg(huge, (1, 1, 1), 1.0), "kv_rank");
        let err = attn_config(ATTN, &huge, (1, 1, 1), 1.0, split).unwrap_err();
        assert_eq!(err.arg, "kv_rank", "split {split}");
        let bytes = attn::shared_bytes(1, kv_rank as u32, 0, split.factor());
        assert!(bytes > MAX_DYNAMIC_SHARED, "split {split}: {bytes}");
    }
    // The largest n_slots the shared memory takes is accepted.
    let most = (MAX_DYNAMIC_SHARED as usize - 32768 - 2 * 8 * 32 - 32) / 36;
    attn_config(ATTN, &attn_shape(0), (1, most, 1), 1.0, Split::S1).unwrap();
    assert_eq!(attn_arg(attn_shape(0), (1, most + 1, 1), 1.0), "n_slots");
}

#[test]
fn short_attn_buffers_are_named() {
    let shape = attn_shape(64);
    let lens = shape.lens(2, 300);
    check_attn_buffers(ATTN, &shape, 2, 300, lens).unwrap();
    for (at, name) in ["q_lat", "q_pe", "cache", "out"].into_iter().enumerate() {
        let mut have = lens;
        have[at] -= 1;
        let err = check_attn_buffers(ATTN, &shape, 2, 300, have).unwrap_err();
        assert_eq!(err.arg, name);
    }
    // Without a rope part, q_pe is never read and may be empty.
    let shape = attn_shape(0);
    let mut have = shape.lens(2, 300);
    have[1] = 0;
    check_attn_buffers(ATTN, &shape, 2, 300, have).unwrap();
}

#[test]
fn split_parts_cover_every_output_once_in_order() {
    for n in 0..300 {
        for split in Split::ALL {
            let s = split.factor();
            let mut next = 0;
            for part in 0..s {
                let (begin, end) = split_range(n, s, part);
                assert_eq!(begin, next.min(n), "n {n} split {s} part {part}");
                assert!(end >= begin && end - begin <= n.div_ceil(s));
                next = end;
            }
            assert_eq!(next, n, "n {n} split {s}");
        }
    }
}

#[test]
fn staged_queries_fill_their_region_once() {
    for split in Split::ALL {
        let heads = attn::heads_per_block(split.factor());
        for d4 in [1u32, 7, 8, 9, 128, 144] {
            let staged = d4.next_multiple_of(attn::ROW_LANES);
            let mut seen = vec![false; (staged * heads) as usize];
            for c in 0..staged {
                for h in 0..heads {
                    let at = (attn::query_offset(c, h, heads) / 16) as usize;
                    assert!(!seen[at], "d4 {d4} heads {heads}: chunk {c} head {h} twice");
                    seen[at] = true;
                }
            }
            assert!(seen.iter().all(|&s| s));
            assert!(attn::layout(1, d4, heads).scores >= u64::from(staged * heads * 16));
        }
    }
}
