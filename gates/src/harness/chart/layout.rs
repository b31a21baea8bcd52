//! Where everything of a [`Figure`] goes: the title and notes, the legend in a band of its own
//! above the panels, each section's heading, and each panel's frame and plotting area. Kept
//! apart from the drawing so that tests can check the geometry (nothing overlaps, every label
//! fits) without reading pixels.

use crate::harness::chart::figure::{Figure, Key, Panel};
use crate::harness::chart::svg::text_width;

pub const MARGIN: f64 = 16.0;
pub const TITLE_SIZE: f64 = 17.0;
pub const NOTE_SIZE: f64 = 11.5;
pub const LEGEND_SIZE: f64 = 12.0;
pub const SECTION_SIZE: f64 = 13.0;
pub const PANEL_TITLE_SIZE: f64 = 12.5;
pub const PANEL_NOTE_SIZE: f64 = 10.5;
pub const TICK_SIZE: f64 = 10.5;
pub const CATEGORY_SIZE: f64 = 11.0;
/// A legend swatch's width and the gaps around an entry.
pub const SWATCH: f64 = 24.0;
const KEY_GAP: f64 = 6.0;
const KEY_SPACING: f64 = 22.0;
const LINE: f64 = 18.0;
const GAP: f64 = 18.0;

/// An axis-aligned rectangle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }

    /// Whether the two share any area.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.right() && o.x < self.right() && self.y < o.bottom() && o.y < self.bottom()
    }

    /// Whether `o` lies inside this one.
    pub fn holds(&self, o: &Rect) -> bool {
        o.x >= self.x
            && o.y >= self.y
            && o.right() <= self.right() + 1e-9
            && o.bottom() <= self.bottom() + 1e-9
    }
}

/// A panel's places: its whole cell, and the area its marks are drawn in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PanelBox {
    pub frame: Rect,
    pub plot: Rect,
}

/// The places of a whole figure.
#[derive(Debug, Clone)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    /// Baselines of the title and of each note line.
    pub title: (f64, f64),
    pub notes: Vec<(f64, f64)>,
    /// Each legend entry's box (swatch and label), and the band that holds them.
    pub keys: Vec<Rect>,
    pub legend: Rect,
    /// Baselines of the section headings that have a title.
    pub sections: Vec<Option<(f64, f64)>>,
    /// Each panel's boxes, sections in order.
    pub panels: Vec<PanelBox>,
}

/// The width a legend entry takes.
pub fn key_width(key: &Key) -> f64 {
    SWATCH + KEY_GAP + text_width(&key.label, LEGEND_SIZE)
}

/// The plotting area of a panel whose cell is `frame`: below its title (and note), right of
/// its tick labels and axis title, above its category labels and axis title.
pub fn plot_area(frame: Rect, panel: &Panel) -> Rect {
    let top = LINE + if panel.note.is_some() { 14.0 } else { 0.0 } + 8.0;
    let (left, right, bottom) = (58.0, 10.0, 36.0);
    Rect {
        x: frame.x + left,
        y: frame.y + top,
        w: frame.w - left - right,
        h: frame.h - top - bottom,
    }
}

