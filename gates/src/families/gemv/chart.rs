//! The gemv chart: a panel per shape, the timed m along x, every arm side by side at each
//! m (the four formats in the Rust build with the .cu build as a tick, then the peers), and the
//! shape's read stream of its e4m3 bytes across the panel: below a few tens of MB a pure read
//! of that size, launch and ramp included, is the bound that matters, not the 2 GiB ceiling.

use super::*;
use crate::harness::chart::bars::{self, BarSpec};
use crate::harness::chart::figure::{palette, Figure};
use crate::harness::chart::rows::{Metric, Run, Timing};
use crate::harness::chart::svg::Color;

/// Each format's colour: the Q8_0 pair in blues, the e4m3 pair in oranges, darker for the
/// format the other repacks or extends.
const FORMAT_COLORS: [Color; 4] = [
    Color(0x1F, 0x5F, 0xA8),
    Color(0x7F, 0xB4, 0xE3),
    Color(0xC8, 0x52, 0x00),
    Color(0xF5, 0xA6, 0x5B),
];

/// Formats by their label; the peers (`cublas ...`) in greys, the bf16 GEMM darker; anything
/// else from the shared palette.
fn color(i: usize, arm: &str) -> Color {
    match FORMATS.iter().position(|&f| format_label(f) == arm) {
        Some(f) => FORMAT_COLORS[f],
        None if arm.starts_with("cublaslt") => Color(0xB8, 0xB8, 0xB8),
        None if arm.starts_with("cublas") => Color(0x5A, 0x5A, 0x5A),
        None => palette(i),
    }
}

pub(super) fn figure(run: &Run) -> Figure {
    let rows = run.uniform();
    let spec = BarSpec {
        metric: Metric::Gbps,
        category: &|t: &Timing| Some(format!("m={}", t.m.unwrap_or(1))),
        series: &|t: &Timing| Some(t.arm_base().to_string()),
        color: &color,
        y_title: "GB/s",
        x_title: "activation rows m",
        stream_key: "read stream of the shape's e4m3 bytes, same rounds",
    };
    let (mut panels, legend) = bars::panels(&rows, &spec);
    for p in &mut panels {
        p.note = bars::shape_stream(&rows, &p.title).and_then(|s| {
            let size = s.stream_size()?;
            let (gbps, us) = (s.main(Metric::Gbps)?, s.main(Metric::Us)?);
            Some(format!(
                "dashed: a read of {size}, {gbps:.0} GB/s ({us:.2} us)"
            ))
        });
    }
    Figure::grid(
        format!(
            "{} on {}: GB/s of every arm at each m, per shape",
            run.gate, run.device
        ),
        vec![
            bars::ceiling_note(
                run,
                "Uniform inputs. GB/s: the bytes each call must move (weights once, activation, \
                 output) over its median time; higher is faster",
            ),
            "Formats: Rust build (bars), .cu build (ticks). Peers as the library runs them: \
             cuBLAS bf16 moves its weights in bf16, twice the e4m3 bytes."
                .into(),
        ],
        legend,
        panels,
        (440.0, 260.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::chart::draw;
    use crate::harness::chart::figure::Look;
    use crate::harness::chart::layout::{layout, problems};
    use serde_json::json;

    const PEERS: [&str; 2] = ["cublas bf16 gemm", "cublaslt e4m3 gemm"];

    /// The rows of a run timing every m on two shapes, the formats in both builds and the
    /// peers, with each shape's read stream: as `Arm::label` and `Label::fields` write them.
    fn every_m() -> Run {
        let mut rows =
            vec![json!({"gate": "gemv-e4m3", "kind": "run", "device": "GPU", "sm_count": 132})];
        for (s, shape) in ["q_proj 5120->12288", "k/v_proj 5120->1024"]
            .iter()
            .enumerate()
        {
            let timing = |arm: Arm, us: f64, cu: Option<f64>| {
                let mut row = json!({
                    "gate": "gemv-e4m3", "kind": "timing", "case": shape, "class": "uniform",
                    "arm": arm.label(), "bytes_per_call": 1_000_000,
                });
                row.as_object_mut().unwrap().extend(arm.fields());
                let side = if cu.is_some() { "rust" } else { "peer" };
                row[format!("{side}_us")] = json!(us);
                row[format!("{side}_gbps")] = json!(1e6 / us / 1e3);
                if let Some(cu) = cu {
                    row["cu_us"] = json!(cu);
                    row["cu_gbps"] = json!(1e6 / cu / 1e3);
                }
                row
            };
            for (i, &f) in FORMATS.iter().enumerate() {
                for m in BATCHES {
                    let us = (1 + s + i) as f64 * m as f64;
                    rows.push(timing(Arm::Gemv(f, m), us, Some(us * 1.1)));
                }
            }
            for m in BATCHES {
                rows.push(timing(Arm::Bf16(m), 20.0 + m as f64, None));
                rows.push(timing(Arm::Fp8(m), 10.0 + m as f64, None));
            }
            rows.push(json!({
                "gate": "gemv-e4m3", "kind": "timing", "case": shape, "class": "uniform",
                "arm": "read stream, 63.0 MB", "rust_us": 0.5, "rust_gbps": 2000.0 + s as f64,
            }));
        }
        Run::from_rows(rows).unwrap()
    }

    #[test]
    fn each_shape_has_every_arm_at_every_m_against_its_read_stream() {
        let run = every_m();
        let fig = figure(&run);
        let arms: Vec<String> = FORMATS
            .iter()
            .map(|&f| format_label(f).to_string())
            .chain(PEERS.map(String::from))
            .collect();
        assert_eq!(fig.panels().count(), 2);
        for (s, p) in fig.panels().enumerate() {
            let every_m: Vec<String> = BATCHES.iter().map(|m| format!("m={m}")).collect();
            assert_eq!(p.categories, every_m, "{}", p.title);
            assert_eq!(p.series_names().collect::<Vec<_>>(), arms, "{}", p.title);
            for b in &p.bars {
                assert!(
                    b.values.iter().all(Option::is_some),
                    "{}: {}",
                    p.title,
                    b.name
                );
                let is_peer = PEERS.contains(&b.name.as_str());
                assert_eq!(b.ticks.iter().all(Option::is_some), !is_peer, "{}", b.name);
            }
            let [rule] = p.rules.as_slice() else {
                panic!("{}: {:?}", p.title, p.rules)
            };
            assert_eq!((rule.value, rule.span), (2000.0 + s as f64, None));
            assert!(
                p.note.as_deref().is_some_and(|n| n.contains("63.0 MB")),
                "{:?}",
                p.note
            );
        }
        let keys: Vec<&str> = fig.legend.iter().map(|k| k.label.as_str()).collect();
        for arm in &arms {
            assert!(keys.contains(&arm.as_str()), "{arm} not in {keys:?}");
        }
        assert!(fig.legend.iter().any(|k| k.look == Look::Tick));
        assert!(fig.legend.iter().any(|k| matches!(k.look, Look::Rule(_))));
        assert_eq!(problems(&fig, &layout(&fig)), Vec::<String>::new());
        assert!(draw::svg(&fig).contains("cublaslt e4m3 gemm"));
    }

    #[test]
    fn formats_and_peers_keep_their_colours() {
        assert_eq!(color(7, "e4m3"), FORMAT_COLORS[2]);
        assert_ne!(color(4, "cublas bf16 gemm"), color(5, "cublaslt e4m3 gemm"));
        // A peer of a run before every m was timed is still a peer.
        assert_eq!(color(4, "cublas bf16 gemv"), color(4, "cublas bf16 gemm"));
    }
}
