//! GEMV at decode: `y[i][r] = sum_c W[r][c] * x[i][c]` for `m` activation rows `x` (q8_1) and
//! one weight matrix `W` of `out_f` rows by `in_f` columns, in four weight formats:
//!
//! - [`Format::Q8_0`]: ggml `block_q8_0` rows ([`BlockQ8_0`], 34 bytes per 32 weights, 2-byte
//!   aligned), `dp4a` against the activation's bytes;
//! - [`Format::Q8_0Planar`]: the same weights repacked at load ([`q8_0_to_planar`]) into an i8
//!   plane and an f16 scale plane, read with 16-byte loads; its output equals the raw arm's bit
//!   for bit;
//! - [`Format::E4m3`]: FP8 e4m3 rows (one byte a weight) and one f32 scale for the tensor;
//! - [`Format::E4m3B128`]: the same plane and an f32 scale per 128 x 128 tile ([`grid_index`]).
//!
//! Each format is stamped for `m` in [`BATCHES`]. Decode is weight-stream-bound: an `m = 1` GEMV
//! reads every weight byte once, so its speed is the HBM bandwidth it reaches, and every weight
//! byte is read with 16-byte loads by consecutive lanes.
//!
//! # Thread mapping (the CUDA-core Q8_0 kernels)
//! A warp owns one weight row (the last warp's surplus rows repeat the last row and store
//! nothing). In the raw Q8_0 kernels the warps take rows in turn, as many as the grid leaves them
//! ([`takes_any_grid`], [`launch_blocks`]); in the planar ones each warp takes one. Lane `l` takes
//! the 32-value blocks `b = l + 32 j` of its row in ascending `j`, with [`blocks_per_trip`]
//! blocks of every row and activation row in hand before using any (loaded together, or staged
//! through shared memory a trip ahead; the last, ragged trip goes block by block). At the end a
//! xor butterfly over the warp (offsets 16, 8, 4, 2, 1) sums the lanes and lane 0 writes `y`.
//!
//! # Floating point, per weight row `r` and activation row `i`
//! Every format folds the row's blocks into 32 classes, `b mod 32`, then adds the classes as that
//! butterfly does. Class `n` starts at `acc = 0` and takes its blocks `b` in ascending order:
//!
//! - Q8_0 (both layouts): `sumi = dp4a` over the block's 8 words (exact), then
//!   `acc = fma(dw * dx, (float) sumi, acc)`, where `dw` is the block's f16 scale widened and
//!   `dx` the activation block's scale (what NVCC makes of `acc += dw * dx * sumi`);
//! - e4m3: `s` is the block's sum on the tensor cores, `mma.m16n8k16` of the block's bytes
//!   `0..4` of each 8 (decoded to f16, exact, against the activation bytes as f16, exact) from
//!   zero, then a second of bytes `4..8` onto it (the `k` order in `gemv/mma/e4m3.rs`); then
//!   `acc = fma(s, dx, acc)`;
//! - e4m3 block-128: the same `s`, then `acc = fma(s, dx * g, acc)` with `g` the block's tile
//!   scale.
//!
//! Then `y` is the classes' butterfly sum, times the tensor's scale for per-tensor e4m3. None of
//! this depends on `m`, on the rows a warp takes or on [`blocks_per_trip`], so every row of an
//! `m`-row launch is bit-identical to the `m = 1` launch on that row, and the raw and planar Q8_0
//! kernels perform the same operations on the same values. The reference .cu performs the same
//! operations in the same order. The tensor cores add a block's 16 exact products and its
//! accumulator to about f32 precision but not as IEEE adds (the same way on every launch), so
//! the e4m3 rows are less exact than an `fma` chain would make them, and well within the gate's
//! `1e-5 x sum |w x|` bound (perf-notes, GEMV: e4m3 on the f16 tensor cores).
//!
//! # Tensor cores
//! From four activation rows the Q8_0 formats run on the int8 tensor cores ([`tensor_cores`]): a
//! thread block takes tiles of [`MMA_ROWS`] rows in turn, one `mma.m16n8k32` a block for the
//! tile's rows against all activation rows, and keeps each lane's accumulator of the mapping
//! above in the thread that receives that block's sum, so it performs the same operations in the
//! same order and every output keeps its bits. The e4m3 formats run on the f16 tensor cores at
//! every `m`, in tiles of `2m` rows (two sets of them for block-128 at one row,
//! [`fp8_mma_sets`]) taken by each warp or by the block's four ([`fp8_mma_warps`]); the device
//! module `gemv/mma.rs` and its format modules say how.
//!
//! # Outputs
//! The plain entries write their output rows in up to three parts of `y` (`part1`, `part2`), each
//! an `[m][rows]` matrix of its own, back to back: one launch over the concatenated rows of the
//! projections that share an activation (a decode step's q, k and v) leaves each projection's
//! outputs where an unmerged launch would have put them. A row's value does not depend on the
//! parts, only its address.
//!
//! # GLU
//! The `_glu` entries compute a decode step's `silu(W_g x) * (W_u x)` in one launch: the tensor-
//! core pipeline over tiles holding `r` rows of each matrix (the rows `t r..(t + 1) r` of the gate
//! matrix, then the same of the up matrix; `r` is half a tile), so that the thread that adds a
//! gate row's sum also adds its up row's and applies the SwiGLU kernel's `silu(g) * u` to them.
//! A row's sums are the plain kernels', whatever rows share its tile, so the output is bit for
//! bit the plain kernel on each matrix followed by `swiglu`. The Q8_0 formats take the tensor
//! cores at every `m` here (their bits do not depend on the path).
//!
//! # NaN weights
//! Both e4m3 NaN codes (0x7F, 0xFF) decode to NaN (see [`E4M3_F16`]), and a NaN weight makes
//! its row's output NaN for every activation row (`NaN * x` is NaN even for `x = 0`). No other
//! weight value yields NaN or infinity.

use crate::abi::F16;

/// Values per block: a Q8_0 weight block, a q8_1 activation block, and a lane's unit of work in
/// every format.
pub const QK: u32 = 32;

