//! A kernel's PTX with what carries no meaning taken out, so that two builds compare equal when
//! and only when they would assemble to the same program.
//!
//! Dropped or renamed: comments, blank lines and runs of whitespace; register numbers (each
//! register class, e.g. `%r` or `%rd`, is renumbered from 0 in order of first use); the counts of
//! `.reg` declarations (`%r<194>` becomes `%r<N>`); label names (`$L__BB3_7` becomes `$L0`, ...
//! in order of first appearance); parameter symbols (`rms_norm_param_2` becomes `param2`). The
//! kernel's own name is kept: renames are found by comparing everything else.

use crate::parse::Entry;
use std::collections::{HashMap, HashSet};

/// The normalised text of `entry`: one statement per line, each ending in a newline.
pub fn normalize(entry: &Entry<'_>) -> String {
    let lines: Vec<String> = entry
        .code
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    let mut names = Names::new(&lines, &entry.param_names());
    let mut out = String::new();
    for line in &lines {
        if line.starts_with(".reg ") {
            out.push_str(&erase_counts(line));
        } else {
            out.push_str(&names.rename_line(line));
        }
        out.push('\n');
    }
    out
}

/// `.reg .b32 %r<194>;` -> `.reg .b32 %r<N>;`.
fn erase_counts(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| c + open) else {
            break;
        };
        out.push_str(&rest[..=open]);
        if rest[open + 1..close].bytes().all(|b| b.is_ascii_digit()) {
            out.push('N');
        } else {
            out.push_str(&rest[open + 1..close]);
        }
        out.push('>');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The renaming tables of one kernel.
struct Names {
    /// Register prefixes declared with `.reg ... %prefix<N>`.
    reg_classes: HashSet<String>,
    /// Per class, the canonical number of each original number, in order of first use.
    regs: HashMap<String, HashMap<String, usize>>,
    labels: HashSet<String>,
    label_ids: HashMap<String, usize>,
    params: HashMap<String, String>,
}

impl Names {
    fn new(lines: &[String], params: &[&str]) -> Names {
        let reg_classes = lines
            .iter()
            .filter(|l| l.starts_with(".reg "))
            .flat_map(|l| l.split_whitespace())
            .filter_map(|w| w.strip_prefix('%')?.split_once('<').map(|(p, _)| p))
            .map(str::to_string)
            .collect();
        let labels = lines
            .iter()
            .filter_map(|l| l.strip_suffix(':'))
            .filter(|l| !l.contains(char::is_whitespace))
            .map(str::to_string)
            .collect();
        let params = params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), format!("param{i}")))
            .collect();
        Names {
            reg_classes,
            regs: HashMap::new(),
            labels,
            label_ids: HashMap::new(),
            params,
        }
    }

    fn rename_line(&mut self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut word = String::new();
        for ch in line.chars().chain(std::iter::once('\n')) {
            if ch.is_ascii_alphanumeric() || matches!(ch, '_' | '$' | '%') {
                word.push(ch);
                continue;
            }
            if !word.is_empty() {
                out.push_str(&self.rename_word(&word));
                word.clear();
            }
            if ch != '\n' {
                out.push(ch);
            }
        }
        out
    }

    fn rename_word(&mut self, word: &str) -> String {
        if let Some(reg) = word.strip_prefix('%') {
            let digits = reg.len() - reg.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (class, number) = reg.split_at(reg.len() - digits);
            if digits > 0 && self.reg_classes.contains(class) {
                let ids = self.regs.entry(class.to_string()).or_default();
                let next = ids.len();
                let id = *ids.entry(number.to_string()).or_insert(next);
                return format!("%{class}{id}");
            }
        }
        if self.labels.contains(word) {
            let next = self.label_ids.len();
            let id = *self.label_ids.entry(word.to_string()).or_insert(next);
            return format!("$L{id}");
        }
        if let Some(p) = self.params.get(word) {
            return p.clone();
        }
        word.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn norm(body: &str) -> String {
        let ptx = format!(".version 8.0\n.target sm_90\n{body}");
        normalize(&parse(&ptx).unwrap().entries[0])
    }

    #[test]
    fn numbering_labels_params_comments_and_spacing_do_not_matter() {
        let a = norm(
            ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\t.reg .b32 \t%r<9>;\n\
             \t.reg .pred %p<3>;\n\tld.param.b32 %r7, [k_param_0]; // n\n\tsetp.eq.s32 %p2, %r7, 0;\n\
             \t@%p2 bra $L__BB0_2;\n\tadd.s32 %r8, %r7, %r7;\n$L__BB0_2:\n\tmov.u32 %r3, %tid.x;\n\
             \tret;\n}\n",
        );
        let b = norm(
            ".visible .entry k(\n.param .u32 other_0\n)\n{\n.reg .b32 %r<4>;\n.reg .pred %p<2>;\n\n\
             ld.param.b32 %r1, [other_0];\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 bra LBB7;\n\
             add.s32  %r2, %r1, %r1;\nLBB7:\nmov.u32 %r3, %tid.x; /* tid */\nret;\n}\n",
        );
        assert_eq!(a, b);
        assert!(a.contains(".reg .b32 %r<N>;\n"));
        assert!(a.contains("ld.param.b32 %r0, [param0];\n"));
        assert!(
            a.contains("@%p0 bra $L0;\nadd.s32 %r1, %r0, %r0;\n$L0:\n"),
            "{a}"
        );
        assert!(a.contains("mov.u32 %r2, %tid.x;\n"), "{a}");
    }

    #[test]
    fn dataflow_and_opcodes_still_matter() {
        let head = ".visible .entry k()\n{\n.reg .b32 %r<9>;\n";
        let base = norm(&format!(
            "{head}add.s32 %r1, %r2, %r3;\nsub.s32 %r4, %r1, %r2;\n}}\n"
        ));
        let swapped = norm(&format!(
            "{head}add.s32 %r1, %r2, %r3;\nsub.s32 %r4, %r2, %r1;\n}}\n"
        ));
        let other_op = norm(&format!(
            "{head}add.s32 %r1, %r2, %r3;\nadd.s32 %r4, %r1, %r2;\n}}\n"
        ));
        assert_ne!(base, swapped);
        assert_ne!(base, other_op);
    }
}
