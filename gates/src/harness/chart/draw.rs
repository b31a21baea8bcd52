//! A [`Figure`] drawn as SVG on its [`Layout`](lay::Layout): the legend's swatches as the
//! marks they name, and each panel's grid, bars with their ticks, lines with their markers,
//! reference rules, rings and labels.

use crate::harness::chart::axis;
use crate::harness::chart::figure::{finite_at, Figure, Look, Panel};
use crate::harness::chart::layout::{self as lay, PanelBox, Rect};
use crate::harness::chart::svg::{Anchor, Color, Font, Stroke, Svg};

/// Room above a panel's highest mark: a little, or a line's worth where categories carry
/// labels.
fn headroom(panel: &Panel) -> f64 {
    if panel.labels.is_empty() {
        1.04
    } else {
        1.16
    }
}

/// The SVG document of `fig`.
pub fn svg(fig: &Figure) -> String {
    let l = lay::layout(fig);
    let mut s = Svg::new(l.width, l.height);
    s.text(l.title, Font::new(lay::TITLE_SIZE).bold(), &fig.title);
    for (note, at) in fig.notes.iter().zip(&l.notes) {
        s.text(*at, Font::new(lay::NOTE_SIZE).color(Color::MUTED), note);
    }
    for (key, r) in fig.legend.iter().zip(&l.keys) {
        swatch(&mut s, key.look, *r);
        let base = r.y + r.h / 2.0 + lay::LEGEND_SIZE * 0.35;
        s.text(
            (r.x + lay::SWATCH + 6.0, base),
            Font::new(lay::LEGEND_SIZE),
            &key.label,
        );
    }
    for (section, at) in fig.sections.iter().zip(&l.sections) {
        if let (Some(title), Some(at)) = (&section.title, at) {
            s.text(*at, Font::new(lay::SECTION_SIZE).bold(), title);
        }
    }
    for (panel, b) in fig.panels().zip(&l.panels) {
        draw_panel(&mut s, panel, b);
    }
    s.finish()
}

fn swatch(s: &mut Svg, look: Look, r: Rect) {
    let (x, y) = (r.x, r.y + r.h / 2.0);
    let w = lay::SWATCH - 4.0;
    match look {
        Look::Bar(c) => s.rect(x + 4.0, y - 5.0, w - 8.0, 10.0, Some(c), None),
        Look::Line(style) => {
            let stroke = line_stroke(style.color, style.dashed);
            s.line((x, y), (x + w, y), stroke);
            if let Some(m) = style.marker {
                s.marker(m, (x + w / 2.0, y), 8.0, style.color);
            }
        }
        Look::Tick => s.line(
            (x + 4.0, y),
            (x + w - 4.0, y),
            Stroke::solid(Color::BLACK, 2.5),
        ),
        Look::Rule(stroke) => s.line((x, y), (x + w, y), stroke),
        Look::Ring => s.circle((x + w / 2.0, y), 6.0, None, Some(ring_stroke())),
    }
}

fn line_stroke(color: Color, dashed: bool) -> Stroke {
    if dashed {
        Stroke::dashed(color, 1.6, (5.0, 3.0))
    } else {
        Stroke::solid(color, 2.0)
    }
}

fn ring_stroke() -> Stroke {
    Stroke::solid(Color::BLACK, 1.5)
}

/// A panel's value scale: the top of its axis and a value's y.
struct Scale {
    plot: Rect,
    top: f64,
}

impl Scale {
    fn y(&self, v: f64) -> f64 {
        self.plot.bottom() - v.max(0.0) / self.top * self.plot.h
    }
}

/// Where category `c` of `n` is centred, and how wide its place is.
fn category(plot: Rect, n: usize, c: usize) -> (f64, f64) {
    let w = plot.w / n.max(1) as f64;
    (plot.x + (c as f64 + 0.5) * w, w)
}

