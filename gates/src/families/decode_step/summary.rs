//! The step tables: each step arm's time beside its kernels' times alone and the peers', and
//! the best step against its bytes over the run's ceiling.

use super::layer::{chain, Fuse};
use super::{Arm, DecodeStep, Layer, STEPS};
use crate::harness::run::Report;
use crate::harness::{CaseTiming, Side};
use crate::report::{yes_no, Table};

/// The best step's time over its bytes at the run's ceiling that targets allow the
/// dense layer: at one row, and at four.
fn target(layer: Layer, m: usize) -> Option<f64> {
    match (layer, m) {
        (Layer::Mla, _) => None,
        (_, 1) => Some(1.15),
        (_, 4) => Some(1.25),
        _ => None,
    }
}

pub(super) fn summary(timings: &[CaseTiming<DecodeStep>], out: &mut Report<'_>) -> usize {
    let us = |case: &CaseTiming<DecodeStep>, arm, side| {
        case.arm(arm).and_then(|a| a.on(side)).map(|s| s.median_us)
    };
    let fmt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let mut times = Table::new(&[
        "case",
        "step",
        "step pdl",
        "merged",
        "merged pdl",
        "merged pdl gemvs",
        "merged pdl small",
        "glu",
        "glu pdl",
        "gemvs only, merged",
        "gemvs only, glu",
        "kernels alone",
        "cublas bf16",
        "cublaslt fp8",
    ]);
    let mut ratios = Table::new(&[
        "case",
        "pdl/plain",
        "merged/plain",
        "glu/plain",
        "step/alone",
        "best x bytes/ceiling",
        "target",
        "faster than cublas",
        "best rust/cu",
    ]);
    for case in timings {
        let (shape, rust) = (case.shape, Side::Rust);
        // The peers run on the e4m3 case of the same m.
        let peer = |arm| {
            timings
                .iter()
                .find(|c| c.shape.layer == Layer::E4m3 && c.shape.m == shape.m)
                .and_then(|c| us(c, arm, Side::Peer))
                .filter(|_| shape.layer != Layer::Mla)
        };
        let steps = STEPS.map(|arm| us(case, arm, rust));
        let gemvs = us(case, Arm::Gemvs { fuse: Fuse::Merged }, rust);
        let gemvs_glu = us(case, Arm::Gemvs { fuse: Fuse::Glu }, rust);
        let alone: Option<f64> = chain(shape, Fuse::None)
            .into_iter()
            .map(|op| us(case, Arm::Solo(op), rust))
            .sum();
        let (best_arm, best) = STEPS
            .into_iter()
            .zip(steps)
            .filter_map(|(a, t)| Some((a, t?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or((None, None), |(a, t)| (Some(a), Some(t)));
        let bytes = case.arm(STEPS[0]).map(|a| a.spec.bytes as f64);
        let floor = bytes.map(|b| b / (out.ceiling_gbps * 1e9) * 1e6);
        let over_floor = best.zip(floor).map(|(b, f)| b / f);
        let (bf16, fp8) = (peer(Arm::Bf16), peer(Arm::Fp8));
        let faster = best.zip(bf16.zip(fp8)).map(|(b, (x, y))| b < x && b < y);
        let rust_cu = best_arm.and_then(|a| Some(us(case, a, rust)? / us(case, a, Side::Cu)?));
        let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let target = target(shape.layer, shape.m);
        times.row(vec![
            case.label(),
            fmt(steps[0], 2),
            fmt(steps[1], 2),
            fmt(steps[2], 2),
            fmt(steps[3], 2),
            fmt(steps[4], 2),
            fmt(steps[5], 2),
            fmt(steps[6], 2),
            fmt(steps[7], 2),
            fmt(gemvs, 2),
            fmt(gemvs_glu, 2),
            fmt(alone, 2),
            fmt(bf16, 2),
            fmt(fp8, 2),
        ]);
        ratios.row(vec![
            case.label(),
            fmt(ratio(steps[1], steps[0]), 3),
            fmt(ratio(steps[2], steps[0]), 3),
            fmt(ratio(steps[6], steps[0]), 3),
            fmt(ratio(steps[0], alone), 3),
            fmt(over_floor, 3),
            target.map_or("-".into(), |t| {
                format!("{t:.2} {}", yes_no(over_floor.map(|o| o <= t)))
            }),
            yes_no(faster),
            fmt(rust_cu, 3),
        ]);
        out.row(
            "summary",
            &serde_json::json!({
                "case": case.label(),
                "layer": shape.layer,
                "m": shape.m,
                "step_us": steps[0], "step_pdl_us": steps[1],
                "merged_us": steps[2], "merged_pdl_us": steps[3],
                "merged_pdl_gemvs_us": steps[4], "merged_pdl_small_us": steps[5],
                "glu_us": steps[6], "glu_pdl_us": steps[7],
                "kernels_alone_us": alone,
                "gemvs_only_merged_us": gemvs,
                "gemvs_only_glu_us": gemvs_glu,
                "bytes": bytes,
                "best_over_bytes_at_ceiling": over_floor,
                "target": target,
                "cublas_bf16_us": bf16, "cublaslt_fp8_us": fp8,
                "best_rust_over_cu": rust_cu,
            }),
        );
    }
    out.table("steps, Rust build (us, median, DRAM-cold)", times);
    out.table(
        "steps against their kernels alone, the ceiling and the peers (benchmarks: reported, never gated)",
        ratios,
    );
    0
}
