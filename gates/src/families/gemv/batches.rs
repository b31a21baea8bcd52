//! The m a run times (`--batches`), and where each peer arm's rows lie in the peers' reference.

use super::*;
use std::ops::Range;

/// `--batches`: comma-separated m and ranges `A-B`, each m of [`BATCHES`] and each once,
/// returned ascending. Refused before the GPU starts like every other option, with one line
/// naming what is wrong.
pub(super) fn parse_batches(list: &str) -> Result<Vec<usize>, String> {
    let (first, last) = (BATCHES[0], BATCHES[BATCHES.len() - 1]);
    let take = || format!("{first} to {last}");
    let m_of = |item: &str, text: &str| {
        text.trim()
            .parse()
            .ok()
            .filter(|m| BATCHES.contains(m))
            .ok_or_else(|| {
                format!(
                    "--batches: `{item}` is not an m the kernels take ({})",
                    take()
                )
            })
    };
    let mut batches: Vec<usize> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        // A leading `-` is a sign, not a range: `-1` is no m.
        let dash = item.char_indices().skip(1).find(|&(_, c)| c == '-');
        let ms = match dash {
            Some((at, _)) => {
                let (a, b) = (m_of(item, &item[..at])?, m_of(item, &item[at + 1..])?);
                if a > b {
                    return Err(format!("--batches: `{item}` is an empty range"));
                }
                (a..=b).collect()
            }
            None => vec![m_of(item, item)?],
        };
        for m in ms {
            if batches.contains(&m) {
                return Err(format!(
                    "--batches: {m} is given twice; each m is timed once"
                ));
            }
            batches.push(m);
        }
    }
    if batches.is_empty() {
        return Err(format!("--batches: no m given; give some of {}", take()));
    }
    batches.sort_unstable();
    Ok(batches)
}

/// The index of `m` in [`BATCHES`] (per-m arrays are in that order).
pub(super) fn batch_index(m: usize) -> usize {
    BATCHES
        .iter()
        .position(|&b| b == m)
        .expect("an m of the kernels")
}

/// Rows of the peers' f64 reference: the bf16 peer's [`M_MAX`] activation rows, then the FP8
/// peer's rows of each m (each m quantized under a scale of its own, so no m shares another's).
pub(super) const PEER_ROWS: usize = M_MAX + {
    let (mut rows, mut i) = (0, 0);
    while i < BATCHES.len() {
        rows += BATCHES[i];
        i += 1;
    }
    rows
};

/// Where `arm`'s m output rows lie in the peers' reference: the bf16 peer at m reads the first m
/// activation rows, the FP8 peer at m its own m rows after the bf16 block.
pub(super) fn peer_rows(arm: Arm) -> Range<usize> {
    match arm {
        Arm::Bf16(m) => 0..m,
        Arm::Fp8(m) => {
            let first = M_MAX + BATCHES[..batch_index(m)].iter().sum::<usize>();
            first..first + m
        }
        _ => unreachable!("not a peer arm"),
    }
}
