//! The instructions that decide a kernel's floating-point results, by kind: the check that the
//! Rust build and the reference .cu round alike, made on the CPU from the PTX alone.
//!
//! Bit identity between two builds needs the same operations in the same order, and the
//! operations are the kinds listed here: float add, multiply, fused multiply-add, division and
//! reciprocal with their rounding, the special functions and their `.approx` and `.ftz` forms,
//! conversions with their rounding modes, tensor-core products with their types. A kind present
//! in one build and absent in the other is a place where the two cannot be computing the same
//! thing the same way (NVRTC contracting `1.0f + expf(x)` into an `fma` that the Rust rounds
//! twice shows up as an `fma.rn.f32` only the .cu has, in a kernel with no other `fma.rn.f32`).
//! Orders and counts are not compared: two compilers never emit the same count, and order needs
//! the GPU's check. So a kernel that has a kind elsewhere hides a difference of that kind (expf
//! brings `fma.rn.f32` and `add.rn.f32` into both builds); for the contraction that matters most
//! the chain itself is a kind: an add that reads a rounded product is `mul, add (rounded twice)`,
//! which a build that fused the pair lacks (it caught `1.0 + expf(-g)` written out in `swiglu`).
//!
//! A float `add`, `sub` or `mul` without a rounding modifier may be fused with another into an
//! `fma` by ptxas (PTX ISA, "add": "mul/add sequences with no rounding modifiers may be optimized
//! to use fused-multiply-add instructions"). Without a partner it rounds as `.rn`, so it counts
//! as `.rn`; a contractible multiply whose result a contractible add or sub reads is the kind
//! `mul+add (ptxas may fuse)`, a rounding the other build may not share.

use crate::mix::statements;
use crate::parse::Entry;
use std::collections::BTreeMap;

/// Float and tensor-core operand types: an instruction with one of these among its modifiers
/// computes on floats.
const FLOAT_TYPES: &[&str] = &[
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2",
];

/// Operations whose result on floats depends on how they round or approximate.
const FLOAT_OPS: &[&str] = &[
    "add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos",
    "tanh", "min", "max", "cvt", "mma", "wmma",
];

/// Rounding modifiers: with one, an add or multiply rounds on its own.
const ROUNDINGS: &[&str] = &["rn", "rz", "rm", "rp"];

/// The numerics-deciding kinds of one kernel and how many instructions of each (static counts).
pub type Kinds = BTreeMap<String, u32>;

/// For an opcode that decides a float result, whether it is a contractible add, sub or multiply
/// (no rounding modifier); `None` for one that decides none (integer arithmetic, moves, loads,
/// comparisons, selects, exact sign operations). The opcode itself is its kind.
fn contractible(op: &str) -> Option<bool> {
    let mut parts = op.split('.');
    let base = parts.next()?;
    let modifiers: Vec<&str> = parts.collect();
    if !FLOAT_OPS.contains(&base) || !modifiers.iter().any(|m| FLOAT_TYPES.contains(m)) {
        return None;
    }
    Some(matches!(base, "add" | "sub" | "mul") && !modifiers.iter().any(|m| ROUNDINGS.contains(m)))
}

/// The kinds of `entry`, with contractible adds and multiplies counted as `.rn` unless a
/// contractible add or sub reads a contractible multiply's result (see the module docs); and an
/// add or sub that reads a multiply's result where one of the two rounds on its own (a rounded
/// product, then a rounded sum) is also the kind `mul, add (rounded twice)`, the chain that the
/// other build may have contracted into an `fma`.
pub fn kinds(entry: &Entry<'_>) -> Kinds {
    let statements: Vec<(&str, &str)> = statements(entry).collect();
    // The registers float multiplies write, by type, and whether the multiply is contractible.
    let products: BTreeMap<(&str, &str), bool> = statements
        .iter()
        .filter(|&&(op, _)| op.starts_with("mul."))
        .filter_map(|&(op, operands)| {
            let dst = operands.split(',').next().unwrap_or_default().trim();
            contractible(op).map(|c| ((ty(op), dst), c))
        })
        .collect();
    let mut kinds = Kinds::new();
    for &(op, operands) in &statements {
        let Some(contract) = contractible(op) else {
            continue;
        };
        let adds = op.starts_with("add.") || op.starts_with("sub.");
        let product = adds
            .then(|| {
                operands
                    .split(',')
                    .skip(1)
                    .find_map(|src| products.get(&(ty(op), src.trim())).copied())
            })
            .flatten();
        let fusable = contract && product == Some(true);
        if product.is_some() && !fusable {
            *kinds
                .entry(format!("mul, add.{} (rounded twice)", ty(op)))
                .or_default() += 1;
        }
        let name = if fusable {
            format!("mul+add.{} (ptxas may fuse)", ty(op))
        } else if contract {
            let (base, rest) = op.split_once('.').unwrap_or((op, ""));
            format!("{base}.rn.{rest}")
        } else {
            op.to_string()
        };
        *kinds.entry(name).or_default() += 1;
    }
    kinds
}

