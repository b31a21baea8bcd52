//! A run's JSONL rows as the charts read them. A gate keeps the rows it writes and charts them
//! through this same reading, so the chart of a run and the chart of its JSONL file are the
//! same picture, and a run on a GPU machine can be charted again anywhere.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The start of the label of a case's sized read stream (`read stream, 63.0 MB`): the rows of
/// the stream are told from the arms' by it.
pub const STREAM_LABEL: &str = "read stream";

/// A build or the peer, as the `{side}_us` and `{side}_gbps` fields of a timing row name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    Rust,
    Cu,
    Peer,
}

impl Of {
    fn prefix(self) -> &'static str {
        match self {
            Of::Rust => "rust",
            Of::Cu => "cu",
            Of::Peer => "peer",
        }
    }
}

/// What a chart plots: a median time per call or the GB/s it achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Us,
    Gbps,
}

/// One `timing` row.
#[derive(Debug, Clone)]
pub struct Timing {
    pub case: String,
    pub class: String,
    pub arm: String,
    /// The arm's batch, from the row's `m` field or its label's ` m=N`.
    pub m: Option<usize>,
    pub shape: Value,
    row: Value,
}

impl Timing {
    fn new(row: Value) -> Option<Self> {
        let text = |k: &str| row.get(k)?.as_str().map(str::to_string);
        let arm = text("arm")?;
        let m = row
            .get("m")
            .and_then(Value::as_u64)
            .map(|m| m as usize)
            .or_else(|| arm.rsplit_once(" m=").and_then(|(_, m)| m.parse().ok()));
        Some(Timing {
            case: text("case")?,
            class: text("class").unwrap_or_else(|| "uniform".into()),
            arm,
            m,
            shape: row.get("shape").cloned().unwrap_or(Value::Null),
            row,
        })
    }

    /// Whether the row is the case's sized read stream rather than an arm.
    pub fn is_stream(&self) -> bool {
        self.arm.starts_with(STREAM_LABEL)
    }

    /// A read stream's size as its label gives it (`63.0 MB`).
    pub fn stream_size(&self) -> Option<&str> {
        self.arm
            .strip_prefix(STREAM_LABEL)?
            .trim_start_matches(',')
            .trim()
            .into()
    }

    /// The arm's label without its ` m=N`.
    pub fn arm_base(&self) -> &str {
        match self.arm.rsplit_once(" m=") {
            Some((base, m)) if m.parse::<usize>().is_ok() => base,
            _ => &self.arm,
        }
    }

    /// The case's shape: its label without the value class.
    pub fn shape_label(&self) -> &str {
        self.case
            .strip_suffix(&format!(" {}", self.class))
            .unwrap_or(&self.case)
    }

    /// The median of `of` in `metric`, if the arm ran there.
    pub fn value(&self, of: Of, metric: Metric) -> Option<f64> {
        let field = match metric {
            Metric::Us => format!("{}_us", of.prefix()),
            Metric::Gbps => format!("{}_gbps", of.prefix()),
        };
        self.row.get(field)?.as_f64()
    }

    /// The arm's own value: the Rust build's, or the peer's for a peer arm (and the stream).
    pub fn main(&self, metric: Metric) -> Option<f64> {
        self.value(Of::Rust, metric)
            .or_else(|| self.value(Of::Peer, metric))
    }

    /// The shape as the family's type.
    pub fn shape_as<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(self.shape.clone()).ok()
    }
}

/// The rows of one gate run.
#[derive(Debug, Clone)]
pub struct Run {
    pub gate: String,
    pub device: String,
    pub sm_count: Option<u32>,
    /// The 2 GiB read-stream ceiling, GB/s.
    pub ceiling_gbps: Option<f64>,
    pub timings: Vec<Timing>,
    /// Every row, for a family's own kinds (`winner`, `summary`).
    pub rows: Vec<Value>,
}

