//! The charts of a run: one picture per question, small multiples with a scale each, a legend
//! of its own band that never covers a mark, and each case's read stream drawn as the
//! reference it is. A family builds its [`Figure`] from the run's JSONL rows
//! ([`crate::harness::Family::chart`]); a gate charts the rows it writes, and `gates plot`
//! charts a JSONL file of an earlier run the same way, with no GPU.
//!
//! - [`rows`]: a run's rows as the charts read them;
//! - [`figure`]: what a chart shows (panels, series, rules, legend), without geometry;
//! - [`bars`]: panels of bars per shape, the .cu build as ticks, the read streams as rules;
//! - [`layout`]: where everything goes, and the checks that nothing collides;
//! - [`axis`], [`draw`], [`svg`]: the value axes, the drawing, the SVG text.

pub mod axis;
pub mod bars;
pub mod draw;
pub mod figure;
pub mod layout;
pub mod rows;
pub mod svg;

pub use figure::Figure;
pub use rows::Run;

use crate::harness::cli::{check_chart_path, Gate};
use std::path::Path;

/// Writes `fig` to `path` as SVG.
pub fn write(path: &Path, fig: &Figure) -> std::io::Result<()> {
    std::fs::write(path, draw::svg(fig))
}

/// The chart of the run in the JSONL file `from`, by the gate of `gates` that wrote it, written
/// to `out`. Every refusal is one line.
pub fn plot_file(gates: &[&dyn Gate], from: &Path, out: &Path) -> anyhow::Result<()> {
    check_chart_path("--out", out, Some((from, "--from")))?;
    let text = std::fs::read_to_string(from)
        .map_err(|e| anyhow::anyhow!("--from {}: {e}", from.display()))?;
    let run = Run::parse(&text).map_err(|e| anyhow::anyhow!("--from {}: {e}", from.display()))?;
    let gate = gates
        .iter()
        .find(|g| g.answers_to(&run.gate))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--from {}: rows of `{}`, which is not a gate of this build",
                from.display(),
                run.gate
            )
        })?;
    let fig = gate
        .chart(&run)
        .map_err(|e| anyhow::anyhow!("--from {}: {e}", from.display()))?;
    write(out, &fig).map_err(|e| anyhow::anyhow!("--out {}: {e}", out.display()))
}

#[cfg(test)]
mod tests;
