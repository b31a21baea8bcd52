//! A shape's weights in every format and its activation rows, in each value class.

use super::*;

/// The inputs of `shape` in `class`, from `seed`.
pub(super) fn make(shape: Shape, class: ValueClass, seed: u64) -> Inputs {
    let (in_f, out_f) = (shape.in_f, shape.out_f);
    let n = in_f * out_f;
    let mut bytes = rng::SplitMix64::new(rng::case_seed(seed, &[1]));
    let mut pick = rng::SplitMix64::new(rng::case_seed(seed, &[2]));
    let zero = |pick: &mut rng::SplitMix64| {
        class == ValueClass::Zeros && pick.next_u64().is_multiple_of(16)
    };
    let mut e4m3 = Vec::with_capacity(n);
    while e4m3.len() < n {
        for b in bytes.next_u64().to_le_bytes() {
            // NaN codes get their own test.
            e4m3.push(if zero(&mut pick) { 0 } else { finite_e4m3(b) });
        }
    }
    e4m3.truncate(n);
    let mut g = rng::SplitMix64::new(rng::case_seed(seed, &[3]));
    let grid = (0..grid_rows(out_f as u32) as usize * grid_cols(in_f as u32) as usize)
        .map(|_| tile_scale(g.next_u64()))
        .collect();
    let q8_0: Vec<BlockQ8_0> = (0..n / QK as usize)
        .map(|_| {
            let d = q8_0_scale(bytes.next_u64());
            let mut qs = [0i8; 32];
            for chunk in qs.chunks_mut(8) {
                let v = bytes.next_u64().to_le_bytes();
                for (q, b) in chunk.iter_mut().zip(v) {
                    *q = if zero(&mut pick) { 0 } else { b as i8 };
                }
            }
            BlockQ8_0 { d, qs }
        })
        .collect();
    let mut x = rng::vec_f32(rng::case_seed(seed, &[4]), M_MAX * in_f, 4.0);
    for (i, row) in x.chunks_exact_mut(in_f).enumerate() {
        match class {
            ValueClass::Zeros => row.iter_mut().for_each(|v| {
                if pick.next_u64().is_multiple_of(16) {
                    *v = 0.0
                }
            }),
            ValueClass::Outliers => {
                for _ in 0..4 {
                    row[pick.next_u64() as usize % in_f] *= 1000.0;
                }
            }
            ValueClass::Padding if i % 4 == 0 => row.fill(0.0),
            _ => {}
        }
    }
    let (x_qs, x_d) = oracle::quantize_q8_1(&x);
    Inputs {
        planar: launch::q8_0_to_planar(&q8_0),
        e4m3,
        grid,
        q8_0,
        x_qs,
        x_d,
        peer: OnceCell::new(),
        refs: RefCell::default(),
    }
}

/// `b` as an e4m3 code with the two NaN codes (0x7F, 0xFF) moved to finite ones: every finite
/// code is kept, so random bytes cover them all.
pub(crate) fn finite_e4m3(b: u8) -> u8 {
    if b & 0x7F == 0x7F {
        b & 0xB0
    } else {
        b
    }
}

/// A Q8_0 block scale from random bits: an f16 in `[2^-10, 2^-6)` (exponent field 5 to 8, any
/// mantissa), where the block's products and sums stay well inside f32.
pub(crate) fn q8_0_scale(r: u64) -> F16 {
    F16((((5 + (r & 3)) << 10) | ((r >> 2) & 0x3FF)) as u16)
}

/// A block-128 tile scale from random bits: a power of two from `2^-6` to `2^-2`.
pub(crate) fn tile_scale(r: u64) -> f32 {
    2f32.powi(-6 + (r % 5) as i32)
}
