//! ferrocuda's kernels, one module per kernel family.
//!
//! This crate builds twice. For `nvptx64-nvidia-cuda` (driven by the workspace's `build.rs`) every
//! `#[kernel]` fn becomes a PTX entry of the same name. For the host it exposes only what host and
//! device must agree on: the ABI types in [`abi`], the launch geometry of each family, and one
//! launch marker per kernel, so a launcher cannot drift from the kernel it launches.
//!
//! # Kernel ABI
//!
//! | kernel | arguments | grid | block | shared | computes |
//! |---|---|---|---|---|---|
//! | `rms_norm` | `x: *const F32x4, w: *const F32x4, z: *mut F32x4, ncols: i32, eps: f32` | `nrows` | [`norm_q8::row_block_dim`]`(nrows, ncols)` | 128 B static `.shared` (no dynamic) | `z = x * rsqrt(mean(x^2) + eps) * w` per row |
//! | `quantize_q8_1` | `x: *const F32x4, qs: *mut I8x4, d: *mut f32, n: i32` | `ceil(n/4 / 256)` while `n/4 < 2^17`, else `ceil(n/4 / 1024)` | 256 | none | q8_1 planes of `x`: `d = amax/127`, `qs = sat127(round(x/d))` per 32 (0 where `x` is 0) |
//! | `rms_norm_zq8_f32` | `x, w, z` as `rms_norm`, `qs: *mut I8x4, d: *mut f32, ncols: i32, eps: f32` | `nrows` | [`norm_q8::row_block_dim`]`(nrows, ncols)` | 128 B static `.shared` (no dynamic) | `rms_norm` and `quantize_q8_1` of its `z`, one launch |
//! | `read_stream` | `x: *const F32x4, sink: *mut f32, n4: i64` | [`stream::READ_GRID_PER_SM`] x SMs | [`stream::READ_BLOCK`] | none | reads `x` once, any `n4` (the bandwidth ceiling) |
//! | `gemv_q8_0_m{1,2,4,8}` | `w: *const BlockQ8_0, xq: *const i8, xd: *const f32, y: *mut f32, in_f: i32, out_f: i32` | any grid of at most [`gemv::grid_blocks`]`(Format::Q8_0, m, out_f)` blocks (the launcher's: [`gemv::launch_blocks`]) | [`gemv::BLOCK_THREADS`] | [`gemv::Q8_0_SHARED_BYTES`] static | `y[m][out_f] = W x` for ggml Q8_0 rows and a q8_1 activation `xq[m][in_f]`, `xd[m][in_f/32]` |
//! | `gemv_q8_0_planar_m{1,2,4,8}` | `wq: *const i8, wd: *const F16, xq, xd, y, in_f, out_f` as above | [`gemv::grid_blocks`]`(Format::Q8_0Planar, m, out_f)` | [`gemv::BLOCK_THREADS`] | 0 | the same bits from the planar repack: quants `wq[out_f][in_f]`, scales `wd[out_f][in_f/32]` |
//! | `gemv_e4m3_m{1,2,4,8}` | `w: *const u8, scale: f32, xq, xd, y, in_f, out_f` | any grid of at most [`gemv::grid_blocks`]`(Format::E4m3, m, out_f)` blocks (the launcher's: [`gemv::launch_blocks`]) | [`gemv::BLOCK_THREADS`] | [`gemv::FP8_SHARED_BYTES`] static | `y = scale * W x` for e4m3 rows `w[out_f][in_f]` |
//! | `gemv_e4m3_b128_m{1,2,4,8}` | `w: *const u8, grid: *const f32, xq, xd, y, in_f, out_f` | any grid of at most [`gemv::grid_blocks`]`(Format::E4m3B128, m, out_f)` blocks (the launcher's: [`gemv::launch_blocks`]) | [`gemv::BLOCK_THREADS`] | [`gemv::FP8_SHARED_BYTES`] static | `y = (g . W) x` with one scale per 128 x 128 tile, `grid[ceil(out_f/128)][ceil(in_f/128)]` |
//! | `mla_absorb_q`, `mla_absorb_q_s2`, `_s4`, `_s8` | `q_nope: *const F32x4, w_kb: *const F32x4, q_lat: *mut f32, t: i32, nh: i32, d_nope: i32, kv_rank: i32` | `nh * split` ([`mla::gemv::grid`]) | [`mla::gemv::BLOCK`] (256) | dynamic, `t * d_nope * 4` B ([`mla::gemv::shared_bytes`]) | `q_lat[t, h, c] = sum_d q_nope[t, h, d] * w_kb[h, c, d]`; `1 <= t <= 8`, `d_nope % 4 == 0` |
//! | `mla_decompress_v`, `mla_decompress_v_s2`, `_s4`, `_s8` | `o_lat: *const F32x4, w_vb: *const F32x4, out: *mut f32, t: i32, nh: i32, d_v: i32, kv_rank: i32` | `nh * split` | 256 | dynamic, `t * kv_rank * 4` B | `out[t, h, v] = sum_c o_lat[t, h, c] * w_vb[h, v, c]`; `1 <= t <= 8`, `kv_rank % 4 == 0` |
//! | `mla_attn_gathered_flash`, `_h32`, `_h64` | `q_lat, q_pe, cache, idx` as `mla_attn_gathered`, then `o_part: *mut f32, ml: *mut f32, nh, kv_rank, d_rope, t, n_slots, scale, pool` as there | [`mla::flash::grid`]`(t, nh, n_slots, tiles)`, `tiles` 1, 2 or 4 ([`mla::flash::HEAD_TILES`]) | [`mla::flash::BLOCK`] (512) | dynamic, [`mla::flash::shared_bytes`]`(kv_rank, d_rope, tiles)` (`None`, refused, past 227 KiB: `kv_rank + d_rope <= 704` at 16 heads, `<= 576` at 32 and 64) | per (token, chunk of 64 slots, head) into the workspace ([`mla::flash::workspace`]): the chunk's scores on the tensor cores (3xTF32), their max `m`, `l = sum expf(s - m)`, `o_part = sum expf(s - m) * row[..kv_rank]`; the three entries give the same bits; any `n_slots >= 1` |
//! | `mla_attn_flash_combine` | `o_part: *const F32x4, ml: *const f32, out: *mut F32x4, nh, kv_rank, t, n_slots` (the flash launch's) | [`mla::flash::combine_grid`]`(t, nh, kv_rank)` | [`mla::flash::COMBINE_BLOCK`] (256) | 5 KiB static `.shared` | `out = (sum_k expf(m_k - M) o_k) * rcp(sum_k expf(m_k - M) l_k)`, `M = max_k m_k`, the chunks in four groups added in order |
//! | `mla_attn_gathered`, `mla_attn_gathered_s2`, `_s4`, `_s8` | `q_lat: *const F32x4, q_pe: *const F32x4, cache: *const F32x4, idx: *const i32, out: *mut F32x4, nh: i32, kv_rank: i32, d_rope: i32, t: i32, n_slots: i32, scale: f32, pool: i32` | `t * ceil(nh / 8) * split`, `8 / split` heads a block ([`mla::attn::grid`]) | [`mla::attn::BLOCK`] (256) | dynamic, [`mla::attn::shared_bytes`] (`h = 8 / split` heads a block: `max(16 * h * ceil(d4 / 8) * 8, 4 KiB * h) + (4 * h + 4) * n_slots + 68 * h` B, `d4 = (kv_rank + d_rope) / 4`) | per token and head, `softmax_i(scale * (q_lat . cache[idx_i][..kv_rank] + q_pe . cache[idx_i][kv_rank..]))` over the `n_slots` gathered rows, then `out = sum_i p_i * cache[idx_i][..kv_rank]`; indices clamped into `0..pool`; `kv_rank`, `d_rope` multiples of 4; the cache's rows addressed in 64 bits, so it may exceed `i32::MAX` elements (`pool < 2^31` rows) |
//!
//! "Static `.shared`" is an array the module declares: the launcher passes no dynamic shared
//! memory for it. Each family's module declares its kernels' table (`KERNELS`: name, largest
//! block, the instructions its PTX must and must not contain), and [`FAMILIES`] lists the
//! families.
//!
//! The MLA entries come in fours: the unsplit kernel and its twins of split 2, 4 and 8, one
//! parameter list, the same bits (see [`mla`]); `split` in the grid is 1 for the unsplit entry.
//! [`mla::ServingTable`] picks the split per `t`.
//!
//! Every length is in elements of the scalar type (`ncols`, `n` in f32). `ncols` and `n` are
//! multiples of 32 (the q8_1 block); the host launchers refuse anything else before launching.
//! The q8_1 activation is two planes: `qs[n]` (i8) and `d[n / 32]` (f32). The numerics (the
//! saturation, zeros, NaN and infinities, an overflowing sum of squares) and why a row's outputs
//! do not depend on the batch are in [`norm_q8`]'s docs.
//! The gemv kernels take `m` such rows (`in_f` a multiple of 32, any `out_f`) and write
//! `y[m][out_f]`; see [`gemv`] for the formats, the thread mapping and the floating-point
//! operations both builds perform.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        stdarch_nvptx
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod abi;
#[cfg(target_arch = "nvptx64")]
#[macro_use]
pub mod device;
pub mod gemv;
pub mod mla;
pub mod norm_q8;
pub mod stream;

