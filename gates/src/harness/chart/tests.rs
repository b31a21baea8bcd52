//! The charts' geometry and content, checked without pixels: the legend in its own band, every
//! series in its slot in every panel, the read stream drawn, each gate's receipt rows charted
//! cleanly, and a run charted the same from its kept rows as from its file.

use super::bars::{self, BarSpec};
use super::figure::{palette, Figure, Key, Look, Panel, Section};
use super::layout::{layout, problems};
use super::rows::{Metric, Run, Timing};
use super::*;
use serde_json::json;

fn run_of(rows: Vec<serde_json::Value>) -> Run {
    Run::from_rows(rows).unwrap()
}

fn timing(
    case: &str,
    class: &str,
    arm: &str,
    rust_us: f64,
    cu_us: Option<f64>,
) -> serde_json::Value {
    let mut row = json!({
        "gate": "demo", "kind": "timing", "case": case, "class": class, "arm": arm,
        "rust_us": rust_us, "rust_gbps": 1000.0 / rust_us,
    });
    if let Some(cu) = cu_us {
        row["cu_us"] = json!(cu);
        row["cu_gbps"] = json!(1000.0 / cu);
    }
    row
}

fn figure_of(panels: Vec<Panel>, legend: Vec<Key>, columns: usize) -> Figure {
    Figure {
        title: "demo".into(),
        notes: vec!["a note".into()],
        legend,
        columns,
        panel: (300.0, 220.0),
        sections: vec![Section {
            title: Some("a section".into()),
            panels,
        }],
    }
}

#[test]
fn a_wrapping_legend_stays_in_its_band_above_every_panel() {
    let legend: Vec<Key> = (0..30)
        .map(|i| Key {
            label: format!("arm number {i} with a long name"),
            look: Look::Bar(palette(i)),
        })
        .collect();
    let panels = (0..5)
        .map(|i| Panel {
            title: format!("panel {i}"),
            categories: vec!["m=1".into(), "m=2".into()],
            ..Panel::default()
        })
        .collect();
    let fig = figure_of(panels, legend, 3);
    let lay = layout(&fig);
    assert!(
        lay.keys.iter().map(|k| k.y).fold(0.0, f64::max) > lay.keys[0].y,
        "no wrap"
    );
    assert_eq!(problems(&fig, &lay), Vec::<String>::new());
    for p in &lay.panels {
        assert!(
            p.frame.y >= lay.legend.bottom(),
            "{p:?} under {:?}",
            lay.legend
        );
        assert!(p.frame.holds(&p.plot));
    }
}

#[test]
fn collisions_are_reported() {
    let crowded = Panel {
        title: "a panel".into(),
        categories: (0..12).map(|i| format!("a long category {i}")).collect(),
        ..Panel::default()
    };
    let fig = figure_of(vec![crowded], Vec::new(), 1);
    let found = problems(&fig, &layout(&fig));
    assert!(
        found.iter().any(|p| p.contains("wider than its place")),
        "{found:?}"
    );
}

/// Two shapes: `a` with arms x and y at two m, `b` with y alone; each case has its stream.
fn two_shapes() -> Run {
    run_of(vec![
        json!({"gate": "demo", "kind": "run", "device": "GPU"}),
        timing("a", "uniform", "x m=1", 2.0, Some(2.5)),
        timing("a", "uniform", "y m=1", 4.0, None),
        timing("a", "uniform", "x m=2", 3.0, Some(3.5)),
        timing("a", "uniform", "y m=2", 5.0, None),
        timing("a", "uniform", "read stream, 1.0 MB", 1.0, None),
        timing("b", "uniform", "y m=1", 6.0, None),
        timing("b", "uniform", "read stream, 2.0 MB", 1.5, None),
    ])
}

fn by_m<'a>() -> BarSpec<'a> {
    BarSpec {
        metric: Metric::Us,
        category: &|t: &Timing| Some(format!("m={}", t.m?)),
        series: &|t: &Timing| Some(t.arm_base().to_string()),
        color: &|i, _| palette(i),
        y_title: "us",
        x_title: "m",
        stream_key: "read stream",
    }
}

