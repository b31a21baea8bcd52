//! `swiglu_q8_1` (swiglu and quantize_q8_1 in one launch, rows of `g` and `u` `ld` floats apart)
//! gives, in both builds, the bits of `swiglu` on each row followed by `quantize_q8_1` of the
//! whole output: on rows wider than a block, strides past the row (their padding NaN, which must
//! not be read), blocks of zeros, blocks whose `amax` is subnormal, and swiglu's edge values (NaN,
//! infinities, `g` past expf's range). Buffers too short or misaligned are refused, naming them.

use crate::arch::keep;
use host::norm_q8::{self, Rows};
use host::{swiglu, CudaSlice, Error, Gpu, Module, FERROCUDA};

/// `(nrows, ncols, ld)`: one q8_1 block; a stride 4 floats past the row; rows of two blocks of
/// threads and a ragged third; the decode step's gate/up halves at eight rows; 65 rows.
const SHAPES: [(usize, usize, usize); 5] = [
    (1, 32, 32),
    (3, 96, 100),
    (2, 2080, 4160),
    (8, 17408, 34816),
    (65, 1024, 1028),
];

const INF: f32 = f32::INFINITY;
/// swiglu's corners: `g` where `expf(-g)` is subnormal or past f32, products past f32.
const EDGE_G: [f32; 13] = [
    0.0,
    -0.0,
    1e-45,
    -1e-40,
    1.0,
    -20.0,
    88.0,
    -89.0,
    -100.0,
    1e30,
    f32::MAX,
    -INF,
    f32::NAN,
];
const EDGE_U: [f32; 7] = [1.0, -0.0, 3e-39, 1e30, -2.5, INF, f32::NAN];

/// `g` and `u` of one case: in each row, q8_1 block `b` (of 32 columns) is zeros when `b % 7 ==
/// 3`, of a subnormal `amax` when `b % 7 == 5`, swiglu's edge values when `b % 7 == 6`, and
/// uniform otherwise; the stride's padding is NaN.
fn inputs(nrows: usize, ncols: usize, ld: usize) -> (Vec<f32>, Vec<f32>) {
    let mut g = vec![f32::NAN; (nrows - 1) * ld + ncols];
    let mut u = g.clone();
    for r in 0..nrows {
        for c in 0..ncols {
            let i = r * ld + c;
            let h = (i as u32).wrapping_mul(0x9E37_79B9).rotate_left(11);
            let unit = (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
            (g[i], u[i]) = match c / 32 % 7 {
                3 => (0.0, unit),
                5 => (1e-20 * (1.0 + unit), 1e-20),
                6 => (EDGE_G[i % EDGE_G.len()], EDGE_U[i % EDGE_U.len()]),
                _ => (8.0 * unit, 4.0 * unit.sin()),
            };
        }
    }
    (g, u)
}

/// What both ways write: `y` and its q8_1 planes, poisoned.
struct Out {
    y: CudaSlice<f32>,
    qs: CudaSlice<i8>,
    d: CudaSlice<f32>,
}

impl Out {
    fn new(gpu: &Gpu, n: usize) -> Result<Out, Error> {
        Ok(Out {
            y: gpu.alloc_poisoned(n, 0xff)?,
            qs: gpu.alloc_poisoned(n, 0x55)?,
            d: gpu.alloc_poisoned(n / 32, 0xff)?,
        })
    }

    fn bytes(&self, gpu: &Gpu) -> Result<[Vec<u8>; 3], Error> {
        let mut out: [Vec<u8>; 3] = Default::default();
        keep(gpu, &mut out[0], &self.y)?;
        keep(gpu, &mut out[1], &self.qs)?;
        keep(gpu, &mut out[2], &self.d)?;
        Ok(out)
    }
}

/// y, qs and d of the chain (swiglu row by row, then quantize_q8_1) on the Rust build.
fn chain(
    gpu: &Gpu,
    module: &Module,
    (g, u): (&CudaSlice<f32>, &CudaSlice<f32>),
    (nrows, ncols, ld): (usize, usize, usize),
) -> Result<[Vec<u8>; 3], Error> {
    let n = nrows * ncols;
    let mut o = Out::new(gpu, n)?;
    for r in 0..nrows {
        let row = r * ld..r * ld + ncols;
        let mut y = o.y.slice_mut(r * ncols..(r + 1) * ncols);
        swiglu::swiglu(module, gpu, &g.slice(row.clone()), &u.slice(row), &mut y)?;
    }
    norm_q8::quantize_q8_1(module, gpu, &o.y, &mut o.qs, &mut o.d, n)?;
    o.bytes(gpu)
}

/// y, qs and d of one `swiglu_q8_1` launch on `module`.
fn fused(
    gpu: &Gpu,
    module: &Module,
    (g, u): (&CudaSlice<f32>, &CudaSlice<f32>),
    (nrows, ncols, ld): (usize, usize, usize),
) -> Result<[Vec<u8>; 3], Error> {
    let mut o = Out::new(gpu, nrows * ncols)?;
    let rows = Rows { nrows, ncols };
    norm_q8::swiglu_q8_1(module, gpu, g, u, ld, &mut o.y, &mut o.qs, &mut o.d, rows)?;
    o.bytes(gpu)
}

pub fn swiglu_q8_gives_the_chains_bits(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let cu = Module::cu_of(gpu, &[FERROCUDA], module.arch()).map_err(err)?;
    let mut failures = Vec::new();
    for shape @ (nrows, ncols, ld) in SHAPES {
        let (g, u) = inputs(nrows, ncols, ld);
        let (g, u) = (gpu.upload(&g).map_err(err)?, gpu.upload(&u).map_err(err)?);
        let want = chain(gpu, module, (&g, &u), shape).map_err(err)?;
        for (build, m) in [("Rust", module), (".cu", &cu)] {
            let got = fused(gpu, m, (&g, &u), shape).map_err(err)?;
            for ((name, w), gb) in ["y", "qs", "d"].iter().zip(&want).zip(&got) {
                if let Some(at) = (0..w.len()).find(|&i| w[i] != gb[i]) {
                    failures.push(format!(
                        "{build} {nrows}x{ncols} ld {ld}: {name} differs from the chain's at byte {at}"
                    ));
                }
            }
        }
    }
    // Refusals before the launch: `g` one float short of its last row, `u` a float off 16 bytes.
    let g = gpu.upload(&[1.0f32; 200]).map_err(err)?;
    let mut o = Out::new(gpu, 128).map_err(err)?;
    let rows = Rows {
        nrows: 2,
        ncols: 64,
    };
    for (what, want, gv, uv) in [
        ("g one float short", "g", g.slice(0..131), g.slice(0..132)),
        (
            "u a float off 16 bytes",
            "u",
            g.slice(0..132),
            g.slice(1..133),
        ),
    ] {
        match norm_q8::swiglu_q8_1(
            module, gpu, &gv, &uv, 68, &mut o.y, &mut o.qs, &mut o.d, rows,
        ) {
            Err(Error::Arg(a)) if a.arg == want => {}
            other => failures.push(format!(
                "{what}: expected a refusal naming `{want}`, got {other:?}"
            )),
        }
    }
    if failures.is_empty() {
        println!(
            "    {} shapes: both builds give the chain's bits",
            SHAPES.len()
        );
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}
