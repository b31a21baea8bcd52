//! The summary: the winner table and the serving table's regressions, the GEMVs against the
//! ceiling and the peer, attn_gathered's bandwidth, and attn_flash's roofline.

use super::*;

/// One measured (kernel, t_q, kv) cell of the winner table.
#[derive(Serialize)]
pub(super) struct Winner {
    pub(super) kernel: &'static str,
    pub(super) t_q: usize,
    pub(super) kv: usize,
    pub(super) class: ValueClass,
    /// Rust build, median us per split 1, 2, 4, 8.
    pub(super) us: [f64; 4],
    pub(super) best: u32,
    pub(super) table: u32,
    pub(super) table_over_best: f64,
    pub(super) table_over_unsplit: f64,
    pub(super) regression: bool,
    pub(super) rust_over_cu: [f64; 4],
}

impl Winner {
    /// The fastest split's time (NaN times left out).
    fn fastest_us(&self) -> f64 {
        self.us.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

pub(super) fn split_us(t: &CaseTiming<Mla>, k: MlaKernel, side: Side) -> [f64; 4] {
    Split::ALL.map(|s| {
        t.arm(Arm::Kernel(k, s))
            .and_then(|a| a.on(side))
            .map_or(f64::NAN, |st| st.median_us)
    })
}

pub(super) fn summary(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) -> usize {
    let mut t = Table::new(&[
        "kernel",
        "t_q",
        "kv",
        "class",
        "split=1",
        "split=2",
        "split=4",
        "split=8",
        "best",
        "table",
        "table/best",
        "table/unsplit",
        "rust/cu max",
    ]);
    let mut regressions = Vec::new();
    let mut winners = Vec::new();
    for case in timings {
        for k in MlaKernel::ALL {
            let us = split_us(case, k, Side::Rust);
            let cu = split_us(case, k, Side::Cu);
            let b = (0..4).min_by(|&a, &b| us[a].total_cmp(&us[b])).unwrap_or(0);
            let sel = mla
                .table
                .split(k, case.shape.t_q, case.shape.kv)
                .unwrap_or(Split::S1);
            let si = split_index(sel);
            let w = Winner {
                kernel: k.name(),
                t_q: case.shape.t_q,
                kv: case.shape.kv,
                class: case.class,
                us,
                best: Split::ALL[b].factor(),
                table: sel.factor(),
                table_over_best: us[si] / us[b],
                table_over_unsplit: us[si] / us[0],
                // The table was measured at the seed's geometry; elsewhere it is only reported.
                regression: us[si] / us[b] > REGRESSION_MARGIN && mla.args.geometry == "seed",
                rust_over_cu: std::array::from_fn(|i| us[i] / cu[i]),
            };
            t.row(vec![
                k.name().into(),
                w.t_q.to_string(),
                w.kv.to_string(),
                case.class.label().into(),
                format!("{:.1}", us[0]),
                format!("{:.1}", us[1]),
                format!("{:.1}", us[2]),
                format!("{:.1}", us[3]),
                w.best.to_string(),
                w.table.to_string(),
                format!("{:.3}", w.table_over_best),
                format!("{:.3}", w.table_over_unsplit),
                format!("{:.3}", w.rust_over_cu.iter().copied().fold(0.0, f64::max)),
            ]);
            if w.regression {
                regressions.push(format!(
                    "REGRESSION {} t_q={} kv={} {}: table split={} {:.1} us vs fastest split={} {:.1} us ({:+.1}%), margin {:.0}%",
                    w.kernel, w.t_q, w.kv, case.class.label(), w.table, us[si], w.best, us[b],
                    100.0 * (w.table_over_best - 1.0), 100.0 * (REGRESSION_MARGIN - 1.0)
                ));
            }
            out.row("winner", &w);
            winners.push(w);
        }
    }
    out.table(
        "per-(t_q, kv) winner table (Rust build, median us; table = the serving table's split)",
        t,
    );
    for r in &regressions {
        out.line(r.clone());
    }
    let ratios: Vec<f64> = winners.iter().flat_map(|w| w.rust_over_cu).collect();
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    out.line(format!(
        "Rust/.cu over {} cells x splits: geomean {:.3}, worst {worst:.3} (targets: <= 1.03 geomean, <= 1.10 each)",
        ratios.len(),
        geomean(ratios.iter().copied())
    ));
    gemv_table(mla, timings, out);
    attn_table(mla, timings, out);
    flash_table(mla, timings, out);
    if let Some(path) = &mla.args.write_table {
        let table = measured_table(&winners, mla.table);
        match launch::write_table(path, &table) {
            Ok(()) => out.line(format!(
                "serving table measured by this run written to {}:\n{table}",
                path.display()
            )),
            Err(e) => out.line(format!("could not write the measured table: {e}")),
        }
    }
    regressions.len()
}

/// The measured table: per kernel and `t_q`, the split whose worst ratio to a cell's fastest
/// split is smallest over every measured depth (uniform class); widths not measured take the
/// nearest measured width below, or `base`'s entry where there is none. attn_gathered also gets
/// a deep-pool row from the measured depth that leaves the fewest cells outside the margin,
/// where some depth leaves fewer than one row for all depths does.
pub(super) fn measured_table(winners: &[Winner], base: ServingTable) -> ServingTable {
    let uniform: Vec<&Winner> = winners
        .iter()
        .filter(|w| w.class == ValueClass::Uniform)
        .collect();
    let of = |k: MlaKernel| -> Vec<&Winner> {
        uniform
            .iter()
            .copied()
            .filter(|w| w.kernel == k.name())
            .collect()
    };
    let shallow =
        |k: MlaKernel| std::array::from_fn(|i| base.split(k, i + 1, 0).unwrap_or(Split::S1));
    let mut table = base.with_deep(None);
    for k in MlaKernel::ALL {
        table = with_row(table, k, fastest_row(&of(k), shallow(k)));
    }
    let attn = of(MlaKernel::AttnGathered);
    let misses = |t: &ServingTable| {
        attn.iter()
            .filter(|w| {
                let sel = t
                    .split(MlaKernel::AttnGathered, w.t_q, w.kv)
                    .unwrap_or(Split::S1);
                w.us[split_index(sel)] > REGRESSION_MARGIN * w.fastest_us()
            })
            .count()
    };
    let mut depths: Vec<usize> = attn.iter().map(|w| w.kv).collect();
    depths.sort_unstable();
    depths.dedup();
    let mut best = (misses(&table), table);
    for &from_pool in depths.iter().skip(1) {
        let (near, far): (Vec<&Winner>, Vec<&Winner>) = attn.iter().partition(|w| w.kv < from_pool);
        let near_row = fastest_row(&near, shallow(MlaKernel::AttnGathered));
        let candidate =
            with_row(table, MlaKernel::AttnGathered, near_row).with_deep(Some(DeepRow {
                from_pool,
                splits: fastest_row(&far, near_row),
            }));
        let m = misses(&candidate);
        if m < best.0 {
            best = (m, candidate);
        }
    }
    best.1
}

/// Per `t_q`, the split whose worst ratio to a cell's fastest split over `cells` of that `t_q`
/// is smallest; a width without cells takes the pick of the nearest width below, or
/// `fallback`'s entry where there is none.
pub(super) fn fastest_row(cells: &[&Winner], fallback: [Split; MAX_T_Q]) -> [Split; MAX_T_Q] {
    let mut row = fallback;
    let mut last: Option<Split> = None;
    for (i, entry) in row.iter_mut().enumerate() {
        let at: Vec<&&Winner> = cells.iter().filter(|w| w.t_q == i + 1).collect();
        let worst = |s: usize| {
            at.iter()
                .map(|w| w.us[s] / w.fastest_us())
                .fold(0.0, f64::max)
        };
        let pick = if at.is_empty() {
            last
        } else {
            (0..4)
                .min_by(|&a, &b| worst(a).total_cmp(&worst(b)))
                .map(|s| Split::ALL[s])
        };
        if let Some(s) = pick {
            *entry = s;
            last = Some(s);
        }
    }
    row
}

/// `table` with `row` as `kernel`'s splits.
pub(super) fn with_row(
    table: ServingTable,
    kernel: MlaKernel,
    row: [Split; MAX_T_Q],
) -> ServingTable {
    (1..=MAX_T_Q).fold(table, |t, t_q| {
        t.with(kernel, t_q, row[t_q - 1]).unwrap_or(t)
    })
}

/// The index of `split` in [`Split::ALL`] (and in a [`Winner`]'s times).
pub(super) fn split_index(split: Split) -> usize {
    Split::ALL.iter().position(|&s| s == split).unwrap_or(0)
}

/// The GEMVs with the serving table's split against the ceiling and the cuBLAS peer.
pub(super) fn gemv_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let ceiling = out.ceiling_gbps;
    let mut t = Table::new(&[
        "kernel",
        "case",
        "table split",
        "rust us",
        "GB/s",
        "% ceiling",
        "cold read us",
        "% of the read",
        "cublas us",
        "faster than cublas",
    ]);
    for case in timings {
        let stream = case.stream.map(|st| st.gbps());
        for k in [MlaKernel::AbsorbQ, MlaKernel::DecompressV] {
            let sel = mla
                .table
                .split(k, case.shape.t_q, case.shape.kv)
                .unwrap_or(Split::S1);
            let Some(arm) = case.arm(Arm::Kernel(k, sel)) else {
                continue;
            };
            let (Some(st), Some(gbps)) = (arm.on(Side::Rust), arm.gbps(Side::Rust)) else {
                continue;
            };
            let peer = case
                .arm(Arm::Sgemm(k))
                .and_then(|a| a.on(Side::Peer))
                .map(|s| s.median_us);
            t.row(vec![
                k.name().into(),
                case.label(),
                sel.to_string(),
                format!("{:.2}", st.median_us),
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / ceiling),
                case.stream
                    .map_or("-".into(), |st| format!("{:.2}", st.stats.median_us)),
                stream.map_or("-".into(), |g| format!("{:.0}%", 100.0 * gbps / g)),
                peer.map_or("-".into(), |p| format!("{p:.2}")),
                yes_no(peer.map(|p| st.median_us < p)),
            ]);
        }
    }
    out.table(
        "absorb_q and decompress_v at the table's split (targets at t_q = 1: >= 80% of the ceiling, faster than cuBLAS; cold read: read_stream over absorb_q's weight bytes, scrubbed like them)",
        t,
    );
}

