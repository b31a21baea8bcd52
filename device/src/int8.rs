//! Packed 8-bit integer arithmetic: four i8 lanes in one 32-bit word, byte 0 first.

/// `dp4a.s32.s32 d, a, b, c` (CUDA `__dp4a(int, int, int)`): `c` plus the dot product of the four
/// signed bytes of `a` and `b`. Exact: no sum of 32 byte products leaves `i32`.
#[inline(always)]
pub fn dp4a(a: u32, b: u32, c: i32) -> i32 {
    let d: i32;
    // SAFETY: a pure integer instruction.
    unsafe {
        core::arch::asm!(
            "dp4a.s32.s32 {d}, {a}, {b}, {c};",
            d = out(reg32) d,
            a = in(reg32) a,
            b = in(reg32) b,
            c = in(reg32) c,
            options(pure, nomem, nostack),
        )
    };
    d
}

/// `prmt.b32 d, a, b, selector` (CUDA `__byte_perm(a, b, selector)`): byte `n` of the result is
/// byte `selector >> 4n & 7` of the eight bytes `b:a` (`a` is bytes 0..4). Not `pure`, for the
/// reason the conversions in `fp8` are not: decodes stay next to their uses.
#[inline(always)]
pub fn byte_perm(a: u32, b: u32, selector: u32) -> u32 {
    let d: u32;
    // SAFETY: a pure integer instruction.
    unsafe {
        core::arch::asm!(
            "prmt.b32 {d}, {a}, {b}, {s};",
            d = out(reg32) d,
            a = in(reg32) a,
            b = in(reg32) b,
            s = in(reg32) selector,
            options(nomem, nostack),
        )
    };
    d
}

/// 2^23 as f32 bits: a float in [2^23, 2^24) holds an integer in its low mantissa bits.
const MAGIC: u32 = 0x4B00_0000;

/// The four signed bytes of `word` as exact f32, without the quarter-rate int-to-float unit:
/// flipping each byte's top bit (`xor 0x80808080`) maps `v` to `v + 128` in `[0, 255]`; `prmt`
/// writes that byte into the mantissa of 2^23 (`0x4B0000bb` is `2^23 + v + 128`), and
/// subtracting `2^23 + 128` leaves `v`. Every step is exact (the subtraction by Sterbenz), so the
/// values equal `cvt.rn.f32.s32` of each byte. Per byte: one `prmt`, one `add.rn.f32`.
#[inline(always)]
pub fn i8x4_to_f32x4(word: u32) -> [f32; 4] {
    let biased = word ^ 0x8080_8080;
    core::array::from_fn(|k| {
        f32::from_bits(byte_perm(biased, MAGIC, 0x7540 | k as u32)) - 8388736.0
    })
}

/// f16 1024 + 128 as bits, twice: `0x64bb` is the f16 `1024 + bb` (its step is 1 in [1024, 2048)).
const F16X2_BIAS: u32 = 0x6480_6480;

/// The four signed bytes of `word` as two f16 pairs, bytes 0 and 1 in the first word (low half
/// first), 2 and 3 in the second, exact: as [`i8x4_to_f32x4`], each byte's `v + 128` goes under
/// the exponent of 1024 by `prmt`, and `sub.rn.f16x2` of 1152 leaves `v`. CUDA: `__byte_perm`
/// and `__hsub2`. (Any exact conversion gives these bits.)
#[inline(always)]
pub fn i8x4_to_f16x2x2(word: u32) -> [u32; 2] {
    let biased = word ^ 0x8080_8080;
    [0x4140, 0x4342].map(|selector| {
        let pair = byte_perm(biased, 0x64, selector);
        let d: u32;
        // SAFETY: a pure register instruction.
        unsafe {
            core::arch::asm!(
                "sub.rn.f16x2 {d}, {a}, {b};",
                d = out(reg32) d,
                a = in(reg32) pair,
                b = in(reg32) F16X2_BIAS,
                options(pure, nomem, nostack),
            )
        };
        d
    })
}

/// `shf.r.clamp.b32 d, lo, hi, shift` (CUDA `__funnelshift_rc(lo, hi, shift)`): the low 32 bits
/// of the 64-bit `hi:lo` shifted right by `min(shift, 32)`, so a shift of 32 gives `hi`. Reads
/// four bytes that start at any byte of two aligned words.
#[inline(always)]
pub fn funnel_shift_rc(lo: u32, hi: u32, shift: u32) -> u32 {
    let d: u32;
    // SAFETY: a pure integer instruction.
    unsafe {
        core::arch::asm!(
            "shf.r.clamp.b32 {d}, {lo}, {hi}, {s};",
            d = out(reg32) d,
            lo = in(reg32) lo,
            hi = in(reg32) hi,
            s = in(reg32) shift,
            options(pure, nomem, nostack),
        )
    };
    d
}
