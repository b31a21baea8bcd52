//! Launchers for the gemv family, the host side of its weight formats, and the CPU decodes an
//! f64 oracle needs.
//!
//! Each format has one checked launcher over its [`Group`] of stamped entries, and one over its
//! GLU entries (`gemv_*_glu`: a gate and an up matrix, `silu(g) * u` in one launch): the
//! [`Batch`] of `m` picks the entry by an exhaustive `match`, so no kernel name is ever formatted. Every argument is
//! checked by a plain function of sizes ([`q8_0_launch`], ...), tested without a GPU, before
//! anything touches the device.
//!
//! Buffers are whole allocations (`CudaSlice`) or views of part of one (`CudaView`, an engine's
//! weights in one allocation). A view may start anywhere, so each launcher refuses one whose
//! address the kernel's wide reads would misalign ([`k::weight_align`], [`k::XQ_ALIGN`], and
//! every element type's own alignment at the launch); the raw Q8_0 kernel finds its own 16-byte
//! rows on the device.
//!
//! The limits are the kernels' own, in both builds (the ABI table's limits): every offset into
//! the weights, the activation and `y` is formed in 64 bits, so no product of sizes is bounded;
//! what is bounded is each value a kernel computes in 32 bits: a raw Q8_0 row's bytes, twice
//! `in_f` in the planar tensor-core kernels, the block-128 tile offsets, and the grid-stride
//! loop of the kernels that take any grid ([`check_grid`], on the grid the launch uses).

use crate::check::{self, arg_err};
use crate::error::{ArgError, Error};
use crate::params::{DeviceIn, DeviceOut};
use crate::params::{Element, Params};
use crate::{Gpu, Module};
use cudarc::driver::LaunchConfig;
use half::f16;
use kernels_gpu::abi::{Entry, Group};
pub use kernels_gpu::gemv::Batch;
use kernels_gpu::gemv::{
    self as k, grid_cols, grid_rows, BlockQ8_0, Format, GemvE4m3, GemvE4m3B128, GemvE4m3B128Glu,
    GemvE4m3Glu, GemvQ8_0, GemvQ8_0Glu, GemvQ8_0Planar, GemvQ8_0PlanarGlu, BATCHES, BLOCK_THREADS,
    Q8_0_BLOCK_BYTES, QK,
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
#[derive(Clone, Copy)]
pub struct Activation<'a> {
    pub qs: DeviceIn<'a, i8>,
    pub d: DeviceIn<'a, f32>,
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

/// The entry that takes `m` activation rows ([`Batch::covering`]: the fewest stamped rows
/// ([`BATCHES`]) that hold them, `m` from 1 to 8), or an error naming `kernel` and what a caller
/// can do instead: at least one row, or a batch of more split into launches.
pub fn batch(kernel: &'static str, m: usize) -> Result<Batch, ArgError> {
    Batch::covering(m).ok_or_else(|| {
        let max = BATCHES[BATCHES.len() - 1];
        let hint = if m == 0 {
            "at least one row".to_string()
        } else {
            format!("split the batch into launches of at most {max} rows")
        };
        arg_err(
            kernel,
            "m",
            format!("{m} activation rows: the kernels take 1 to {max}; {hint}"),
        )
    })
}

/// A launch whose arguments passed every check: the kernel, its geometry and its scalars.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    /// The stamped kernel this launch runs.
    pub name: &'static str,
    pub format: Format,
    /// The entry's stamped rows, which hold the launch's `m`.
    pub batch: Batch,
    /// The activation rows the launch reads and writes.
    pub m: i32,
    /// Whether it is a GLU's launch (gate and up matrices of `out_f` rows each).
    pub glu: bool,
    pub cfg: LaunchConfig,
    pub in_f: i32,
    pub out_f: i32,
    /// The first output rows of the second and third [`Parts`] (`out_f` for a whole matrix).
    pub parts: [i32; 2],
}

