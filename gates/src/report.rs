//! Output: aligned text tables for people, JSONL rows for the record.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// A text table whose columns are as wide as their widest cell.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = (0..cols)
                .map(|i| {
                    let c = r.get(i).map(String::as_str).unwrap_or("");
                    format!("{c:<w$}", w = width[i])
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        let rule: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}

/// Appends one JSON object per line to a file, or does nothing without one.
pub struct Jsonl(Option<File>);

impl Jsonl {
    pub fn open(path: Option<&Path>) -> io::Result<Self> {
        let file = match path {
            Some(p) => Some(OpenOptions::new().create(true).append(true).open(p)?),
            None => None,
        };
        Ok(Jsonl(file))
    }

    pub fn write(&mut self, row: &serde_json::Value) -> io::Result<()> {
        match &mut self.0 {
            Some(f) => writeln!(f, "{row}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(&["a", "long header"]);
        t.row(vec!["wide cell".into(), "x".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "a          long header");
        assert_eq!(lines[1], "---------  -----------");
        assert_eq!(lines[2], "wide cell  x");
    }

    #[test]
    fn jsonl_appends_one_object_per_line() {
        let path = std::env::temp_dir().join(format!("gates-jsonl-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut j = Jsonl::open(Some(&path)).unwrap();
        j.write(&serde_json::json!({"a": 1})).unwrap();
        j.write(&serde_json::json!({"b": "x"})).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":\"x\"}\n");
        std::fs::remove_file(&path).unwrap();
    }
}
