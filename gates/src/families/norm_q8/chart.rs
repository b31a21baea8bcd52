//! The norm-q8 chart: fused against chain, a panel per shape (each with its own scale, since
//! one row takes microseconds and 4096 rows tens of them), the value classes side by side,
//! fused/chain written above each class, and each class's read stream of the quantize arm's
//! bytes as the reference a call of that size can reach.

use super::*;
use crate::harness::chart::bars::{self, BarSpec};
use crate::harness::chart::figure::{Figure, Section};
use crate::harness::chart::rows::{Metric, Run, Timing};
use crate::harness::chart::svg::Color;

/// The arms charted, in their slots: the two ways to the same outputs.
const ARMS: [Arm; 2] = [Arm::Chain, Arm::Fused];

fn color(arm: &str) -> Color {
    if arm == Arm::Fused.label() {
        Color(0xD5, 0x5E, 0x00)
    } else {
        Color(0x99, 0x99, 0x99)
    }
}

pub(super) fn figure(run: &Run) -> Figure {
    let rows: Vec<&Timing> = run.timings.iter().collect();
    let names: Vec<String> = ARMS.iter().map(|a| a.label()).collect();
    let spec = BarSpec {
        metric: Metric::Us,
        category: &|t| Some(t.class.clone()),
        series: &|t| names.contains(&t.arm).then(|| t.arm.clone()),
        color: &|_, name| color(name),
        y_title: "us per call",
        x_title: "value class",
        stream_key: "read stream of the quantize_q8_1 arm's bytes, same rounds",
    };
    let (mut panels, legend) = bars::panels(&rows, &spec);
    for p in &mut panels {
        let ratios: Vec<(usize, String)> = (0..p.categories.len())
            .filter_map(|c| {
                let at = |arm: Arm| {
                    let bars = p.bars.iter().find(|b| b.name == arm.label())?;
                    bars.values.get(c).copied().flatten()
                };
                Some((c, format!("{:.2}", at(Arm::Fused)? / at(Arm::Chain)?)))
            })
            .collect();
        p.labels = ratios;
        let stream = bars::shape_stream(&rows, &p.title).and_then(Timing::stream_size);
        p.note = Some(match stream {
            Some(size) => {
                format!("above each class: fused/chain, Rust build; dashed: a read of {size}")
            }
            None => "above each class: fused/chain, Rust build".into(),
        });
    }
    Figure {
        title: format!(
            "{} on {}: fused against chain, per shape",
            run.gate, run.device
        ),
        notes: vec![
            "Rust build (bars) and .cu build (ticks), median time per call of a graph of calls \
             rotating buffers past twice the L2; lower is faster."
                .into(),
            "chain: rms_norm then quantize_q8_1, two launches; fused: rms_norm_zq8_f32, one. \
             Each panel has its own scale."
                .into(),
        ],
        legend,
        columns: 2,
        panel: (560.0, 250.0),
        sections: vec![Section {
            title: None,
            panels,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::chart::layout::{layout, problems};
    use serde_json::json;

    fn row(case: &str, class: &str, arm: &str, us: f64) -> serde_json::Value {
        json!({"gate": "norm-q8", "kind": "timing", "case": case, "class": class, "arm": arm,
               "rust_us": us, "cu_us": us * 1.1})
    }

    #[test]
    fn fused_and_chain_per_class_with_their_ratio_and_stream() {
        let mut rows = Vec::new();
        for (case, class) in [("4096x4096", "uniform"), ("4096x4096 tiny", "tiny")] {
            for (arm, us) in [
                ("rms_norm", 30.0),
                ("quantize_q8_1", 20.0),
                ("chain", 50.0),
                ("fused", 40.0),
            ] {
                rows.push(row(case, class, arm, us));
            }
            rows.push(row(case, class, "read stream, 86.0 MB", 20.0));
        }
        let fig = figure(&Run::from_rows(rows).unwrap());
        let [p] = fig.sections[0].panels.as_slice() else {
            panic!("one shape, one panel")
        };
        assert_eq!(p.title, "4096x4096");
        assert_eq!(p.categories, ["uniform", "tiny"]);
        assert_eq!(p.series_names().collect::<Vec<_>>(), ["chain", "fused"]);
        assert_eq!(p.labels, [(0, "0.80".to_string()), (1, "0.80".to_string())]);
        assert_eq!(
            p.rules.iter().map(|r| r.span).collect::<Vec<_>>(),
            [Some(0), Some(1)]
        );
        assert!(p.note.as_deref().is_some_and(|n| n.contains("86.0 MB")));
        assert_eq!(problems(&fig, &layout(&fig)), Vec::<String>::new());
    }
}
