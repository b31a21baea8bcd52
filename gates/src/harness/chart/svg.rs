//! A small SVG writer: the few shapes the charts draw, in user units, with the text escaped.
//! Written by hand rather than through a plotting crate so that the layout (where the legend,
//! each panel and each bar go) is ours to compute and to test.

use std::fmt::Write as _;

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Color(pub u8, pub u8, pub u8);

impl Color {
    pub const BLACK: Color = Color(0, 0, 0);
    pub const GREY: Color = Color(0x99, 0x99, 0x99);
    pub const LIGHT: Color = Color(0xE4, 0xE4, 0xE4);
    pub const TEXT: Color = Color(0x22, 0x22, 0x22);
    pub const MUTED: Color = Color(0x55, 0x55, 0x55);

    fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stroke {
    pub color: Color,
    pub width: f64,
    /// Dash and gap lengths; `None` for a solid line.
    pub dash: Option<(f64, f64)>,
}

impl Stroke {
    pub fn solid(color: Color, width: f64) -> Self {
        Stroke {
            color,
            width,
            dash: None,
        }
    }

    pub fn dashed(color: Color, width: f64, dash: (f64, f64)) -> Self {
        Stroke {
            color,
            width,
            dash: Some(dash),
        }
    }

    /// The stroke of a filled shape's outline (its fill is the shape's own).
    fn edge_attrs(&self) -> String {
        self.attrs().replacen(r#"fill="none" "#, "", 1)
    }

    fn attrs(&self) -> String {
        let mut s = format!(
            r#"fill="none" stroke="{}" stroke-width="{:.2}""#,
            self.color.hex(),
            self.width
        );
        if let Some((on, off)) = self.dash {
            let _ = write!(s, r#" stroke-dasharray="{on:.1} {off:.1}""#);
        }
        s
    }
}

/// Where a text's `x` lies along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// A text's size, weight, colour and anchor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Font {
    pub size: f64,
    pub bold: bool,
    pub color: Color,
    pub anchor: Anchor,
}

impl Font {
    pub fn new(size: f64) -> Self {
        Font {
            size,
            bold: false,
            color: Color::TEXT,
            anchor: Anchor::Start,
        }
    }

    pub fn bold(self) -> Self {
        Font { bold: true, ..self }
    }

    pub fn color(self, color: Color) -> Self {
        Font { color, ..self }
    }

    pub fn anchor(self, anchor: Anchor) -> Self {
        Font { anchor, ..self }
    }
}

/// The width a text takes in a sans-serif face, estimated: 0.6 of the size per character, about
/// the average advance of DejaVu Sans and Helvetica over mixed text (digits run a few percent
/// wider, narrow letters much less), so that layouts made with it leave room when rendered.
pub fn text_width(text: &str, size: f64) -> f64 {
    0.6 * size * text.chars().count() as f64
}

/// The faces text is set in, the first that the viewer has.
const FACES: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// The marks a line's points carry, so that lines stay apart without colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// An SVG document being written.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// `x,y x,y ...` of an SVG `points` attribute.
fn point_list(points: &[(f64, f64)]) -> String {
    let pts: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.2},{y:.2}"))
        .collect();
    pts.join(" ")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        let mut svg = Svg {
            width,
            height,
            body: String::new(),
        };
        svg.rect(0.0, 0.0, width, height, Some(Color(255, 255, 255)), None);
        svg
    }

    pub fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: Option<Color>,
        edge: Option<Stroke>,
    ) {
        let fill = fill.map_or("none".to_string(), Color::hex);
        let _ = write!(
            self.body,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{fill}""#,
            w.max(0.0),
            h.max(0.0)
        );
        if let Some(s) = edge {
            let _ = write!(self.body, " {}", s.edge_attrs());
        }
        self.body.push_str("/>\n");
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: Stroke) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}" {}/>"#,
            stroke.attrs()
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        if points.len() < 2 {
            return;
        }
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" stroke-linejoin="round" {}/>"#,
            point_list(points),
            stroke.attrs()
        );
    }

    pub fn circle(
        &mut self,
        (x, y): (f64, f64),
        r: f64,
        fill: Option<Color>,
        edge: Option<Stroke>,
    ) {
        let fill = fill.map_or("none".to_string(), Color::hex);
        let edge = edge.map_or(String::new(), |s| s.edge_attrs());
        let _ = writeln!(
            self.body,
            r#"<circle cx="{x:.2}" cy="{y:.2}" r="{r:.2}" fill="{fill}" {edge}/>"#
        );
    }

    /// A marker of `size` (its width) centred on `at`, filled with `color`.
    pub fn marker(&mut self, marker: Marker, (x, y): (f64, f64), size: f64, color: Color) {
        let h = size / 2.0;
        let points = match marker {
            Marker::Circle => return self.circle((x, y), h, Some(color), None),
            Marker::Square => {
                let s = h * 0.9;
                vec![
                    (x - s, y - s),
                    (x + s, y - s),
                    (x + s, y + s),
                    (x - s, y + s),
                ]
            }
            Marker::Triangle => vec![(x, y - h * 1.1), (x + h, y + h * 0.8), (x - h, y + h * 0.8)],
            Marker::Diamond => vec![(x, y - h * 1.2), (x + h, y), (x, y + h * 1.2), (x - h, y)],
        };
        let _ = writeln!(
            self.body,
            r#"<polygon points="{}" fill="{}"/>"#,
            point_list(&points),
            color.hex()
        );
    }

    pub fn text(&mut self, (x, y): (f64, f64), font: Font, text: &str) {
        self.text_rotated((x, y), font, text, 0.0);
    }

    /// A text turned by `degrees` about its anchor point (-90 reads bottom to top).
    pub fn text_rotated(&mut self, (x, y): (f64, f64), font: Font, text: &str, degrees: f64) {
        let anchor = match font.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let weight = if font.bold {
            r#" font-weight="bold""#
        } else {
            ""
        };
        let turn = if degrees == 0.0 {
            String::new()
        } else {
            format!(r#" transform="rotate({degrees:.1} {x:.2} {y:.2})""#)
        };
        let (size, fill) = (font.size, font.color.hex());
        let _ = write!(
            self.body,
            r#"<text x="{x:.2}" y="{y:.2}" font-family="{FACES}" font-size="{size:.1}" "#
        );
        let _ = writeln!(
            self.body,
            r#"fill="{fill}" text-anchor="{anchor}"{weight}{turn}>{}</text>"#,
            escape(text)
        );
    }

    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" \
             viewBox=\"0 0 {w:.0} {h:.0}\">\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_document_is_closed() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.text((1.0, 2.0), Font::new(10.0), "q_proj 5120->12288 & <m>");
        let doc = svg.finish();
        assert!(doc.starts_with("<svg"), "{doc}");
        assert!(doc.trim_end().ends_with("</svg>"), "{doc}");
        assert!(doc.contains("5120-&gt;12288 &amp; &lt;m&gt;"), "{doc}");
    }

    #[test]
    fn dashed_strokes_say_their_dashes() {
        let mut svg = Svg::new(10.0, 10.0);
        svg.line(
            (0.0, 0.0),
            (5.0, 5.0),
            Stroke::dashed(Color::BLACK, 1.5, (4.0, 3.0)),
        );
        assert!(svg.finish().contains(r#"stroke-dasharray="4.0 3.0""#));
    }
}