/// Where a plain launch's output rows go: `y` holds them in up to three parts, the first
/// `rows[0]` output rows, the next `rows[1]`, the last `rows[2]`, each an `[m][rows]` matrix,
/// back to back ([`Parts::range`]). One launch over the concatenated rows of projections that
/// share an activation (q, k and v) so leaves each projection's outputs as a matrix of its own,
/// where separate launches would: a view of `y` each. A part may have no rows; the parts' rows
/// add up to `out_f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts(pub [usize; 3]);

impl Parts {
    /// One `[m][out_f]` matrix.
    pub const fn whole(out_f: usize) -> Parts {
        Parts([out_f, 0, 0])
    }

    /// The elements of `y` that part `p` holds at `m` activation rows.
    pub fn range(self, p: usize, m: usize) -> std::ops::Range<usize> {
        let first: usize = self.0[..p].iter().sum();
        m * first..m * (first + self.0[p])
    }

    /// The kernels' `part1` and `part2`, the first rows of the second and third parts, once the
    /// parts are found to add up to `out_f`.
    fn firsts(self, kernel: &'static str, out_f: usize) -> Result<[i32; 2], ArgError> {
        let [a, b, c] = self.0;
        let total = a as u128 + b as u128 + c as u128;
        if total != out_f as u128 {
            return Err(arg_err(
                kernel,
                "parts",
                format!("{a} + {b} + {c} rows = {total}, not out_f = {out_f}"),
            ));
        }
        // Within out_f, which the checks before hold within i32.
        Ok([a as i32, (a + b) as i32])
    }
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
/// Products of sizes within `i32` cannot overflow a 64-bit `usize`, and both builds form every
/// offset into the weights, the activation and `y` in 64 bits: no product of sizes is bounded.
fn common<G: Group<Key = Batch>>(
    format: Format,
    shape: Shape,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let batch = batch(G::BODY, shape.m)?;
    let name = G::entry(batch).name;
    let in_f = check::q8_len(name, "in_f", shape.in_f)?;
    let out_f = check::positive_i32(name, "out_f", shape.out_f)?;
    check::q8_1_planes(name, x.qs, x.d, shape.m * shape.in_f)?;
    check::len(name, "y", y, shape.m * shape.out_f)?;
    Ok(Launch {
        name,
        format,
        batch,
        glu: false,
        cfg: launch_config(format, batch, out_f as u32),
        in_f,
        out_f,
        m: shape.m as i32,
        parts: [out_f; 2],
    })
}

/// The largest `out_f` of a GLU: the kernels count both matrices' rows as one of `2 out_f`
/// (`unsigned` in the .cu).
pub const GLU_MAX_ROWS: usize = 1 << 30;

/// The checks of a GLU launch of `format`: those of its plain kernel ([`common`]) with `y`
/// holding `m * out_f` outputs, and `out_f` at most [`GLU_MAX_ROWS`]; the geometry is the
/// format's tensor-core tile at every `m` ([`k::glu_grid_blocks`]).
fn glu_common<G: Group<Key = Batch>>(
    format: Format,
    shape: Shape,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let batch = batch(G::BODY, shape.m)?;
    let name = G::entry(batch).name;
    check::at_most(
        name,
        "out_f",
        shape.out_f,
        GLU_MAX_ROWS,
        "a GLU counts its gate and up rows as one matrix of 2 x out_f rows",
    )?;
    let plain = common::<G>(format, shape, x, y)?;
    let m = batch.m();
    Ok(Launch {
        glu: true,
        cfg: LaunchConfig {
            grid_dim: (k::glu_grid_blocks(format, m, plain.out_f as u32), 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: k::glu_shared_bytes(format, m),
        },
        ..plain
    })
}

/// A plain launch's refusal of one of a GLU's matrices, under the GLU's kernel and its name for
/// the argument (`renames`: the plain kernel's names and the GLU's; others, `in_f`, unchanged).
fn glu_refusal(glu: &'static str, renames: &[(&str, &'static str)], e: ArgError) -> ArgError {
    let arg = renames
        .iter()
        .find(|(plain, _)| *plain == e.arg)
        .map_or(e.arg, |(_, name)| *name);
    arg_err(glu, arg, e.why)
}

