//! Launchers for the gemv family, the host side of its weight formats, and the CPU decodes an
//! f64 oracle needs.
//!
//! Each format has one checked launcher, generic over `m` through [`Entries`]: a typed `match`
//! on [`Batch`] picks the stamped kernel, so no kernel name is ever formatted. Every argument is
//! checked by a plain function of sizes ([`q8_0_launch`], ...), tested without a GPU, before
//! anything touches the device.
//!
//! Buffers are whole allocations (`CudaSlice`), which the driver aligns to 256 bytes: the
//! kernels' 16-byte loads of the planes and the activation are aligned by construction, and the
//! raw Q8_0 kernel checks its own row alignment on the device.

use crate::check::{self, arg_err};
use crate::error::{ArgError, Error};
use crate::params::{Element, Params};
use crate::{Gpu, Module};
use cudarc::driver::{CudaSlice, LaunchConfig};
use half::f16;
use kernels_gpu::abi::{Kernel, F16};
use kernels_gpu::gemv::{
    self as k, grid_cols, grid_index, grid_rows, BlockQ8_0, Format, BATCHES, BLOCK_THREADS,
    E4M3_F16, Q8_0_BLOCK_BYTES, QK,
};

/// Raw Q8_0 weights travel as the bytes of a GGUF tensor, 34 a block.
impl Element for BlockQ8_0 {
    type Scalar = u8;
    const LANES: usize = Q8_0_BLOCK_BYTES as usize;
}

/// The sizes of a GEMV: `m` activation rows of `in_f` values against `out_f` weight rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub in_f: usize,
    pub out_f: usize,
}

/// A q8_1 activation of `m` rows, as `quantize_q8_1` writes it: `qs[m][in_f]` and
/// `d[m][in_f / 32]`.
#[derive(Debug, Clone, Copy)]
pub struct Activation<'a> {
    pub qs: &'a CudaSlice<i8>,
    pub d: &'a CudaSlice<f32>,
}

/// The lengths, in elements, of an activation's two planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivationLens {
    pub qs: usize,
    pub d: usize,
}

impl Activation<'_> {
    pub fn lens(&self) -> ActivationLens {
        ActivationLens {
            qs: self.qs.len(),
            d: self.d.len(),
        }
    }
}

/// The activation row counts the kernels are stamped for ([`BATCHES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    M1,
    M2,
    M4,
    M8,
}

impl Batch {
    pub fn new(kernel: &'static str, m: usize) -> Result<Self, ArgError> {
        match m {
            1 => Ok(Batch::M1),
            2 => Ok(Batch::M2),
            4 => Ok(Batch::M4),
            8 => Ok(Batch::M8),
            _ => Err(arg_err(
                kernel,
                "m",
                format!("{m} activation rows: the kernels take {BATCHES:?}"),
            )),
        }
    }

    pub fn m(self) -> usize {
        match self {
            Batch::M1 => 1,
            Batch::M2 => 2,
            Batch::M4 => 4,
            Batch::M8 => 8,
        }
    }
}

/// The four stamped kernels of one format, one per [`Batch`], as types: they share one
/// parameter list, so one argument tuple launches any of them.
pub trait Entries {
    const FORMAT: Format;
    /// How errors name the format before `m` is known.
    const FAMILY: &'static str;
    type M1: Kernel<Params: Params>;
    type M2: Kernel<Params = <Self::M1 as Kernel>::Params>;
    type M4: Kernel<Params = <Self::M1 as Kernel>::Params>;
    type M8: Kernel<Params = <Self::M1 as Kernel>::Params>;

    fn name(batch: Batch) -> &'static str {
        match batch {
            Batch::M1 => Self::M1::NAME,
            Batch::M2 => Self::M2::NAME,
            Batch::M4 => Self::M4::NAME,
            Batch::M8 => Self::M8::NAME,
        }
    }
}

