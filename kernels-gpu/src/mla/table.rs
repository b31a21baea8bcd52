//! The serving table: which split each MLA kernel launches with, per query width `t_q`.
//!
//! The launchers' `serving` variants read it, and the gate times every split against it, so both
//! sides hold the same type. It has one text format, written by [`ServingTable`]'s `Display` and
//! read by [`ServingTable::parse`] (a gate run writes the fastest split per `t_q` in it, and a
//! launcher loads that file), and the compiled-in [`ServingTable::DEFAULT`] prints in it too:
//!
//! ```text
//! # MLA decode serving table: the split each kernel launches with, per query width t_q.
//! t_q            1  2  3  4  5  6  7  8
//! absorb_q       8  8  8  8  8  8  8  8
//! decompress_v   8  8  8  8  8  8  8  8
//! attn_gathered  8  8  4  4  2  2  2  2
//! ```
//!
//! Blank lines and lines starting with `#` are skipped; the first other line is the `t_q` header
//! (exactly `1` to `8`), then one line per kernel, each kernel once, in any order, with eight
//! splits from {1, 2, 4, 8}.
//!
//! attn_gathered may have a second row for deep pools, labelled `attn_gathered>=N`: a launch
//! whose cache pool has at least `N` rows takes its split from that row. The gathers' cost
//! depends on how far apart the rows are as well as on how many there are, and not alike at
//! every split, so one split per `t_q` need not be the fastest at every depth (perf-notes, MLA:
//! Measured). The GEMVs read no pool and have no such row.

use super::Split;
use core::fmt;

/// The query widths a table covers: `t_q` in `1..=MAX_T_Q`.
pub const MAX_T_Q: usize = 8;

/// How far the table's split may be slower than the fastest split of a measured cell: the gate
/// fails a cell where `time(table's split) > REGRESSION_MARGIN * time(fastest split)`. Five per
/// cent is above the spread of repeated medians of these kernels' timings, so a failing cell is a
/// wrong table entry rather than noise.
pub const REGRESSION_MARGIN: f64 = 1.05;

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.factor(), f)
    }
}

/// The three kernels of the family, each with its own row in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MlaKernel {
    AbsorbQ,
    DecompressV,
    AttnGathered,
}

impl MlaKernel {
    pub const ALL: [MlaKernel; 3] = [
        MlaKernel::AbsorbQ,
        MlaKernel::DecompressV,
        MlaKernel::AttnGathered,
    ];

    /// The row label of the text format.
    pub const fn name(self) -> &'static str {
        match self {
            MlaKernel::AbsorbQ => "absorb_q",
            MlaKernel::DecompressV => "decompress_v",
            MlaKernel::AttnGathered => "attn_gathered",
        }
    }

    fn from_name(name: &str) -> Option<MlaKernel> {
        MlaKernel::ALL.into_iter().find(|k| k.name() == name)
    }

    const fn row(self) -> usize {
        self as usize
    }
}

/// The split per kernel and `t_q`, and attn_gathered's row for deep pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServingTable {
    splits: [[Split; MAX_T_Q]; 3],
    deep: Option<DeepRow>,
}

/// attn_gathered's splits for pools of at least `from_pool` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeepRow {
    pub from_pool: usize,
    pub splits: [Split; MAX_T_Q],
}