/// Checks a raw Q8_0 GLU launch: `wg` and `wu` each as `w` of [`q8_0_launch`].
pub fn q8_0_glu_launch(
    shape: Shape,
    wg: usize,
    wu: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = glu_common::<GemvQ8_0Glu>(Format::Q8_0, shape, x, y)?;
    for (arg, w) in [("wg", wg), ("wu", wu)] {
        q8_0_launch(shape, w, x, y).map_err(|e| glu_refusal(launch.name, &[("w", arg)], e))?;
    }
    Ok(launch)
}

/// Checks a planar Q8_0 GLU launch: each matrix's planes as for [`q8_0_planar_launch`] on the
/// tensor cores (`2 * in_f` within `i32` at every `m`), and its scale rows 16-byte aligned, as
/// the GLU kernel stages them (`in_f` a multiple of 256; the addresses of `wgd` and `wud` are
/// checked at the launch).
pub fn q8_0_planar_glu_launch(
    shape: Shape,
    gate: (usize, usize),
    up: (usize, usize),
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = glu_common::<GemvQ8_0PlanarGlu>(Format::Q8_0Planar, shape, x, y)?;
    check::multiple_of(launch.name, "in_f", shape.in_f, 256, false).map_err(|_| {
        arg_err(
            launch.name,
            "in_f",
            format!(
                "{} is not a multiple of 256 (the GLU stages each 32-block scale row with 16-byte copies)",
                shape.in_f
            ),
        )
    })?;
    check::within_i32(
        launch.name,
        "in_f",
        2 * shape.in_f as u128,
        "2 x in_f",
        "the .cu's tensor-core kernels test the scale rows' alignment in `int`",
    )?;
    for (names, (wq, wd)) in [
        ([("wq", "wgq"), ("wd", "wgd")], gate),
        ([("wq", "wuq"), ("wd", "wud")], up),
    ] {
        q8_0_planar_launch(shape, wq, wd, x, y).map_err(|e| glu_refusal(launch.name, &names, e))?;
    }
    Ok(launch)
}

/// Checks a per-tensor e4m3 GLU launch: each matrix and its scale as for [`e4m3_launch`].
pub fn e4m3_glu_launch(
    shape: Shape,
    gate: (usize, f32),
    up: (usize, f32),
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = glu_common::<GemvE4m3Glu>(Format::E4m3, shape, x, y)?;
    for (names, (w, scale)) in [
        ([("w", "wg"), ("scale", "gate_scale")], gate),
        ([("w", "wu"), ("scale", "up_scale")], up),
    ] {
        e4m3_launch(shape, w, scale, x, y).map_err(|e| glu_refusal(launch.name, &names, e))?;
    }
    Ok(launch)
}

/// Checks a block-128 e4m3 GLU launch: each matrix and its grid as for [`e4m3_b128_launch`], and
/// every tile scale's index within `i32` (the .cu's GLU forms it whole, the tile row's and the
/// column's, in `int`).
pub fn e4m3_b128_glu_launch(
    shape: Shape,
    gate: (usize, usize),
    up: (usize, usize),
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = glu_common::<GemvE4m3B128Glu>(Format::E4m3B128, shape, x, y)?;
    for (names, (w, grid)) in [
        ([("w", "wg"), ("grid", "gate_grid")], gate),
        ([("w", "wu"), ("grid", "up_grid")], up),
    ] {
        e4m3_b128_launch(shape, w, grid, x, y).map_err(|e| glu_refusal(launch.name, &names, e))?;
    }
    let (rows, cols) = (
        u128::from(grid_rows(launch.out_f as u32)),
        u128::from(grid_cols(launch.in_f as u32)),
    );
    check::within_i32(
        launch.name,
        "out_f",
        rows * cols - 1,
        "ceil(out_f / 128) x ceil(in_f / 128) - 1",
        "the .cu's GLU indexes the last tile scale in `int`",
    )?;
    Ok(launch)
}