/// Bytes of one [`BlockQ8_0`].
pub const Q8_0_BLOCK_BYTES: u32 = 34;

/// Edge of the square weight tiles that share one scale in [`Format::E4m3B128`].
pub const TILE: u32 = 128;

/// Warps per thread block, in every format.
pub const WARPS_PER_BLOCK: u32 = 4;

/// Threads per thread block, in every format.
pub const BLOCK_THREADS: u32 = 32 * WARPS_PER_BLOCK;

/// The activation row counts `m` each format is stamped for.
pub const BATCHES: [u32; 4] = [
    Batch::M1.m() as u32,
    Batch::M2.m() as u32,
    Batch::M4.m() as u32,
    Batch::M8.m() as u32,
];

/// The key of a format's entries: the activation rows `m` an entry is stamped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Batch {
    M1,
    M2,
    M4,
    M8,
}

impl Batch {
    pub const ALL: [Batch; 4] = [Batch::M1, Batch::M2, Batch::M4, Batch::M8];

    /// The activation rows, `m`.
    pub const fn m(self) -> usize {
        match self {
            Batch::M1 => 1,
            Batch::M2 => 2,
            Batch::M4 => 4,
            Batch::M8 => 8,
        }
    }

    /// The entry that takes `m` activation rows: the fewest stamped rows that hold them. An
    /// entry stamped for `n` takes any `m` with `n / 2 < m <= n` ([`live_rows`]).
    pub const fn covering(m: usize) -> Option<Batch> {
        match m {
            1 => Some(Batch::M1),
            2 => Some(Batch::M2),
            3 | 4 => Some(Batch::M4),
            5..=8 => Some(Batch::M8),
            _ => None,
        }
    }
}

/// The activation rows an entry stamped for `ACT_ROWS` reads and writes, from its argument `m`:
/// `m` itself from four rows on (`ACT_ROWS / 2 < m <= ACT_ROWS`), where the rows past it are
/// neither read (their addresses clamped to row `m - 1`, computed and dropped) nor written; one
/// and two rows take exactly their own, as a constant, so that those entries compile as they did
/// before `m` was an argument.
#[inline(always)]
pub const fn live_rows<const ACT_ROWS: usize>(m: i32) -> u32 {
    if ACT_ROWS > 2 {
        m as u32
    } else {
        ACT_ROWS as u32
    }
}

/// Every GEMV entry's body: triggers the entry's dependents
/// ([`chain_trigger`](crate::chain_trigger); `body` waits once its first weights are on their way),
/// then runs `body` with the launch's `m` and its outputs (`y`, `part1`, `part2`; a GLU's `part1 =
/// part2 = out_f`), given as constants where the entry takes a copy of its own for its own case
/// ([`own_case_copy`]) and the launch is that case (all `ACT_ROWS` rows, one `[m][out_f]` matrix):
/// `body` is then inlined twice, and in that copy the live-row and part checks fold away, so the
/// common launch runs the code it had before `m` and the parts were arguments. Elsewhere `body` is
/// inlined once, for every launch.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn own_case<const ACT_ROWS: usize>(
    format: Format,
    (y, m, part1, part2, out_f): (*mut f32, i32, i32, i32, i32),
    body: impl FnOnce(i32, outputs::Outputs),
) {
    let run = #[inline(always)]
    |m, part1, part2| {
        body(
            m,
            outputs::Outputs::parts(y, part1, part2, out_f as u32, live_rows::<ACT_ROWS>(m)),
        )
    };
    crate::chain_trigger();
    let exact_m = ACT_ROWS <= 2 || m == ACT_ROWS as i32;
    if own_case_copy(format, ACT_ROWS) && exact_m && part1 == out_f && part2 == out_f {
        run(ACT_ROWS as i32, out_f, out_f)
    } else {
        run(m, part1, part2)
    }
}

/// Whether the entries of `format` stamped for `act_rows` take [`own_case`]'s copy: only where the
/// copy measured faster than one body for every launch (`docs/perf-notes.md`, "the entry's own case
/// as a copy"), a GLU entry as its plain twin. Elsewhere the copy costs code and registers for
/// nothing.
#[cfg(target_arch = "nvptx64")]
const fn own_case_copy(format: Format, act_rows: usize) -> bool {
    match (format, act_rows) {
        (Format::Q8_0 | Format::E4m3 | Format::E4m3B128, 2) => true,
        (Format::Q8_0 | Format::Q8_0Planar, 8) => true,
        _ => false,
    }
}

/// One ggml Q8_0 block: 32 weights `d * qs[k]`. 34 bytes, 2-byte aligned, as in GGUF files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct BlockQ8_0 {
    pub d: F16,
    pub qs: [i8; QK as usize],
}

/// A weight format of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Q8_0,
    Q8_0Planar,
    E4m3,
    E4m3B128,
}

/// Blocks per lane and row that a warp loads together (one trip) before using them.
///
/// A trip puts 2-4 KiB of weights per warp in flight at `m <= 2`, which with the warps that fit
/// an SM is the 30-40 KiB Little's law asks of HBM (ptxas may still spread the loads over the
/// trip's arithmetic to save registers); at `m >= 4` the activations' registers shrink it to one
/// block. The raw Q8_0 kernel stages trips through shared memory instead, two in flight, and its
/// trip is the stage; at `m <= 2` it loads a trip's activation blocks during the trip before, so
/// that they are in registers when the wait for the trip's weights ends.
pub const fn blocks_per_trip(format: Format, m: usize) -> usize {
    match (format, m) {
        (Format::Q8_0, _) => Q8_0_STAGE_BLOCKS as usize,
        (Format::Q8_0Planar, 1 | 2) => 4,
        _ => 1,
    }
}

