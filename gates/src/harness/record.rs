//! JSONL rows for the record: one JSON object per line, each stamped with the gate and the kind
//! of row, so that a claim has its raw runs beside it.

use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Appends rows to a file, or does nothing without one; keeps them too where asked (the chart
/// is drawn from the rows, as from the file).
pub struct Jsonl {
    file: Option<File>,
    gate: &'static str,
    kept: Option<Vec<serde_json::Value>>,
}

#[derive(Serialize)]
struct Stamped<'a, T> {
    gate: &'a str,
    kind: &'a str,
    #[serde(flatten)]
    row: &'a T,
}

impl Jsonl {
    /// Opens (creating or appending to) `path` for the rows of `gate`. Called before any GPU
    /// work, so that a path that cannot be written is refused before the run.
    pub fn open(path: Option<&Path>, gate: &'static str) -> Result<Self, String> {
        let file = match path {
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("cannot open the JSONL file {}: {e}", p.display()))?,
            ),
            None => None,
        };
        Ok(Jsonl {
            file,
            gate,
            kept: None,
        })
    }

    /// Keeps every row written from now on, as the file has it ([`Jsonl::kept`]).
    pub fn keep(&mut self) {
        self.kept.get_or_insert_with(Vec::new);
    }

    /// The rows kept since [`Jsonl::keep`].
    pub fn kept(&self) -> &[serde_json::Value] {
        self.kept.as_deref().unwrap_or_default()
    }

    /// Appends one row of `kind`.
    pub fn write<T: Serialize>(&mut self, kind: &str, row: &T) -> io::Result<()> {
        let stamped = Stamped {
            gate: self.gate,
            kind,
            row,
        };
        if let Some(kept) = &mut self.kept {
            kept.push(serde_json::to_value(&stamped)?);
        }
        let Some(f) = &mut self.file else {
            return Ok(());
        };
        let line = serde_json::to_string(&stamped)?;
        writeln!(f, "{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        a: u32,
    }

    #[test]
    fn rows_are_stamped_once_per_line() {
        let path = std::env::temp_dir().join(format!("gates-jsonl-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut j = Jsonl::open(Some(&path), "demo").unwrap();
        j.write("check", &Row { a: 1 }).unwrap();
        j.write("timing", &Row { a: 2 }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"gate\":\"demo\",\"kind\":\"check\",\"a\":1}\n\
             {\"gate\":\"demo\",\"kind\":\"timing\",\"a\":2}\n"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn kept_rows_are_the_file_rows() {
        let path = std::env::temp_dir().join(format!("gates-kept-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut j = Jsonl::open(Some(&path), "demo").unwrap();
        j.write("run", &Row { a: 0 }).unwrap();
        j.keep();
        j.write("timing", &Row { a: 2 }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(j.kept(), &[last]);
        std::fs::remove_file(&path).unwrap();
        // Without a file, rows are kept all the same.
        let mut j = Jsonl::open(None, "demo").unwrap();
        j.keep();
        j.write("timing", &Row { a: 3 }).unwrap();
        assert_eq!(j.kept().len(), 1);
    }

    #[test]
    fn an_unwritable_path_is_refused_with_its_name() {
        let err = Jsonl::open(Some(Path::new("/nonexistent-dir/x.jsonl")), "demo")
            .err()
            .unwrap();
        assert!(err.contains("/nonexistent-dir/x.jsonl"), "{err}");
    }
}