/// Checks a raw Q8_0 launch: `w` holds `out_f * in_f / 32 * 34` bytes, and a row's bytes are
/// within `i32` (the .cu stages a row with `int` offsets: `in_f <= 2021161056`; the Rust kernel's
/// are `u32`).
pub fn q8_0_launch(
    shape: Shape,
    w: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<GemvQ8_0>(Format::Q8_0, shape, x, y)?;
    let row_bytes = check::product_i32(
        launch.name,
        "in_f",
        &[shape.in_f / QK as usize, Q8_0_BLOCK_BYTES as usize],
    )?;
    check::len(launch.name, "w", w, shape.out_f * row_bytes as usize)?;
    Ok(launch)
}

/// Checks a planar Q8_0 launch: `wq` holds `out_f * in_f` quants and `wd` `out_f * in_f / 32`
/// scales; on the tensor cores (`m = 4, 8`) `2 * in_f`, a scale row's bytes times 32, is within
/// `i32` (the .cu's test of the scale rows' alignment computes it in `int`: `in_f <= 2^30 - 32`).
pub fn q8_0_planar_launch(
    shape: Shape,
    wq: usize,
    wd: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<GemvQ8_0Planar>(Format::Q8_0Planar, shape, x, y)?;
    if k::tensor_cores(Format::Q8_0Planar, launch.batch.m()) {
        check::within_i32(
            launch.name,
            "in_f",
            2 * shape.in_f as u128,
            "2 x in_f",
            "the .cu's tensor-core kernels test the scale rows' alignment in `int`",
        )?;
    }
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
    let launch = common::<GemvE4m3>(Format::E4m3, shape, x, y)?;
    check::len(launch.name, "w", w, shape.out_f * shape.in_f)?;
    check::finite(launch.name, "scale", scale)?;
    Ok(launch)
}

/// Checks a block-128 e4m3 launch: `w` holds `out_f * in_f` bytes and `grid` the
/// `ceil(out_f / 128) x ceil(in_f / 128)` scales. The .cu forms `in_f + 127` (its
/// `ceil(in_f / 128)`) in `int` and a row's tile-scale index in 32 bits (the Rust kernel's in
/// `u32`); both are held within `i32`: `in_f + 127` and the last tile row's first index,
/// `(ceil(out_f / 128) - 1) * ceil(in_f / 128)`.
pub fn e4m3_b128_launch(
    shape: Shape,
    w: usize,
    grid: usize,
    x: ActivationLens,
    y: usize,
) -> Result<Launch, ArgError> {
    let launch = common::<GemvE4m3B128>(Format::E4m3B128, shape, x, y)?;
    check::len(launch.name, "w", w, shape.out_f * shape.in_f)?;
    check::within_i32(
        launch.name,
        "in_f",
        shape.in_f as u128 + 127,
        "in_f + 127",
        "the .cu counts a row's tiles in `int`",
    )?;
    let (rows, cols) = (
        u128::from(grid_rows(launch.out_f as u32)),
        u128::from(grid_cols(launch.in_f as u32)),
    );
    check::within_i32(
        launch.name,
        "grid",
        (rows - 1) * cols,
        "(ceil(out_f / 128) - 1) x ceil(in_f / 128)",
        "the .cu indexes the last tile row's first scale in `int`",
    )?;
    check::len(launch.name, "grid", grid, (rows * cols) as usize)?;
    Ok(launch)
}

