//! The summary tables: each arm against the ceiling, the read stream and the peers, and the bars.

use super::*;

/// The seed's per-shape row, with the Rust build's times, and the .cu build's beside them.
#[derive(Serialize)]
pub(super) struct SeedRow {
    case: String,
    shape: String,
    in_f: usize,
    out_f: usize,
    copies: usize,
    iters: usize,
    e4m3_us: f64,
    blk_us: f64,
    q8_0_us: f64,
    q8_0_planar_us: f64,
    ratio_e4m3: f64,
    ratio_blk: f64,
    blk_over_e4m3: f64,
    #[serde(rename = "blk_GBs")]
    blk_gbs: f64,
    grid_bytes: usize,
    cu_e4m3_us: f64,
    cu_blk_us: f64,
    cu_q8_0_us: f64,
    cu_q8_0_planar_us: f64,
    rust_over_cu_geomean: f64,
    min_pct_ceiling: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cublas_bf16_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cublaslt_e4m3_us: Option<f64>,
}

pub(super) fn summary(timings: &[CaseTiming<Gemv>], out: &mut Report<'_>) {
    let ceiling = out.ceiling_gbps;
    let us =
        |t: &CaseTiming<Gemv>, arm, side| t.arm(arm).and_then(|a| a.on(side)).map(|s| s.median_us);
    let mut seed = Table::new(&[
        "case",
        "cp",
        "e4m3_us",
        "blk_us",
        "q8_0_us",
        "planar_us",
        "ratio",
        "ratio_blk",
        "blk/e4m3",
        "blk_GB/s",
        "rust/cu",
        "min %ceil",
    ]);
    let mut peers = Table::new(&[
        "case",
        "e4m3 GB/s",
        "bf16 GB/s",
        "e4m3 > bf16",
        "e4m3 us",
        "fp8 us",
        "e4m3 < fp8",
    ]);
    let mut rows: Vec<(usize, &CaseTiming<Gemv>, SeedRow)> = Vec::new();
    for t in timings {
        let rust = |f| us(t, Arm::Gemv(f, 1), Side::Rust).unwrap_or(f64::NAN);
        let cu = |f| us(t, Arm::Gemv(f, 1), Side::Cu).unwrap_or(f64::NAN);
        let (a, k, b, p) = (
            rust(Format::E4m3),
            rust(Format::E4m3B128),
            rust(Format::Q8_0),
            rust(Format::Q8_0Planar),
        );
        let blk_bytes = t
            .arm(Arm::Gemv(Format::E4m3B128, 1))
            .map_or(0, |a| a.spec.bytes);
        let grid_bytes =
            grid_rows(t.shape.out_f as u32) as usize * grid_cols(t.shape.in_f as u32) as usize * 4;
        let min_pct = t
            .arms
            .iter()
            .filter(|a| matches!(a.spec.arm, Arm::Gemv(_, 1)))
            .filter_map(|a| a.gbps(Side::Rust))
            .fold(f64::INFINITY, f64::min)
            * 100.0
            / ceiling;
        let row = SeedRow {
            case: t.label(),
            shape: t.shape.name.to_string(),
            in_f: t.shape.in_f,
            out_f: t.shape.out_f,
            copies: t.copies,
            iters: t.calls,
            e4m3_us: a,
            blk_us: k,
            q8_0_us: b,
            q8_0_planar_us: p,
            ratio_e4m3: b / a,
            ratio_blk: b / k,
            blk_over_e4m3: a / k,
            blk_gbs: blk_bytes as f64 / k / 1e3,
            grid_bytes,
            cu_e4m3_us: cu(Format::E4m3),
            cu_blk_us: cu(Format::E4m3B128),
            cu_q8_0_us: cu(Format::Q8_0),
            cu_q8_0_planar_us: cu(Format::Q8_0Planar),
            rust_over_cu_geomean: geomean(FORMATS.iter().map(|&f| rust(f) / cu(f))),
            min_pct_ceiling: min_pct,
            cublas_bf16_us: us(t, Arm::Bf16(1), Side::Peer),
            cublaslt_e4m3_us: us(t, Arm::Fp8(1), Side::Peer),
        };
        seed.row(vec![
            t.label(),
            t.copies.to_string(),
            format!("{a:.2}"),
            format!("{k:.2}"),
            format!("{b:.2}"),
            format!("{p:.2}"),
            format!("{:.4}x", row.ratio_e4m3),
            format!("{:.4}x", row.ratio_blk),
            format!("{:.4}x", row.blk_over_e4m3),
            format!("{:.0}", row.blk_gbs),
            format!("{:.3}", row.rust_over_cu_geomean),
            format!("{min_pct:.0}%"),
        ]);
        let e4m3_gbps = t
            .arm(Arm::Gemv(Format::E4m3, 1))
            .and_then(|x| x.gbps(Side::Rust));
        let bf16_gbps = t.arm(Arm::Bf16(1)).and_then(|x| x.gbps(Side::Peer));
        if bf16_gbps.is_some() || row.cublaslt_e4m3_us.is_some() {
            let fmt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
            peers.row(vec![
                t.label(),
                fmt(e4m3_gbps, 0),
                fmt(bf16_gbps, 0),
                yes_no(e4m3_gbps.zip(bf16_gbps).map(|(e, b)| e > b)),
                format!("{a:.2}"),
                fmt(row.cublaslt_e4m3_us, 2),
                yes_no(row.cublaslt_e4m3_us.map(|f| a < f)),
            ]);
        }
        out.row("seed", &row);
        rows.push((t.shape.in_f * t.shape.out_f, t, row));
    }
    out.table("the seed's table (m = 1, Rust build; ratio = q8_0/e4m3, ratio_blk = q8_0/blk, blk/e4m3 = t_e4m3/t_blk)", seed);
    let uniform: Vec<&(usize, &CaseTiming<Gemv>, SeedRow)> = rows
        .iter()
        .filter(|(_, t, _)| t.class == ValueClass::Uniform)
        .collect();
    if !uniform.is_empty() {
        let g = |f: fn(&SeedRow) -> f64| geomean(uniform.iter().map(|(_, _, r)| f(r)));
        let (ge, gb) = (g(|r| r.ratio_e4m3), g(|r| r.ratio_blk));
        out.line(format!(
            "GEOMEAN ratio (q8_0/e4m3) over {} uniform shapes: {ge:.4}x => delta_pp {:+.2}",
            uniform.len(),
            100.0 * (ge - 1.0)
        ));
        out.line(format!(
            "GEOMEAN ratio_blk (q8_0/blk) over {} uniform shapes: {gb:.4}x => delta_pp {:+.2}",
            uniform.len(),
            100.0 * (gb - 1.0)
        ));
        out.line(
            "byte-stream ceiling: 34/32 = 1.0625x => +6.25pp if perfectly bandwidth-bound"
                .to_string(),
        );
    }
    if !peers.is_empty() {
        out.table("peers (m = 1)", peers);
    }
    out.table(
        "targets (benchmarks: reported, never gated)",
        targets(&uniform, ceiling),
    );
}

