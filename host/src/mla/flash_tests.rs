//! attn_flash's launch geometry, refusals, entry choice and workspace, without a GPU.

use super::*;
use kernels_gpu::mla::flash::AttnFlash;

fn attn_shape(d_rope: usize) -> AttnShape {
    AttnShape {
        nh: 64,
        kv_rank: 512,
        d_rope,
    }
}

fn flash_arg(shape: AttnShape, sizes: (usize, usize, usize), scale: f32, h: FlashHeads) -> String {
    let err = flash_config(&shape, sizes, scale, h).unwrap_err();
    format!("{}: {}", err.arg, err.why)
}

#[test]
fn flash_geometry_is_a_block_per_token_chunk_and_head_group() {
    use kernels_gpu::mla::flash;
    for (t, nh, n_slots, heads, blocks) in [
        (1, 64, 2048, FlashHeads::H16, 32 * 4),
        (8, 64, 2048, FlashHeads::H32, 8 * 32 * 2),
        (3, 20, 65, FlashHeads::H16, 3 * 2 * 2),
        (1, 128, 1, FlashHeads::H32, 4),
    ] {
        let shape = AttnShape {
            nh,
            kv_rank: 512,
            d_rope: 64,
        };
        let (main, combine, ints) = flash_config(&shape, (t, n_slots, 4096), 0.1, heads).unwrap();
        assert_eq!(
            main.grid_dim.0, blocks,
            "t {t} nh {nh} n_slots {n_slots} {heads:?}"
        );
        assert_eq!(main.block_dim.0, flash::BLOCK);
        let per_head = 512 / 4 / flash::COMBINE_COLUMNS as usize;
        assert_eq!(combine.grid_dim.0 as usize, t * nh * per_head);
        assert_eq!(combine.block_dim.0, flash::COMBINE_BLOCK);
        assert!(main.shared_mem_bytes <= 227 * 1024);
        assert_eq!(
            (ints.t, ints.n_slots, ints.pool),
            (t as i32, n_slots as i32, 4096)
        );
    }
}

#[test]
fn flash_rows_past_shared_memory_are_refused_before_launch() {
    use kernels_gpu::mla::flash;
    let fits = |kv_rank: usize, d_rope: usize, h: FlashHeads| {
        let shape = AttnShape {
            nh: 64,
            kv_rank,
            d_rope,
        };
        flash_config(&shape, (1, 2048, 4096), 0.1, h).is_ok()
    };
    assert!(fits(flash::MAX_ROW as usize - 64, 64, FlashHeads::H16));
    assert!(!fits(flash::MAX_ROW as usize - 60, 64, FlashHeads::H16));
    assert!(
        fits(512, 64, FlashHeads::H32),
        "V3.2's rows take 32 heads a block"
    );
    assert!(!fits(512, 68, FlashHeads::H32));
    let long = AttnShape {
        nh: 64,
        kv_rank: 1024,
        d_rope: 0,
    };
    let why = flash_arg(long, (1, 2048, 4096), 0.1, FlashHeads::H16);
    assert!(
        why.starts_with("kv_rank: kv_rank + d_rope = 1024 is too long"),
        "{why}"
    );
    let roped = AttnShape { d_rope: 64, ..long };
    let why = flash_arg(roped, (1, 2048, 4096), 0.1, FlashHeads::H16);
    assert!(
        why.starts_with("d_rope: kv_rank + d_rope = 1088 is too long"),
        "{why}"
    );
    // Rows whose layout would pass u32 (the layout counts in 32 bits, as the kernels do) are
    // refused by the row bound, not taken for the small size a wrapped count gives.
    for kv_rank in [13_421_776, (1 << 31) - 4] {
        let huge = AttnShape {
            nh: 1,
            kv_rank,
            d_rope: 0,
        };
        for h in FlashHeads::ALL {
            assert_eq!(flash::shared_bytes(kv_rank as u32, 0, h.tiles()), None);
            assert_eq!(
                flash_arg(huge, (1, 1, 1), 0.1, h).split(':').next(),
                Some("kv_rank")
            );
        }
        assert_eq!(pick_heads(&huge, 8, 2048, 132), FlashHeads::H16);
    }
}