/// Declares a format's [`Entries`] from its four stamped markers.
macro_rules! entries {
    (
        $(#[$doc:meta])*
        $name:ident = $family:literal, $format:ident, $m1:ident, $m2:ident, $m4:ident, $m8:ident
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl Entries for $name {
            const FORMAT: Format = Format::$format;
            const FAMILY: &'static str = $family;
            type M1 = k::$m1;
            type M2 = k::$m2;
            type M4 = k::$m4;
            type M8 = k::$m8;
        }
    };
}

entries!(
    /// `gemv_q8_0_m*`: raw ggml Q8_0 rows.
    Q8_0 = "gemv_q8_0_m*", Q8_0, gemv_q8_0_m1, gemv_q8_0_m2, gemv_q8_0_m4, gemv_q8_0_m8
);
entries!(
    /// `gemv_q8_0_planar_m*`: Q8_0 repacked into planes.
    Q8_0Planar = "gemv_q8_0_planar_m*", Q8_0Planar,
    gemv_q8_0_planar_m1, gemv_q8_0_planar_m2, gemv_q8_0_planar_m4, gemv_q8_0_planar_m8
);
entries!(
    /// `gemv_e4m3_m*`: e4m3 rows, one scale per tensor.
    E4m3 = "gemv_e4m3_m*", E4m3, gemv_e4m3_m1, gemv_e4m3_m2, gemv_e4m3_m4, gemv_e4m3_m8
);
entries!(
    /// `gemv_e4m3_b128_m*`: e4m3 rows, one scale per 128 x 128 tile.
    E4m3B128 = "gemv_e4m3_b128_m*", E4m3B128,
    gemv_e4m3_b128_m1, gemv_e4m3_b128_m2, gemv_e4m3_b128_m4, gemv_e4m3_b128_m8
);

/// A launch whose arguments passed every check: the kernel, its geometry and its scalars.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    /// The stamped kernel this launch runs.
    pub name: &'static str,
    pub batch: Batch,
    pub cfg: LaunchConfig,
    pub in_f: i32,
    pub out_f: i32,
}

/// The geometry of a launch with one row group a warp (a tile a block on the tensor cores):
/// [`k::grid_blocks`] blocks of [`BLOCK_THREADS`] threads, the tensor-core stages as dynamic
/// shared memory (the CUDA-core kernels' arrays are static). For the
/// formats that [`take any grid`](k::takes_any_grid), the launch itself shrinks the grid to
/// [`k::launch_blocks`], which needs the kernel's occupancy on the device.
pub fn launch_config(format: Format, batch: Batch, out_f: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (k::grid_blocks(format, batch.m(), out_f), 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: k::dynamic_shared_bytes(format, batch.m()),
    }
}

/// The checks every format shares: `m` one of [`BATCHES`], `in_f` a positive multiple of 32
/// within `i32`, `out_f` positive within `i32`, the activation planes and `y` long enough.
/// Products of sizes within `i32` cannot overflow a 64-bit `usize`, and the kernels form every
/// offset that can pass 2^31 in 64 bits.
fn common<E: Entries>(shape: Shape, x: ActivationLens, y: usize) -> Result<Launch, ArgError> {
    let batch = Batch::new(E::FAMILY, shape.m)?;
    let name = E::name(batch);
    let in_f = check::q8_len(name, "in_f", shape.in_f)?;
    let out_f = check::positive_i32(name, "out_f", shape.out_f)?;
    check::q8_1_planes(name, x.qs, x.d, shape.m * shape.in_f)?;
    check::len(name, "y", y, shape.m * shape.out_f)?;
    Ok(Launch {
        name,
        batch,
        cfg: launch_config(E::FORMAT, batch, out_f as u32),
        in_f,
        out_f,
    })
}

/// Checks a raw Q8_0 launch: `w` holds `out_f * in_f / 32 * 34` bytes, and a row's bytes are
/// within `i32` (the kernel stages a row with 32-bit offsets).
pub fn q8_0_launch(
    shape: Shape,
    w: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<Q8_0>(shape, x, y)?;
    let row_bytes = check::product_i32(
        launch.name,
        "in_f",
        &[shape.in_f / QK as usize, Q8_0_BLOCK_BYTES as usize],
    )?;
    check::len(launch.name, "w", w, shape.out_f * row_bytes as usize)?;
    Ok(launch)
}