impl Run {
    /// The run of `rows` (stamped as the JSONL file has them); where they hold several runs
    /// (a `--jsonl` file is appended to), the last.
    pub fn from_rows(rows: Vec<Value>) -> Result<Run, String> {
        let kind = |r: &Value| r.get("kind").and_then(Value::as_str).map(str::to_string);
        let start = rows
            .iter()
            .rposition(|r| kind(r).as_deref() == Some("run"))
            .unwrap_or(0);
        let rows = rows[start..].to_vec();
        let gate = rows
            .iter()
            .find_map(|r| r.get("gate")?.as_str())
            .ok_or("no row names its gate")?
            .to_string();
        if let Some(other) = rows
            .iter()
            .filter_map(|r| r.get("gate")?.as_str())
            .find(|g| *g != gate)
        {
            return Err(format!("rows of two gates in one run: {gate} and {other}"));
        }
        let first = |k: &str| rows.iter().find(|r| kind(r).as_deref() == Some(k));
        let run = first("run");
        let timings: Vec<Timing> = rows
            .iter()
            .filter(|r| kind(r).as_deref() == Some("timing"))
            .filter_map(|r| Timing::new(r.clone()))
            .collect();
        if timings.is_empty() {
            return Err("no timing rows (was the run made with --no-timing?)".into());
        }
        Ok(Run {
            gate,
            device: run
                .and_then(|r| r.get("device")?.as_str())
                .unwrap_or("an unnamed device")
                .to_string(),
            sm_count: run
                .and_then(|r| r.get("sm_count")?.as_u64())
                .and_then(|n| u32::try_from(n).ok()),
            ceiling_gbps: first("ceiling").and_then(|r| r.get("ceiling_gbps")?.as_f64()),
            timings,
            rows,
        })
    }

    /// The run in the text of a JSONL file, one JSON object a line (blank lines skipped).
    pub fn parse(text: &str) -> Result<Run, String> {
        let rows = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str::<Value>(l)
                    .map_err(|e| format!("line {}: not a JSON object ({e})", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if rows.is_empty() {
            return Err("no rows".into());
        }
        Run::from_rows(rows)
    }

    /// The timing rows charts show: those of uniform inputs (the other value classes are in
    /// the tables and the JSONL), or every row of a run with no uniform case.
    pub fn uniform(&self) -> Vec<&Timing> {
        let any = self.timings.iter().any(|t| t.class == "uniform");
        self.timings
            .iter()
            .filter(|t| !any || t.class == "uniform")
            .collect()
    }

    /// The rows of `kind`.
    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.rows
            .iter()
            .filter(move |r| r.get("kind").and_then(Value::as_str) == Some(kind))
    }
}

/// Items in the order they first appear, each once.
pub fn in_order<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &str = r#"{"gate":"g","kind":"run","device":"old"}
{"gate":"g","kind":"timing","case":"a","class":"uniform","arm":"x m=1","rust_us":9.0}
{"gate":"g","kind":"run","device":"GPU","sm_count":132}
{"gate":"g","kind":"ceiling","ceiling_gbps":4500.0}

{"kind":"timing","case":"a zeros","class":"zeros","arm":"x m=2","m":2,"rust_us":2.0,"cu_us":3.0}
{"gate":"g","kind":"timing","case":"a","class":"uniform","arm":"read stream, 1.0 MB","rust_us":1.0}
"#;

    #[test]
    fn the_last_run_is_read_with_its_fields() {
        let run = Run::parse(ROWS).unwrap();
        assert_eq!(run.device, "GPU");
        assert_eq!(run.sm_count, Some(132));
        assert_eq!(run.ceiling_gbps, Some(4500.0));
        assert_eq!(run.timings.len(), 2);
        let t = &run.timings[0];
        assert_eq!((t.m, t.arm_base(), t.shape_label()), (Some(2), "x", "a"));
        assert_eq!(t.value(Of::Cu, Metric::Us), Some(3.0));
        assert_eq!(t.main(Metric::Gbps), None);
        assert_eq!(t.main(Metric::Us), Some(2.0));
        assert!(run.timings[1].is_stream());
        // The uniform rows only, where there are some.
        assert_eq!(run.uniform().len(), 1);
    }

    #[test]
    fn unreadable_or_empty_files_are_named() {
        assert!(Run::parse("{\"gate\":\"g\"}\nnot json\n")
            .unwrap_err()
            .starts_with("line 2:"));
        assert!(Run::parse("").unwrap_err().contains("no rows"));
        assert!(Run::parse(r#"{"gate":"g","kind":"run"}"#)
            .unwrap_err()
            .contains("--no-timing"));
        assert!(Run::parse(
            "{\"gate\":\"a\",\"kind\":\"run\"}\n{\"gate\":\"b\",\"kind\":\"timing\"}"
        )
        .unwrap_err()
        .contains("two gates"));
    }

    #[test]
    fn a_label_m_is_read_when_the_row_has_no_field() {
        let t = Timing::new(serde_json::json!({"case":"c","arm":"q8_0 m=4"})).unwrap();
        assert_eq!((t.m, t.arm_base()), (Some(4), "q8_0"));
        let t = Timing::new(serde_json::json!({"case":"c","arm":"cublas bf16 gemv"})).unwrap();
        assert_eq!((t.m, t.arm_base()), (None, "cublas bf16 gemv"));
    }
}