/// Whether the kernel of a format at `m` activation rows runs on the tensor cores: the Q8_0
/// formats from four rows, one int8 `mma` a block ([tensor cores](self#tensor-cores)), where
/// the CUDA cores run out of `dp4a` issue, and the e4m3 formats at every `m`. The Q8_0 kernels
/// give the same bits either way, so their choice is speed alone: up to two rows the CUDA-core
/// kernels are the faster (perf-notes, GEMV: Q8_0 on the int8 tensor cores). The e4m3 sums are
/// the tensor cores' at every `m`, so that a row's bits do not depend on `m`.
pub const fn tensor_cores(format: Format, m: usize) -> bool {
    match format {
        Format::Q8_0 | Format::Q8_0Planar => m > 2,
        Format::E4m3 | Format::E4m3B128 => true,
    }
}

/// Weight rows of a Q8_0 tensor-core tile: the `m` of `mma.m16n8k32`.
pub const MMA_ROWS: u32 = 16;

/// Trips a Q8_0 tensor-core block keeps staged at `m`: one computed while the rest are in
/// flight; two where the staged activation makes a third stage cost a block an SM of
/// [`MMA_MIN_BLOCKS`] (perf-notes, GEMV: the Q8_0 tensor-core activation through the stages).
pub const fn mma_stages(m: usize) -> u32 {
    if m >= 8 {
        2
    } else {
        3
    }
}

/// Blocks an SM the Q8_0 tensor-core kernels declare: as many as their stages leave room for at
/// every `m`, so that ptxas takes no registers that would leave fewer.
pub const MMA_MIN_BLOCKS: u32 = 3;

/// Whether a Q8_0 tensor-core trip stages its activation with the weights (from four rows: a
/// warp's global reads of the activation touch a line for each row), or each thread loads its
/// own a trip ahead into registers (one and two rows, as the GLU entries take).
pub const fn mma_x_staged(m: usize) -> bool {
    m >= 4
}

/// Trips an e4m3 tensor-core group keeps staged: one computed while the next is in flight; a
/// third in flight gains these kernels nothing (perf-notes, GEMV: the e4m3 tensor-core pipeline
/// two stages deep).
pub const FP8_MMA_STAGES: u32 = 2;

/// Trips a plain Q8_0 tensor-core group of eight rows keeps staged where its launch gives it
/// [`mma_deep_bytes`] of dynamic shared memory and it takes one tile: five in flight. The launcher
/// gives them where its grid has at most a block an SM ([`deep_shared_bytes`]). A deep trip's
/// activation goes to the ring slot of its stage's index, in the stage's group, where the usual
/// pipeline copies it a trip ahead in groups of its own. The stages move no sum: the same bits at
/// any depth.
pub const MMA_DEEP_STAGES: u32 = 6;

/// Bytes a Q8_0 tensor-core stage gives each tile row: a raw Q8_0 row's 32 blocks (1088 bytes),
/// or a planar row's 1024 quants and then, after all rows, its 64 scale bytes; each padded so
/// that a warp's fragment reads spread over the banks. An e4m3 stage gives a row 1024 bytes and
/// the planar padding.
pub const MMA_RAW_ROW: u32 = 1120;
pub const MMA_QUANT_ROW: u32 = 1056;
pub const MMA_SCALE_ROW: u32 = 80;

/// Bytes of one Q8_0 tensor-core stage, the larger of the two layouts.
pub const MMA_STAGE_BYTES: u32 = {
    let raw = MMA_ROWS * MMA_RAW_ROW;
    let planar = MMA_ROWS * (MMA_QUANT_ROW + MMA_SCALE_ROW);
    if raw > planar {
        raw
    } else {
        planar
    }
};

/// Bytes a Q8_0 tensor-core stage gives each activation row after the tile's rows: the trip's
/// 1024 quants, padded so that a warp's 8-byte reads of eight rows spread over the banks; then,
/// after all rows' quants, its 32 block scales, padded likewise.
pub const MMA_X_QUANT_ROW: u32 = 1056;
pub const MMA_X_SCALE_ROW: u32 = 144;

/// Bytes an e4m3 tensor-core stage gives the trip's tile scales, after the tile's rows and the
/// activation's where it stages them ([`fp8_mma_x_staged`]): block-128's eight of the tile's grid
/// row, or a GLU's eight of each grid (per-tensor e4m3 leaves them unused), so that a pair's tile
/// scale is a shared load rather than a global one with its grid index.
pub const MMA_X_TILES: u32 = 64;

/// Whether a Q8_0 tensor-core kernel stages its activation in a ring of its own, a trip ahead of
/// the weights (at eight rows, so that the larger activation has a trip longer to land than the
/// weights), or in each stage after the weights (four rows) (perf-notes, GEMV: the Q8_0
/// activation in a ring of its own).
pub const fn mma_x_ring(m: usize) -> bool {
    m >= 8
}

/// Bytes of a trip's staged activation at `m` (the tensor-core kernels of both families).
pub(crate) const fn mma_x_bytes(m: usize) -> u32 {
    m as u32 * (MMA_X_QUANT_ROW + MMA_X_SCALE_ROW)
}

/// Bytes of one Q8_0 tensor-core stage at `m`: the tile's weights, then the trip's activation
/// where a stage holds it ([`mma_x_staged`], [`mma_x_ring`]).
pub const fn mma_stage_bytes(m: usize) -> u32 {
    if mma_x_staged(m) && !mma_x_ring(m) {
        MMA_STAGE_BYTES + mma_x_bytes(m)
    } else {
        MMA_STAGE_BYTES
    }
}

/// Bytes of a slot of the Q8_0 tensor-core activation's own ring at `m` ([`mma_x_ring`]), or 0.
pub const fn mma_x_slot_bytes(m: usize) -> u32 {
    if mma_x_ring(m) {
        mma_x_bytes(m)
    } else {
        0
    }
}

/// Dynamic shared memory of the Q8_0 tensor-core kernels at `m`: the stages, the activation's
/// ring (one slot more than the stages), then each warp's partial sums for every (activation
/// row, tile row).
pub const fn mma_shared_bytes(m: usize) -> u32 {
    mma_bytes_at(m, mma_stages(m))
}

/// [`mma_shared_bytes`] with [`MMA_DEEP_STAGES`] stages.
pub const fn mma_deep_bytes(m: usize) -> u32 {
    mma_bytes_at(m, MMA_DEEP_STAGES)
}

