//! Panels of bars from timing rows: a panel per shape, categories along x, series side by side
//! in each category, the .cu build as a tick on its bar, and each case's sized read stream as
//! a dashed rule: across the panel where one case feeds every category, else over each
//! category its case feeds. The gates that compare arms (gemv, norm-q8, and any family
//! without a chart of its own) are built on it.

use crate::harness::chart::figure::{palette, Bars, Figure, Key, Look, Panel, Rule};
use crate::harness::chart::rows::{in_order, Metric, Of, Run, Timing};
use crate::harness::chart::svg::{Color, Stroke};

/// The dashed black rule of a read stream.
pub fn stream_stroke() -> Stroke {
    Stroke::dashed(Color::BLACK, 1.5, (6.0, 3.0))
}

/// How rows become bars.
pub struct BarSpec<'a> {
    pub metric: Metric,
    /// A row's category, or `None` to leave it out.
    pub category: &'a dyn Fn(&Timing) -> Option<String>,
    /// A row's series, or `None` to leave it out.
    pub series: &'a dyn Fn(&Timing) -> Option<String>,
    /// The colour of the n-th series (in the order series first appear) of that name.
    pub color: &'a dyn Fn(usize, &str) -> Color,
    pub y_title: &'a str,
    pub x_title: &'a str,
    /// The legend's words for the read stream's rule.
    pub stream_key: &'a str,
}

/// The bar panels of `rows` (one per shape, in order), and the legend: an entry per series,
/// then the tick and the stream's rule where the rows have them.
pub fn panels(rows: &[&Timing], spec: &BarSpec<'_>) -> (Vec<Panel>, Vec<Key>) {
    panels_by(rows, spec, &|t| t.shape_label().to_string())
}

/// [`panels`] with a panel per value of `panel_of` (in order) instead of one per shape.
pub fn panels_by(
    rows: &[&Timing],
    spec: &BarSpec<'_>,
    panel_of: &dyn Fn(&Timing) -> String,
) -> (Vec<Panel>, Vec<Key>) {
    let arms: Vec<(&Timing, String, String)> = rows
        .iter()
        .filter(|t| !t.is_stream())
        .filter_map(|t| Some((*t, (spec.category)(t)?, (spec.series)(t)?)))
        .collect();
    let names = in_order(arms.iter().map(|(_, _, s)| s.clone()));
    let colors: Vec<Color> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (spec.color)(i, n))
        .collect();
    let shapes = in_order(arms.iter().map(|(t, _, _)| panel_of(t)));
    let panels = shapes
        .into_iter()
        .map(|shape| {
            let mine: Vec<&(&Timing, String, String)> = arms
                .iter()
                .filter(|(t, _, _)| panel_of(t) == shape)
                .collect();
            let categories = in_order(mine.iter().map(|(_, c, _)| c.clone()));
            let find = |name: &str, cat: &str| {
                mine.iter()
                    .find(|(_, c, s)| c == cat && s == name)
                    .map(|(t, _, _)| *t)
            };
            let bars = names
                .iter()
                .zip(&colors)
                .map(|(name, &color)| Bars {
                    name: name.clone(),
                    color,
                    values: categories
                        .iter()
                        .map(|c| find(name, c)?.main(spec.metric))
                        .collect(),
                    ticks: categories
                        .iter()
                        .map(|c| find(name, c)?.value(Of::Cu, spec.metric))
                        .collect(),
                })
                .collect();
            let cases: Vec<Vec<&str>> = categories
                .iter()
                .map(|cat| {
                    in_order(
                        mine.iter()
                            .filter(|(_, c, _)| c == cat)
                            .map(|(t, _, _)| t.case.as_str()),
                    )
                })
                .collect();
            Panel {
                title: shape,
                y_title: spec.y_title.to_string(),
                x_title: spec.x_title.to_string(),
                rules: stream_rules(rows, &cases, spec.metric),
                categories,
                bars,
                ..Panel::default()
            }
        })
        .collect();
    let keys = names
        .into_iter()
        .zip(colors)
        .map(|(label, c)| Key {
            label,
            look: Look::Bar(c),
        })
        .chain(reference_keys(rows, spec.stream_key))
        .collect();
    (panels, keys)
}

/// The read stream of a case of `shape` (a panel's title), if one was timed.
pub fn shape_stream<'a>(rows: &[&'a Timing], shape: &str) -> Option<&'a Timing> {
    rows.iter()
        .copied()
        .find(|t| t.is_stream() && t.shape_label() == shape)
}

/// The read stream of `case`, if it was timed.
pub fn stream_of<'a>(rows: &[&'a Timing], case: &str) -> Option<&'a Timing> {
    rows.iter()
        .copied()
        .find(|t| t.is_stream() && t.case == case)
}

/// The read-stream rules of a panel whose categories are fed by `cases`.
fn stream_rules(rows: &[&Timing], cases: &[Vec<&str>], metric: Metric) -> Vec<Rule> {
    let rule = |case: &str, span| {
        Some(Rule {
            value: stream_of(rows, case)?.main(metric)?,
            stroke: stream_stroke(),
            span,
        })
    };
    let all = in_order(cases.iter().flatten().copied());
    if let [one] = all.as_slice() {
        return rule(one, None).into_iter().collect();
    }
    cases
        .iter()
        .enumerate()
        .filter_map(|(c, fed)| match fed.as_slice() {
            [one] => rule(one, Some(c)),
            _ => None,
        })
        .collect()
}

/// The chart of a family without its own: a panel per uniform case, each arm a bar of its GB/s
/// (the Rust build, or the peer), the .cu build's as a tick, the case's read stream as a rule.
pub fn by_case(run: &Run) -> Figure {
    let rows = run.uniform();
    let spec = BarSpec {
        metric: Metric::Gbps,
        category: &|_| Some(String::new()),
        series: &|t| Some(t.arm.clone()),
        color: &|i, _| palette(i),
        y_title: "GB/s",
        x_title: "",
        stream_key: "read stream of about the case's bytes, same rounds",
    };
    let (panels, legend) = panels(&rows, &spec);
    Figure::grid(
        format!("{} on {}: achieved GB/s", run.gate, run.device),
        vec![ceiling_note(
            run,
            "GB/s: the bytes each call must move over its median time",
        )],
        legend,
        panels,
        (360.0, 240.0),
    )
}

/// The legend entries of the tick and of the stream rule (labelled `stream`), where the rows
/// have them.
fn reference_keys(rows: &[&Timing], stream: &str) -> Vec<Key> {
    let mut keys = Vec::new();
    if rows.iter().any(|t| t.value(Of::Cu, Metric::Us).is_some()) {
        keys.push(Key {
            label: ".cu build of the same kernel".into(),
            look: Look::Tick,
        });
    }
    if rows.iter().any(|t| t.is_stream()) {
        keys.push(Key {
            label: stream.into(),
            look: Look::Rule(stream_stroke()),
        });
    }
    keys
}

/// `lead`, then the run's 2 GiB ceiling where it has one.
pub fn ceiling_note(run: &Run, lead: &str) -> String {
    match run.ceiling_gbps {
        Some(c) => format!("{lead}; the 2 GiB read-stream ceiling of the run: {c:.0} GB/s."),
        None => format!("{lead}."),
    }
}
