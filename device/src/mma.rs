//! The tensor cores: `mma.sync` m16n8k32 on signed bytes, whose i32 sums are exact, m16n8k16 on
//! f16 into f32 (the e4m3 GEMV), and m16n8k8 at f32 grade with tf32 operands, each f32 operand split into a tf32 head and tail
//! (3xTF32, as CUTLASS's `OpMultiplyAddFastF32` does).
//!
//! The wrappers are not `pure`: LLVM would then be free to sink an `mma` into the branch that
//! uses its result, and a branch some lanes skip (a ragged trip) leaves the `.sync.aligned`
//! instruction to part of the warp, which is undefined and hangs the warp. Not `pure`, it stays
//! where the source puts it, executed by every lane.
//!
//! A product `a b` is `head(a) tail(b) + tail(a) head(b) + head(a) head(b)`: the heads are
//! rounded to 10 mantissa bits, so each tail is at most 2^-11 of its value, the dropped
//! `tail(a) tail(b)` at most 2^-22 of the product, and each tail's own truncation to tf32 at
//! most 2^-21: about 2^-20 of each product in all, f32-grade at the tensor cores' rate.

/// A wrapper of one `mma.sync` (`$ptx`, `d += a b` on the lane's fragment registers, the
/// accumulator `d` of `$acc`): every one has this shape and differs in its instruction only.
macro_rules! mma {
    ($(#[$doc:meta])* $name:ident($acc:ty) = $ptx:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 32 lanes of the warp execute it together (it is `.sync.aligned`).
        #[inline(always)]
        pub unsafe fn $name(d: &mut [$acc; 4], a: [u32; 4], b: [u32; 2]) {
            core::arch::asm!(
                concat!(
                    $ptx,
                    " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}},",
                    " {{{d0}, {d1}, {d2}, {d3}}};"
                ),
                d0 = inout(reg32) d[0],
                d1 = inout(reg32) d[1],
                d2 = inout(reg32) d[2],
                d3 = inout(reg32) d[3],
                a0 = in(reg32) a[0],
                a1 = in(reg32) a[1],
                a2 = in(reg32) a[2],
                a3 = in(reg32) a[3],
                b0 = in(reg32) b[0],
                b1 = in(reg32) b[1],
                options(nomem, nostack),
            );
        }
    };
}

mma! {
    /// `mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32`: `d += a b` for the warp's 16 x 8 i32
    /// tile `d`, 16 x 32 `a` and 32 x 8 `b` of signed bytes, four to a register, in the lane's
    /// fragment registers (PTX ISA, "Matrix Fragments for mma.m16n8k32"). Exact: 32 byte products
    /// and an i32 stay within `i32` for every `d` the kernels pass (zero).
    mma_s8(i32) = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
}

mma! {
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: `d += a b` for the warp's 16 x 8 f32 tile
    /// `d`, 16 x 16 `a` and 16 x 8 `b` of f16 pairs in the lane's fragment registers (PTX ISA,
    /// "Matrix Fragments for mma.m16n8k16" with floating-point types). Element `(r, j)` of `d` is
    /// formed from row `r` of `a`, column `j` of `b` and its own old value alone, the same way
    /// wherever it sits in the tile: the e4m3 GEMV relies on that to give a row the same bits at
    /// every `m` (and its gate checks it).
    mma_f16(f32) = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
}

/// `x` as a tf32 head, rounded to nearest with ties away (`(bits + 0x1000) & 0xffffe000`, an
/// integer add and mask, as CUTLASS's `round_half_ulp_truncate`), and the exact rest `x - head`
/// (`sub.rn.f32`) as the tail, whose low 13 bits the tensor cores ignore: the tail enters the
/// product truncated to tf32. CUDA: `(__float_as_uint(x) + 0x1000u) & 0xffffe000u` and
/// `__float_as_uint(x - __uint_as_float(head))`: fewer instructions than `cvt.rna.tf32.f32` for
/// both parts, which also guards infinities and NaN (perf-notes, MLA: attn_flash, the attention
/// with each gathered row read once for all heads). An infinite or NaN `x`, and a finite one within
/// half a tf32 step of `f32::MAX` (whose head rounds to infinity), get a NaN or infinite tail, so
/// their products are not finite.
#[inline(always)]
pub fn tf32_split(x: f32) -> (u32, u32) {
    let head = x.to_bits().wrapping_add(0x1000) & 0xffff_e000;
    (head, (x - f32::from_bits(head)).to_bits())
}

mma! {
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: `d += a b` for the warp's 16 x 8 tile
    /// `d`, 16 x 8 `a` and 8 x 8 `b`, each in the lane's fragment registers (PTX ISA, "Matrix
    /// Fragments for mma.m16n8k8" with `.tf32`).
    mma_tf32(f32) = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
}

/// A fragment split into tf32 heads and tails.
#[derive(Clone, Copy)]
pub struct Split<const N: usize> {
    pub head: [u32; N],
    pub tail: [u32; N],
}

impl<const N: usize> Split<N> {
    /// Each value through [`tf32_split`].
    #[inline(always)]
    pub fn of(v: [f32; N]) -> Self {
        let mut s = Split {
            head: [0; N],
            tail: [0; N],
        };
        super::unroll::<N>(|i| (s.head[i], s.tail[i]) = tf32_split(v[i]));
        s
    }
}

/// `d[j] += a b[j]` for `N` tiles of one row of tiles, each in three tf32 terms into its own
/// accumulator in this order: head x tail, tail x head, then head x head (the small terms first,
/// so the largest lands on their sum). The tiles' mma are issued term by term across the tiles,
/// so that consecutive mma never depend on each other.
///
/// # Safety
/// As [`mma_tf32`].
#[inline(always)]
pub unsafe fn mma_3xtf32<const N: usize>(d: &mut [[f32; 4]; N], a: Split<4>, b: &[Split<2>; N]) {
    super::unroll::<N>(|j| mma_tf32(&mut d[j], a.head, b[j].tail));
    super::unroll::<N>(|j| mma_tf32(&mut d[j], a.tail, b[j].head));
    super::unroll::<N>(|j| mma_tf32(&mut d[j], a.head, b[j].head));
}
