//! The charts of a run: one picture per question, small multiples with a scale each, a legend
//! of its own band that never covers a mark, and each case's read stream drawn as the
//! reference it is. A family builds its [`Figure`] from the run's JSONL rows
//! ([`crate::harness::Family::chart`]); a gate charts the rows it writes, so that a JSONL
//! file of an earlier run can be charted the same way, with no GPU.
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

use std::path::Path;

/// Writes `fig` to `path` as SVG.
pub fn write(path: &Path, fig: &Figure) -> std::io::Result<()> {
    std::fs::write(path, draw::svg(fig))
}

#[cfg(test)]
mod tests;