/// Checks the grid of `blocks` blocks a launch of `format` at `batch` over `out_f` rows uses.
///
/// Where the format's kernel [takes any grid](k::takes_any_grid) on the CUDA cores (raw Q8_0 at
/// `m = 1, 2`), the .cu's warps take the rows in a grid-stride loop counted in `int`: a warp's row
/// moves on by the launch's `4 x blocks` warps until it passes `out_f`, so the last value it
/// forms is `out_f - 1 + 4 blocks`, which must be within `i32`. (The Rust kernels count in `u32`,
/// and the tensor-core kernels of both builds in `unsigned`, where no grid the launchers give
/// reaches 2^32.) Any other format takes [`k::grid_blocks`], one row a warp, and forms nothing
/// past `out_f`.
pub fn check_grid(
    kernel: &'static str,
    format: Format,
    batch: Batch,
    out_f: u32,
    blocks: u32,
) -> Result<(), ArgError> {
    let m = batch.m();
    if !k::takes_any_grid(format, m) || k::tensor_cores(format, m) {
        return Ok(());
    }
    let warps = u128::from(blocks) * u128::from(k::WARPS_PER_BLOCK);
    check::within_i32(
        kernel,
        "out_f",
        u128::from(out_f).saturating_sub(1) + warps,
        &format!("out_f - 1 + 4 x grid at grid = {blocks}"),
        "the .cu's grid-stride loop counts rows in `int`",
    )
}

/// Launches `entry` at `launch`'s geometry, its grid as [`k::launch_blocks`] sizes it for this
/// device where the format [`takes_any_grid`](k::takes_any_grid): from the occupancy of the
/// entry in the module's own build (the .cu's for the .cu build), then checked ([`check_grid`]);
/// a plain tensor-core grid of at most a block an SM is given the shared memory of the deeper
/// pipeline ([`k::deep_shared_bytes`]).
///
/// # Safety
/// `launch` came from the format's checks on these very buffers, and `entry` is its kernel.
unsafe fn launch_entry<P: Params>(
    entry: Entry<P>,
    module: &Module,
    gpu: &Gpu,
    launch: Launch,
    args: P::Args<'_>,
) -> Result<(), Error> {
    let mut cfg = launch.cfg;
    let m = launch.batch.m();
    let sm_count = gpu.info().sm_count;
    if launch.glu {
        let per_sm = module.entry_blocks_per_sm(entry, cfg)?;
        cfg.grid_dim.0 =
            k::glu_launch_blocks(launch.format, m, launch.out_f as u32, per_sm, sm_count);
        cfg = balanced(module, gpu, entry, cfg, per_sm)?;
    } else if k::takes_any_grid(launch.format, m) {
        let per_sm = module.entry_blocks_per_sm(entry, cfg)?;
        cfg.grid_dim.0 = k::launch_blocks(launch.format, m, launch.out_f as u32, per_sm, sm_count);
        cfg = balanced(module, gpu, entry, cfg, per_sm)?;
        let max_shared = gpu.info().max_shared_per_block;
        if let Some(deep) =
            k::deep_shared_bytes(launch.format, m, cfg.grid_dim.0, sm_count, max_shared)
        {
            cfg.shared_mem_bytes = cfg.shared_mem_bytes.max(deep);
        }
        check_grid(
            launch.name,
            launch.format,
            launch.batch,
            launch.out_f as u32,
            cfg.grid_dim.0,
        )?;
    }
    // The weights (`w`, or the planar quants `wq`; a GLU's of both matrices) and the activation's
    // quants are bytes that the kernels read in wider pieces: each buffer's address a multiple of
    // that width, and a planar GLU's scale rows 16 bytes.
    let align = k::weight_align(launch.format);
    let xq = ("xq", k::XQ_ALIGN);
    let wide: &[(&str, usize)] = match (launch.glu, launch.format) {
        (false, Format::Q8_0Planar) => &[("wq", align), xq],
        (false, _) => &[("w", align), xq],
        (true, Format::Q8_0Planar) => {
            &[("wgq", align), ("wuq", align), ("wgd", 16), ("wud", 16), xq]
        }
        (true, _) => &[("wg", align), ("wu", align), xq],
    };
    module.launch_chained(entry, gpu, cfg, args, wide)
}

