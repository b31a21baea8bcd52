use super::oracle::attn_bound;
use super::tables::{measured_table, Winner};
use super::*;

#[test]
fn cells_parse_and_refuse_widths_beyond_the_table() {
    let c = parse_cell("4x32768", "seed", 0).unwrap();
    assert_eq!((c.t_q, c.kv, c.n_slots), (4, 32768, 2048));
    assert_eq!(parse_cell("1x100", "seed", 0).unwrap().n_slots, 100);
    assert!(parse_cell("9x2048", "seed", 0)
        .unwrap_err()
        .contains("1..=8"));
    assert!(parse_cell("0x2048", "seed", 0).is_err());
    assert!(parse_cell("1x0", "seed", 0).is_err());
    // A pool past i32::MAX floats is the launchers' to take (rows addressed in 64 bits); past
    // i32::MAX rows it is not.
    assert_eq!(parse_cell("1x9999999", "seed", 0).unwrap().kv, 9999999);
    assert_eq!(
        parse_cell("8x2147483647", "v3.2", 0).unwrap().kv,
        i32::MAX as usize
    );
    assert!(parse_cell("1x2147483648", "seed", 0)
        .unwrap_err()
        .starts_with("kv: 2147483648 exceeds i32::MAX"));
    // A rope too long for attn_gathered's shared memory is refused as its launcher refuses it:
    // its queries alone pass a block's, whatever the slots.
    assert!(parse_cell("1x4096", "seed", 20000)
        .unwrap_err()
        .starts_with("d_rope:"));
    // A rope that leaves room for the queries but not for 2048 slots' scores names the slots.
    assert!(parse_cell("1x4096", "seed", 6000)
        .unwrap_err()
        .starts_with("n_slots:"));
}

/// A uniform cell of `kernel` with the Rust times `us` of splits 1, 2, 4 and 8.
fn winner(kernel: &'static str, t_q: usize, kv: usize, us: [f64; 4]) -> Winner {
    Winner {
        kernel,
        t_q,
        kv,
        class: ValueClass::Uniform,
        us,
        best: 0,
        table: 0,
        table_over_best: 0.0,
        table_over_unsplit: 0.0,
        regression: false,
        rust_over_cu: [1.0; 4],
    }
}

#[test]
fn the_measured_table_takes_the_split_with_the_smallest_worst_ratio() {
    let w = |t_q, kv, us| winner("absorb_q", t_q, kv, us);
    let cells = [
        w(1, 2048, [10.0, 6.0, 5.0, 5.1]),
        w(1, 32768, [10.0, 6.0, 5.3, 5.0]),
        w(2, 2048, [4.0, 5.0, 6.0, 7.0]),
    ];
    let t = measured_table(&cells, ServingTable::DEFAULT);
    assert_eq!(t.split(MlaKernel::AbsorbQ, 1, 0), Some(Split::S8));
    assert_eq!(t.split(MlaKernel::AbsorbQ, 2, 0), Some(Split::S1));
    // Unmeasured widths follow the nearest measured one below.
    assert_eq!(t.split(MlaKernel::AbsorbQ, 3, 0), Some(Split::S1));
    assert_eq!(
        t.split(MlaKernel::AttnGathered, 1, 0),
        ServingTable::DEFAULT.split(MlaKernel::AttnGathered, 1, 0)
    );
    assert_eq!(t.deep(), None);
}

#[test]
fn a_deep_pool_row_is_written_where_one_row_cannot_hold_every_depth() {
    let w = |t_q, kv, us| winner("attn_gathered", t_q, kv, us);
    // Split 8 is fastest up to 128k rows and split 2 from 256k, by more than the margin.
    let cells = [
        w(3, 2048, [230.0, 160.0, 190.0, 132.0]),
        w(3, 131072, [240.0, 168.0, 220.0, 138.0]),
        w(3, 262144, [248.0, 168.0, 218.0, 194.0]),
        w(8, 2048, [217.0, 154.0, 205.0, 287.0]),
        w(8, 262144, [262.0, 179.0, 251.0, 415.0]),
    ];
    let t = measured_table(&cells, ServingTable::DEFAULT);
    let deep = t.deep().expect("a deep row");
    assert_eq!(deep.from_pool, 262144);
    assert_eq!(t.split(MlaKernel::AttnGathered, 3, 131072), Some(Split::S8));
    assert_eq!(t.split(MlaKernel::AttnGathered, 3, 262144), Some(Split::S2));
    assert_eq!(t.split(MlaKernel::AttnGathered, 8, 262144), Some(Split::S2));
    // The text form reads back to the same table.
    assert_eq!(ServingTable::parse(&t.to_string()), Ok(t));
    // Where one row holds every depth, none is written.
    let t = measured_table(&cells[3..], ServingTable::DEFAULT);
    assert_eq!(t.deep(), None);
}

#[test]
fn attention_bounds_grow_with_the_scores() {
    assert!(attn_bound(0.0) < attn_bound(100.0));
}

/// The Hopper arms follow the arch the runner names, not the device's: an sm_90 run on an H200
/// (`--arch sm_90`) lists none, where the launcher would refuse them, and an sm_90a run lists
/// those the launcher takes.
#[test]
fn the_hopper_arms_follow_the_runs_arch() {
    let c = parse_cell("8x2048", "seed", 0).unwrap();
    let hopper = |arch: &str| {
        let fam = crate::harness::gate::default_family::<Mla>().unwrap();
        fam.run_on(arch);
        fam.arms(c)
            .iter()
            .filter(|a| matches!(a.arm, Arm::Wgmma(_)))
            .count()
    };
    assert_eq!(hopper("sm_90"), 0);
    assert_eq!(hopper(WGMMA_ARCH), WgmmaHeads::HEADS.len());
}
