//! The decode-step chart: a panel per layer, m along x, each step arm's time side by side (the
//! Rust build as bars, the .cu build as ticks; the peers' GEMM chains on the e4m3 panel), and
//! a read stream of the step's bytes over each m: how far a chain of launches is from one pure
//! read of everything it moves.

use crate::harness::chart::bars::{self, BarSpec};
use crate::harness::chart::figure::{palette, Figure};
use crate::harness::chart::rows::{Metric, Run, Timing};
use crate::harness::chart::svg::Color;

/// A case label's layer and `m=N` (`e4m3 m=1`).
fn layer_and_m(t: &Timing) -> Option<(&str, &str)> {
    let (layer, m) = t.shape_label().split_once(" m=")?;
    Some((layer, m.split(' ').next()?))
}

/// The steps in blues, oranges and greens (plain, merged, glu; programmatic lighter), the peers
/// in greys.
fn color(i: usize, arm: &str) -> Color {
    match arm {
        "step" => Color(0x1F, 0x5F, 0xA8),
        "step pdl" => Color(0x7F, 0xB4, 0xE3),
        "step merged" => Color(0xC8, 0x52, 0x00),
        "step merged pdl" => Color(0xF5, 0xA6, 0x5B),
        "step merged pdl gemvs" => Color(0xE0, 0x7B, 0x39),
        "step merged pdl small" => Color(0xFA, 0xC8, 0x96),
        "step glu" => Color(0x2E, 0x7D, 0x32),
        "step glu pdl" => Color(0x8B, 0xC3, 0x4A),
        a if a.starts_with("cublaslt") => Color(0xB8, 0xB8, 0xB8),
        a if a.starts_with("cublas") => Color(0x5A, 0x5A, 0x5A),
        _ => palette(i),
    }
}

pub(super) fn figure(run: &Run) -> Figure {
    let rows = run.uniform();
    // Each kernel alone is in the tables, not here: its label is indented.
    let step = |t: &Timing| (!t.arm.starts_with(' ')).then(|| t.arm.clone());
    let spec = BarSpec {
        metric: Metric::Us,
        category: &|t: &Timing| Some(format!("m={}", layer_and_m(t)?.1)),
        series: &step,
        color: &color,
        y_title: "us per step",
        x_title: "activation rows m (tokens)",
        stream_key: "read stream of the step's bytes, same rounds",
    };
    let (panels, legend) = bars::panels_by(&rows, &spec, &|t| {
        layer_and_m(t).map_or_else(|| t.shape_label().to_string(), |(l, _)| l.to_string())
    });
    Figure::grid(
        format!(
            "{} on {}: one layer's step, DRAM-cold, per layer and m",
            run.gate, run.device
        ),
        vec![
            bars::ceiling_note(
                run,
                "Uniform inputs. Each step is one CUDA graph, its median time after an L2 \
                 scrub; lower is faster",
            ),
            "Steps: Rust build (bars), .cu build (ticks). Peers (e4m3 panel): the layer's seven \
             GEMMs alone through cuBLAS bf16 and cuBLASLt FP8."
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
    use crate::harness::chart::layout::{layout, problems};
    use serde_json::json;

    /// Two layers at two m, the steps in both builds, a kernel alone, the peers on e4m3, and
    /// each case's read stream: as the gate writes them.
    fn run() -> Run {
        let mut rows =
            vec![json!({"gate": "decode-step", "kind": "run", "device": "GPU", "sm_count": 132})];
        for layer in ["q8_0", "e4m3"] {
            for m in [1, 4] {
                let case = format!("{layer} m={m}");
                let row = |arm: &str, side: &str, us: f64| {
                    let mut r = json!({"gate": "decode-step", "kind": "timing", "case": case,
                        "class": "uniform", "arm": arm});
                    r[format!("{side}_us")] = json!(us);
                    r
                };
                for arm in [
                    "step",
                    "step pdl",
                    "step merged",
                    "step merged pdl",
                    "  q gemv",
                ] {
                    let mut r = row(arm, "rust", 100.0 + m as f64);
                    r["cu_us"] = json!(101.0);
                    rows.push(r);
                }
                if layer == "e4m3" {
                    rows.push(row("cublas bf16 gemms", "peer", 200.0));
                    rows.push(row("cublaslt fp8 gemms", "peer", 120.0));
                }
                rows.push(row("read stream, 373.0 MB", "rust", 85.0 + m as f64));
            }
        }
        Run::from_rows(rows).unwrap()
    }

    #[test]
    fn a_panel_per_layer_with_its_steps_at_each_m_over_the_read_stream() {
        let fig = figure(&run());
        let titles: Vec<&str> = fig.panels().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["q8_0", "e4m3"]);
        for p in fig.panels() {
            assert_eq!(p.categories, ["m=1", "m=4"], "{}", p.title);
            let names: Vec<&str> = p.series_names().collect();
            assert!(!names.iter().any(|n| n.contains("q gemv")), "{names:?}");
            let step = &p.bars[0];
            assert_eq!(step.values, [Some(101.0), Some(104.0)], "{}", p.title);
            assert_eq!(step.ticks, [Some(101.0), Some(101.0)]);
            let streams: Vec<f64> = p.rules.iter().map(|r| r.value).collect();
            assert_eq!(streams, [86.0, 89.0], "{}", p.title);
        }
        let e4m3 = fig.panels().nth(1).unwrap();
        let peer = e4m3
            .bars
            .iter()
            .find(|b| b.name == "cublaslt fp8 gemms")
            .unwrap();
        assert_eq!(peer.values, [Some(120.0), Some(120.0)]);
        assert_eq!(problems(&fig, &layout(&fig)), Vec::<String>::new());
    }
}