/// `cfg`, a resident grid, with its dynamic shared memory padded ([`Module::entry_balancing_pad`])
/// so that an SM holds no more of its blocks than the grid spread evenly gives each, where the
/// entry's occupancy `per_sm` allows more, while [`Gpu::set_programmatic`] is on. A plain launch
/// finds the SMs idle and spreads the grid evenly; a programmatic one is placed while its
/// predecessor drains, and without the padding the SMs freed first take blocks up to the occupancy
/// and finish last (perf-notes, the decode step: resident grids held to an even share). The kernels
/// do not read the padding.
fn balanced<P: Params>(
    module: &Module,
    gpu: &Gpu,
    entry: Entry<P>,
    cfg: LaunchConfig,
    per_sm: u32,
) -> Result<LaunchConfig, Error> {
    let even = cfg.grid_dim.0.div_ceil(gpu.info().sm_count.max(1));
    if !gpu.programmatic() || even >= per_sm {
        return Ok(cfg);
    }
    let pad = module.entry_balancing_pad(entry, cfg, even)?;
    Ok(pad.map_or(cfg, |pad| LaunchConfig {
        shared_mem_bytes: cfg.shared_mem_bytes + pad,
        ..cfg
    }))
}

/// One weight matrix in its format, as a plain launch takes it.
#[derive(Clone, Copy)]
pub enum Weights<'a> {
    /// Raw ggml Q8_0: `out_f` rows of `in_f / 32` blocks, as a GGUF file stores them.
    Q8_0(DeviceIn<'a, u8>),
    Q8_0Planar(Planar<'a>),
    E4m3(E4m3<'a>),
    E4m3B128(E4m3B128<'a>),
}

/// `y[i][r] = sum_c W[r][c] x[i][c]` with the output rows in `parts` of `y` ([`Parts`]): the
/// launch of every format's plain entry, its checks those of the format's (`q8_0_launch`, ...)
/// and the parts adding up to `out_f`.
///
/// q, k and v of three tokens from one matrix of their concatenated rows, each left as its own
/// `[3][rows]` matrix:
///
/// ```no_run
/// use host::gemv::{self, Activation, Parts, Shape, Weights};
/// # fn qkv(module: &host::Module, gpu: &host::Gpu, w: &host::CudaSlice<u8>,
/// #        x: Activation<'_>) -> Result<(), host::Error> {
/// let (m, in_f, q, kv) = (3, 5120, 12288, 1024);
/// let parts = Parts([q, kv, kv]);
/// let mut y = gpu.alloc_poisoned::<f32>(m * (q + 2 * kv), 0)?;
/// let shape = Shape { m, in_f, out_f: q + 2 * kv };
/// gemv::gemv_parts(module, gpu, Weights::Q8_0(w), x, &mut y, shape, parts)?;
/// let k = y.slice(parts.range(1, m)); // k[i][r], rows 12288.. of the matrix
/// # Ok(()) }
/// ```
pub fn gemv_parts<'a>(
    module: &Module,
    gpu: &Gpu,
    w: Weights<'a>,
    x: Activation<'a>,
    y: DeviceOut<'a, f32>,
    shape: Shape,
    parts: Parts,
) -> Result<(), Error> {
    let (xl, yl) = (x.lens(), y.len());
    let mut launch = match w {
        Weights::Q8_0(w) => q8_0_launch(shape, w.len(), xl, yl),
        Weights::Q8_0Planar(p) => q8_0_planar_launch(shape, p.wq.len(), p.wd.len(), xl, yl),
        Weights::E4m3(e) => e4m3_launch(shape, e.w.len(), e.scale, xl, yl),
        Weights::E4m3B128(b) => e4m3_b128_launch(shape, b.w.len(), b.grid.len(), xl, yl),
    }?;
    launch.parts = parts.firsts(launch.name, shape.out_f)?;
    let (in_f, out_f, m, [p1, p2]) = (launch.in_f, launch.out_f, launch.m, launch.parts);
    let at = launch.batch;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        match w {
            Weights::Q8_0(w) => {
                let args = (w, x.qs, x.d, y, in_f, out_f, m, p1, p2);
                launch_entry(GemvQ8_0::entry(at), module, gpu, launch, args)
            }
            Weights::Q8_0Planar(p) => {
                let args = (p.wq, p.wd, x.qs, x.d, y, in_f, out_f, m, p1, p2);
                launch_entry(GemvQ8_0Planar::entry(at), module, gpu, launch, args)
            }
            Weights::E4m3(e) => {
                let args = (e.w, e.scale, x.qs, x.d, y, in_f, out_f, m, p1, p2);
                launch_entry(GemvE4m3::entry(at), module, gpu, launch, args)
            }
            Weights::E4m3B128(b) => {
                let args = (b.w, b.grid, x.qs, x.d, y, in_f, out_f, m, p1, p2);
                launch_entry(GemvE4m3B128::entry(at), module, gpu, launch, args)
            }
        }
    }
}

/// `y[i][r] = sum_c W[r][c] x[i][c]` for raw ggml Q8_0 weights: `w` is `out_f` rows of
/// `in_f / 32` blocks, as a GGUF file stores them; `y` is `[m][out_f]`.
pub fn gemv_q8_0(
    module: &Module,
    gpu: &Gpu,
    w: DeviceIn<'_, u8>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let parts = Parts::whole(shape.out_f);
    gemv_parts(module, gpu, Weights::Q8_0(w), x, y, shape, parts)
}

/// [`gemv_q8_0`] on the planar repack of the same weights ([`q8_0_to_planar`]): the same bits.
pub fn gemv_q8_0_planar(
    module: &Module,
    gpu: &Gpu,
    wq: DeviceIn<'_, i8>,
    wd: DeviceIn<'_, f16>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let (w, parts) = (
        Weights::Q8_0Planar(Planar { wq, wd }),
        Parts::whole(shape.out_f),
    );
    gemv_parts(module, gpu, w, x, y, shape, parts)
}