/// Checks a planar Q8_0 launch: `wq` holds `out_f * in_f` quants and `wd` `out_f * in_f / 32`
/// scales.
pub fn q8_0_planar_launch(
    shape: Shape,
    wq: usize,
    wd: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<Q8_0Planar>(shape, x, y)?;
    check::len(launch.name, "wq", wq, shape.out_f * shape.in_f)?;
    check::len(
        launch.name,
        "wd",
        wd,
        shape.out_f * (shape.in_f / QK as usize),
    )?;
    Ok(launch)
}

/// Checks a per-tensor e4m3 launch: `w` holds `out_f * in_f` bytes and `scale` is finite.
pub fn e4m3_launch(
    shape: Shape,
    w: usize,
    scale: f32,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<E4m3>(shape, x, y)?;
    check::len(launch.name, "w", w, shape.out_f * shape.in_f)?;
    check::finite(launch.name, "scale", scale)?;
    Ok(launch)
}

/// Checks a block-128 e4m3 launch: `w` holds `out_f * in_f` bytes and `grid` the
/// `ceil(out_f / 128) x ceil(in_f / 128)` scales, a count within `i32` (the kernel indexes the
/// grid with 32-bit arithmetic).
pub fn e4m3_b128_launch(
    shape: Shape,
    w: usize,
    grid: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<E4m3B128>(shape, x, y)?;
    check::len(launch.name, "w", w, shape.out_f * shape.in_f)?;
    let cells = check::product_i32(
        launch.name,
        "grid",
        &[
            grid_rows(launch.out_f as u32) as usize,
            grid_cols(launch.in_f as u32) as usize,
        ],
    )?;
    check::len(launch.name, "grid", grid, cells as usize)?;
    Ok(launch)
}

/// Launches the kernel of `launch.batch` among `E`'s four.
///
/// # Safety
/// `launch` came from the format's checks on these very buffers.
unsafe fn launch_entry<E: Entries>(
    module: &Module,
    gpu: &Gpu,
    launch: Launch,
    args: <<E::M1 as Kernel>::Params as Params>::Args<'_>,
) -> Result<(), Error> {
    match launch.batch {
        Batch::M1 => launch_kernel::<E::M1>(module, gpu, E::FORMAT, launch, args),
        Batch::M2 => launch_kernel::<E::M2>(module, gpu, E::FORMAT, launch, args),
        Batch::M4 => launch_kernel::<E::M4>(module, gpu, E::FORMAT, launch, args),
        Batch::M8 => launch_kernel::<E::M8>(module, gpu, E::FORMAT, launch, args),
    }
}

/// Launches `K` at `launch`'s geometry, its grid as [`k::launch_blocks`] sizes it for this
/// device where the format [`takes_any_grid`](k::takes_any_grid).
///
/// # Safety
/// As [`launch_entry`].
unsafe fn launch_kernel<K: Kernel<Params: Params>>(
    module: &Module,
    gpu: &Gpu,
    format: Format,
    launch: Launch,
    args: <K::Params as Params>::Args<'_>,
) -> Result<(), Error> {
    let mut cfg = launch.cfg;
    if k::takes_any_grid(format, launch.batch.m()) {
        let per_sm = module.blocks_per_sm::<K>(cfg)?;
        let sm_count = gpu.info().sm_count;
        cfg.grid_dim.0 = k::launch_blocks(
            format,
            launch.batch.m(),
            launch.out_f as u32,
            per_sm,
            sm_count,
        );
    }
    module.launch::<K>(gpu, cfg, args)
}

/// `y[i][r] = sum_c W[r][c] x[i][c]` for raw ggml Q8_0 weights: `w` is `out_f` rows of
/// `in_f / 32` blocks, as a GGUF file stores them.
pub fn gemv_q8_0(
    module: &Module,
    gpu: &Gpu,
    w: &CudaSlice<u8>,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = q8_0_launch(shape, w.len(), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry::<Q8_0>(
            module,
            gpu,
            launch,
            (w, x.qs, x.d, y, launch.in_f, launch.out_f),
        )
    }
}

