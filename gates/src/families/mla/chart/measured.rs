//! A run's uniform times by arm and cell, and what the run chose at each cell: the serving
//! table's split (from its winner rows) and the flash launcher's entry (from the cell and the
//! device's SM count).

use super::*;
use crate::harness::chart::rows::{in_order, Metric};

/// A run's uniform times by arm and cell, and its choices.
pub(super) struct Measured {
    /// (arm, t_q, kv, Rust or peer us).
    pub(super) times: Vec<(Arm, usize, usize, f64)>,
    /// Each cell's read stream: (t_q, kv, us).
    pub(super) streams: Vec<(usize, usize, f64)>,
    pub(super) stream_label: Option<String>,
    pub(super) t_qs: Vec<usize>,
    pub(super) kvs: Vec<usize>,
    /// The serving table's split per (kernel, t_q, kv), from the winner rows.
    pub(super) served: Vec<(MlaKernel, usize, usize, Split)>,
    /// The flash launcher's entry per (t_q, kv).
    pub(super) picks: Vec<(usize, usize, Arm)>,
    pub(super) first: Cell,
}

/// Every arm a timing row can name.
pub(super) fn every_arm() -> Vec<Arm> {
    let kernels = MlaKernel::ALL
        .iter()
        .flat_map(|&k| Split::ALL.map(|s| Arm::Kernel(k, s)));
    let flash = FlashHeads::ALL
        .into_iter()
        .map(Arm::Flash)
        .chain(WgmmaHeads::HEADS.map(Arm::Wgmma));
    let peers = [MlaKernel::AbsorbQ, MlaKernel::DecompressV].map(Arm::Sgemm);
    kernels
        .chain(flash)
        .chain(peers)
        .chain([Arm::Chain])
        .collect()
}

pub(super) fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

impl Measured {
    pub(super) fn new(run: &Run) -> Result<Self, String> {
        let arms = every_arm();
        let rows = run.uniform();
        let mut times = Vec::new();
        let mut streams = Vec::new();
        let mut cells = Vec::new();
        let mut stream_label = None;
        for t in &rows {
            let (Some(c), Some(us)) = (t.shape_as::<Cell>(), t.main(Metric::Us)) else {
                continue;
            };
            cells.push(c);
            if t.is_stream() {
                streams.push((c.t_q, c.kv, us));
                stream_label.get_or_insert_with(|| t.arm.clone());
            } else if let Some(&arm) = arms.iter().find(|a| a.label() == t.arm) {
                times.push((arm, c.t_q, c.kv, us));
            }
        }
        let first = *cells
            .first()
            .ok_or("no uniform timing row of an MLA cell")?;
        let mut t_qs = in_order(cells.iter().map(|c| c.t_q));
        let mut kvs = in_order(cells.iter().map(|c| c.kv));
        t_qs.sort_unstable();
        kvs.sort_unstable();
        let served = run
            .of_kind("winner")
            .filter(|w| w["class"].as_str().is_none_or(|c| c == "uniform"))
            .filter_map(|w| {
                let k = MlaKernel::ALL
                    .into_iter()
                    .find(|k| Some(k.name()) == w["kernel"].as_str())?;
                let split = Split::from_factor(u32::try_from(w["table"].as_u64()?).ok()?)?;
                Some((
                    k,
                    w["t_q"].as_u64()? as usize,
                    w["kv"].as_u64()? as usize,
                    split,
                ))
            })
            .collect();
        // The module the run loaded, which decides whether the launcher may take a Hopper entry.
        let arch = run
            .rows
            .iter()
            .find(|r| r.get("kind").and_then(|k| k.as_str()) == Some("run"))
            .and_then(|r| r.get("arch")?.as_str())
            .unwrap_or("");
        let picks = in_order(cells.iter().copied())
            .into_iter()
            .filter_map(|c| {
                let pick = match run.sm_count {
                    Some(sms) => launcher_pick(arch, sms, c),
                    // Without the device's SMs, the fastest entry measured.
                    None => {
                        arms.iter()
                            .filter(|a| matches!(a, Arm::Flash(_) | Arm::Wgmma(_)))
                            .filter_map(|&a| Some((a, find(&times, a, c.t_q, c.kv)?)))
                            .min_by(|a, b| a.1.total_cmp(&b.1))?
                            .0
                    }
                };
                Some((c.t_q, c.kv, pick))
            })
            .collect();
        Ok(Measured {
            times,
            streams,
            stream_label,
            t_qs,
            kvs,
            served,
            picks,
            first,
        })
    }

    pub(super) fn us(&self, arm: Arm, t_q: usize, kv: usize) -> Option<f64> {
        find(&self.times, arm, t_q, kv)
    }

    pub(super) fn served(&self, k: MlaKernel, t_q: usize, kv: usize) -> Option<Split> {
        self.served
            .iter()
            .find(|(sk, st, skv, _)| (*sk, *st, *skv) == (k, t_q, kv))
            .map(|s| s.3)
    }

    pub(super) fn pick(&self, t_q: usize, kv: usize) -> Option<Arm> {
        self.picks
            .iter()
            .find(|(pt, pkv, _)| (*pt, *pkv) == (t_q, kv))
            .map(|p| p.2)
    }

    pub(super) fn has(&self, arm: Arm) -> bool {
        self.times.iter().any(|t| t.0 == arm)
    }

    /// A line per t_q, valued at each of `n` categories by `value(t_q, category)`.
    pub(super) fn t_q_lines(
        &self,
        n: usize,
        value: impl Fn(usize, usize) -> Option<f64>,
    ) -> Vec<Line> {
        self.t_qs
            .iter()
            .enumerate()
            .map(|(i, &t)| Line {
                name: format!("t_q {t}"),
                style: t_q_style(i, false),
                values: (0..n).map(|c| value(t, c)).collect(),
            })
            .collect()
    }

    /// What is served at each t_q, in t_q order, several choices over kv joined by `/`.
    pub(super) fn served_note<T: PartialEq + fmt::Display>(
        &self,
        lead: &str,
        at: impl Fn(usize, usize) -> Option<T>,
    ) -> String {
        let per_t: Vec<String> = self
            .t_qs
            .iter()
            .map(|&t| {
                let picks = in_order(self.kvs.iter().filter_map(|&kv| at(t, kv)));
                let picks: Vec<String> = picks.iter().map(|p| p.to_string()).collect();
                if picks.is_empty() {
                    "-".into()
                } else {
                    picks.join("/")
                }
            })
            .collect();
        let t_qs: Vec<String> = self.t_qs.iter().map(usize::to_string).collect();
        format!("{lead} at t_q {}: {}", t_qs.join(" "), per_t.join(" "))
    }
}

fn find(times: &[(Arm, usize, usize, f64)], arm: Arm, t_q: usize, kv: usize) -> Option<f64> {
    times
        .iter()
        .find(|(a, t, k, _)| (*a, *t, *k) == (arm, t_q, kv))
        .map(|x| x.3)
}