/// The type an instruction computes in: its last modifier (`f32` of `add.rn.f32`).
fn ty(op: &str) -> &str {
    op.rsplit('.').next().unwrap_or_default()
}

/// A kind one build of a kernel has and the other lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub kernel: String,
    pub kind: String,
    /// Which build has it: `true` for the first (the Rust build in `ptx-diff --cu`).
    pub in_first: bool,
    /// Why it is expected, from [`ALLOWED`], or `None` where nothing explains it.
    pub allowed: Option<&'static str>,
}

/// Differences that are intended, each with the reason: (kernel name prefix, kind, which build
/// has it (`true` the Rust one), why).
pub const ALLOWED: &[(&str, &str, bool, &str)] = &[
    ("quantize_q8_1", "rcp.rn.f32", true, DIVISION_FREE),
    ("quantize_q8_1", "sub.rn.f32", true, DIVISION_FREE),
    ("quantize_q8_1", "add.rn.f32", true, DIVISION_FREE),
    ("rms_norm_zq8_f32", "rcp.rn.f32", true, DIVISION_FREE),
    ("rms_norm_zq8_f32", "sub.rn.f32", true, DIVISION_FREE),
    ("swiglu_q8_1", "sub.rn.f32", true, DIVISION_FREE),
    (
        "quantize_q8_1",
        "mul, add.f32 (rounded twice)",
        true,
        DIVISION_FREE,
    ),
    (
        "rms_norm_zq8_f32",
        "mul, add.f32 (rounded twice)",
        true,
        DIVISION_FREE,
    ),
    (
        "swiglu_q8_1",
        "mul, add.f32 (rounded twice)",
        true,
        DIVISION_FREE,
    ),
];

/// Why the Rust quantization has kinds the .cu lacks.
const DIVISION_FREE: &str = "the Rust build quantizes by x * rcp(d) where that product is clear \
    of rounding ties and divides the rest, the .cu divides every value: the same bits \
    (kernels-gpu/src/norm_q8/quantize.rs)";