#[test]
fn flash_refusals_name_the_argument() {
    let ok = attn_shape(64);
    let h = FlashHeads::H16;
    for (shape, sizes, scale, arg) in [
        (AttnShape { nh: 0, ..ok }, (1, 2048, 4096), 0.1, "nh"),
        (
            AttnShape { kv_rank: 0, ..ok },
            (1, 2048, 4096),
            0.1,
            "kv_rank",
        ),
        (
            AttnShape { kv_rank: 510, ..ok },
            (1, 2048, 4096),
            0.1,
            "kv_rank",
        ),
        (
            AttnShape { d_rope: 6, ..ok },
            (1, 2048, 4096),
            0.1,
            "d_rope",
        ),
        (ok, (0, 2048, 4096), 0.1, "t"),
        (ok, (1, 0, 4096), 0.1, "n_slots"),
        (ok, (1, 2048, 0), 0.1, "pool"),
        (ok, (1, 2048, 4096), f32::NAN, "scale"),
        (ok, (1, 2048, 4096), f32::INFINITY, "scale"),
        (
            AttnShape {
                nh: (1 << 31) - 15,
                ..ok
            },
            (1, 1, 1),
            0.1,
            "nh",
        ),
        (ok, (1, (1 << 31) - 63, 1), 0.1, "n_slots"),
        // The combine's grid, t * nh * ceil(kv_rank / 256) = 2^32 blocks: the heads named.
        (AttnShape { nh: 1 << 16, ..ok }, (1 << 15, 1, 1), 0.1, "nh"),
        (ok, (1, 1 << 31, 4096), 0.1, "n_slots"),
    ] {
        let why = flash_arg(shape, sizes, scale, h);
        assert!(why.starts_with(&format!("{arg}:")), "{arg}: {why}");
    }
}

#[test]
fn flash_picks_32_heads_only_where_they_fit_and_fill_the_gpu() {
    let seed = AttnShape {
        nh: 64,
        kv_rank: 512,
        d_rope: 0,
    };
    let v32 = AttnShape {
        nh: 128,
        kv_rank: 512,
        d_rope: 64,
    };
    assert_eq!(pick_heads(&seed, 1, 2048, 132), FlashHeads::H16);
    assert_eq!(pick_heads(&seed, 2, 2048, 132), FlashHeads::H32);
    assert_eq!(pick_heads(&seed, 4, 2048, 132), FlashHeads::H64);
    assert_eq!(pick_heads(&v32, 1, 2048, 132), FlashHeads::H32);
    assert_eq!(pick_heads(&v32, 8, 2048, 132), FlashHeads::H64);
    let long = AttnShape { d_rope: 128, ..v32 };
    assert_eq!(pick_heads(&long, 8, 2048, 132), FlashHeads::H16);
    assert_eq!(
        AttnFlash::entry(FlashHeads::H16).name,
        "mla_attn_gathered_flash"
    );
    assert_eq!(
        AttnFlash::entry(FlashHeads::H32).name,
        "mla_attn_gathered_flash_h32"
    );
}

#[test]
fn the_flash_workspace_holds_every_chunk_of_every_head() {
    let shape = attn_shape(64);
    assert_eq!(
        workspace_lens(&shape, 8, 2048).unwrap(),
        (8 * 32 * 64 * 512, 8 * 32 * 64 * 2)
    );
    assert_eq!(
        workspace_lens(&shape, 1, 65).unwrap(),
        (2 * 64 * 512, 2 * 64 * 2)
    );
    assert_eq!(
        workspace_lens(&shape, 1, 1 << 33).unwrap_err().arg,
        "n_slots"
    );
    assert_eq!(workspace_lens(&shape, 1 << 32, 1).unwrap_err().arg, "t");
    let wide = AttnShape {
        nh: 1 << 32,
        ..shape
    };
    assert_eq!(workspace_lens(&wide, 1, 1).unwrap_err().arg, "nh");
}

/// Sizes each within `i32` whose flash grid or workspace passes 64 bits are refused, not taken
/// for what a wrapped product would give: at `2^30` tokens, heads and slots the flash grid is
/// `2^80` blocks at 16 heads a block and the workspace `2^93` floats (`flash::grid` and
/// `flash::workspace` are `None` there).
#[test]
fn flash_sizes_past_64_bits_are_refused_not_wrapped() {
    let big = 1usize << 30;
    let shape = AttnShape {
        nh: big,
        kv_rank: 512,
        d_rope: 0,
    };
    let err = workspace_lens(&shape, big, big).unwrap_err();
    assert_eq!(err.arg, "n_slots", "{err}");
    let most = u32::MAX as usize;
    let widest = AttnShape {
        nh: most,
        kv_rank: most,
        d_rope: 0,
    };
    assert_eq!(
        workspace_lens(&widest, most, most).unwrap_err().arg,
        "n_slots"
    );
    for h in FlashHeads::ALL {
        // The flash grid is refused by its own check (naming n_slots), not let through as 0
        // blocks and caught only by the combine's.
        let why = flash_arg(shape, (big, big, 1), 1.0, h);
        assert_eq!(
            why, "n_slots: more than 2^64 flash blocks exceed the grid",
            "{h:?}"
        );
    }
    // Such a grid fills any GPU: the most heads a block whose rows fit, as for any large grid.
    assert_eq!(pick_heads(&shape, big, big, 132), FlashHeads::H64);
    assert_eq!(pick_heads(&shape, most, most, 132), FlashHeads::H64);
}

