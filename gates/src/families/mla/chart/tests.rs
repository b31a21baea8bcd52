//! The chart's lines, notes and rings from made-up rows whose every time is known.

use super::measured::every_arm;
use super::*;
use crate::harness::chart::layout::{layout, problems};
use serde_json::json;

const KVS: [usize; 2] = [2048, 262_144];

/// A made-up time per arm, cell: distinct for every split and entry.
fn us(arm: Arm, t: usize, kv: usize) -> f64 {
    let base = match arm {
        Arm::Kernel(k, s) => 10.0 * (k as usize + 1) as f64 + s.factor() as f64,
        Arm::Flash(h) => 50.0 + h.tiles() as f64,
        Arm::Wgmma(h) => 40.0 + h as f64 / 16.0,
        Arm::Sgemm(_) => 30.0,
        Arm::Chain => 70.0,
        Arm::FlashByToken => 0.0,
    };
    base * t as f64 + (kv / 2048) as f64 / 1000.0
}

/// The split the made-up serving table takes: attn_gathered at t_q 8 changes with depth.
fn table(k: MlaKernel, t: usize, kv: usize) -> u32 {
    match (k, t, kv) {
        (MlaKernel::AttnGathered, 8, 2048) => 2,
        (MlaKernel::AttnGathered, 8, _) => 4,
        _ => 8,
    }
}

fn run() -> Run {
    run_on("sm_90")
}

/// The made-up run on a device running the module of `arch`.
fn run_on(arch: &str) -> Run {
    let mut rows =
        vec![json!({"gate": "mla", "kind": "run", "device": "GPU", "sm_count": 132, "arch": arch})];
    for kv in KVS {
        for t in [1, 8] {
            let c = Cell::seed(t, kv, 0);
            let row = |arm: String, side: &str, v: f64| {
                let mut r = json!({"gate": "mla", "kind": "timing", "case": c.to_string(),
                                   "shape": c, "class": "uniform", "arm": arm});
                r[format!("{side}_us")] = json!(v);
                r
            };
            for arm in every_arm() {
                let side = if matches!(arm, Arm::Sgemm(_) | Arm::Chain) {
                    "peer"
                } else {
                    "rust"
                };
                rows.push(row(arm.label(), side, us(arm, t, kv)));
            }
            rows.push(row("read stream, 33.6 MB".into(), "rust", 11.0));
            for k in MlaKernel::ALL {
                rows.push(
                    json!({"gate": "mla", "kind": "winner", "kernel": k.name(),
                                 "t_q": t, "kv": kv, "class": "uniform", "table": table(k, t, kv)}),
                );
            }
        }
    }
    Run::from_rows(rows).unwrap()
}

#[test]
fn lines_follow_the_served_split_and_the_launched_entry() {
    let run = run();
    let fig = figure(&run).unwrap();
    assert_eq!(problems(&fig, &layout(&fig)), Vec::<String>::new());
    let panels: Vec<&Panel> = fig.panels().collect();
    assert_eq!(panels.len(), 4 + 3 + KVS.len());
    let gathered = panels
        .iter()
        .find(|p| p.title == "attn_gathered, served split")
        .unwrap();
    assert_eq!(gathered.categories, ["2k", "256k"]);
    let k = MlaKernel::AttnGathered;
    let t8 = &gathered.lines[1];
    assert_eq!(t8.name, "t_q 8");
    assert_eq!(
        t8.values,
        [
            Some(us(Arm::Kernel(k, Split::S2), 8, 2048)),
            Some(us(Arm::Kernel(k, Split::S4), 8, 262_144))
        ]
    );
    assert_eq!(
        gathered.note.as_deref(),
        Some("split served at t_q 1 8: 8 2/4")
    );
    let flash = panels
        .iter()
        .find(|p| p.title.starts_with("attn_flash, "))
        .unwrap();
    let pick = |t| pick_heads(&Cell::seed(t, 2048, 0).attn(), t, 2048, 132);
    assert_eq!(
        flash.lines[0].values[0],
        Some(us(Arm::Flash(pick(1)), 1, 2048))
    );
    assert_eq!(
        flash.lines[1].values[0],
        Some(us(Arm::Flash(pick(8)), 8, 2048))
    );
    let names: Vec<&str> = flash.series_names().collect();
    assert_eq!(
        names,
        ["t_q 1", "t_q 8", "cuBLAS chain t_q 1", "cuBLAS chain t_q 8"]
    );
    assert_eq!(
        flash.lines[3].values,
        [
            Some(us(Arm::Chain, 8, 2048)),
            Some(us(Arm::Chain, 8, 262_144))
        ]
    );
}

#[test]
fn the_gemvs_carry_their_peer_and_read_stream_and_splits_are_ringed() {
    let fig = figure(&run()).unwrap();
    let absorb = fig
        .panels()
        .find(|p| p.title == "absorb_q, served split")
        .unwrap();
    let names: Vec<&str> = absorb.series_names().collect();
    assert_eq!(
        names,
        [
            "t_q 1",
            "t_q 8",
            "cuBLAS t_q 1",
            "cuBLAS t_q 8",
            "read stream"
        ]
    );
    let stream = absorb.lines.last().unwrap();
    assert_eq!(stream.values, [Some(11.0), Some(11.0)]);
    let at_2k = fig
        .panels()
        .find(|p| p.title == "attn_gathered by split, kv 2k")
        .unwrap();
    let k = MlaKernel::AttnGathered;
    // t_q 1 served at split 8 (the fourth choice), t_q 8 at split 2 (the second).
    assert_eq!(
        at_2k.rings,
        [
            (3, us(Arm::Kernel(k, Split::S8), 1, 2048)),
            (1, us(Arm::Kernel(k, Split::S2), 8, 2048))
        ]
    );
    let by_split = fig
        .panels()
        .find(|p| p.title == "absorb_q by split")
        .unwrap();
    assert_eq!(by_split.categories, ["1", "2", "4", "8"]);
    assert!(
        by_split.rings.iter().all(|r| r.0 == 3),
        "{:?}",
        by_split.rings
    );
    let legend: Vec<&str> = fig.legend.iter().map(|k| k.label.as_str()).collect();
    assert!(
        legend.iter().any(|l| l.starts_with("read stream, 33.6 MB")),
        "{legend:?}"
    );
    assert!(legend.iter().any(|l| l.starts_with("cuBLAS")), "{legend:?}");
}

/// On the sm_90a module the served line follows the Hopper entry where the launcher takes it
/// (t_q 8 of 64 heads: 512 head rows, 64 heads a block) and attn_flash's entry elsewhere.
#[test]
fn the_launched_line_follows_the_hopper_entry_on_sm_90a() {
    let fig = figure(&run_on("sm_90a")).unwrap();
    let flash = fig
        .panels()
        .find(|p| p.title.starts_with("attn_flash, "))
        .unwrap();
    let pick = pick_heads(&Cell::seed(1, 2048, 0).attn(), 1, 2048, 132);
    assert_eq!(
        flash.lines[0].values[0],
        Some(us(Arm::Flash(pick), 1, 2048))
    );
    assert_eq!(flash.lines[1].values[0], Some(us(Arm::Wgmma(64), 8, 2048)));
}