pub use kernels_macros::kernel;

/// Every family's kernel table, by family name: what the tests hold each kernel's PTX to. A new
/// family adds its module above and one line here.
#[cfg(not(target_arch = "nvptx64"))]
pub const FAMILIES: &[(&str, &[abi::KernelSpec])] = &[
    ("norm_q8", norm_q8::KERNELS),
    ("stream", stream::KERNELS),
    ("gemv", gemv::KERNELS),
    ("mla", mla::KERNELS),
];

/// Every kernel of every family.
#[cfg(not(target_arch = "nvptx64"))]
pub fn kernel_specs() -> impl Iterator<Item = &'static abi::KernelSpec> {
    FAMILIES.iter().flat_map(|(_, specs)| specs.iter())
}

/// Stamps one `#[kernel]` entry per variant of a generic device body, so that variants are
/// type or const parameters of one function and never copies of it:
///
/// ```ignore
/// variants! {
///     /// Docs shared by every entry.
///     gemv_body(w: *const u8, x: *const I8x4, y: *mut f32, n: i32) {
///         gemv_e4m3_m1 = [E4m3, 1];
///         gemv_e4m3_m2 = [E4m3, 2];
///     }
/// }
/// ```
///
/// makes the entries `gemv_e4m3_m1` and `gemv_e4m3_m2`, each calling
/// `gemv_body::<E4m3, N>(w, x, y, n)`, each with its own typed launch marker on the host.
/// The docs and the parameter list travel to each entry as one token tree each: `macro_rules!`
/// repeats a fragment only as often as it was captured, so they are bundled before the entries
/// are walked.
#[macro_export]
macro_rules! variants {
    // The docs and the parameter list travel on as single token trees, so that every entry can
    // repeat them: macro_rules cannot nest one repetition inside another of a different length.
    (
        @entries $docs:tt $body:ident $params:tt {
            $($name:ident = [$($g:tt)*];)+
        }
    ) => {
        $($crate::variants!(@entry $docs $body $params $name [$($g)*]);)+
    };
    (
        @entry [$(#[$doc:meta])*] $body:ident ($($arg:ident : $ty:ty),* $(,)?)
        $name:ident [$($g:tt)*]
    ) => {
        $(#[$doc])*
        #[$crate::kernel]
        pub unsafe fn $name($($arg: $ty),*) {
            $body::<$($g)*>($($arg),*)
        }
    };
    (
        $(#[$doc:meta])*
        $body:ident $params:tt {
            $($name:ident = [$($g:tt)*];)+
        }
    ) => {
        $crate::variants!(@entries [$(#[$doc])*] $body $params { $($name = [$($g)*];)+ });
    };
}

#[cfg(test)]
mod tests {
    use crate::abi::{In, Kernel, Out};
    use core::marker::PhantomData;

    #[allow(dead_code)]
    unsafe fn body<const N: i32>(_x: *const f32, _y: *mut f32, _n: i32) {}

    crate::variants! {
        /// Two entries of one body.
        body(x: *const f32, y: *mut f32, n: i32) {
            demo_one = [1];
            demo_two = [2];
        }
    }

    fn same_type<T>(_: PhantomData<T>, _: PhantomData<T>) {}

    #[test]
    fn variants_are_named_entries_with_the_body_parameters() {
        assert_eq!((demo_one::NAME, demo_two::NAME), ("demo_one", "demo_two"));
        same_type(
            PhantomData::<<demo_two as Kernel>::Params>,
            PhantomData::<(In<f32>, Out<f32>, i32)>,
        );
    }
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Kernels are written so that nothing can panic (raw pointers, no checked arithmetic); a
    // panic that slipped in still stops the grid rather than running on with garbage.
    device::trap()
}
