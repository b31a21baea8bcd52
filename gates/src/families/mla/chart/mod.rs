//! The mla chart: small multiples per kernel, time per launch against kv depth with a
//! line per t_q at the split the serving table takes (attn_flash at the entry its launcher
//! takes), then the splits and entries themselves, the served one ringed. Every number comes
//! from the run's rows: the served splits from its winner rows, the flash entry from its cells
//! and the device's SM count.

use super::*;
use crate::harness::chart::figure::{
    marker, palette, Figure, Key, Line, LineStyle, Look, Panel, Section,
};
use crate::harness::chart::rows::{in_order, Run};
use crate::harness::chart::svg::Color;

fn t_q_style(i: usize, dashed: bool) -> LineStyle {
    LineStyle {
        color: palette(i),
        dashed,
        marker: (!dashed).then(|| marker(i)),
    }
}

fn stream_style() -> LineStyle {
    LineStyle {
        color: Color::BLACK,
        dashed: true,
        marker: None,
    }
}

/// `2048` as `2k`.
fn kv_label(kv: usize) -> String {
    if kv.is_multiple_of(1024) {
        format!("{}k", kv / 1024)
    } else {
        kv.to_string()
    }
}

/// A flash entry's short name: `h16` for attn_flash's, `wg16` for the Hopper entry of as many
/// heads.
fn flash_label(arm: Arm) -> String {
    match arm {
        Arm::Wgmma(h) => format!("wg{h}"),
        _ => arm.label().trim_start_matches("attn_flash ").to_string(),
    }
}

/// A panel of time against kv depth.
fn by_kv(m: &Measured, title: String, note: String, lines: Vec<Line>) -> Panel {
    Panel {
        title,
        note: Some(note),
        y_title: "us per launch".into(),
        x_title: "kv depth (cache rows)".into(),
        categories: m.kvs.iter().map(|&kv| kv_label(kv)).collect(),
        lines,
        ..Panel::default()
    }
}

/// A GEMV or attn_gathered at its served split against kv; the GEMVs with their cuBLAS peer
/// and the cold read of their weights.
fn served_panel(m: &Measured, k: MlaKernel) -> Panel {
    let n = m.kvs.len();
    let mut lines = m.t_q_lines(n, |t, c| {
        let kv = m.kvs[c];
        m.us(Arm::Kernel(k, m.served(k, t, kv)?), t, kv)
    });
    let note = m.served_note("split served", |t, kv| m.served(k, t, kv));
    if k != MlaKernel::AttnGathered {
        if m.has(Arm::Sgemm(k)) {
            lines.extend(m.t_qs.iter().enumerate().map(|(i, &t)| Line {
                name: format!("cuBLAS t_q {t}"),
                style: t_q_style(i, true),
                values: m.kvs.iter().map(|&kv| m.us(Arm::Sgemm(k), t, kv)).collect(),
            }));
        }
        if !m.streams.is_empty() {
            lines.push(Line {
                name: "read stream".into(),
                style: stream_style(),
                values: m
                    .kvs
                    .iter()
                    .map(|&kv| {
                        median(
                            m.streams
                                .iter()
                                .filter(|s| s.1 == kv)
                                .map(|s| s.2)
                                .collect(),
                        )
                    })
                    .collect(),
            });
        }
    }
    by_kv(m, format!("{}, served split", k.name()), note, lines)
}

/// attn_flash at its launcher's entry against kv, with the framework's chain (the peer) dashed.
fn flash_panel(m: &Measured) -> Panel {
    let mut lines = m.t_q_lines(m.kvs.len(), |t, c| {
        let kv = m.kvs[c];
        m.us(m.pick(t, kv)?, t, kv)
    });
    if m.has(Arm::Chain) {
        lines.extend(m.t_qs.iter().enumerate().map(|(i, &t)| Line {
            name: format!("cuBLAS chain t_q {t}"),
            style: t_q_style(i, true),
            values: m.kvs.iter().map(|&kv| m.us(Arm::Chain, t, kv)).collect(),
        }));
    }
    let note = m.served_note("entry launched", |t, kv| m.pick(t, kv).map(flash_label));
    by_kv(m, "attn_flash, launcher's entry".into(), note, lines)
}

/// A panel of time against a choice (split or entry), a line per t_q, the served choice
/// ringed; `at(t_q, choice)` gives the time, `served(t_q)` the choices served.
fn by_choice(
    m: &Measured,
    title: String,
    note: &str,
    x_title: &str,
    choices: Vec<String>,
    at: impl Fn(usize, usize) -> Option<f64>,
    served: impl Fn(usize) -> Vec<usize>,
) -> Panel {
    let at = &at;
    let lines = m.t_q_lines(choices.len(), at);
    let rings = m
        .t_qs
        .iter()
        .flat_map(|&t| {
            served(t)
                .into_iter()
                .filter_map(move |c| Some((c, at(t, c)?)))
        })
        .collect();
    Panel {
        title,
        note: Some(note.into()),
        y_title: "us per launch".into(),
        x_title: x_title.into(),
        categories: choices,
        lines,
        rings,
        ..Panel::default()
    }
}

