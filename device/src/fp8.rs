//! FP8 and f16 conversions.
//!
//! The device has no f16 type on this toolchain; f16 values travel as their bits in a `u16`
//! (a `.b16` register), which is also how the reference .cu passes them to its inline PTX.
//!
//! The conversions are not marked `pure`: LLVM then keeps them where the source puts them
//! instead of hoisting a whole block's decodes ahead of the arithmetic that consumes them,
//! which would keep dozens of decoded values live (ptxas still schedules the SASS freely).

/// `cvt.rn.f16x2.e4m3x2 d, a` (sm_89+): two e4m3 bytes to two f16, the byte in bits 0..8 of
/// `pair` to the low half of the result, bits 8..16 to the high half. Every finite e4m3 value is
/// exact in f16; both NaN codes (0x7F, 0xFF) give the f16 NaN 0x7FFF. The reference writes the
/// same instruction as inline PTX (what `__nv_cvt_fp8x2_to_halfraw2(x, __NV_E4M3)` lowers to,
/// without the header NVRTC lacks).
#[inline(always)]
pub fn e4m3x2_to_f16x2(pair: u16) -> u32 {
    let halves: u32;
    // SAFETY: a pure register conversion.
    unsafe {
        core::arch::asm!(
            "cvt.rn.f16x2.e4m3x2 {d}, {a};",
            d = out(reg32) halves,
            a = in(reg16) pair,
            options(nomem, nostack),
        )
    };
    halves
}

/// `cvt.f32.f16 d, a` (CUDA `__half2float`): exact widening; ptxas lowers it to `HADD2.F32`,
/// which issues at full rate.
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    let v: f32;
    // SAFETY: a pure register conversion.
    unsafe {
        core::arch::asm!(
            "cvt.f32.f16 {d}, {a};",
            d = out(reg32) v,
            a = in(reg16) bits,
            options(nomem, nostack),
        )
    };
    v
}