/// Why a table text was refused, and on which line (1-based; the line after the last for what
/// is missing at the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableError {
    pub line: usize,
    pub fault: TableFault,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFault {
    /// The first line that is neither blank nor a comment is not `t_q 1 2 3 4 5 6 7 8`.
    Header,
    /// A row starts with a word that names no kernel.
    UnknownKernel,
    /// A kernel has a second row.
    DuplicateKernel(MlaKernel),
    /// A row does not have one split per `t_q`.
    SplitCount { found: usize },
    /// The split in column `t_q` is not 1, 2, 4 or 8.
    BadSplit { t_q: usize },
    /// The text ends without a row for this kernel.
    MissingKernel(MlaKernel),
    /// A `kernel>=N` row for a kernel other than attn_gathered, or with `N` not a positive
    /// whole number.
    BadDeepRow,
    /// A second `attn_gathered>=N` row.
    DuplicateDeepRow,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match self.fault {
            TableFault::Header => write!(f, "expected the header `t_q 1 2 3 4 5 6 7 8`"),
            TableFault::UnknownKernel => write!(
                f,
                "not a kernel of the table (absorb_q, decompress_v, attn_gathered)"
            ),
            TableFault::DuplicateKernel(k) => write!(f, "a second row for {}", k.name()),
            TableFault::SplitCount { found } => {
                write!(f, "{found} splits; a row has one per t_q, {MAX_T_Q}")
            }
            TableFault::BadSplit { t_q } => {
                write!(f, "the split for t_q {t_q} is not one of 1, 2, 4, 8")
            }
            TableFault::MissingKernel(k) => write!(f, "no row for {}", k.name()),
            TableFault::BadDeepRow => write!(
                f,
                "a deep-pool row is `attn_gathered>=N` with N a positive number of pool rows \
                 (the GEMVs read no pool)"
            ),
            TableFault::DuplicateDeepRow => write!(f, "a second attn_gathered>=N row"),
        }
    }
}

impl ServingTable {
    /// The compiled-in table, as the gate wrote it (`gates mla --write-table`, every `t_q` at
    /// kv 2k to 256k). absorb_q and decompress_v take split 8 at every `t_q`: only 8 blocks a
    /// head keep enough weight loads in flight. attn_gathered's split gives each block
    /// `8 / split` heads: 8 at `t_q` 1 and 2, 4 at 3 and 4, and 2 from 5 on, where split 8's
    /// blocks would need more than one wave. One row held the margin at every depth, so there is
    /// no deep-pool row (perf-notes, MLA: the L2 prefetches and the attn_gathered schedule).
    pub const DEFAULT: ServingTable = ServingTable {
        splits: [
            [Split::S8; MAX_T_Q],
            [Split::S8; MAX_T_Q],
            [
                Split::S8,
                Split::S8,
                Split::S4,
                Split::S4,
                Split::S2,
                Split::S2,
                Split::S2,
                Split::S2,
            ],
        ],
        deep: None,
    };

    /// A table with the same split everywhere.
    pub const fn uniform(split: Split) -> ServingTable {
        ServingTable {
            splits: [[split; MAX_T_Q]; 3],
            deep: None,
        }
    }

    /// The split for `kernel` at `t_q` with a pool of `pool` rows (the GEMVs, which read no
    /// pool, take any), or `None` where `t_q` is outside `1..=MAX_T_Q`.
    pub fn split(&self, kernel: MlaKernel, t_q: usize, pool: usize) -> Option<Split> {
        let column = t_q.checked_sub(1)?;
        let row = match &self.deep {
            Some(d) if kernel == MlaKernel::AttnGathered && pool >= d.from_pool => &d.splits,
            _ => &self.splits[kernel.row()],
        };
        row.get(column).copied()
    }

    /// attn_gathered's row for deep pools, if the table has one.
    pub fn deep(&self) -> Option<DeepRow> {
        self.deep
    }

    /// The same table with `deep` as attn_gathered's deep-pool row (none if `None`).
    pub fn with_deep(mut self, deep: Option<DeepRow>) -> ServingTable {
        self.deep = deep;
        self
    }

    /// The same table with `split` for `kernel` at `t_q`, or `None` where `t_q` is outside
    /// `1..=MAX_T_Q`.
    pub fn with(mut self, kernel: MlaKernel, t_q: usize, split: Split) -> Option<ServingTable> {
        let column = t_q.checked_sub(1)?;
        *self.splits[kernel.row()].get_mut(column)? = split;
        Some(self)
    }