/// `y[i][r] = scale * sum_c W[r][c] x[i][c]` for e4m3 weights `w[out_f][in_f]`.
pub fn gemv_e4m3(
    module: &Module,
    gpu: &Gpu,
    w: DeviceIn<'_, u8>,
    scale: f32,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let (w, parts) = (Weights::E4m3(E4m3 { w, scale }), Parts::whole(shape.out_f));
    gemv_parts(module, gpu, w, x, y, shape, parts)
}

/// `y[i][r] = sum_c g(r, c) W[r][c] x[i][c]` for e4m3 weights and their block-128 scale
/// `grid` ([`grid_index`](k::grid_index)).
pub fn gemv_e4m3_b128(
    module: &Module,
    gpu: &Gpu,
    w: DeviceIn<'_, u8>,
    grid: DeviceIn<'_, f32>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let (w, parts) = (
        Weights::E4m3B128(E4m3B128 { w, grid }),
        Parts::whole(shape.out_f),
    );
    gemv_parts(module, gpu, w, x, y, shape, parts)
}

/// A planar Q8_0 matrix (a plain launch's, or one of a GLU's): its quants and scales.
#[derive(Clone, Copy)]
pub struct Planar<'a> {
    pub wq: DeviceIn<'a, i8>,
    pub wd: DeviceIn<'a, f16>,
}

/// A per-tensor e4m3 matrix (a plain launch's, or one of a GLU's), and its scale.
#[derive(Clone, Copy)]
pub struct E4m3<'a> {
    pub w: DeviceIn<'a, u8>,
    pub scale: f32,
}

