//! The e4m3 to f16 decode, bit for bit what `cvt.rn.f16x2.e4m3x2` gives, step by step as the
//! targets below sm_89 (which lack the instruction) compute it: the host's table of the decode
//! (`kernels_gpu::gemv::E4M3_F16`) is built from it, and the tests hold it to an independent
//! reading of both formats for every code.

/// The f16 bits of an e4m3 byte (OCP FP8: bias 7, no infinities, `S.1111.111` NaN): every finite
/// value exact (e4m3's smallest subnormal, 2^-9, is an f16 normal), the sign of zero kept, and
/// both NaN codes (0x7F, 0xFF) to the f16 NaN 0x7FFF, sign dropped, as the hardware gives it
/// (cuda_fp8.hpp's software path for the targets without the instruction writes the same).
///
/// The steps are the device's below sm_89 (`e4m3x2_to_f16x2`, two bytes at once): the exponent
/// and mantissa fields moved up 7 bits read as an f16 whose exponent is 8 short (f16's bias is
/// 15, e4m3's 7), so that f16 times 2^8 is the value, exact (a subnormal code becomes an f16
/// subnormal and the product normalises it); then the sign, and the NaN code, whose field
/// pattern `0x3F80` is the only one to carry into bit 14 when `0x80` is added.
pub const fn e4m3_to_f16_bits(byte: u8) -> u16 {
    let field = ((byte & 0x7F) as u16) << 7;
    let value = times_256(field) | ((byte & 0x80) as u16) << 8;
    if (field + 0x80) & 0x4000 != 0 {
        0x7FFF
    } else {
        value
    }
}

/// `mul.rn.f16x2` by 2^8 of a non-negative f16 below 2 (`bits < 0x4000`), exact: a normal's
/// exponent field grows by 8, and a subnormal `s * 2^-24` is normalised to `1.f * 2^(p - 16)`,
/// `p` its leading bit.
const fn times_256(bits: u16) -> u16 {
    if bits >= 0x0400 {
        return bits + (8 << 10);
    }
    if bits == 0 {
        return 0;
    }
    let p = 15 - bits.leading_zeros() as u16;
    // Exponent field p - 16 + 15.
    ((p - 1) << 10) | ((bits << (10 - p)) & 0x3FF)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An f16 decoded from its fields.
    fn f16_value(bits: u16) -> f64 {
        let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> 10) & 0x1F);
        let man = f64::from(bits & 0x3FF);
        match exp {
            0x1F if man != 0.0 => f64::NAN,
            0x1F => sign * f64::INFINITY,
            0 => sign * man * 2f64.powi(-24),
            _ => sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
        }
    }

    /// An e4m3 byte decoded from its fields (OCP FP8: bias 7, no infinities, S.1111.111 NaN),
    /// independently of the bit arithmetic under test.
    fn e4m3_value(byte: u8) -> f64 {
        let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((byte >> 3) & 0xF);
        let man = f64::from(byte & 0x7);
        match (exp, byte & 0x7) {
            (15, 7) => f64::NAN,
            (0, _) => sign * man / 8.0 * 2f64.powi(-6),
            _ => sign * (1.0 + man / 8.0) * 2f64.powi(exp - 7),
        }
    }

    #[test]
    fn the_decode_is_exact_for_all_256_codes() {
        for byte in 0..=255u8 {
            let bits = e4m3_to_f16_bits(byte);
            let (got, want) = (f16_value(bits), e4m3_value(byte));
            if want.is_nan() {
                assert_eq!(bits, 0x7FFF, "NaN code {byte:#04x}");
            } else {
                assert_eq!(got, want, "code {byte:#04x} -> f16 {bits:#06x}");
                assert_eq!(
                    got.is_sign_negative(),
                    byte & 0x80 != 0,
                    "sign of {byte:#04x}"
                );
            }
        }
    }
}