pub fn layout(fig: &Figure) -> Layout {
    let (pw, ph) = fig.panel;
    // No wider than the widest section: one shape charts as one panel, not a row of gaps.
    let widest = fig
        .sections
        .iter()
        .map(|s| s.panels.len())
        .max()
        .unwrap_or(1);
    let columns = fig.columns.min(widest).max(1);
    let grid_width = columns as f64 * pw + (columns - 1) as f64 * GAP;
    let widest_text = std::iter::once(text_width(&fig.title, TITLE_SIZE))
        .chain(fig.notes.iter().map(|n| text_width(n, NOTE_SIZE)))
        .fold(0.0, f64::max);
    let width = grid_width.max(widest_text) + 2.0 * MARGIN;
    let inner = width - 2.0 * MARGIN;

    let mut y = MARGIN + TITLE_SIZE;
    let title = (MARGIN, y);
    let mut notes = Vec::new();
    for _ in &fig.notes {
        y += LINE - 2.0;
        notes.push((MARGIN, y));
    }
    y += 12.0;
    // The legend: entries flow left to right and wrap, in a band above every panel.
    let legend_top = y;
    let (mut x, mut row) = (MARGIN, 0usize);
    let mut keys = Vec::new();
    for key in &fig.legend {
        let w = key_width(key);
        if x > MARGIN && x + w > MARGIN + inner {
            x = MARGIN;
            row += 1;
        }
        keys.push(Rect {
            x,
            y: legend_top + row as f64 * LINE,
            w,
            h: LINE - 4.0,
        });
        x += w + KEY_SPACING;
    }
    let rows = if fig.legend.is_empty() { 0 } else { row + 1 };
    let legend = Rect {
        x: MARGIN,
        y: legend_top,
        w: inner,
        h: rows as f64 * LINE,
    };
    y = legend.bottom() + 8.0;

    let mut sections = Vec::new();
    let mut panels = Vec::new();
    for section in &fig.sections {
        match &section.title {
            Some(_) => {
                y += SECTION_SIZE + 6.0;
                sections.push(Some((MARGIN, y)));
                y += 6.0;
            }
            None => sections.push(None),
        }
        for (i, panel) in section.panels.iter().enumerate() {
            let (r, c) = (i / columns, i % columns);
            let frame = Rect {
                x: MARGIN + c as f64 * (pw + GAP),
                y: y + r as f64 * (ph + GAP),
                w: pw,
                h: ph,
            };
            panels.push(PanelBox {
                frame,
                plot: plot_area(frame, panel),
            });
        }
        let rows = section.panels.len().div_ceil(columns);
        y += rows as f64 * (ph + GAP);
    }
    Layout {
        width,
        height: y - GAP + MARGIN,
        title,
        notes,
        keys,
        legend,
        sections,
        panels,
    }
}

/// Problems a layout has that would show as collisions: the legend over a panel, an entry
/// past the figure's edge, a category label wider than its category, a panel too small to
/// plot in. Empty when the figure is clean.
pub fn problems(fig: &Figure, lay: &Layout) -> Vec<String> {
    let mut out = Vec::new();
    let page = Rect {
        x: 0.0,
        y: 0.0,
        w: lay.width,
        h: lay.height,
    };
    for (key, r) in fig.legend.iter().zip(&lay.keys) {
        if !page.holds(r) {
            out.push(format!("legend entry `{}` leaves the figure", key.label));
        }
        if !lay.legend.holds(r) {
            out.push(format!(
                "legend entry `{}` leaves the legend band",
                key.label
            ));
        }
    }
    for (panel, b) in fig.panels().zip(&lay.panels) {
        if lay.legend.overlaps(&b.frame) {
            out.push(format!("the legend overlaps panel `{}`", panel.title));
        }
        if !page.holds(&b.frame) {
            out.push(format!("panel `{}` leaves the figure", panel.title));
        }
        if b.plot.w < 40.0 || b.plot.h < 40.0 {
            out.push(format!("panel `{}` has no room to plot", panel.title));
        }
        let room = b.plot.w / panel.categories.len().max(1) as f64;
        for c in &panel.categories {
            if text_width(c, CATEGORY_SIZE) > room {
                out.push(format!(
                    "category `{c}` is wider than its place in `{}`",
                    panel.title
                ));
            }
        }
        for (text, size) in [(&panel.title, PANEL_TITLE_SIZE)]
            .into_iter()
            .chain(panel.note.as_ref().map(|n| (n, PANEL_NOTE_SIZE)))
        {
            if text_width(text, size) > b.frame.w {
                out.push(format!("`{text}` is wider than its panel"));
            }
        }
    }
    for (i, a) in lay.panels.iter().enumerate() {
        for b in &lay.panels[i + 1..] {
            if a.frame.overlaps(&b.frame) {
                out.push("two panels overlap".into());
            }
        }
    }
    out
}
