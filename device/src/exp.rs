//! CUDA's `expf` as libdevice expands it, and the correctly rounded reciprocal.
//!
//! Without fast-math, NVCC inlines libdevice's `__nv_expf` into ten instructions (below); a
//! softmax written with `expf` gives the same bits in both builds only if the Rust side runs
//! these ten in the same order with the same constants. The sequence splits `x * log2(e)` into an
//! integer part `j` (found by a rounding-down fma on a magic constant, so that its low bits are
//! the integer) and a remainder `q`, computes `2^q` with the hardware approximation and scales by
//! `2^j` through the exponent field.

extern "C" {
    #[link_name = "llvm.nvvm.fma.rm.f"]
    fn fma_rm_f32(a: f32, b: f32, c: f32) -> f32;
    #[link_name = "llvm.nvvm.rcp.rn.f"]
    fn rcp_rn_f32(x: f32) -> f32;
}

/// `cvt.sat.f32.f32` (clamps to [0, 1], NaN to 0): libdevice's clamp of the scaled exponent.
#[inline(always)]
fn saturate(x: f32) -> f32 {
    let r: f32;
    // SAFETY: pure arithmetic on registers.
    unsafe {
        core::arch::asm!(
            "cvt.sat.f32.f32 {r}, {x};",
            r = out(reg32) r,
            x = in(reg32) x,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// `ex2.approx.ftz.f32`: the hardware `2^x`. Flushing denormals cannot change `expf`'s result:
/// its argument is the remainder `q` (about [-1, 1]), whose power of two is never denormal.
#[inline(always)]
fn ex2_approx_ftz(x: f32) -> f32 {
    let r: f32;
    // SAFETY: pure arithmetic on registers.
    unsafe {
        core::arch::asm!(
            "ex2.approx.ftz.f32 {r}, {x};",
            r = out(reg32) r,
            x = in(reg32) x,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// CUDA `expf(x)` (no fast-math), the ten instructions NVCC 13 inlines for it on sm_90:
///
/// ```text
/// fma.rn.f32       t, x, 0f3BBB989D, 0f3F000000;   // x * log2(e) / 256 + 0.5
/// cvt.sat.f32.f32  t, t;
/// fma.rm.f32       j, t, 0f437C0000, 0f4B400001;   // 252 * t + (2^23 + 2^22 + 1), rounded down
/// add.f32          k, j, 0fCB40007F;               // j - (2^23 + 2^22 + 127)
/// neg.f32          k, k;
/// fma.rn.f32       q, x, 0f3FB8AA3B, k;            // x * log2(e) (high part) - integer part
/// fma.rn.f32       q, x, 0f32A57060, q;            // + x * log2(e) (low part)
/// shl.b32          s, j, 23;                        // 2^(integer part) in the exponent field
/// ex2.approx.ftz.f32 e, q;
/// mul.f32          r, e, s;
/// ```
#[inline(always)]
pub fn expf(x: f32) -> f32 {
    let (e, s) = expf_factors(x);
    e * s
}

/// CUDA `expf(x) + c` as NVCC compiles it (`--fmad=true`): the last multiply of [`expf`] and the
/// add contracted into one `fma.rn.f32 r, e, s, c`, which rounds once where `expf(x) + c`
/// written out in Rust rounds twice (`1.0f + expf(-g)` in a sigmoid, say).
#[inline(always)]
pub fn expf_add(x: f32, c: f32) -> f32 {
    let (e, s) = expf_factors(x);
    super::fma(e, s, c)
}

/// [`expf`]'s two factors `2^q` and `2^j`: its instructions but the last multiply.
#[inline(always)]
fn expf_factors(x: f32) -> (f32, f32) {
    let t = saturate(super::fma(
        x,
        f32::from_bits(0x3BBB_989D),
        f32::from_bits(0x3F00_0000),
    ));
    // SAFETY: a pure arithmetic intrinsic.
    let j = unsafe { fma_rm_f32(t, f32::from_bits(0x437C_0000), f32::from_bits(0x4B40_0001)) };
    let k = -(j + f32::from_bits(0xCB40_007F));
    let q = super::fma(x, f32::from_bits(0x3FB8_AA3B), k);
    let q = super::fma(x, f32::from_bits(0x32A5_7060), q);
    let s = f32::from_bits(j.to_bits() << 23);
    (ex2_approx_ftz(q), s)
}

/// `rcp.rn.f32`: what NVCC emits for `1.0f / x` with IEEE division. It is the correctly rounded
/// reciprocal (the bits of `div.rn.f32 1.0, x`), and its dividend is never zero, so it has no
/// slow path for a zero dividend.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    // SAFETY: a pure arithmetic intrinsic.
    unsafe { rcp_rn_f32(x) }
}