/// [`gemv_q8_0`] on the planar repack of the same weights ([`q8_0_to_planar`]): the same bits.
pub fn gemv_q8_0_planar(
    module: &Module,
    gpu: &Gpu,
    wq: &CudaSlice<i8>,
    wd: &CudaSlice<f16>,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = q8_0_planar_launch(shape, wq.len(), wd.len(), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry::<Q8_0Planar>(
            module,
            gpu,
            launch,
            (wq, wd, x.qs, x.d, y, launch.in_f, launch.out_f),
        )
    }
}

/// `y[i][r] = scale * sum_c W[r][c] x[i][c]` for e4m3 weights `w[out_f][in_f]`.
pub fn gemv_e4m3(
    module: &Module,
    gpu: &Gpu,
    w: &CudaSlice<u8>,
    scale: f32,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = e4m3_launch(shape, w.len(), scale, x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry::<E4m3>(
            module,
            gpu,
            launch,
            (w, scale, x.qs, x.d, y, launch.in_f, launch.out_f),
        )
    }
}

/// `y[i][r] = sum_c g(r, c) W[r][c] x[i][c]` for e4m3 weights and their block-128 scale
/// `grid` ([`grid_index`]).
pub fn gemv_e4m3_b128(
    module: &Module,
    gpu: &Gpu,
    w: &CudaSlice<u8>,
    grid: &CudaSlice<f32>,
    x: Activation<'_>,
    y: &mut CudaSlice<f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = e4m3_b128_launch(shape, w.len(), grid.len(), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry::<E4m3B128>(
            module,
            gpu,
            launch,
            (w, grid, x.qs, x.d, y, launch.in_f, launch.out_f),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Host-side formats and CPU decodes.

/// Raw Q8_0 bytes (as a GGUF tensor holds them) as blocks.
///
/// # Panics
/// If `bytes` is not a whole number of 34-byte blocks.
pub fn q8_0_blocks(bytes: &[u8]) -> Vec<BlockQ8_0> {
    let block = Q8_0_BLOCK_BYTES as usize;
    assert!(
        bytes.len().is_multiple_of(block),
        "{} bytes are not whole 34-byte Q8_0 blocks",
        bytes.len()
    );
    bytes
        .chunks_exact(block)
        .map(|b| BlockQ8_0 {
            d: F16(u16::from_le_bytes([b[0], b[1]])),
            qs: std::array::from_fn(|k| b[2 + k] as i8),
        })
        .collect()
}

/// Blocks as the raw bytes the raw Q8_0 kernels read.
pub fn q8_0_bytes(blocks: &[BlockQ8_0]) -> Vec<u8> {
    blocks
        .iter()
        .flat_map(|b| {
            b.d.0
                .to_le_bytes()
                .into_iter()
                .chain(b.qs.iter().map(|&q| q as u8))
        })
        .collect()
}

/// The planar repack of Q8_0 blocks ([`kernels_gpu::gemv::q8_0_to_planar`]), as the planar
/// kernels' buffers: quants and f16 scales.
pub fn q8_0_to_planar(blocks: &[BlockQ8_0]) -> (Vec<i8>, Vec<f16>) {
    let mut qs = vec![0; blocks.len() * QK as usize];
    let mut d = vec![F16(0); blocks.len()];
    k::q8_0_to_planar(blocks, &mut qs, &mut d);
    (qs, d.into_iter().map(|h| f16::from_bits(h.0)).collect())
}

/// The value of an e4m3 byte as both builds decode it ([`E4M3_F16`]); NaN for 0x7F and 0xFF.
pub fn e4m3_f64(byte: u8) -> f64 {
    f16::from_bits(E4M3_F16[byte as usize].0).to_f64()
}

/// One activation row of a q8_1 activation (`qs[in_f]`, `d[in_f / 32]`) as f64.
pub fn q8_1_row_f64(qs: &[i8], d: &[f32]) -> Vec<f64> {
    qs.iter()
        .enumerate()
        .map(|(c, &q)| f64::from(d[c / QK as usize]) * f64::from(q))
        .collect()
}

/// One raw Q8_0 weight row (its `in_f / 32` blocks) as f64: `d * q`.
pub fn q8_0_row_f64(row: &[BlockQ8_0]) -> Vec<f64> {
    row.iter()
        .flat_map(|b| {
            let d = f16::from_bits(b.d.0).to_f64();
            b.qs.iter().map(move |&q| d * f64::from(q))
        })
        .collect()
}

/// One planar Q8_0 weight row (`qs[in_f]`, `d[in_f / 32]`) as f64: `d * q`.
pub fn q8_0_planar_row_f64(qs: &[i8], d: &[f16]) -> Vec<f64> {
    qs.iter()
        .enumerate()
        .map(|(c, &q)| d[c / QK as usize].to_f64() * f64::from(q))
        .collect()
}

/// One per-tensor e4m3 weight row as f64, the tensor's scale applied.
pub fn e4m3_row_f64(row: &[u8], scale: f32) -> Vec<f64> {
    row.iter()
        .map(|&b| e4m3_f64(b) * f64::from(scale))
        .collect()
}

/// Weight row `r` of a block-128 e4m3 matrix with `row.len()` columns as f64, each weight times
/// its tile's scale in `grid`.
pub fn e4m3_b128_row_f64(row: &[u8], grid: &[f32], r: usize) -> Vec<f64> {
    let in_f = row.len() as u32;
    row.iter()
        .enumerate()
        .map(|(c, &b)| {
            let g = grid[grid_index(r as u32, c as u32, in_f) as usize];
            e4m3_f64(b) * f64::from(g)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::gemv::rows_per_block;

    const SHAPE: Shape = Shape {
        m: 1,
        in_f: 5120,
        out_f: 12288,
    };

    fn act(shape: Shape) -> ActivationLens {
        ActivationLens {
            qs: shape.m * shape.in_f,
            d: shape.m * shape.in_f / 32,
        }
    }

    fn y(shape: Shape) -> usize {
        shape.m * shape.out_f
    }

    fn q8_0_bytes_of(shape: Shape) -> usize {
        shape.out_f * shape.in_f / 32 * 34
    }

    fn grid_of(shape: Shape) -> usize {
        shape.out_f.div_ceil(128) * shape.in_f.div_ceil(128)
    }

    /// Every format's checker on `shape` with every buffer exactly as long as needed.
    fn all_formats(shape: Shape) -> [Result<Launch, ArgError>; 4] {
        let (x, y, n) = (act(shape), y(shape), shape.out_f * shape.in_f);
        [
            q8_0_launch(shape, q8_0_bytes_of(shape), x, y),
            q8_0_planar_launch(shape, n, n / 32, x, y),
            e4m3_launch(shape, n, 0.5, x, y),
            e4m3_b128_launch(shape, n, grid_of(shape), x, y),
        ]
    }

    #[test]
    fn exact_buffers_pass_and_pick_the_stamped_kernel() {
        for m in [1, 2, 4, 8] {
            let shape = Shape { m, ..SHAPE };
            let names = all_formats(shape).map(|l| l.unwrap().name);
            let expect = [
                format!("gemv_q8_0_m{m}"),
                format!("gemv_q8_0_planar_m{m}"),
                format!("gemv_e4m3_m{m}"),
                format!("gemv_e4m3_b128_m{m}"),
            ];
            assert_eq!(names.map(String::from), expect);
        }
    }

    #[test]
    fn m_must_be_a_stamped_batch() {
        for m in [0, 3, 5, 16] {
            for result in all_formats(Shape { m, ..SHAPE }) {
                let err = result.unwrap_err();
                assert_eq!(err.arg, "m", "{err}");
                assert!(err.to_string().contains("[1, 2, 4, 8]"), "{err}");
            }
        }
    }

    #[test]
    fn in_f_must_be_a_positive_multiple_of_32() {
        for in_f in [0, 1, 31, 33, 5119] {
            let shape = Shape { in_f, ..SHAPE };
            for result in all_formats(shape) {
                let err = result.unwrap_err();
                assert_eq!(err.arg, "in_f", "{err}");
                assert!(err.to_string().contains("multiple of 32"), "{err}");
            }
        }
    }

    #[test]
    fn out_f_must_be_positive_and_within_i32() {
        for out_f in [0, i32::MAX as usize + 1] {
            let shape = Shape { out_f, ..SHAPE };
            for result in all_formats(shape) {
                assert_eq!(result.unwrap_err().arg, "out_f");
            }
        }
    }

    #[test]
    fn short_buffers_are_named() {
        let (x, y, n) = (act(SHAPE), y(SHAPE), SHAPE.out_f * SHAPE.in_f);
        let short = |r: Result<Launch, ArgError>| r.unwrap_err().arg;
        let q8 = q8_0_bytes_of(SHAPE);
        assert_eq!(short(q8_0_launch(SHAPE, q8 - 1, x, y)), "w");
        assert_eq!(short(q8_0_planar_launch(SHAPE, n - 1, n / 32, x, y)), "wq");
        assert_eq!(short(q8_0_planar_launch(SHAPE, n, n / 32 - 1, x, y)), "wd");
        assert_eq!(short(e4m3_launch(SHAPE, n - 1, 1.0, x, y)), "w");
        let grid = grid_of(SHAPE);
        assert_eq!(short(e4m3_b128_launch(SHAPE, n - 1, grid, x, y)), "w");
        assert_eq!(short(e4m3_b128_launch(SHAPE, n, grid - 1, x, y)), "grid");
        let qs = ActivationLens { qs: x.qs - 1, ..x };
        let d = ActivationLens { d: x.d - 1, ..x };
        for (lens, arg) in [(qs, "qs"), (d, "d")] {
            assert_eq!(short(e4m3_launch(SHAPE, n, 1.0, lens, y)), arg);
            assert_eq!(short(q8_0_launch(SHAPE, q8, lens, y)), arg);
        }
        assert_eq!(short(e4m3_launch(SHAPE, n, 1.0, x, y - 1)), "y");
        assert_eq!(short(q8_0_planar_launch(SHAPE, n, n / 32, x, y - 1)), "y");
    }

    #[test]
    fn a_batch_needs_m_activation_rows_and_m_output_rows() {
        let shape = Shape { m: 4, ..SHAPE };
        let n = shape.out_f * shape.in_f;
        let one_row = act(SHAPE);
        let err = e4m3_launch(shape, n, 1.0, one_row, y(shape)).unwrap_err();
        assert_eq!(err.arg, "qs");
        let err = e4m3_launch(shape, n, 1.0, act(shape), y(SHAPE)).unwrap_err();
        assert_eq!(err.arg, "y");
    }

    #[test]
    fn non_finite_scale_is_refused() {
        let n = SHAPE.out_f * SHAPE.in_f;
        for scale in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let err = e4m3_launch(SHAPE, n, scale, act(SHAPE), y(SHAPE)).unwrap_err();
            assert_eq!(err.arg, "scale");
        }
        e4m3_launch(SHAPE, n, -0.0, act(SHAPE), y(SHAPE)).unwrap();
    }

    #[test]
    fn q8_0_rows_past_i32_bytes_are_refused() {
        // 2^31 - 32 values: a multiple of 32 within i32, but 34/32 of it in bytes is not.
        let shape = Shape {
            m: 1,
            in_f: i32::MAX as usize - 31,
            out_f: 1,
        };
        let err = q8_0_launch(shape, usize::MAX, act(shape), 1).unwrap_err();
        assert_eq!(err.arg, "in_f");
        assert!(err.to_string().contains("i32::MAX"), "{err}");
    }

    #[test]
    fn grids_past_i32_cells_are_refused() {
        let shape = Shape {
            m: 1,
            in_f: 1 << 30,
            out_f: 1 << 30,
        };
        let err =
            e4m3_b128_launch(shape, usize::MAX, usize::MAX, act(shape), usize::MAX).unwrap_err();
        assert_eq!(err.arg, "grid");
    }

    #[test]
    fn geometry_covers_every_row_in_whole_warps() {
        for m in [1, 2, 4, 8] {
            for out_f in [1, 2, 7, 8, 9, 129, 1024, 5120, 12288, 17408] {
                let shape = Shape { m, out_f, ..SHAPE };
                for (format, launch) in [
                    Format::Q8_0,
                    Format::Q8_0Planar,
                    Format::E4m3,
                    Format::E4m3B128,
                ]
                .into_iter()
                .zip(all_formats(shape))
                {
                    let cfg = launch.unwrap().cfg;
                    let rows = rows_per_block(format, m) as usize;
                    let blocks = cfg.grid_dim.0 as usize;
                    assert_eq!(cfg.block_dim, (128, 1, 1));
                    assert_eq!((cfg.grid_dim.1, cfg.grid_dim.2), (1, 1));
                    assert!(blocks * rows >= out_f, "{format:?} m={m} out_f={out_f}");
                    assert!(
                        (blocks - 1) * rows < out_f,
                        "{format:?} m={m} out_f={out_f}"
                    );
                    assert_eq!(cfg.shared_mem_bytes, k::dynamic_shared_bytes(format, m));
                }
            }
        }
    }

    #[test]
    fn raw_bytes_round_trip_through_blocks() {
        let bytes: Vec<u8> = (0..34 * 3).map(|i| (i * 37 + 11) as u8).collect();
        let blocks = q8_0_blocks(&bytes);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[1].d, F16(u16::from_le_bytes([bytes[34], bytes[35]])));
        assert_eq!(blocks[2].qs[31], bytes[34 * 3 - 1] as i8);
        assert_eq!(q8_0_bytes(&blocks), bytes);
    }

    #[test]
    fn planar_repack_keeps_every_value() {
        let blocks: Vec<BlockQ8_0> = (0..6)
            .map(|n| BlockQ8_0 {
                d: F16(0x3C00 + n as u16),
                qs: std::array::from_fn(|k| (n * 32 + k) as i8),
            })
            .collect();
        let (qs, d) = q8_0_to_planar(&blocks);
        // 3 rows of 2 blocks (in_f = 64): the planar row decodes to the raw row.
        for r in 0..3 {
            let raw = q8_0_row_f64(&blocks[2 * r..2 * r + 2]);
            let planar = q8_0_planar_row_f64(&qs[64 * r..64 * (r + 1)], &d[2 * r..2 * r + 2]);
            assert_eq!(raw, planar);
        }
        assert_eq!(d[5].to_bits(), 0x3C05);
        assert_eq!(qs[5 * 32 + 7], (5 * 32 + 7) as i8);
    }

    #[test]
    fn oracle_rows_apply_their_scales() {
        assert_eq!(e4m3_f64(0x38), 1.0);
        assert_eq!(e4m3_f64(0xB8), -1.0);
        assert!(e4m3_f64(0x7F).is_nan() && e4m3_f64(0xFF).is_nan());
        assert_eq!(e4m3_row_f64(&[0x38, 0x40], 0.5), [0.5, 1.0]);
        assert_eq!(q8_1_row_f64(&[3, -2], &[0.25]), [0.75, -0.5]);
        // A 2 x 160 grid of tiles: row 130 is in tile row 1; column 150 in tile column 1.
        let in_f = 160;
        let grid = [1.0, 2.0, 3.0, 4.0];
        let row = vec![0x38u8; in_f];
        let decoded = e4m3_b128_row_f64(&row, &grid, 130);
        assert_eq!(
            (decoded[0], decoded[127], decoded[128], decoded[159]),
            (3.0, 3.0, 4.0, 4.0)
        );
        let decoded = e4m3_b128_row_f64(&row, &grid, 127);
        assert_eq!((decoded[0], decoded[150]), (1.0, 2.0));
    }
}