/// A Q8_0 tensor-core layout with `stages` stages.
const fn mma_bytes_at(m: usize, stages: u32) -> u32 {
    stages * mma_stage_bytes(m)
        + (stages + 1) * mma_x_slot_bytes(m)
        + WARPS_PER_BLOCK * 8 * MMA_ROWS * 4
}
const _: () = assert!(mma_shared_bytes(8) <= 227 * 1024 && mma_deep_bytes(8) <= 227 * 1024);
const _: () = assert!(MMA_RAW_ROW >= 32 * Q8_0_BLOCK_BYTES && MMA_QUANT_ROW >= 32 * QK);
const _: () = assert!(MMA_SCALE_ROW >= 32 * 2 && MMA_RAW_ROW.is_multiple_of(16));
const _: () = assert!(MMA_X_QUANT_ROW >= 32 * QK && MMA_X_SCALE_ROW >= 32 * 4);
const _: () = assert!(MMA_X_QUANT_ROW.is_multiple_of(16) && MMA_STAGE_BYTES.is_multiple_of(16));

/// Warps that share an e4m3 tensor-core tile at `m`: up to two activation rows each warp takes
/// tiles of its own, with stages and no block barrier of its own (a warp's trip as small as the
/// CUDA-core kernels' were); from four, the block's four warps share a tile of `2m` rows, whose
/// trips a warp's stages would not hold (perf-notes, GEMV: e4m3 on the f16 tensor cores).
pub const fn fp8_mma_warps(m: usize) -> u32 {
    if m <= 2 {
        1
    } else {
        WARPS_PER_BLOCK
    }
}

/// Row sets of a plain e4m3 tensor-core kernel's tile at `m`: sets of `2m` rows whose pairs read
/// one activation fragment and its factors. Two for block-128 at one row, where each pair's
/// activation, tile scale and factor are as much work as its weights' decode; one elsewhere, where
/// that side is the smaller part of a pair (perf-notes, GEMV: two row sets for block-128 at one
/// row). The GLU entries take one.
pub const fn fp8_mma_sets(format: Format, m: usize) -> u32 {
    if matches!(format, Format::E4m3B128) && m == 1 {
        2
    } else {
        1
    }
}

/// Blocks an SM the two-set kernels declare ([`fp8_mma_sets`]): as many as the launcher's grid
/// gives an SM, so that the whole grid stays resident.
pub const FP8_SETS_MIN_BLOCKS: u32 = 6;

/// Blocks an SM the planar Q8_0 CUDA-core kernels (`m <= 2`) declare: unbounded, ptxas keeps them
/// so lean that a grid of few blocks has too few loads in flight; at one block an SM they take so
/// many registers at two rows that the large grids lose blocks an SM. This bound gives the small
/// grids their loads and costs the large ones little (perf-notes, GEMV: the planar Q8_0 CUDA-core
/// entries at six blocks an SM).
pub const PLANAR_MIN_BLOCKS: u32 = 6;

/// Spans of a trip each thread of an e4m3 tensor-core kernel takes at `batch`: the block's warps
/// over the warps that share a tile.
pub const fn fp8_mma_spans(batch: Batch) -> usize {
    (WARPS_PER_BLOCK / fp8_mma_warps(batch.m())) as usize
}

/// Whether an e4m3 tensor-core trip stages its activation with the weights: at eight rows, where
/// a warp's load of its activation bytes touches a line for each row and each factor load as
/// many (perf-notes, GEMV: the e4m3 activation through the stages); below, each thread loads its
/// own a trip ahead into registers.
pub const fn fp8_mma_x_staged(m: usize) -> bool {
    m >= 8
}

/// Dynamic shared memory of an e4m3 tensor-core kernel at `m` with `sets` row sets
/// ([`fp8_mma_sets`]): per group of [`fp8_mma_warps`] warps, the stages of the tile's `2m sets`
/// rows (and of the trip's activation rows where they are staged, laid out as the Q8_0 kernels'),
/// and of the trip's tile scales, then the tile's sums of each of a trip's 32 block classes for
/// every (tile row, activation row).
pub const fn fp8_mma_shared_bytes(m: usize, sets: u32) -> u32 {
    let rows = 2 * m as u32 * sets;
    let groups = WARPS_PER_BLOCK / fp8_mma_warps(m);
    let x = if fp8_mma_x_staged(m) {
        mma_x_bytes(m)
    } else {
        0
    } + MMA_X_TILES;
    groups * (FP8_MMA_STAGES * (rows * MMA_QUANT_ROW + x) + 32 * rows * m as u32 * 4)
}
const _: () = assert!(fp8_mma_shared_bytes(8, 1) <= 227 * 1024);
const _: () = assert!(fp8_mma_shared_bytes(1, 2) <= 227 * 1024);

/// Whether a plain launch of `format` at (stamped) `m` may run [`MMA_DEEP_STAGES`] stages: the
/// Q8_0 tensor-core kernels of eight rows.
pub const fn deepens(format: Format, m: usize) -> bool {
    matches!(format, Format::Q8_0 | Format::Q8_0Planar) && m == 8
}

/// The dynamic shared memory that gives a plain launch of `format` at (stamped) `m`, over
/// `blocks` blocks on a device of `sm_count` SMs whose blocks may have up to `max_shared` bytes,
/// the deeper pipeline: where it [`deepens`], the grid has at most a block an SM and the stages
/// fit a block.
pub const fn deep_shared_bytes(
    format: Format,
    m: usize,
    blocks: u32,
    sm_count: u32,
    max_shared: u32,
) -> Option<u32> {
    let bytes = mma_deep_bytes(m);
    if deepens(format, m) && blocks <= sm_count && bytes <= max_shared {
        Some(bytes)
    } else {
        None
    }
}

