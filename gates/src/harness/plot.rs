//! The chart of a run: achieved GB/s per case and arm, the Rust build beside the .cu build (and
//! any peer), against the read-stream ceiling measured in the same run. Horizontal bars, so that
//! long case and arm labels stay readable.

use crate::harness::run::CaseTiming;
use crate::harness::{Family, Label, Side, ValueClass};
use plotters::coord::ranged1d::{IntoSegmentedCoord as _, SegmentValue};
use plotters::prelude::*;
use std::path::Path;

/// One bar: a case and arm, a side, and its GB/s.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub group: String,
    pub side: Side,
    pub gbps: f64,
}

/// The bars of the arms the family plots, in table order, for the uniform cases (the other
/// value classes are in the tables and the JSONL rows); every case when none is uniform.
pub fn bars<F: Family>(fam: &F, timings: &[CaseTiming<F>]) -> Vec<Bar> {
    let any_uniform = timings.iter().any(|t| t.class == ValueClass::Uniform);
    timings
        .iter()
        .filter(move |t| !any_uniform || t.class == ValueClass::Uniform)
        .flat_map(|t| {
            t.arms
                .iter()
                .filter(move |a| fam.plotted(t.shape, a.spec.arm))
                .flat_map(move |arm| {
                    arm.stats.iter().filter_map(move |(side, _)| {
                        arm.gbps(*side).map(|gbps| Bar {
                            group: format!("{} {}", t.label(), arm.spec.arm.label()),
                            side: *side,
                            gbps,
                        })
                    })
                })
        })
        .collect()
}

fn color(side: Side) -> RGBColor {
    match side {
        Side::Rust => RGBColor(0xD9, 0x5F, 0x0E),
        Side::Cu => RGBColor(0x3B, 0x6E, 0xB5),
        Side::Peer => RGBColor(0x88, 0x88, 0x88),
    }
}

/// Writes the chart of `bars` to `path` as SVG: one horizontal bar per case, arm and side, the
/// sides of one arm next to each other.
pub fn write(
    path: &Path,
    gate: &str,
    device: &str,
    ceiling_gbps: f64,
    bars: &[Bar],
) -> Result<(), Box<dyn std::error::Error>> {
    let labels: Vec<String> = bars
        .iter()
        .map(|b| format!("{} [{}]", b.group, b.side.label()))
        .collect();
    let n = bars.len().max(1);
    let label_width = labels.iter().map(|l| l.len()).max().unwrap_or(8) as u32 * 7 + 20;
    let height = 120 + 18 * n as u32;
    let root = SVGBackend::new(path, (label_width + 720, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = bars.iter().map(|b| b.gbps).fold(ceiling_gbps, f64::max) * 1.08;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{gate} on {device}: achieved GB/s"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0f64..xmax, (0..n).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .x_desc("GB/s (bytes each call must move / median device time)")
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                labels.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        })
        .draw()?;
    for side in [Side::Rust, Side::Cu, Side::Peer] {
        let c = color(side);
        let mine: Vec<(usize, f64)> = bars
            .iter()
            .enumerate()
            .filter(|(_, b)| b.side == side)
            .map(|(i, b)| (i, b.gbps))
            .collect();
        if mine.is_empty() {
            continue;
        }
        chart
            .draw_series(mine.into_iter().map(|(i, gbps)| {
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i)),
                        (gbps, SegmentValue::Exact(i + 1)),
                    ],
                    c.filled(),
                );
                bar.set_margin(2, 2, 0, 0);
                bar
            }))?
            .label(side.label())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            [
                (ceiling_gbps, SegmentValue::Exact(0)),
                (ceiling_gbps, SegmentValue::Last),
            ],
            BLACK.stroke_width(2),
        ))?
        .label(format!("read-stream ceiling {ceiling_gbps:.0} GB/s"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_written_as_svg_with_every_group() {
        let path = std::env::temp_dir().join(format!("gates-plot-{}.svg", std::process::id()));
        let bars = vec![
            Bar {
                group: "4096x4096 fused".into(),
                side: Side::Rust,
                gbps: 3700.0,
            },
            Bar {
                group: "4096x4096 fused".into(),
                side: Side::Cu,
                gbps: 3600.0,
            },
            Bar {
                group: "5120x1024 cublas".into(),
                side: Side::Peer,
                gbps: 2000.0,
            },
        ];
        write(&path, "demo", "a GPU", 4500.0, &bars).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for text in [
            "4096x4096 fused",
            "5120x1024 cublas",
            "read-stream ceiling 4500 GB/s",
        ] {
            assert!(svg.contains(text), "no `{text}` in the chart");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