fn draw_panel(s: &mut Svg, p: &Panel, b: &PanelBox) {
    let (f, plot) = (b.frame, b.plot);
    s.text(
        (f.x, f.y + lay::PANEL_TITLE_SIZE),
        Font::new(lay::PANEL_TITLE_SIZE).bold(),
        &p.title,
    );
    if let Some(note) = &p.note {
        s.text(
            (f.x, f.y + lay::PANEL_TITLE_SIZE + 14.0),
            Font::new(lay::PANEL_NOTE_SIZE).color(Color::MUTED),
            note,
        );
    }
    let ticks = axis::ticks(p.max_value() * headroom(p));
    let step = ticks.get(1).copied().unwrap_or(1.0);
    let scale = Scale {
        plot,
        top: ticks.last().copied().unwrap_or(1.0),
    };
    for &t in &ticks {
        let y = scale.y(t);
        s.line(
            (plot.x, y),
            (plot.right(), y),
            Stroke::solid(Color::LIGHT, 1.0),
        );
        s.text(
            (plot.x - 5.0, y + 3.5),
            Font::new(lay::TICK_SIZE).anchor(Anchor::End),
            &axis::label(t, step),
        );
    }
    let axis = Stroke::solid(Color::MUTED, 1.0);
    s.line((plot.x, plot.y), (plot.x, plot.bottom()), axis);
    s.line((plot.x, plot.bottom()), (plot.right(), plot.bottom()), axis);
    s.text_rotated(
        (f.x + 11.0, plot.y + plot.h / 2.0),
        Font::new(lay::TICK_SIZE).anchor(Anchor::Middle),
        &p.y_title,
        -90.0,
    );
    let n = p.categories.len();
    for (c, name) in p.categories.iter().enumerate() {
        let (x, _) = category(plot, n, c);
        s.text(
            (x, plot.bottom() + 14.0),
            Font::new(lay::CATEGORY_SIZE).anchor(Anchor::Middle),
            name,
        );
    }
    s.text(
        (plot.x + plot.w / 2.0, plot.bottom() + 30.0),
        Font::new(lay::TICK_SIZE)
            .anchor(Anchor::Middle)
            .color(Color::MUTED),
        &p.x_title,
    );
    draw_bars(s, p, &scale);
    for rule in &p.rules {
        let y = scale.y(rule.value);
        let (x0, x1) = match rule.span {
            Some(c) => {
                let (x, w) = category(plot, n, c);
                (x - 0.46 * w, x + 0.46 * w)
            }
            None => (plot.x, plot.right()),
        };
        s.line((x0, y), (x1, y), rule.stroke);
    }
    for line in &p.lines {
        let stroke = line_stroke(line.style.color, line.style.dashed);
        // Joined where consecutive categories both have a value.
        let mut run: Vec<(f64, f64)> = Vec::new();
        for (c, v) in line.values.iter().enumerate() {
            match v.filter(|v| v.is_finite()) {
                Some(v) => run.push((category(plot, n, c).0, scale.y(v))),
                None => s.polyline(&std::mem::take(&mut run), stroke),
            }
        }
        s.polyline(&run, stroke);
        if let Some(m) = line.style.marker {
            for (c, v) in line.values.iter().enumerate() {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    s.marker(
                        m,
                        (category(plot, n, c).0, scale.y(v)),
                        7.0,
                        line.style.color,
                    );
                }
            }
        }
    }
    for &(c, v) in &p.rings {
        s.circle(
            (category(plot, n, c).0, scale.y(v)),
            7.0,
            None,
            Some(ring_stroke()),
        );
    }
    for (c, text) in &p.labels {
        let (x, _) = category(plot, n, *c);
        s.text(
            (x, scale.y(p.category_top(*c)) - 5.0),
            Font::new(lay::PANEL_NOTE_SIZE).anchor(Anchor::Middle),
            text,
        );
    }
}

/// The bars of each category side by side, each series in its slot, a tick across a bar where
/// the series has one.
fn draw_bars(s: &mut Svg, p: &Panel, scale: &Scale) {
    let (n, slots) = (p.categories.len(), p.bars.len());
    if slots == 0 {
        return;
    }
    for c in 0..n {
        let (x, w) = category(scale.plot, n, c);
        let group = 0.86 * w;
        let slot = group / slots as f64;
        let bar = (0.86 * slot).max(1.0);
        for (i, series) in p.bars.iter().enumerate() {
            let x0 = x - group / 2.0 + i as f64 * slot + (slot - bar) / 2.0;
            if let Some(v) = finite_at(&series.values, c) {
                let y = scale.y(v);
                s.rect(
                    x0,
                    y,
                    bar,
                    scale.plot.bottom() - y,
                    Some(series.color),
                    None,
                );
            }
            if let Some(t) = finite_at(&series.ticks, c) {
                let y = scale.y(t);
                s.line(
                    (x0 - 1.0, y),
                    (x0 + bar + 1.0, y),
                    Stroke::solid(Color::BLACK, 2.0),
                );
            }
        }
    }
}
