//! The summary: fused/chain in each build and the worst Rust/.cu per case, against the targets.

use super::*;
use crate::harness::run::Report;
use crate::harness::CaseTiming;
use crate::report::Table;

pub(super) fn summary(timings: &[CaseTiming<NormQ8>], out: &mut Report<'_>) -> usize {
    let mut t = Table::new(&[
        "case",
        "fused/chain rust",
        "fused/chain cu",
        "worst rust/cu",
        "rust/cu <= 1.03",
        "fused faster",
    ]);
    for case in timings {
        let med = |arm, side| {
            case.arm(arm)
                .and_then(|a| a.on(side))
                .map_or(f64::NAN, |s| s.median_us)
        };
        let ratio = |side| med(Arm::Fused, side) / med(Arm::Chain, side);
        let worst = case
            .arms
            .iter()
            .filter_map(|a| Some(a.on(Side::Rust)?.median_us / a.on(Side::Cu)?.median_us))
            .fold(0.0, f64::max);
        let (r, u) = (ratio(Side::Rust), ratio(Side::Cu));
        t.row(vec![
            case.label(),
            format!("{r:.3}"),
            format!("{u:.3}"),
            format!("{worst:.3}"),
            yes_no(Some(worst <= 1.03)),
            yes_no(Some(r < 1.0 && u < 1.0)),
        ]);
        out.row(
            "summary",
            &serde_json::json!({
                "case": case.label(), "fused_over_chain_rust": r,
                "fused_over_chain_cu": u, "worst_rust_over_cu": worst,
            }),
        );
    }
    out.table("targets (benchmarks: reported, never gated)", t);
    0
}