/// The flash attention per cell, each entry (the Hopper entries too, where the run has them):
/// Rust against .cu, against the seed's kernel at the table's split, the framework's chain (the
/// peer) and the entry attn_flash's launcher takes, and its roofline (bytes against the run's read ceiling, FLOPs against the f32 FMA
/// peak).
pub(super) fn flash_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let peak = mla.fma_peak.get().copied().flatten();
    let mut t = Table::new(&[
        "case",
        "entry",
        "rust us",
        "cu us",
        "rust/cu",
        "seed kernel us",
        "speedup",
        "chain us",
        "vs chain",
        "vs launcher's",
        "GB/s",
        "% ceiling",
        "GFLOP",
        "TFLOP/s",
        "% f32 FMA peak",
    ]);
    let (mut ratios, mut hopper) = (Vec::new(), Vec::new());
    for case in timings {
        let c = case.shape;
        let arms = flash_entries(c)
            .map(Arm::Flash)
            .chain(mla.wgmma_entries(c).map(Arm::Wgmma));
        let launchers = case
            .arm(mla.flash_pick(c))
            .and_then(|a| a.on(Side::Rust))
            .map(|s| s.median_us);
        for which in arms {
            let Some(arm) = case.arm(which) else {
                continue;
            };
            let (Some(rust), Some(cu)) = (arm.on(Side::Rust), arm.on(Side::Cu)) else {
                continue;
            };
            let split = mla
                .table
                .split(MlaKernel::AttnGathered, c.t_q, c.kv)
                .unwrap_or(Split::S1);
            let seed = case
                .arm(Arm::Kernel(MlaKernel::AttnGathered, split))
                .and_then(|a| a.on(Side::Rust))
                .map(|s| s.median_us);
            let chain = case
                .arm(Arm::Chain)
                .and_then(|a| a.on(Side::Peer))
                .map(|s| s.median_us);
            let flop = 2.0 * (c.t_q * c.nh * c.n_slots * (c.row() + c.kv_rank)) as f64;
            let tflops = flop / (rust.median_us * 1e-6) / 1e12;
            let gbps = arm.gbps(Side::Rust).unwrap_or(f64::NAN);
            let pick = if which == mla.flash_pick(c) {
                " (launcher's)"
            } else {
                ""
            };
            let ratios = match which {
                Arm::Flash(_) => &mut ratios,
                _ => &mut hopper,
            };
            ratios.push(rust.median_us / cu.median_us);
            t.row(vec![
                case.label(),
                format!("{}{pick}", arm.spec.arm.label()),
                format!("{:.2}", rust.median_us),
                format!("{:.2}", cu.median_us),
                format!("{:.3}", rust.median_us / cu.median_us),
                seed.map_or("-".into(), |s| format!("{s:.1}")),
                seed.map_or("-".into(), |s| format!("{:.1}x", s / rust.median_us)),
                chain.map_or("-".into(), |s| format!("{s:.1}")),
                chain.map_or("-".into(), |s| format!("{:.1}x", s / rust.median_us)),
                launchers.map_or("-".into(), |s| format!("{:.2}x", s / rust.median_us)),
                format!("{gbps:.0}"),
                format!("{:.0}%", 100.0 * gbps / out.ceiling_gbps),
                format!("{:.3}", flop / 1e9),
                format!("{tflops:.1}"),
                peak.map_or("-".into(), |p| format!("{:.0}%", 100.0 * tflops * 1e12 / p)),
            ]);
        }
    }
    if ratios.is_empty() && hopper.is_empty() {
        return;
    }
    out.table(
        "attn_flash and its Hopper entries, `attn_flash wgmma hN` (targets, seed geometry: <= 8 us at t_q 1, <= 25 us at t_q 8, faster than the chain; chain: gather, cuBLAS SGEMM, softmax, SGEMM in f32; FLOPs: 2 x t x nh x n_slots x (row + kv_rank), f32 work, which 3xTF32 does as three tensor-core products)",
        t,
    );
    for (what, ratios) in [("attn_flash", &ratios), ("the Hopper entries", &hopper)] {
        if ratios.is_empty() {
            continue;
        }
        out.line(format!(
            "{what} Rust/.cu over {} cells: geomean {:.3}, worst {:.3} (targets: <= 1.03 geomean, <= 1.10 each)",
            ratios.len(),
            geomean(ratios.iter().copied()),
            ratios.iter().copied().fold(0.0, f64::max)
        ));
    }
}

/// attn_gathered's bandwidth on the rows it gathers, at the table's split.
pub(super) fn attn_table(mla: &Mla, timings: &[CaseTiming<Mla>], out: &mut Report<'_>) {
    let mut t = Table::new(&["case", "table split", "rust us", "gathered MB", "GB/s"]);
    for case in timings {
        let sel = mla
            .table
            .split(MlaKernel::AttnGathered, case.shape.t_q, case.shape.kv)
            .unwrap_or(Split::S1);
        let Some(arm) = case.arm(Arm::Kernel(MlaKernel::AttnGathered, sel)) else {
            continue;
        };
        let (Some(st), Some(gbps)) = (arm.on(Side::Rust), arm.gbps(Side::Rust)) else {
            continue;
        };
        t.row(vec![
            case.label(),
            sel.to_string(),
            format!("{:.1}", st.median_us),
            format!("{:.1}", arm.spec.bytes as f64 / 1e6),
            format!("{gbps:.0}"),
        ]);
    }
    out.table(
        "attn_gathered (bytes: the gathered rows, queries, indices and outputs)",
        t,
    );
}
