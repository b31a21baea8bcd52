//! A kernel's instruction mix: the counts that decide how a decode kernel performs (memory
//! traffic by kind and width, warp shuffles, the math that matters, control flow), read
//! statically from its PTX. Counts are of instructions as written, not as executed: a loop body
//! counts once.

use crate::parse::Entry;
use serde::Serialize;
use std::collections::BTreeMap;

/// Instruction counts of one kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Mix {
    /// Every instruction (directives, labels and braces are not instructions).
    pub instructions: u32,
    /// `ld.global` (including `.nc`), keyed by the bytes one instruction loads (4 for `.f32`,
    /// 16 for `.v4.f32`).
    pub global_loads: BTreeMap<u32, u32>,
    pub global_stores: u32,
    pub shared_loads: u32,
    pub shared_stores: u32,
    /// `shfl.sync.*`.
    pub shuffles: u32,
    pub dp4a: u32,
    /// `fma.*` (not integer `mad`).
    pub fma: u32,
    /// `cvt.*` (numeric conversions; `cvta` address conversions are not counted).
    pub conversions: u32,
    /// `bra`, predicated or not.
    pub branches: u32,
    /// CTA barriers: `bar.sync`, `bar.arrive`, `bar.red`, `barrier.*` (not `bar.warp.sync`).
    pub barriers: u32,
}

/// The opcodes of `entry`'s instructions in order, with modifiers (`ld.global.nc.v4.f32`),
/// without predicates or labels. Instructions inside inline-asm braces count as well.
pub fn opcodes<'a>(entry: &'a Entry<'_>) -> impl Iterator<Item = &'a str> {
    statements(entry).map(|(op, _)| op)
}

/// [`opcodes`], each with the rest of its statement (the operands, `%r1, %r2, %r3`).
pub fn statements<'a>(entry: &'a Entry<'_>) -> impl Iterator<Item = (&'a str, &'a str)> {
    let body = entry
        .code
        .find(')')
        .and_then(|close| entry.code[close..].find('{').map(|b| close + b + 1))
        .map_or("", |start| &entry.code[start..]);
    // Statements end in `;`. A block's braces (the body's, an inline-asm block's) lead or trail
    // a statement; braces inside a statement are vector operands (`{%r1, %r2}`) and stay.
    body.split(';').filter_map(|stmt| {
        let mut stmt = stmt.trim_start_matches(|c: char| c.is_whitespace() || c == '{' || c == '}');
        // Labels (`$L__BB0_2:`) and guards (`@%p1`, `@!%p1`) come before the opcode.
        loop {
            let word = stmt.split_whitespace().next()?;
            if word.ends_with(':') || word.starts_with('@') {
                stmt = stmt.trim_start()[word.len()..]
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '{' || c == '}');
            } else {
                let operands = stmt.trim_start()[word.len()..].trim();
                return (!word.starts_with('.')).then_some((word, operands));
            }
        }
    })
}

/// The bytes one `ld`/`st` moves: vector width times element size (`.v4.f32` is 16).
fn access_bytes(op: &str) -> u32 {
    let mut lanes = 1;
    let mut bits = 0;
    for part in op.split('.') {
        if let Some(n) = part.strip_prefix('v').and_then(|n| n.parse::<u32>().ok()) {
            lanes = n;
        } else if let Some(n) = part
            .strip_prefix(['b', 'u', 's', 'f'])
            .and_then(|n| n.parse::<u32>().ok())
        {
            bits = n;
        }
    }
    lanes * bits / 8
}

pub fn mix(entry: &Entry<'_>) -> Mix {
    let mut m = Mix::default();
    for op in opcodes(entry) {
        m.instructions += 1;
        let mut parts = op.split('.');
        let base = parts.next().unwrap_or("");
        let has = |modifier: &str| op.split('.').skip(1).any(|p| p == modifier);
        match base {
            "ld" if has("global") => *m.global_loads.entry(access_bytes(op)).or_default() += 1,
            "st" if has("global") => m.global_stores += 1,
            "ld" if op.starts_with("ld.shared") => m.shared_loads += 1,
            "st" if op.starts_with("st.shared") => m.shared_stores += 1,
            "shfl" => m.shuffles += 1,
            "dp4a" => m.dp4a += 1,
            "fma" => m.fma += 1,
            "cvt" => m.conversions += 1,
            "bra" => m.branches += 1,
            "barrier" => m.barriers += 1,
            "bar" if !has("warp") => m.barriers += 1,
            _ => {}
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn counts_by_kind_and_width_inside_inline_asm_and_behind_guards() {
        let ptx = ".version 8.0\n.target sm_90\n.visible .entry k(\n.param .u64 k_param_0\n)\n{\n\
                   .reg .b32 %r<9>;\n.reg .pred %p<2>;\n\
                   { .reg .u64 g; cvta.to.global.u64 g, %rd1; ld.global.nc.v4.f32 {%r1, %r2, %r3, %r4}, [g]; }\n\
                   ld.global.b32 %r5, [%rd1];\nld.global.v2.b64 {%rd2, %rd3}, [%rd1];\n\
                   st.global.b32 [%rd1], %r5;\nld.shared.f32 %r6, [s];\nst.shared.f32 [s], %r6;\n\
                   shfl.sync.bfly.b32 %r7, %r6, 16, 31, -1;\ndp4a.s32.s32 %r8, %r1, %r2, %r3;\n\
                   fma.rn.f32 %r1, %r2, %r3, %r4;\ncvt.rzi.s32.f32 %r1, %r2;\n\
                   @%p1 bra $L__BB0_1;\n$L__BB0_1: bar.sync 0;\nbar.warp.sync -1;\nret;\n}\n";
        let module = parse(ptx).unwrap();
        let m = mix(&module.entries[0]);
        assert_eq!(m.global_loads, BTreeMap::from([(4, 1), (16, 2)]));
        assert_eq!(
            (m.global_stores, m.shared_loads, m.shared_stores),
            (1, 1, 1)
        );
        assert_eq!((m.shuffles, m.dp4a, m.fma, m.conversions), (1, 1, 1, 1));
        assert_eq!((m.branches, m.barriers), (1, 1));
        assert_eq!(m.instructions, 15);
    }
}