/// Dynamic shared memory of a format's kernel at `m`: the tensor-core stages, or none (the
/// CUDA-core kernels' arrays are static).
pub const fn dynamic_shared_bytes(format: Format, m: usize) -> u32 {
    match format {
        _ if !tensor_cores(format, m) => 0,
        Format::Q8_0 | Format::Q8_0Planar => mma_shared_bytes(m),
        Format::E4m3 | Format::E4m3B128 => fp8_mma_shared_bytes(m, fp8_mma_sets(format, m)),
    }
}

/// Weight rows per thread block: a tensor-core tile (16 Q8_0 rows, `2m` e4m3 rows a set, one per
/// warp up to `m = 2`), or a row group per warp.
pub const fn rows_per_block(format: Format, m: usize) -> u32 {
    match format {
        _ if !tensor_cores(format, m) => WARPS_PER_BLOCK,
        Format::Q8_0 | Format::Q8_0Planar => MMA_ROWS,
        Format::E4m3 | Format::E4m3B128 => {
            2 * m as u32 * fp8_mma_sets(format, m) * (WARPS_PER_BLOCK / fp8_mma_warps(m))
        }
    }
}

/// Bytes every kernel reads or copies of the activation's quants at once, to which `xq` must be
/// aligned: a lane's 16 bytes of a block on the CUDA cores and in the e4m3 kernels, the Q8_0
/// tensor-core kernels' 16-byte copies.
pub const XQ_ALIGN: usize = 16;

/// Bytes the kernels of `format` read of the weights at once, to which the weight buffer (`w`,
/// or the planar quants `wq`) must be aligned: a raw Q8_0 block's 2-byte scale (the kernels find
/// their own 16-byte rows), 16 for the planar quants and the e4m3 bytes.
pub const fn weight_align(format: Format) -> usize {
    match format {
        Format::Q8_0 => 2,
        _ => 16,
    }
}

/// Thread blocks of a launch over `out_f` weight rows, one row group a warp.
pub const fn grid_blocks(format: Format, m: usize, out_f: u32) -> u32 {
    out_f.div_ceil(rows_per_block(format, m))
}

/// Whether a format's kernel at `m` takes any grid: its warps take the row groups in turn (warp
/// `w` of `W` groups `w, w + W, ...`; a tensor-core block, tile `b` of `B` tiles `b, b + B,
/// ...`), so the launcher can give it no more blocks than the device holds at once, and later
/// groups run in the same pipeline instead of in new blocks. Every staged kernel does; the
/// planar Q8_0 kernel at `m = 1`, which loads straight to registers and has no pipeline to carry
/// over, takes [`grid_blocks`].
pub const fn takes_any_grid(format: Format, m: usize) -> bool {
    !matches!(format, Format::Q8_0Planar) || tensor_cores(format, m)
}

/// Blocks per SM that a launch of a format that [`takes_any_grid`] keeps resident at most.
///
/// Fewer warps each taking more row groups run longer pipelines (a warp's first trip is the only
/// one it waits for whole), and 32 warps an SM with a trip in flight each still hold the bytes
/// HBM needs; eight is the faster of eight and nine (perf-notes, GEMV: staged trips in one
/// pipeline).
pub const ANY_GRID_BLOCKS_PER_SM: u32 = 8;

/// The grid of a launch over `out_f` weight rows on a device of `sm_count` SMs that each hold
/// `per_sm` blocks of the kernel at once.
///
/// Where the format [`takes_any_grid`] and the blocks exceed what the SMs hold (at most
/// [`ANY_GRID_BLOCKS_PER_SM`] each), the warps that fit take the row groups in turn, and the grid
/// is shrunk to the fewest warps that still take no more groups each, so that every warp takes
/// the same number of groups but the last few: no tail of warps with one more group than the
/// rest. Otherwise the grid is [`grid_blocks`], one group a warp.
pub const fn launch_blocks(
    format: Format,
    m: usize,
    out_f: u32,
    per_sm: u32,
    sm_count: u32,
) -> u32 {
    let resident = resident_blocks(per_sm, sm_count);
    let blocks = grid_blocks(format, m, out_f);
    if !takes_any_grid(format, m) || blocks <= resident {
        return blocks;
    }
    if tensor_cores(format, m) {
        return fewest_blocks(blocks, resident);
    }
    let per_warp = out_f.div_ceil(resident * WARPS_PER_BLOCK);
    out_f.div_ceil(per_warp).div_ceil(WARPS_PER_BLOCK)
}

/// Blocks a launch keeps resident: [`ANY_GRID_BLOCKS_PER_SM`] an SM at most, at least one.
const fn resident_blocks(per_sm: u32, sm_count: u32) -> u32 {
    let per_sm = if per_sm < ANY_GRID_BLOCKS_PER_SM {
        per_sm
    } else {
        ANY_GRID_BLOCKS_PER_SM
    };
    if per_sm == 0 || sm_count == 0 {
        1
    } else {
        per_sm * sm_count
    }
}

/// The fewest blocks that take no more of a launch's `blocks` tiles each than `resident` blocks
/// would (a tensor-core block takes whole tiles in turn).
const fn fewest_blocks(blocks: u32, resident: u32) -> u32 {
    if blocks <= resident {
        blocks
    } else {
        blocks.div_ceil(blocks.div_ceil(resident))
    }
}

/// Weight rows a GLU block takes a tile, counting a gate and an up row as two: the tensor-core
/// tile of the format at `m` (a GLU runs on the tensor cores at every `m`; the Q8_0 sums are
/// the CUDA-core kernels' bits either way), half of it gate rows and half up rows.
pub const fn glu_rows_per_block(format: Format, m: usize) -> u32 {
    match format {
        Format::Q8_0 | Format::Q8_0Planar => MMA_ROWS,
        Format::E4m3 | Format::E4m3B128 => 2 * m as u32 * (WARPS_PER_BLOCK / fp8_mma_warps(m)),
    }
}

/// Dynamic shared memory of a GLU kernel: the tensor-core stages of its format at `m`.
pub const fn glu_shared_bytes(format: Format, m: usize) -> u32 {
    match format {
        Format::Q8_0 | Format::Q8_0Planar => mma_shared_bytes(m),
        Format::E4m3 | Format::E4m3B128 => fp8_mma_shared_bytes(m, 1),
    }
}

