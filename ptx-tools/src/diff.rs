//! Kernel-by-kernel comparison of two builds' normalised PTX (and SASS).

use crate::build::Kernel;
use serde::Serialize;
use similar::TextDiff;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
    /// In both, normalised PTX differs.
    Changed,
    /// In both, normalised PTX identical.
    Unchanged,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
            Status::Unchanged => "unchanged",
        }
    }
}

/// One kernel's verdict.
#[derive(Debug, Clone)]
pub struct KernelDiff {
    pub name: String,
    pub status: Status,
    /// For an added kernel: the removed kernel whose normalised PTX is the same but for the
    /// name (a rename), and the other way round for a removed one.
    pub same_body_as: Option<String>,
}

/// Every kernel of `a` and `b`, by name.
pub fn compare(a: &BTreeMap<String, Kernel>, b: &BTreeMap<String, Kernel>) -> Vec<KernelDiff> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    // A kernel's text with its own name taken out, to match renames.
    let anonymous = |k: &Kernel| k.normalized.replacen(&k.name, "", 1);
    let removed: Vec<&Kernel> = a.values().filter(|k| !b.contains_key(&k.name)).collect();
    let added: Vec<&Kernel> = b.values().filter(|k| !a.contains_key(&k.name)).collect();
    let twin = |k: &Kernel, others: &[&Kernel]| {
        let body = anonymous(k);
        others
            .iter()
            .find(|o| anonymous(o) == body)
            .map(|o| o.name.clone())
    };
    names
        .into_iter()
        .map(|name| {
            let (status, same_body_as) = match (a.get(name), b.get(name)) {
                (Some(x), Some(y)) if x.normalized == y.normalized => (Status::Unchanged, None),
                (Some(_), Some(_)) => (Status::Changed, None),
                (None, Some(y)) => (Status::Added, twin(y, &removed)),
                (Some(x), None) => (Status::Removed, twin(x, &added)),
                (None, None) => unreachable!("the name came from a or b"),
            };
            KernelDiff {
                name: name.clone(),
                status,
                same_body_as,
            }
        })
        .collect()
}

/// A unified diff of `a` and `b` with `context` lines around each change, headed
/// `--- a/<name>` and `+++ b/<name>`; empty when they are equal.
pub fn unified(name: &str, what: &str, a: &str, b: &str, context: usize) -> String {
    if a == b {
        return String::new();
    }
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{name} ({what})"), &format!("b/{name} ({what})"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::Mix;

    fn kernel(name: &str, body: &str) -> (String, Kernel) {
        let k = Kernel {
            name: name.into(),
            module: 0,
            normalized: format!(".visible .entry {name}(\n{body}"),
            mix: Mix::default(),
            numerics: Default::default(),
        };
        (name.into(), k)
    }

    #[test]
    fn statuses_and_renames() {
        let a = BTreeMap::from([
            kernel("same", "ret;\n"),
            kernel("edited", "add.s32 %r0, %r1, %r2;\n"),
            kernel("old_name", "mul.lo.s32 %r0, %r1, %r2;\n"),
            kernel("gone", "trap;\n"),
        ]);
        let b = BTreeMap::from([
            kernel("same", "ret;\n"),
            kernel("edited", "sub.s32 %r0, %r1, %r2;\n"),
            kernel("new_name", "mul.lo.s32 %r0, %r1, %r2;\n"),
            kernel("fresh", "exit;\n"),
        ]);
        let got: Vec<(String, Status, Option<String>)> = compare(&a, &b)
            .into_iter()
            .map(|d| (d.name, d.status, d.same_body_as))
            .collect();
        let row = |n: &str, s, t: Option<&str>| (n.to_string(), s, t.map(String::from));
        assert_eq!(
            got,
            [
                row("edited", Status::Changed, None),
                row("fresh", Status::Added, None),
                row("gone", Status::Removed, None),
                row("new_name", Status::Added, Some("old_name")),
                row("old_name", Status::Removed, Some("new_name")),
                row("same", Status::Unchanged, None),
            ]
        );
    }

    #[test]
    fn unified_diff_marks_the_changed_line() {
        let d = unified("k", "PTX", "a\nb\nc\n", "a\nB\nc\n", 1);
        assert!(
            d.starts_with("--- a/k (PTX)\n+++ b/k (PTX)\n@@ -1,3 +1,3 @@\n"),
            "{d}"
        );
        assert!(d.contains("\n-b\n+B\n"), "{d}");
        assert_eq!(unified("k", "PTX", "a\n", "a\n", 3), "");
    }
}