/// The bars on the four largest uniform shapes, and Rust/.cu on the others.
pub(super) fn targets(uniform: &[&(usize, &CaseTiming<Gemv>, SeedRow)], ceiling: f64) -> Table {
    let mut by_size: Vec<_> = uniform.to_vec();
    by_size.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut t = Table::new(&["target", "measured", "holds"]);
    let largest: Vec<_> = by_size.iter().take(4).collect();
    if largest.is_empty() {
        return t;
    }
    let names: Vec<String> = largest.iter().map(|(_, c, _)| c.label()).collect();
    let min_pct = largest
        .iter()
        .map(|(_, _, r)| r.min_pct_ceiling)
        .fold(f64::INFINITY, f64::min);
    t.row(vec![
        format!(
            "every Rust m=1 arm >= 85% of the ceiling ({})",
            names.join(", ")
        ),
        format!("min {min_pct:.1}% of {ceiling:.0} GB/s"),
        yes_no(Some(min_pct >= 85.0)),
    ]);
    // What a pure read of each shape's e4m3 bytes reaches, in the same rounds: the bar's
    // ceiling is a 2 GiB stream, which pays a launch's fixed costs on a hundred times the bytes.
    let streams: Vec<f64> = largest
        .iter()
        .filter_map(|(_, c, _)| c.stream.map(|st| st.gbps()))
        .collect();
    if streams.len() == largest.len() {
        let (lo, hi) = streams.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), g| {
            (lo.min(*g), hi.max(*g))
        });
        let vs_stream = largest
            .iter()
            .zip(&streams)
            .flat_map(|((_, c, _), g)| {
                FORMATS.map(|f| {
                    c.arm(Arm::Gemv(f, 1))
                        .and_then(|a| a.gbps(Side::Rust))
                        .map_or(f64::NAN, |a| a / g)
                })
            })
            .fold(f64::INFINITY, f64::min);
        t.row(vec![
            "a read stream of each shape's e4m3 bytes, same rounds".into(),
            format!(
                "{:.1}% to {:.1}% of {ceiling:.0} GB/s",
                100.0 * lo / ceiling,
                100.0 * hi / ceiling
            ),
            "-".into(),
        ]);
        t.row(vec![
            "every Rust m=1 arm against that stream (GB/s over GB/s)".into(),
            format!("min {:.1}%", 100.0 * vs_stream),
            "-".into(),
        ]);
    }
    let rust = geomean(largest.iter().flat_map(|(_, c, _)| {
        FORMATS.map(|f| {
            c.arm(Arm::Gemv(f, 1))
                .and_then(|a| a.on(Side::Rust))
                .map_or(f64::NAN, |s| s.median_us)
        })
    }));
    let cu = geomean(largest.iter().flat_map(|(_, c, _)| {
        FORMATS.map(|f| {
            c.arm(Arm::Gemv(f, 1))
                .and_then(|a| a.on(Side::Cu))
                .map_or(f64::NAN, |s| s.median_us)
        })
    }));
    t.row(vec![
        "Rust geomean time <= .cu geomean".into(),
        format!("{rust:.2} us vs {cu:.2} us ({:.3})", rust / cu),
        yes_no(Some(rust <= cu)),
    ]);
    let blk = largest
        .iter()
        .map(|(_, _, r)| r.blk_over_e4m3)
        .fold(f64::INFINITY, f64::min);
    t.row(vec![
        "blk/e4m3 >= 0.98".into(),
        format!("min {blk:.4}"),
        yes_no(Some(blk >= 0.98)),
    ]);
    let beats: Vec<Option<bool>> = largest
        .iter()
        .map(|(_, c, r)| {
            let e = c
                .arm(Arm::Gemv(Format::E4m3, 1))
                .and_then(|a| a.gbps(Side::Rust))?;
            let b = c.arm(Arm::Bf16(1)).and_then(|a| a.gbps(Side::Peer))?;
            let f = r.cublaslt_e4m3_us?;
            Some(e > b && r.e4m3_us < f)
        })
        .collect();
    t.row(vec![
        "Rust e4m3 more GB/s than cuBLAS bf16 and faster than cuBLASLt FP8".into(),
        format!(
            "{} of {} shapes",
            beats.iter().filter(|b| **b == Some(true)).count(),
            beats.len()
        ),
        yes_no(if beats.iter().any(Option::is_none) {
            None
        } else {
            Some(beats.iter().all(|b| *b == Some(true)))
        }),
    ]);
    for (_, c, _) in by_size.iter().skip(4) {
        // The arm with the largest ratio, named with its Rust time.
        let worst = FORMATS
            .iter()
            .filter_map(|&f| {
                let arm = Arm::Gemv(f, 1);
                let a = c.arm(arm)?;
                let (rust, cu) = (a.on(Side::Rust)?, a.on(Side::Cu)?);
                Some((rust.median_us / cu.median_us, arm, rust.median_us))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        t.row(vec![
            format!("{}: worst Rust/.cu <= 1.03", c.label()),
            worst.map_or("-".into(), |(ratio, arm, us)| {
                format!("{ratio:.3} ({} {us:.2} us)", arm.label())
            }),
            yes_no(worst.map(|(ratio, ..)| ratio <= 1.03)),
        ]);
    }
    t
}