/// Thread blocks of a GLU launch over `out_f` rows of each matrix, a tile a block.
pub const fn glu_grid_blocks(format: Format, m: usize, out_f: u32) -> u32 {
    out_f.div_ceil(glu_rows_per_block(format, m) / 2)
}

/// The grid of a GLU launch on a device of `sm_count` SMs that each hold `per_sm` blocks: as
/// [`launch_blocks`] gives a tensor-core kernel.
pub const fn glu_launch_blocks(
    format: Format,
    m: usize,
    out_f: u32,
    per_sm: u32,
    sm_count: u32,
) -> u32 {
    fewest_blocks(
        glu_grid_blocks(format, m, out_f),
        resident_blocks(per_sm, sm_count),
    )
}

/// Blocks per lane in each shared-memory stage of the raw Q8_0 kernel.
pub const Q8_0_STAGE_BLOCKS: u32 = 2;

/// Bytes of one warp's stage: a trip of 32 lanes x [`Q8_0_STAGE_BLOCKS`] blocks, a multiple of 16
/// (`34 * 64 = 2176`).
pub const Q8_0_STAGE_BYTES: u32 = 32 * Q8_0_STAGE_BLOCKS * Q8_0_BLOCK_BYTES;

/// Static shared memory of the raw Q8_0 kernels: two stages per warp, within the 48 KiB a
/// kernel may declare statically.
pub const Q8_0_SHARED_BYTES: u32 = WARPS_PER_BLOCK * 2 * Q8_0_STAGE_BYTES;
const _: () = assert!(Q8_0_SHARED_BYTES <= 48 * 1024);

/// Bytes of one Q8_0 weight row of `in_f` weights.
pub const fn q8_0_row_bytes(in_f: u32) -> u32 {
    in_f / QK * Q8_0_BLOCK_BYTES
}

/// Columns of the block-128 scale grid of a matrix with `in_f` columns: `ceil(in_f / 128)`, the
/// last tile partial when `in_f` is not a multiple of 128.
pub const fn grid_cols(in_f: u32) -> u32 {
    in_f.div_ceil(TILE)
}

/// Rows of the block-128 scale grid of a matrix with `out_f` rows: `ceil(out_f / 128)`.
pub const fn grid_rows(out_f: u32) -> u32 {
    out_f.div_ceil(TILE)
}

/// Index in the row-major scale grid of the scale of weight `(r, c)` (`c < in_f`).
pub const fn grid_index(r: u32, c: u32, in_f: u32) -> u32 {
    r / TILE * grid_cols(in_f) + c / TILE
}

/// The f16 bits of an e4m3 byte, as `cvt.rn.f16x2.e4m3x2` gives them: every finite value exact,
/// the sign of zero kept, both NaN codes (0x7F, 0xFF) to the f16 NaN 0x7FFF. The arithmetic is
/// the device crate's, which the kernels below sm_89 decode with
/// ([`ferrocuda_device::e4m3::e4m3_to_f16_bits`]).
pub const fn e4m3_to_f16(byte: u8) -> F16 {
    F16(ferrocuda_device::e4m3::e4m3_to_f16_bits(byte))
}

/// [`e4m3_to_f16`] of every byte: the decode both builds and the oracles agree on.
pub const E4M3_F16: [F16; 256] = {
    let mut table = [F16(0); 256];
    let mut b = 0;
    while b < 256 {
        table[b] = e4m3_to_f16(b as u8);
        b += 1;
    }
    table
};

/// Repacks ggml Q8_0 blocks (a whole matrix, row after row) into the planar layout: block `n`'s
/// quants to `qs[32 n..32 n + 32]` and its scale to `d[n]`.
///
/// # Panics
/// If `qs` does not hold 32 values per block or `d` one per block.
#[cfg(not(target_arch = "nvptx64"))]
pub fn q8_0_to_planar(blocks: &[BlockQ8_0], qs: &mut [i8], d: &mut [F16]) {
    assert_eq!(
        qs.len(),
        blocks.len() * QK as usize,
        "qs: 32 values per block"
    );
    assert_eq!(d.len(), blocks.len(), "d: one scale per block");
    for ((block, q), scale) in blocks
        .iter()
        .zip(qs.as_chunks_mut::<{ QK as usize }>().0)
        .zip(d)
    {
        q.copy_from_slice(&block.qs);
        *scale = block.d;
    }
}