/// The kinds each kernel has in one build only, for kernels in both.
pub fn compare(first: &BTreeMap<String, Kinds>, second: &BTreeMap<String, Kinds>) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (kernel, a) in first {
        let Some(b) = second.get(kernel) else {
            continue;
        };
        let only = |x: &Kinds, y: &Kinds, in_first: bool| -> Vec<Mismatch> {
            x.keys()
                .filter(|k| !y.contains_key(*k))
                .map(|k| Mismatch {
                    kernel: kernel.clone(),
                    kind: k.clone(),
                    in_first,
                    allowed: ALLOWED
                        .iter()
                        .find(|(prefix, kind, side, _)| {
                            kernel.starts_with(prefix) && kind == k && *side == in_first
                        })
                        .map(|a| a.3),
                })
                .collect()
        };
        out.extend(only(a, b, true));
        out.extend(only(b, a, false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn kinds_of(body: &str) -> Kinds {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.visible .entry k(\n.param .u64 k_param_0\n)\n{{\n{body}\nret;\n}}\n"
        );
        kinds(&parse(&ptx).unwrap().entries[0])
    }

    #[test]
    fn float_rounding_kinds_are_kept_and_integer_work_is_not() {
        let k = kinds_of(
            "fma.rn.f32 %r1, %r2, %r3, %r4;\nadd.s32 %r1, %r2, %r3;\nmul.lo.s32 %r1, %r2, %r3;\n\
             cvt.u64.u32 %rd1, %r1;\ncvt.rzi.s32.f32 %r1, %r2;\nex2.approx.ftz.f32 %r1, %r2;\n\
             setp.lt.f32 %p1, %r1, %r2;\nmax.f32 %r1, %r2, %r3;\ndiv.rn.f32 %r1, %r2, %r3;",
        );
        let names: Vec<&str> = k.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "cvt.rzi.s32.f32",
                "div.rn.f32",
                "ex2.approx.ftz.f32",
                "fma.rn.f32",
                "max.f32"
            ]
        );
    }

    #[test]
    fn a_contractible_add_counts_as_rn_unless_it_reads_a_contractible_product() {
        let apart = kinds_of("mul.f32 %r4, %r2, %r3;\nadd.f32 %r1, %r2, %r3;");
        assert_eq!(
            apart.keys().collect::<Vec<_>>(),
            ["add.rn.f32", "mul.rn.f32"]
        );
        let rounded = kinds_of("mul.rn.f32 %r4, %r2, %r3;\nadd.f32 %r1, %r4, %r3;");
        assert_eq!(
            rounded.keys().collect::<Vec<_>>(),
            ["add.rn.f32", "mul, add.f32 (rounded twice)", "mul.rn.f32"]
        );
        let pair = kinds_of("mul.f32 %r4, %r2, %r3;\nsub.f32 %r1, %r5, %r4;");
        assert_eq!(
            pair.keys().collect::<Vec<_>>(),
            ["mul+add.f32 (ptxas may fuse)", "mul.rn.f32"]
        );
    }

    #[test]
    fn a_rounded_product_added_is_its_own_kind_beside_fmas_and_adds_elsewhere() {
        // expf's tail in each build, then `1 + e`: the .cu contracted into an fma, the Rust
        // rounding the product and the sum; both builds have fma.rn and add.rn elsewhere.
        let elsewhere = "fma.rn.f32 %r9, %r2, %r3, %r4;\nadd.rn.f32 %r8, %r2, %r3;\n";
        let cu = kinds_of(&format!(
            "{elsewhere}ex2.approx.ftz.f32 %r5, %r2;\nfma.rn.f32 %r1, %r5, %r6, 0f3F800000;"
        ));
        let rust = kinds_of(&format!(
            "{elsewhere}ex2.approx.ftz.f32 %r5, %r2;\nmul.rn.f32 %r7, %r5, %r6;\n\
             add.rn.f32 %r1, %r7, 0f3F800000;"
        ));
        let m = compare(
            &BTreeMap::from([("swiglu".to_string(), rust)]),
            &BTreeMap::from([("swiglu".to_string(), cu)]),
        );
        let got: Vec<(&str, bool)> = m.iter().map(|m| (m.kind.as_str(), m.in_first)).collect();
        assert_eq!(
            got,
            [("mul, add.f32 (rounded twice)", true), ("mul.rn.f32", true)]
        );
        // The same chain in both builds (a rounded product, then an add of either form) is no
        // difference.
        let explicit = kinds_of("mul.f32 %r4, %r2, %r3;\nadd.rn.f32 %r1, %r4, %r3;");
        assert!(explicit.contains_key("mul, add.f32 (rounded twice)"));
    }

    #[test]
    fn kinds_in_one_build_only_are_reported_with_their_side() {
        let a = BTreeMap::from([("k".to_string(), kinds_of("fma.rn.f32 %r1, %r2, %r3, %r4;"))]);
        let b = BTreeMap::from([(
            "k".to_string(),
            kinds_of("mul.rn.f32 %r1, %r2, %r3;\nadd.rn.f32 %r1, %r1, %r4;\nfma.rn.f32 %r1, %r2, %r3, %r4;"),
        )]);
        let m = compare(&a, &b);
        let got: Vec<(&str, bool)> = m.iter().map(|m| (m.kind.as_str(), m.in_first)).collect();
        assert_eq!(
            got,
            [
                ("add.rn.f32", false),
                ("mul, add.f32 (rounded twice)", false),
                ("mul.rn.f32", false)
            ]
        );
        assert!(m.iter().all(|m| m.allowed.is_none()));
    }
}