#[test]
fn every_series_keeps_its_slot_in_every_panel() {
    let run = two_shapes();
    let rows: Vec<&Timing> = run.timings.iter().collect();
    let (panels, keys) = bars::panels(&rows, &by_m());
    let labels: Vec<&str> = keys.iter().map(|k| k.label.as_str()).collect();
    assert_eq!(
        labels,
        ["x", "y", ".cu build of the same kernel", "read stream"]
    );
    let [a, b] = panels.as_slice() else {
        panic!("{panels:?}")
    };
    assert_eq!(a.categories, ["m=1", "m=2"]);
    assert_eq!(a.bars[0].values, [Some(2.0), Some(3.0)]);
    assert_eq!(a.bars[0].ticks, [Some(2.5), Some(3.5)]);
    assert_eq!(a.bars[1].ticks, [None, None]);
    // `b` has no x: its slot is kept, empty.
    assert_eq!(b.series_names().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(
        (b.bars[0].values.clone(), b.bars[1].values.clone()),
        (vec![None], vec![Some(6.0)])
    );
    // One case feeds every category: one rule across the panel, at that case's stream.
    assert_eq!(a.rules.len(), 1);
    assert_eq!((a.rules[0].value, a.rules[0].span), (1.0, None));
    assert_eq!(b.rules[0].value, 1.5);
}

#[test]
fn each_category_of_its_own_case_gets_its_own_stream() {
    let run = run_of(vec![
        timing("s", "uniform", "fused", 2.0, None),
        timing("s", "uniform", "read stream, 1 KB", 1.0, None),
        timing("s tiny", "tiny", "fused", 3.0, None),
        timing("s tiny", "tiny", "read stream, 1 KB", 1.2, None),
    ]);
    let rows: Vec<&Timing> = run.timings.iter().collect();
    let spec = BarSpec {
        category: &|t: &Timing| Some(t.class.clone()),
        ..by_m()
    };
    let (panels, _) = bars::panels(&rows, &spec);
    let spans: Vec<(f64, Option<usize>)> =
        panels[0].rules.iter().map(|r| (r.value, r.span)).collect();
    assert_eq!(spans, [(1.0, Some(0)), (1.2, Some(1))]);
}

#[test]
fn the_default_chart_names_every_arm_and_draws_the_stream() {
    let run = two_shapes();
    let fig = bars::by_case(&run);
    assert_eq!(problems(&fig, &layout(&fig)), Vec::<String>::new());
    let svg = draw::svg(&fig);
    for arm in [
        "x m=1",
        "x m=2",
        "y m=1",
        "y m=2",
        ".cu build",
        "read stream",
    ] {
        assert!(svg.contains(arm), "no `{arm}` in the chart");
    }
    assert!(
        svg.matches("stroke-dasharray=\"6.0 3.0\"").count() >= 3,
        "the streams' rules and key"
    );
}

/// The rows of each gate's receipt in `gates/tests/fixtures/charts/`.
fn fixture(gate: &str) -> Run {
    let path = format!(
        "{}/tests/fixtures/charts/{gate}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Run::parse(&text).unwrap()
}

#[test]
fn each_gate_charts_its_receipt_with_nothing_colliding() {
    // The receipts were written under the gates' earlier names, which are their aliases now.
    for (gate, panels) in [
        ("q8-fuse", 4),
        ("gemv-e4m3", 6),
        ("mla-decode", 9),
        ("decode-step", 5),
    ] {
        let run = fixture(gate);
        let g = crate::families::ALL
            .iter()
            .find(|g| g.answers_to(gate))
            .unwrap();
        let fig = g.chart(&run).unwrap();
        assert_eq!(fig.panels().count(), panels, "{gate}");
        assert_eq!(
            problems(&fig, &layout(&fig)),
            Vec::<String>::new(),
            "{gate}"
        );
        for p in fig.panels() {
            let ruled = p.rules.iter().any(|r| r.value > 0.0)
                || p.lines.iter().any(|l| l.name == "read stream");
            if gate != "mla-decode" {
                assert!(ruled, "{gate}: `{}` has no read stream", p.title);
            }
        }
        if gate == "gemv-e4m3" {
            // The receipt times every m with both peers at the same m: six arms at four m.
            for p in fig.panels() {
                assert_eq!(p.categories, ["m=1", "m=2", "m=4", "m=8"], "{}", p.title);
                assert_eq!(p.bars.len(), 6, "{}", p.title);
                assert!(p.bars.iter().all(|b| b.values.iter().all(Option::is_some)));
            }
        }
        let svg = draw::svg(&fig);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for key in &fig.legend {
            assert!(
                svg.contains(&key.label.replace('>', "&gt;")),
                "{gate}: `{}`",
                key.label
            );
        }
    }
}

#[test]
fn a_run_is_charted_the_same_from_its_kept_rows_and_its_file() {
    let path = std::env::temp_dir().join(format!("gates-chart-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut j = crate::harness::record::Jsonl::open(Some(&path), "norm-q8").unwrap();
    j.keep();
    for row in fixture("q8-fuse").rows {
        let kind = row["kind"].as_str().unwrap().to_string();
        let mut row = row.as_object().unwrap().clone();
        row.remove("gate");
        row.remove("kind");
        j.write(&kind, &row).unwrap();
    }
    let kept = Run::from_rows(j.kept().to_vec()).unwrap();
    let read = Run::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let svg = |run: &Run| {
        let g = crate::families::ALL
            .iter()
            .find(|g| g.name() == "norm-q8")
            .unwrap();
        draw::svg(&g.chart(run).unwrap())
    };
    assert_eq!(svg(&kept), svg(&read));
}