#[test]
fn the_hopper_entries_take_a_block_per_token_pair_of_chunks_and_head_group() {
    use kernels_gpu::mla::flash::wgmma;
    for (t, nh, d_rope, n_slots, heads, blocks) in [
        (1, 64, 0, 2048, 16, 16 * 4),
        (8, 64, 0, 2048, 64, 8 * 16),
        (2, 128, 64, 129, 32, 2 * 2 * 4),
        (3, 16, 64, 1, 16, 3),
    ] {
        let shape = AttnShape {
            nh,
            kv_rank: 512,
            d_rope,
        };
        let cfg = wgmma_config(&shape, (t, n_slots, 4096), 0.1, heads).unwrap();
        let at = format!("t {t} nh {nh} d_rope {d_rope} n_slots {n_slots} heads {heads}");
        assert_eq!(cfg.main.grid_dim.0, blocks, "{at}");
        assert_eq!(cfg.main.block_dim.0, wgmma::BLOCK, "{at}");
        assert_eq!(
            cfg.main.shared_mem_bytes,
            wgmma::shared_bytes(heads),
            "{at}"
        );
        assert!(cfg.main.shared_mem_bytes <= 227 * 1024, "{at}");
        assert_eq!(cfg.entry.heads(), heads, "{at}");
        assert_eq!(cfg.entry.row() as usize, 512 + d_rope, "{at}");
        assert_eq!(cfg.split_len, 2 * t * nh * (512 + d_rope), "{at}");
        let split = (t * nh * (512 + d_rope) / 4).div_ceil(256);
        assert_eq!(cfg.queries.grid_dim.0 as usize, split, "{at}");
        let flash = flash_config(&shape, (t, n_slots, 4096), 0.1, FlashHeads::H16).unwrap();
        assert_eq!(
            cfg.combine.grid_dim, flash.1.grid_dim,
            "{at}: attn_flash's combine"
        );
    }
    // The ABI table's shared memory a block, and a pair for every two chunks.
    assert_eq!(
        WgmmaHeads::HEADS.map(wgmma::shared_bytes),
        [161_744, 183_632, 227_408]
    );
    for (n_slots, pairs) in [(1, 1), (64, 1), (65, 1), (128, 1), (129, 2), (2048, 16)] {
        assert_eq!(kernels_gpu::mla::flash::pairs(n_slots), pairs, "{n_slots}");
    }
}

#[test]
fn shapes_the_hopper_entries_do_not_take_are_refused_before_launch() {
    let arg = |kv_rank: usize, d_rope: usize, nh: usize, heads: u32| {
        let shape = AttnShape {
            nh,
            kv_rank,
            d_rope,
        };
        match wgmma_config(&shape, (1, 2048, 4096), 0.1, heads) {
            Ok(_) => "taken".to_string(),
            Err(e) => e.arg.to_string(),
        }
    };
    assert_eq!(arg(512, 0, 64, 16), "taken");
    assert_eq!(arg(512, 64, 128, 64), "taken");
    assert_eq!(arg(576, 0, 64, 16), "kv_rank");
    assert_eq!(arg(256, 64, 64, 16), "kv_rank");
    assert_eq!(arg(512, 32, 64, 16), "d_rope");
    assert_eq!(arg(512, 0, 64, 8), "heads");
    assert_eq!(arg(512, 0, 48, 32), "nh");
    assert_eq!(arg(512, 0, 0, 16), "nh");
}

#[test]
fn attn_flash_takes_the_hopper_entry_on_sm_90a_from_256_head_rows_at_2048_slots() {
    let seed = attn_shape(0);
    let v32 = AttnShape {
        nh: 128,
        kv_rank: 512,
        d_rope: 64,
    };
    assert_eq!(pick_wgmma("sm_90a", &seed, 1, 2048), None);
    assert_eq!(pick_wgmma("sm_90a", &seed, 2, 2048), None);
    assert_eq!(pick_wgmma("sm_90a", &seed, 4, 2048), Some(32));
    assert_eq!(pick_wgmma("sm_90a", &seed, 8, 2048), Some(64));
    assert_eq!(pick_wgmma("sm_90a", &v32, 1, 2048), None);
    assert_eq!(pick_wgmma("sm_90a", &v32, 2, 2048), Some(32));
    assert_eq!(pick_wgmma("sm_90a", &v32, 4, 6000), Some(64));
    assert_eq!(pick_wgmma("sm_90", &seed, 8, 2048), None, "another module");
    assert_eq!(pick_wgmma("sm_90a", &seed, 8, 2047), None, "fewer slots");
    let odd = AttnShape { nh: 48, ..seed };
    assert_eq!(
        pick_wgmma("sm_90a", &odd, 8, 2048),
        Some(16),
        "the heads dividing nh"
    );
    let wide = AttnShape {
        kv_rank: 576,
        ..seed
    };
    assert_eq!(
        pick_wgmma("sm_90a", &wide, 8, 2048),
        None,
        "another geometry"
    );
}
