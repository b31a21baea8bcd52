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
#[cfg(target_feature = "sm_89")]
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

/// Below sm_89, which has no e4m3 conversion: the same bits from the steps of
/// [`crate::e4m3::e4m3_to_f16_bits`], both bytes at once: spread into the halves (`prmt`), the
/// fields up 7 bits times 2^8 in one `mul.rn.f16x2`, the signs, and the NaN halves replaced.
/// One `asm` block, as the reference writes it: LLVM then weighs it as one instruction, as it
/// does the conversion, and inlines the kernels' loops around it alike.
#[cfg(not(target_feature = "sm_89"))]
#[inline(always)]
pub fn e4m3x2_to_f16x2(pair: u16) -> u32 {
    let halves: u32;
    // SAFETY: register arithmetic only.
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .b32 x, f, n, s;",
            "cvt.u32.u16 x, {a};",
            "prmt.b32 x, x, 0, 0x4140;",
            "and.b32 f, x, 0x007F007F;",
            "shl.b32 f, f, 7;",
            "add.u32 n, f, 0x00800080;",
            "and.b32 n, n, 0x40004000;",
            "shr.u32 n, n, 14;",
            "mul.lo.u32 n, n, 0xFFFF;",
            "mov.b32 s, 0x5C005C00;",
            "mul.rn.f16x2 f, f, s;",
            "and.b32 s, x, 0x00800080;",
            "shl.b32 s, s, 8;",
            "or.b32 f, f, s;",
            "and.b32 s, n, 0x7FFF7FFF;",
            "not.b32 n, n;",
            "and.b32 f, f, n;",
            "or.b32 {d}, f, s;",
            "}}",
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