/// Declares one format's [`Group`](crate::abi::Group) of entries, one per [`Batch`], each passing
/// `m` and the format's trip at that `m` ([`blocks_per_trip`]) as the body's const parameters
/// `<ACT_ROWS, TRIP_BLOCKS>`, so that the kernel and its launcher read the same functions.
macro_rules! stamp {
    (
        $(#[$doc:meta])*
        $body:ident $params:tt as $format:ident for $group:ident {
            $($name:ident = $batch:ident;)+
        }
    ) => {
        crate::variants! {
            $(#[$doc])*
            $body $params for $group: Batch {
                $(
                    $name = Batch::$batch => [
                        { Batch::$batch.m() },
                        { blocks_per_trip(Format::$format, Batch::$batch.m()) }
                    ];
                )+
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
mod imp;
#[cfg(target_arch = "nvptx64")]
mod mma;
#[cfg(target_arch = "nvptx64")]
mod outputs;
#[cfg(target_arch = "nvptx64")]
use imp::{gemv_q8_0, gemv_q8_0_planar};
#[cfg(target_arch = "nvptx64")]
use mma::{gemv_e4m3, gemv_e4m3_b128, gemv_e4m3_b128_glu, gemv_e4m3_glu};
#[cfg(target_arch = "nvptx64")]
use mma::{gemv_q8_0_glu, gemv_q8_0_planar_glu};

stamp! {
    /// `y[i][r]` for ggml Q8_0 weight rows (`w`: `out_f` rows of `in_f / 32` blocks) and the
    /// q8_1 activation (`xq[m][in_f]`, `xd[m][in_f / 32]`). The entry stamped for `n` rows takes
    /// `m` with `n / 2 < m <= n` ([`live_rows`]), as every GEMV entry. `y` holds the output rows
    /// in up to three parts, `0..part1`, `part1..part2` and `part2..out_f`, each an `[m][rows]`
    /// matrix, back to back ([outputs](self#outputs)): one `[m][out_f]` matrix where `part1 =
    /// part2 = out_f`, as every plain entry.
    ///
    /// Each warp stages its row through shared memory with 16-byte `cp.async` copies, two trips
    /// in flight, when the rows start 16-byte aligned (`w` aligned and `in_f % 256 == 0`, as all
    /// real shapes are), and with 2-byte loads otherwise; the arithmetic is the same either way.
    /// At `m <= 2` the activation blocks of each trip are loaded during the trip before. A warp
    /// takes row groups in turn, and the next row's first trip is copied during a row's last.
    ///
    /// # Launch
    /// any grid of at most [`grid_blocks`]`(Format::Q8_0, m, out_f)` blocks (the launcher gives
    /// [`launch_blocks`]), block [`BLOCK_THREADS`], static shared memory [`Q8_0_SHARED_BYTES`],
    /// no dynamic; `in_f` a positive multiple of 32.
    ///
    /// # Safety
    /// `w` holds `out_f * in_f / 32` blocks, `xq` `m * in_f` bytes and `xd` `m * in_f / 32`
    /// floats, `y` `m * out_f` floats; `0 <= part1 <= part2 <= out_f`.
    gemv_q8_0(
        w: *const BlockQ8_0,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
        part1: i32,
        part2: i32,
    ) as Q8_0 for GemvQ8_0 {
        gemv_q8_0_m1 = M1;
        gemv_q8_0_m2 = M2;
        gemv_q8_0_m4 = M4;
        gemv_q8_0_m8 = M8;
    }
}

stamp! {
    /// `y[i][r]` for Q8_0 weights repacked into planes (`wq[out_f][in_f]` quants, 16-byte
    /// aligned rows; `wd[out_f][in_f / 32]` f16 scales), bit-identical to [`gemv_q8_0_m1`] and
    /// its twins on the same weights.
    ///
    /// # Launch
    /// grid [`grid_blocks`]`(Format::Q8_0Planar, m, out_f)`, block [`BLOCK_THREADS`], no shared
    /// memory; `in_f` a positive multiple of 32.
    ///
    /// # Safety
    /// `wq` holds `out_f * in_f` bytes and is 16-byte aligned, `wd` `out_f * in_f / 32` values;
    /// `xq`, `xd` and `y` as for [`gemv_q8_0_m1`].
    gemv_q8_0_planar(
        wq: *const i8,
        wd: *const F16,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
        part1: i32,
        part2: i32,
    ) as Q8_0Planar for GemvQ8_0Planar {
        gemv_q8_0_planar_m1 = M1;
        gemv_q8_0_planar_m2 = M2;
        gemv_q8_0_planar_m4 = M4;
        gemv_q8_0_planar_m8 = M8;
    }
}

crate::variants! {
    /// `y[i][r] = scale * sum_c W[r][c] x[i][c]` for e4m3 weight rows (`w[out_f][in_f]`, one byte
    /// a weight) with one scale for the tensor, on the tensor cores ([`tensor_cores`]).
    ///
    /// # Launch
    /// any grid of at most [`grid_blocks`]`(Format::E4m3, m, out_f)` blocks (blocks take the
    /// tiles in turn; the launcher gives [`launch_blocks`]), block [`BLOCK_THREADS`], dynamic
    /// shared memory [`dynamic_shared_bytes`]`(Format::E4m3, m)`; `in_f` a positive multiple of
    /// 32.
    ///
    /// # Safety
    /// `w` holds `out_f * in_f` bytes and is 16-byte aligned; `xq`, `xd` and `y` as for
    /// [`gemv_q8_0_m1`].
    gemv_e4m3(
        w: *const u8,
        scale: f32,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
        part1: i32,
        part2: i32,
    ) for GemvE4m3: Batch {
        gemv_e4m3_m1 = Batch::M1 => [{ Batch::M1.m() }, { fp8_mma_spans(Batch::M1) }];
        gemv_e4m3_m2 = Batch::M2 => [{ Batch::M2.m() }, { fp8_mma_spans(Batch::M2) }];
        gemv_e4m3_m4 = Batch::M4 => [{ Batch::M4.m() }, { fp8_mma_spans(Batch::M4) }];
        gemv_e4m3_m8 = Batch::M8 => [{ Batch::M8.m() }, { fp8_mma_spans(Batch::M8) }];
    }
}

crate::variants! {
    /// `y[i][r] = sum_c g(r, c) W[r][c] x[i][c]` for e4m3 weight rows and a row-major f32 scale
    /// grid `[ceil(out_f / 128)][ceil(in_f / 128)]` ([`grid_index`]; the checkpoint format with
    /// `weight_block_size [128, 128]`), partial tiles at the edges.
    ///
    /// # Launch
    /// as [`gemv_e4m3_m1`] with `Format::E4m3B128`; `in_f` a positive multiple of 32.
    ///
    /// # Safety
    /// `w` as for [`gemv_e4m3_m1`], `grid` holds [`grid_rows`]`(out_f) * `[`grid_cols`]`(in_f)`
    /// floats; `xq`, `xd` and `y` as for [`gemv_q8_0_m1`].
    gemv_e4m3_b128(
        w: *const u8,
        grid: *const f32,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
        part1: i32,
        part2: i32,
    ) for GemvE4m3B128: Batch {
        gemv_e4m3_b128_m1 = Batch::M1 => [{ Batch::M1.m() }, { fp8_mma_spans(Batch::M1) }];
        gemv_e4m3_b128_m2 = Batch::M2 => [{ Batch::M2.m() }, { fp8_mma_spans(Batch::M2) }];
        gemv_e4m3_b128_m4 = Batch::M4 => [{ Batch::M4.m() }, { fp8_mma_spans(Batch::M4) }];
        gemv_e4m3_b128_m8 = Batch::M8 => [{ Batch::M8.m() }, { fp8_mma_spans(Batch::M8) }];
    }
}

crate::variants! {
    /// `y[i][r] = swiglu(G[r] . x[i], U[r] . x[i])` (the [`swiglu`](crate::swiglu) kernel's
    /// `silu(g) * u`) for ggml Q8_0 gate and up matrices `wg` and `wu` of `out_f` rows each: the
    /// GLU of a decode step's feed-forward in one launch, its bits those of [`gemv_q8_0_m1`] on
    /// each matrix and then `swiglu`. On the tensor cores at every `m` ([glu](self#glu)).
    ///
    /// # Launch
    /// any grid of at most [`glu_grid_blocks`]`(Format::Q8_0, m, out_f)` blocks (the launcher
    /// gives [`glu_launch_blocks`]), block [`BLOCK_THREADS`], dynamic shared memory
    /// [`glu_shared_bytes`]; `in_f` a positive multiple of 32, `out_f` at most `2^30`.
    ///
    /// # Safety
    /// `wg` and `wu` each as `w` of [`gemv_q8_0_m1`]; `xq`, `xd` and `y` as there.
    gemv_q8_0_glu(
        wg: *const BlockQ8_0,
        wu: *const BlockQ8_0,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
    ) for GemvQ8_0Glu: Batch {
        gemv_q8_0_glu_m1 = Batch::M1 => [{ Batch::M1.m() }];
        gemv_q8_0_glu_m2 = Batch::M2 => [{ Batch::M2.m() }];
        gemv_q8_0_glu_m4 = Batch::M4 => [{ Batch::M4.m() }];
        gemv_q8_0_glu_m8 = Batch::M8 => [{ Batch::M8.m() }];
    }
}

crate::variants! {
    /// [`gemv_q8_0_glu_m1`] on the planar repack of both matrices: the same bits.
    ///
    /// # Launch
    /// as [`gemv_q8_0_glu_m1`] with `Format::Q8_0Planar`.
    ///
    /// # Safety
    /// `wgq`, `wgd` and `wuq`, `wud` each as `wq`, `wd` of [`gemv_q8_0_planar_m1`]; `xq`, `xd`
    /// and `y` as for [`gemv_q8_0_m1`].
    gemv_q8_0_planar_glu(
        wgq: *const i8,
        wgd: *const F16,
        wuq: *const i8,
        wud: *const F16,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
    ) for GemvQ8_0PlanarGlu: Batch {
        gemv_q8_0_planar_glu_m1 = Batch::M1 => [{ Batch::M1.m() }];
        gemv_q8_0_planar_glu_m2 = Batch::M2 => [{ Batch::M2.m() }];
        gemv_q8_0_planar_glu_m4 = Batch::M4 => [{ Batch::M4.m() }];
        gemv_q8_0_planar_glu_m8 = Batch::M8 => [{ Batch::M8.m() }];
    }
}

crate::variants! {
    /// The GLU ([`gemv_q8_0_glu_m1`]) of per-tensor e4m3 gate and up matrices, each with its
    /// own scale: the bits of [`gemv_e4m3_m1`] on each, then `swiglu`.
    ///
    /// # Launch
    /// as [`gemv_q8_0_glu_m1`] with `Format::E4m3`.
    ///
    /// # Safety
    /// `wg` and `wu` each as `w` of [`gemv_e4m3_m1`]; `xq`, `xd` and `y` as for [`gemv_q8_0_m1`].
    gemv_e4m3_glu(
        wg: *const u8,
        gate_scale: f32,
        wu: *const u8,
        up_scale: f32,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
    ) for GemvE4m3Glu: Batch {
        gemv_e4m3_glu_m1 = Batch::M1 => [{ Batch::M1.m() }, { fp8_mma_spans(Batch::M1) }];
        gemv_e4m3_glu_m2 = Batch::M2 => [{ Batch::M2.m() }, { fp8_mma_spans(Batch::M2) }];
        gemv_e4m3_glu_m4 = Batch::M4 => [{ Batch::M4.m() }, { fp8_mma_spans(Batch::M4) }];
        gemv_e4m3_glu_m8 = Batch::M8 => [{ Batch::M8.m() }, { fp8_mma_spans(Batch::M8) }];
    }
}

crate::variants! {
    /// The GLU ([`gemv_q8_0_glu_m1`]) of block-128 e4m3 gate and up matrices, each with its own
    /// scale grid: the bits of [`gemv_e4m3_b128_m1`] on each, then `swiglu`.
    ///
    /// # Launch
    /// as [`gemv_q8_0_glu_m1`] with `Format::E4m3B128`.
    ///
    /// # Safety
    /// `wg`, `gate_grid` and `wu`, `up_grid` each as `w`, `grid` of [`gemv_e4m3_b128_m1`];
    /// `xq`, `xd` and `y` as for [`gemv_q8_0_m1`].
    gemv_e4m3_b128_glu(
        wg: *const u8,
        gate_grid: *const f32,
        wu: *const u8,
        up_grid: *const f32,
        xq: *const i8,
        xd: *const f32,
        y: *mut f32,
        in_f: i32,
        out_f: i32,
        m: i32,
    ) for GemvE4m3B128Glu: Batch {
        gemv_e4m3_b128_glu_m1 = Batch::M1 => [{ Batch::M1.m() }, { fp8_mma_spans(Batch::M1) }];
        gemv_e4m3_b128_glu_m2 = Batch::M2 => [{ Batch::M2.m() }, { fp8_mma_spans(Batch::M2) }];
        gemv_e4m3_b128_glu_m4 = Batch::M4 => [{ Batch::M4.m() }, { fp8_mma_spans(Batch::M4) }];
        gemv_e4m3_b128_glu_m8 = Batch::M8 => [{ Batch::M8.m() }, { fp8_mma_spans(Batch::M8) }];
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod kernel_table;
#[cfg(not(target_arch = "nvptx64"))]
pub use kernel_table::KERNELS;

#[cfg(test)]
mod tests;