/// A block-128 e4m3 matrix (a plain launch's, or one of a GLU's), and its scale grid.
#[derive(Clone, Copy)]
pub struct E4m3B128<'a> {
    pub w: DeviceIn<'a, u8>,
    pub grid: DeviceIn<'a, f32>,
}

/// `y[i][r] = silu(G[r] . x[i]) * (U[r] . x[i])` for raw ggml Q8_0 gate and up matrices of
/// `out_f` rows each, in one launch: the bits of [`gemv_q8_0`] on each and then
/// [`swiglu`](crate::swiglu::swiglu).
pub fn gemv_q8_0_glu(
    module: &Module,
    gpu: &Gpu,
    wg: DeviceIn<'_, u8>,
    wu: DeviceIn<'_, u8>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = q8_0_glu_launch(shape, wg.len(), wu.len(), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry(
            GemvQ8_0Glu::entry(launch.batch),
            module,
            gpu,
            launch,
            (wg, wu, x.qs, x.d, y, launch.in_f, launch.out_f, launch.m),
        )
    }
}

/// [`gemv_q8_0_glu`] on the planar repacks of both matrices: the same bits.
pub fn gemv_q8_0_planar_glu(
    module: &Module,
    gpu: &Gpu,
    gate: Planar<'_>,
    up: Planar<'_>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let lens = |p: Planar<'_>| (p.wq.len(), p.wd.len());
    let launch = q8_0_planar_glu_launch(shape, lens(gate), lens(up), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry(
            GemvQ8_0PlanarGlu::entry(launch.batch),
            module,
            gpu,
            launch,
            (
                gate.wq,
                gate.wd,
                up.wq,
                up.wd,
                x.qs,
                x.d,
                y,
                launch.in_f,
                launch.out_f,
                launch.m,
            ),
        )
    }
}

/// The GLU of per-tensor e4m3 gate and up matrices: the bits of [`gemv_e4m3`] on each and then
/// `swiglu`.
pub fn gemv_e4m3_glu(
    module: &Module,
    gpu: &Gpu,
    gate: E4m3<'_>,
    up: E4m3<'_>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let launch = e4m3_glu_launch(
        shape,
        (gate.w.len(), gate.scale),
        (up.w.len(), up.scale),
        x.lens(),
        y.len(),
    )?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry(
            GemvE4m3Glu::entry(launch.batch),
            module,
            gpu,
            launch,
            (
                gate.w,
                gate.scale,
                up.w,
                up.scale,
                x.qs,
                x.d,
                y,
                launch.in_f,
                launch.out_f,
                launch.m,
            ),
        )
    }
}

/// The GLU of block-128 e4m3 gate and up matrices: the bits of [`gemv_e4m3_b128`] on each and
/// then `swiglu`.
pub fn gemv_e4m3_b128_glu(
    module: &Module,
    gpu: &Gpu,
    gate: E4m3B128<'_>,
    up: E4m3B128<'_>,
    x: Activation<'_>,
    y: DeviceOut<'_, f32>,
    shape: Shape,
) -> Result<(), Error> {
    let lens = |p: E4m3B128<'_>| (p.w.len(), p.grid.len());
    let launch = e4m3_b128_glu_launch(shape, lens(gate), lens(up), x.lens(), y.len())?;
    // SAFETY: every extent the kernel touches was checked above.
    unsafe {
        launch_entry(
            GemvE4m3B128Glu::entry(launch.batch),
            module,
            gpu,
            launch,
            (
                gate.w,
                gate.grid,
                up.w,
                up.grid,
                x.qs,
                x.d,
                y,
                launch.in_f,
                launch.out_f,
                launch.m,
            ),
        )
    }
}

mod formats;
pub use formats::*;

#[cfg(test)]
mod tests;
