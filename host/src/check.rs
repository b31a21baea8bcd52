//! Argument checks every launcher shares. They are plain functions of sizes, tested without a
//! GPU, and each names the kernel and the argument at fault.

use crate::error::ArgError;
use kernels_gpu::norm_q8::QK8_1;

pub fn arg_err(kernel: &'static str, arg: &'static str, why: impl Into<String>) -> ArgError {
    ArgError {
        kernel,
        arg,
        why: why.into(),
    }
}

/// `arg`'s device address is a multiple of `align` bytes: a view may start anywhere in its
/// allocation, and a kernel's wide loads need their buffer aligned to their width.
pub fn aligned(
    kernel: &'static str,
    arg: &'static str,
    addr: u64,
    align: usize,
) -> Result<(), ArgError> {
    if addr.is_multiple_of(align as u64) {
        return Ok(());
    }
    Err(arg_err(
        kernel,
        arg,
        format!("address {addr:#x} is not {align}-byte aligned (the kernel reads it {align} bytes at a time)"),
    ))
}

/// A buffer holds at least what the kernel will touch (both in elements of the buffer).
pub fn len(
    kernel: &'static str,
    arg: &'static str,
    have: usize,
    need: usize,
) -> Result<(), ArgError> {
    if have < need {
        return Err(arg_err(
            kernel,
            arg,
            format!("holds {have} elements, the launch needs {need}"),
        ));
    }
    Ok(())
}

/// A count the kernel takes as an `i32`: positive and within `i32`.
pub fn positive_i32(kernel: &'static str, arg: &'static str, n: usize) -> Result<i32, ArgError> {
    if n == 0 {
        return Err(arg_err(kernel, arg, "is 0; it must be positive"));
    }
    i32::try_from(n).map_err(|_| arg_err(kernel, arg, format!("{n} exceeds i32::MAX")))
}

/// A length in values that the kernels can index: positive, a multiple of the q8_1 block, and
/// within `i32`.
pub fn q8_len(kernel: &'static str, arg: &'static str, n: usize) -> Result<i32, ArgError> {
    if n == 0 || !n.is_multiple_of(QK8_1 as usize) {
        return Err(arg_err(
            kernel,
            arg,
            format!("{n} is not a positive multiple of {QK8_1} (the q8_1 block)"),
        ));
    }
    positive_i32(kernel, arg, n)
}

/// The product of sizes that a kernel indexes with `i32` arithmetic.
pub fn product_i32(
    kernel: &'static str,
    arg: &'static str,
    factors: &[usize],
) -> Result<i32, ArgError> {
    let total = factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .filter(|&t| t <= i32::MAX as usize)
        .ok_or_else(|| {
            let product: Vec<String> = factors.iter().map(|f| f.to_string()).collect();
            arg_err(
                kernel,
                arg,
                format!(
                    "{} elements exceed i32::MAX, which the kernel indexes with",
                    product.join(" x ")
                ),
            )
        })?;
    Ok(total as i32)
}

/// The largest value a kernel computes in 32-bit signed arithmetic (an offset, a loop index):
/// within `i32` it is exact, past `i32::MAX` it would wrap. `expr` is the value in the
/// kernel's terms and `why` says which computation it is; `value` is computed wide (`u128`), so
/// that no product of sizes overflows before it is compared.
pub fn within_i32(
    kernel: &'static str,
    arg: &'static str,
    value: u128,
    expr: &str,
    why: &str,
) -> Result<(), ArgError> {
    if value > i32::MAX as u128 {
        return Err(arg_err(
            kernel,
            arg,
            format!("{expr} = {value} exceeds i32::MAX ({why})"),
        ));
    }
    Ok(())
}

/// A count the kernel takes as an `i32`, which may be 0.
pub fn non_negative_i32(
    kernel: &'static str,
    arg: &'static str,
    n: usize,
) -> Result<i32, ArgError> {
    i32::try_from(n).map_err(|_| arg_err(kernel, arg, format!("{n} exceeds i32::MAX")))
}

/// A length the kernel reads in vectors of `m` values: a multiple of `m`, positive unless
/// `zero_ok`, within `i32`.
pub fn multiple_of(
    kernel: &'static str,
    arg: &'static str,
    n: usize,
    m: usize,
    zero_ok: bool,
) -> Result<i32, ArgError> {
    if !n.is_multiple_of(m) || (n == 0 && !zero_ok) {
        let which = if zero_ok { "" } else { "positive " };
        return Err(arg_err(
            kernel,
            arg,
            format!("{n} is not a {which}multiple of {m} (the kernel reads {m} values at a time)"),
        ));
    }
    non_negative_i32(kernel, arg, n)
}

/// A count with a largest value the kernel supports.
pub fn at_most(
    kernel: &'static str,
    arg: &'static str,
    n: usize,
    max: usize,
    why: &str,
) -> Result<(), ArgError> {
    if n > max {
        return Err(arg_err(kernel, arg, format!("{n} exceeds {max} ({why})")));
    }
    Ok(())
}

/// A finite scalar.
pub fn finite(kernel: &'static str, arg: &'static str, v: f32) -> Result<(), ArgError> {
    if !v.is_finite() {
        return Err(arg_err(kernel, arg, format!("{v} is not finite")));
    }
    Ok(())
}