    /// Reads the text format (see the module docs).
    pub fn parse(text: &str) -> Result<ServingTable, TableError> {
        let mut rows: [Option<[Split; MAX_T_Q]>; 3] = [None; 3];
        let mut deep: Option<DeepRow> = None;
        let mut header = false;
        let end = text.lines().count() + 1;
        let content = text
            .lines()
            .enumerate()
            .map(|(n, l)| (n + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        for (line, words) in content {
            let err = |fault| TableError { line, fault };
            let mut words = words.split_whitespace();
            let label = words.next().unwrap_or_default();
            if !header {
                let columns = words.map(|w| w.parse::<usize>().ok());
                if label != "t_q" || !(1..=MAX_T_Q).map(Some).eq(columns) {
                    return Err(err(TableFault::Header));
                }
                header = true;
                continue;
            }
            if let Some((name, depth)) = label.split_once(">=") {
                let from_pool = depth.parse::<usize>().ok().filter(|&n| n > 0);
                let (true, Some(from_pool)) = (name == MlaKernel::AttnGathered.name(), from_pool)
                else {
                    return Err(err(TableFault::BadDeepRow));
                };
                if deep.is_some() {
                    return Err(err(TableFault::DuplicateDeepRow));
                }
                let splits = parse_row(words).map_err(err)?;
                deep = Some(DeepRow { from_pool, splits });
                continue;
            }
            let kernel = MlaKernel::from_name(label).ok_or(err(TableFault::UnknownKernel))?;
            let row = &mut rows[kernel.row()];
            if row.is_some() {
                return Err(err(TableFault::DuplicateKernel(kernel)));
            }
            *row = Some(parse_row(words).map_err(err)?);
        }
        if !header {
            return Err(TableError {
                line: end,
                fault: TableFault::Header,
            });
        }
        let mut splits = [[Split::S1; MAX_T_Q]; 3];
        for kernel in MlaKernel::ALL {
            splits[kernel.row()] = rows[kernel.row()].ok_or(TableError {
                line: end,
                fault: TableFault::MissingKernel(kernel),
            })?;
        }
        Ok(ServingTable { splits, deep })
    }
}

/// One kernel's splits, `t_q` 1 to 8.
fn parse_row<'a>(words: impl Iterator<Item = &'a str>) -> Result<[Split; MAX_T_Q], TableFault> {
    let mut row = [Split::S1; MAX_T_Q];
    let mut found = 0;
    for (column, word) in words.enumerate() {
        found += 1;
        let split = word.parse().ok().and_then(Split::from_factor);
        match (row.get_mut(column), split) {
            (Some(cell), Some(split)) => *cell = split,
            (Some(_), None) => return Err(TableFault::BadSplit { t_q: column + 1 }),
            (None, _) => {}
        }
    }
    if found != MAX_T_Q {
        return Err(TableFault::SplitCount { found });
    }
    Ok(row)
}

impl core::str::FromStr for ServingTable {
    type Err = TableError;
    fn from_str(text: &str) -> Result<ServingTable, TableError> {
        ServingTable::parse(text)
    }
}

/// The text format, which [`ServingTable::parse`] reads back to the same table.
impl fmt::Display for ServingTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "# MLA decode serving table: the split each kernel launches with, per query width t_q."
        )?;
        let digits = |mut n: usize| {
            let mut d = 1;
            while n >= 10 {
                n /= 10;
                d += 1;
            }
            d
        };
        let name = MlaKernel::AttnGathered.name();
        let deep_label = self
            .deep
            .map_or(0, |d| name.len() + 2 + digits(d.from_pool));
        let width = deep_label.max(14);
        let splits = |f: &mut fmt::Formatter<'_>, row: &[Split; MAX_T_Q]| {
            for split in row {
                write!(f, " {split:>2}")?;
            }
            writeln!(f)
        };
        write!(f, "{:<width$}", "t_q")?;
        for t_q in 1..=MAX_T_Q {
            write!(f, " {t_q:>2}")?;
        }
        writeln!(f)?;
        for kernel in MlaKernel::ALL {
            write!(f, "{:<width$}", kernel.name())?;
            splits(f, &self.splits[kernel.row()])?;
        }
        if let Some(d) = self.deep {
            write!(
                f,
                "{name}>={}{:pad$}",
                d.from_pool,
                "",
                pad = width - deep_label
            )?;
            splits(f, &d.splits)?;
        }
        Ok(())
    }
}
