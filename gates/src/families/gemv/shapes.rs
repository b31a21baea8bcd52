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

/// `27b`, `1p7b`, or `INxOUT`: a custom shape is taken exactly when every format's launcher
/// takes it at every `m` the gate checks (`in_f` a multiple of 32, each size within the kernels'
/// 32-bit arithmetic; no product of sizes is bounded, the kernels form those offsets in 64 bits).
/// The grid-stride limit of the kernels that take any grid depends on the device's grid and is
/// the launcher's to check at the launch.
pub(super) fn parse_shapes(item: &str) -> Result<Vec<Shape>, String> {
    match item {
        "27b" => return Ok(sheet(&SHEET_27B)),
        "1p7b" => return Ok(sheet(&SHEET_1P7B)),
        _ => {}
    }
    let (in_f, out_f) =
        parse_pair(item, ("IN", "OUT")).map_err(|e| format!("{e} (nor 27b or 1p7b)"))?;
    for m in BATCHES {
        launches_take(launch::Shape { m, in_f, out_f }).map_err(shape_refusal)?;
    }
    Ok(vec![Shape {
        name: "",
        in_f,
        out_f,
    }])
}

/// Whether every format's launcher takes `shape`, its buffers exactly as long as the gate makes
/// them.
fn launches_take(shape: launch::Shape) -> Result<(), host::ArgError> {
    let (m, in_f, out_f) = (shape.m, shape.in_f, shape.out_f);
    let x = launch::ActivationLens {
        qs: m.saturating_mul(in_f),
        d: m.saturating_mul(in_f / QK as usize),
    };
    let (y, n) = (m.saturating_mul(out_f), out_f.saturating_mul(in_f));
    let blocks = out_f.saturating_mul(in_f / QK as usize);
    let grid = (grid_rows(out_f.min(u32::MAX as usize) as u32) as usize)
        .saturating_mul(grid_cols(in_f.min(u32::MAX as usize) as u32) as usize);
    launch::q8_0_launch(shape, blocks.saturating_mul(34), x, y)?;
    launch::q8_0_planar_launch(shape, n, blocks, x, y)?;
    launch::e4m3_launch(shape, n, E4M3_SCALE, x, y)?;
    launch::e4m3_b128_launch(shape, n, grid, x, y)?;
    Ok(())
}

pub(super) fn format_label(f: Format) -> &'static str {
    match f {
        Format::Q8_0 => "q8_0",
        Format::Q8_0Planar => "q8_0 planar",
        Format::E4m3 => "e4m3",
        Format::E4m3B128 => "e4m3 b128",
    }
}
