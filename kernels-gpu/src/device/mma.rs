//! The tensor cores at f32 grade: `mma.sync` m16n8k8 with tf32 operands, each f32 operand split
//! into a tf32 head and tail (3xTF32, as CUTLASS's `OpMultiplyAddFastF32` does).

/// `cvt.rna.tf32.f32` of `x` and of what that head leaves out (`x - head`, `sub.rn.f32`, exact):
/// CUDA's `asm("cvt.rna.tf32.f32 ...")` twice with `x - __uint_as_float(head)` between. The two
/// are tf32 bit patterns (f32 with the low 13 bits zero).
#[inline(always)]
pub fn tf32_split(x: f32) -> (u32, u32) {
    let (head, tail): (u32, u32);
    // SAFETY: register-only conversions.
    unsafe {
        core::arch::asm!(
            "cvt.rna.tf32.f32 {h}, {x};",
            h = out(reg32) head,
            x = in(reg32) x,
            options(pure, nomem, nostack),
        );
        core::arch::asm!(
            "cvt.rna.tf32.f32 {t}, {r};",
            t = out(reg32) tail,
            r = in(reg32) x - f32::from_bits(head),
            options(pure, nomem, nostack),
        );
    }
    (head, tail)
}

/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: `d += a b` for the warp's 16 x 8 tile
/// `d`, 16 x 8 `a` and 8 x 8 `b`, each in the lane's fragment registers (PTX ISA, "Matrix
/// Fragments for mma.m16n8k8" with `.tf32`).
///
/// # Safety
/// All 32 lanes of the warp execute it together (it is `.sync.aligned`).
#[inline(always)]
pub unsafe fn mma_tf32(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    core::arch::asm!(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
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
        options(pure, nomem, nostack),
    );
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

/// `d += a b` in three tf32 terms: head x tail, tail x head, then head x head, into the same
/// accumulator in that order (the small terms first, so the largest lands on their sum).
///
/// # Safety
/// As [`mma_tf32`].
#[inline(always)]
pub unsafe fn mma_3xtf32(d: &mut [f32; 4], a: Split<4>, b: Split<2>) {
    mma_tf32(d, a.head, b.tail);
    mma_tf32(d, a.tail, b.head);
    mma_tf32(d, a.head, b.head);
}