fn split_index(s: Split) -> usize {
    Split::ALL.iter().position(|&x| x == s).unwrap_or(0)
}

/// A GEMV by split, median over the kv depths (their work does not depend on kv).
fn gemv_by_split(m: &Measured, k: MlaKernel) -> Panel {
    by_choice(
        m,
        format!("{} by split", k.name()),
        "median over the kv depths",
        "split",
        Split::ALL.iter().map(|s| s.to_string()).collect(),
        |t, c| {
            median(
                m.kvs
                    .iter()
                    .filter_map(|&kv| m.us(Arm::Kernel(k, Split::ALL[c]), t, kv))
                    .collect(),
            )
        },
        |t| {
            in_order(
                m.kvs
                    .iter()
                    .filter_map(|&kv| m.served(k, t, kv).map(split_index)),
            )
        },
    )
}

fn flash_by_entry(m: &Measured) -> Panel {
    let entries: Vec<Arm> = FlashHeads::ALL
        .into_iter()
        .map(Arm::Flash)
        .chain(WgmmaHeads::HEADS.map(Arm::Wgmma))
        .filter(|&a| m.has(a))
        .collect();
    by_choice(
        m,
        "attn_flash by entry".into(),
        "median over the kv depths",
        "heads a block",
        entries.iter().map(|&a| flash_label(a)).collect(),
        |t, c| {
            median(
                m.kvs
                    .iter()
                    .filter_map(|&kv| m.us(entries[c], t, kv))
                    .collect(),
            )
        },
        |t| {
            in_order(
                m.kvs
                    .iter()
                    .filter_map(|&kv| entries.iter().position(|&a| Some(a) == m.pick(t, kv))),
            )
        },
    )
}

fn gathered_at(m: &Measured, kv: usize) -> Panel {
    let k = MlaKernel::AttnGathered;
    by_choice(
        m,
        format!("attn_gathered by split, kv {}", kv_label(kv)),
        &m.served_note("split served", |t, at| {
            (at == kv).then(|| m.served(k, t, kv)).flatten()
        }),
        "split",
        Split::ALL.iter().map(|s| s.to_string()).collect(),
        |t, c| m.us(Arm::Kernel(k, Split::ALL[c]), t, kv),
        |t| m.served(k, t, kv).map(split_index).into_iter().collect(),
    )
}

const SERVED: &str =
    "At the split the serving table takes (attn_flash: the entry its launcher takes)";
const CHOICES: &str = "Where the split is the point: every split and entry, the served one ringed";

pub(super) fn figure(run: &Run) -> Result<Figure, String> {
    let m = Measured::new(run)?;
    let c = m.first;
    let mut legend: Vec<Key> = m
        .t_qs
        .iter()
        .enumerate()
        .map(|(i, t)| Key {
            label: format!("t_q {t}"),
            look: Look::Line(t_q_style(i, false)),
        })
        .collect();
    if m.has(Arm::Sgemm(MlaKernel::AbsorbQ)) || m.has(Arm::Sgemm(MlaKernel::DecompressV)) {
        legend.push(Key {
            label: "cuBLAS SGEMM at that t_q (dashed, its colour)".into(),
            look: Look::Line(t_q_style(0, true)),
        });
    }
    if let Some(label) = &m.stream_label {
        legend.push(Key {
            label: format!("{label} (absorb_q's weights), median over t_q"),
            look: Look::Line(stream_style()),
        });
    }
    legend.push(Key {
        label: "the split served, the entry launched".into(),
        look: Look::Ring,
    });
    let gemvs = [MlaKernel::AbsorbQ, MlaKernel::DecompressV];
    let mut served: Vec<Panel> = MlaKernel::ALL
        .iter()
        .map(|&k| served_panel(&m, k))
        .collect();
    let mut choices: Vec<Panel> = gemvs.iter().map(|&k| gemv_by_split(&m, k)).collect();
    if FlashHeads::ALL.iter().any(|&h| m.has(Arm::Flash(h))) {
        served.push(flash_panel(&m));
        choices.push(flash_by_entry(&m));
    }
    Ok(Figure {
        title: format!(
            "{} on {}: time per launch against kv depth, a line per t_q",
            run.gate, run.device
        ),
        notes: vec![
            format!(
                "Rust build, uniform inputs, one launch after an L2 scrub, median over the \
                 rounds; lower is faster. Cells: {} heads, kv_rank {}, d_nope {}, d_v {}, \
                 d_rope {}, {} slots gathered.",
                c.nh, c.kv_rank, c.d_nope, c.d_v, c.d_rope, c.n_slots
            ),
            "Each panel has its own scale. The serving table's split comes from the run's \
             winner rows; the flash entry is the one the launcher picks on this device."
                .into(),
        ],
        legend,
        columns: 4,
        panel: (330.0, 250.0),
        sections: vec![
            Section {
                title: Some(SERVED.into()),
                panels: served,
            },
            Section {
                title: Some(CHOICES.into()),
                panels: choices,
            },
            Section {
                title: None,
                panels: m.kvs.iter().map(|&kv| gathered_at(&m, kv)).collect(),
            },
        ],
    })
}

mod measured;

#[cfg(test)]
mod tests;

use measured::{median, Measured};
