//! The shapes of the gate: the sheets of real models and `--shapes`.

use super::*;

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.name.is_empty() {
            write!(f, "{} ", self.name)?;
        }
        write!(f, "{}->{}", self.in_f, self.out_f)
    }
}

/// The seed's shape sheets: the projections of a 27B and of a 1.7B model (in_f -> out_f).
pub(super) const SHEET_27B: [(&str, usize, usize); 6] = [
    ("q_proj", 5120, 12288),
    ("k/v_proj", 5120, 1024),
    ("o_proj", 6144, 5120),
    ("gate/up_proj", 5120, 17408),
    ("down_proj", 17408, 5120),
    ("square-ref", 5120, 5120),
];

pub(super) const SHEET_1P7B: [(&str, usize, usize); 5] = [
    ("q_proj", 2048, 2048),
    ("k/v_proj", 2048, 1024),
    ("o_proj", 2048, 2048),
    ("gate/up_proj", 2048, 6144),
    ("down_proj", 6144, 2048),
];

pub(super) fn sheet(rows: &[(&'static str, usize, usize)]) -> Vec<Shape> {
    rows.iter()
        .map(|&(name, in_f, out_f)| Shape { name, in_f, out_f })
        .collect()
}

/// `27b`, `1p7b`, or `INxOUT` (in_f a multiple of 32, both within the kernels' i32 indexing).
pub(super) fn parse_shapes(item: &str) -> Result<Vec<Shape>, String> {
    match item {
        "27b" => return Ok(sheet(&SHEET_27B)),
        "1p7b" => return Ok(sheet(&SHEET_1P7B)),
        _ => {}
    }
    let (in_f, out_f) =
        parse_pair(item, ("IN", "OUT")).map_err(|e| format!("{e} (nor 27b or 1p7b)"))?;
    let shape = launch::Shape {
        m: M_MAX,
        in_f,
        out_f,
    };
    let x = launch::ActivationLens {
        qs: M_MAX * in_f,
        d: M_MAX * in_f / QK as usize,
    };
    launch::q8_0_launch(shape, out_f * (in_f / 32) * 34, x, M_MAX * out_f)
        .map_err(shape_refusal)?;
    host::check::product_i32("gemv", "in_f x out_f", &[in_f, out_f]).map_err(shape_refusal)?;
    Ok(vec![Shape {
        name: "",
        in_f,
        out_f,
    }])
}

pub(super) fn format_label(f: Format) -> &'static str {
    match f {
        Format::Q8_0 => "q8_0",
        Format::Q8_0Planar => "q8_0 planar",
        Format::E4m3 => "e4m3",
        Format::E4m3B128 => "e4m3 b128",
    }
}