/// Dynamic shared memory a launch sized from `arg` needs: at most what one block may have.
pub fn shared_bytes(
    kernel: &'static str,
    arg: &'static str,
    bytes: u64,
    limit: u64,
) -> Result<u32, ArgError> {
    if bytes > limit {
        return Err(arg_err(
            kernel,
            arg,
            format!(
                "needs {bytes} bytes of shared memory per block, more than the {limit} one block \
                 may have"
            ),
        ));
    }
    Ok(bytes as u32)
}

/// The buffers of an elementwise launch, `(name, length)`, the last the output: every length
/// equal, the kernel's `n`: positive and within `i32`. The error names a buffer whose length
/// differs from the one most of them share (from the output's where no length has a majority),
/// so that it points at the buffer that is off.
pub fn same_len(kernel: &'static str, bufs: &[(&'static str, usize)]) -> Result<i32, ArgError> {
    let Some(&(out, out_len)) = bufs.last() else {
        return Err(arg_err(kernel, "n", "no buffers"));
    };
    let sharing = |n: usize| bufs.iter().filter(|b| b.1 == n).count();
    let (reference, n) = bufs
        .iter()
        .copied()
        .find(|b| 2 * sharing(b.1) > bufs.len())
        .unwrap_or((out, out_len));
    if let Some(&(arg, len)) = bufs.iter().find(|b| b.1 != n) {
        return Err(arg_err(
            kernel,
            arg,
            format!("holds {len} values, {reference} {n}"),
        ));
    }
    positive_i32(kernel, out, n)
}

/// The two planes of a q8_1 activation of `n` values: `qs` holds `n` i8, `d` holds `n / 32`
/// scales.
pub fn q8_1_planes(kernel: &'static str, qs: usize, d: usize, n: usize) -> Result<(), ArgError> {
    len(kernel, "qs", qs, n)?;
    len(kernel, "d", d, n / QK8_1 as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_buffers_are_named() {
        let err = len("rms_norm", "z", 10, 32).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rms_norm: argument `z`: holds 10 elements, the launch needs 32"
        );
        len("k", "x", 32, 32).unwrap();
    }

    #[test]
    fn q8_lengths_are_positive_multiples_of_32_within_i32() {
        for bad in [0, 1, 31, 33, 4095] {
            assert_eq!(q8_len("k", "n", bad).unwrap_err().arg, "n");
        }
        assert!(q8_len("k", "n", 1 << 31)
            .unwrap_err()
            .why
            .contains("i32::MAX"));
        assert_eq!(q8_len("k", "n", 4096).unwrap(), 4096);
    }

    #[test]
    fn products_past_i32_are_refused() {
        assert_eq!(product_i32("k", "x", &[4096, 4096]).unwrap(), 1 << 24);
        assert!(product_i32("k", "x", &[65536, 65536]).is_err());
        assert!(product_i32("k", "x", &[usize::MAX, 2]).is_err());
    }

    #[test]
    fn values_past_i32_are_refused_and_i32_max_is_taken() {
        let why = "the last offset";
        within_i32("k", "x", i32::MAX as u128, "a x b", why).unwrap();
        let err = within_i32("k", "x", i32::MAX as u128 + 1, "a x b", why).unwrap_err();
        assert_eq!(err.arg, "x");
        assert_eq!(
            err.why,
            "a x b = 2147483648 exceeds i32::MAX (the last offset)"
        );
        assert!(within_i32("k", "x", u128::MAX, "v", why).is_err());
    }

    #[test]
    fn non_finite_scalars_are_named() {
        for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(finite("k", "scale", v).unwrap_err().arg, "scale");
        }
        finite("k", "scale", -0.0).unwrap();
    }

    #[test]
    fn multiples_are_checked_with_or_without_zero() {
        assert_eq!(multiple_of("k", "d", 512, 4, false).unwrap(), 512);
        assert_eq!(multiple_of("k", "d", 0, 4, true).unwrap(), 0);
        for (n, zero_ok) in [(0, false), (6, true), (510, false)] {
            let err = multiple_of("k", "d", n, 4, zero_ok).unwrap_err();
            assert_eq!(err.arg, "d");
            assert!(err.why.contains("multiple of 4"), "{err}");
        }
        assert!(multiple_of("k", "d", 1 << 31, 4, false)
            .unwrap_err()
            .why
            .contains("i32::MAX"));
    }

    #[test]
    fn bounds_scalars_and_shared_memory_are_named() {
        at_most("k", "t", 8, 8, "tokens").unwrap();
        assert_eq!(at_most("k", "t", 9, 8, "tokens").unwrap_err().arg, "t");
        finite("k", "scale", 0.5).unwrap();
        for bad in [f32::NAN, f32::INFINITY] {
            assert_eq!(finite("k", "scale", bad).unwrap_err().arg, "scale");
        }
        assert_eq!(shared_bytes("k", "n", 1024, 2048).unwrap(), 1024);
        let err = shared_bytes("k", "n", 4096, 2048).unwrap_err();
        assert!(err.why.contains("4096 bytes"), "{err}");
        assert_eq!(non_negative_i32("k", "n", 0).unwrap(), 0);
        assert!(non_negative_i32("k", "n", 1 << 31).is_err());
    }

    #[test]
    fn q8_1_planes_need_both_planes() {
        q8_1_planes("k", 64, 2, 64).unwrap();
        assert_eq!(q8_1_planes("k", 63, 2, 64).unwrap_err().arg, "qs");
        assert_eq!(q8_1_planes("k", 64, 1, 64).unwrap_err().arg, "d");
    }
}
