//! What a chart shows, before any geometry: a title, notes, one legend for the whole figure,
//! and sections of small panels, each with its own scale. Families build a [`Figure`] from a
//! run's rows; `draw` lays it out and writes it.

use crate::harness::chart::svg::{Color, Marker, Stroke};

/// A whole chart.
#[derive(Debug, Clone)]
pub struct Figure {
    pub title: String,
    /// Lines under the title: what is plotted, from which build, what the marks mean.
    pub notes: Vec<String>,
    /// One legend for every panel, above them all, so that it never covers a panel's marks.
    pub legend: Vec<Key>,
    /// Panels a row.
    pub columns: usize,
    /// Each panel's width and height.
    pub panel: (f64, f64),
    pub sections: Vec<Section>,
}

impl Figure {
    /// One section of panels, three a row, each `panel` in size.
    pub fn grid(
        title: String,
        notes: Vec<String>,
        legend: Vec<Key>,
        panels: Vec<Panel>,
        panel: (f64, f64),
    ) -> Figure {
        Figure {
            title,
            notes,
            legend,
            columns: 3,
            panel,
            sections: vec![Section {
                title: None,
                panels,
            }],
        }
    }
}

/// A row (or rows) of panels under an optional heading.
#[derive(Debug, Clone)]
pub struct Section {
    pub title: Option<String>,
    pub panels: Vec<Panel>,
}

/// One legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub label: String,
    pub look: Look,
}

/// How a legend entry is drawn: as the marks it names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Look {
    Bar(Color),
    Line(LineStyle),
    /// The short black mark of a second build's value on a bar.
    Tick,
    /// A reference line across a panel (a read stream).
    Rule(Stroke),
    /// A ring around a chosen point (the split that is served).
    Ring,
}

/// A line's colour, dash and point marker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineStyle {
    pub color: Color,
    pub dashed: bool,
    pub marker: Option<Marker>,
}

/// One small multiple: categories along x, values up y from zero.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    /// A line under the title (the panel's reference values, its choices).
    pub note: Option<String>,
    pub y_title: String,
    pub x_title: String,
    pub categories: Vec<String>,
    /// Bars side by side in each category, one slot per series in series order (a missing
    /// value leaves its slot empty, so a series keeps its place in every category).
    pub bars: Vec<Bars>,
    pub lines: Vec<Line>,
    pub rules: Vec<Rule>,
    /// Points ringed: (category, value).
    pub rings: Vec<(usize, f64)>,
    /// Text above a category's highest mark.
    pub labels: Vec<(usize, String)>,
}

/// A series of bars: one value (and an optional tick) per category.
#[derive(Debug, Clone)]
pub struct Bars {
    pub name: String,
    pub color: Color,
    pub values: Vec<Option<f64>>,
    pub ticks: Vec<Option<f64>>,
}

/// A series of points joined in category order.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub style: LineStyle,
    pub values: Vec<Option<f64>>,
}

/// A horizontal reference line across the panel, or across one category.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub value: f64,
    pub stroke: Stroke,
    pub span: Option<usize>,
}

impl Panel {
    /// The largest value any mark reaches.
    pub fn max_value(&self) -> f64 {
        let bars = self
            .bars
            .iter()
            .flat_map(|b| b.values.iter().chain(&b.ticks).flatten());
        let lines = self.lines.iter().flat_map(|l| l.values.iter().flatten());
        let rules = self.rules.iter().map(|r| &r.value);
        let rings = self.rings.iter().map(|(_, v)| v);
        bars.chain(lines)
            .chain(rules)
            .chain(rings)
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }

    /// The highest value of category `c`'s marks (where its label goes).
    pub fn category_top(&self, c: usize) -> f64 {
        let bars = self
            .bars
            .iter()
            .flat_map(|b| [finite_at(&b.values, c), finite_at(&b.ticks, c)]);
        let lines = self.lines.iter().map(|l| finite_at(&l.values, c));
        bars.chain(lines).flatten().fold(0.0, f64::max)
    }

    /// Every series the panel names, bars then lines.
    pub fn series_names(&self) -> impl Iterator<Item = &str> {
        self.bars
            .iter()
            .map(|b| b.name.as_str())
            .chain(self.lines.iter().map(|l| l.name.as_str()))
    }
}

impl Figure {
    pub fn panels(&self) -> impl Iterator<Item = &Panel> {
        self.sections.iter().flat_map(|s| &s.panels)
    }
}

/// The value of category `c` of a series, where it has a finite one.
pub fn finite_at(values: &[Option<f64>], c: usize) -> Option<f64> {
    values.get(c).copied().flatten().filter(|v| v.is_finite())
}

/// The n-th colour of a categorical palette that stays apart for colour-blind readers
/// (Okabe and Ito's, then greys).
pub fn palette(n: usize) -> Color {
    const COLORS: [Color; 8] = [
        Color(0x00, 0x72, 0xB2),
        Color(0xE6, 0x9F, 0x00),
        Color(0x00, 0x9E, 0x73),
        Color(0xCC, 0x79, 0xA7),
        Color(0xD5, 0x5E, 0x00),
        Color(0x56, 0xB4, 0xE9),
        Color(0x55, 0x55, 0x55),
        Color(0xAA, 0xAA, 0xAA),
    ];
    COLORS[n % COLORS.len()]
}

/// The n-th point marker, cycling.
pub fn marker(n: usize) -> Marker {
    [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
    ][n % 4]
}
