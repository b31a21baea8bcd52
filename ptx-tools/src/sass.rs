//! The SASS of assembled kernels (`cuobjdump -sass` on ptxas's cubin), normalised so that two
//! builds compare equal when the machine code is the same instruction for instruction.
//!
//! Dropped: instruction addresses and encodings; kept: opcodes, operands, predicates and
//! physical registers (register allocation is part of the machine code). Branch, call and
//! convergence-barrier targets are absolute addresses in cuobjdump's listing; they become labels
//! (`L0`, `L1`, ... in address order, with an `Ln:` line before the target), so code inserted
//! ahead of a branch does not change every later target.

use crate::{find_tool, Error, Scratch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to install when cuobjdump is missing (it calls nvdisasm, which has its own wheel).
pub const INSTALL: &str = "install the pip wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm \
                           13.2.86 (found through python3 on its own; see README, \
                           Prerequisites), or put cuobjdump on PATH, or set CUOBJDUMP";

/// cuobjdump: `$CUOBJDUMP` if set, else the first `cuobjdump` on `PATH`, else the CUDA pip
/// wheels'.
pub fn find() -> Option<PathBuf> {
    find_tool("CUOBJDUMP", "cuobjdump")
}

/// Opcodes whose address operand is a code location.
const TARGETED: &[&str] = &[
    "BRA", "BRX", "JMP", "JMX", "CALL", "BSSY", "WARPSYNC", "SSY",
];

/// Each kernel's normalised SASS, one instruction per line, by kernel name.
pub fn disassemble(cuobjdump: &Path, cubin: &[u8]) -> Result<BTreeMap<String, String>, Error> {
    let scratch = Scratch::new()?;
    let file = scratch.write("module.cubin", cubin)?;
    let out = Command::new(cuobjdump)
        .arg("-sass")
        .arg(&file)
        .output()
        .map_err(|e| Error::new(format!("could not run {}: {e}", cuobjdump.display())))?;
    if !out.status.success() {
        return Err(Error::new(format!(
            "{} -sass failed ({}): {}",
            cuobjdump.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let listing = String::from_utf8_lossy(&out.stdout);
    let functions = parse_listing(&listing);
    if functions.is_empty() {
        return Err(Error::new(format!(
            "{} -sass listed no function:\n{listing}",
            cuobjdump.display()
        )));
    }
    Ok(functions)
}

/// Splits a `cuobjdump -sass` listing into functions and normalises each.
pub fn parse_listing(listing: &str) -> BTreeMap<String, String> {
    let mut functions = BTreeMap::new();
    let mut current: Option<(String, Vec<(u64, String)>)> = None;
    for line in listing.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("Function : ") {
            if let Some((name, insns)) = current.take() {
                functions.insert(name, normalize(&insns));
            }
            current = Some((name.trim().to_string(), Vec::new()));
        } else if let (Some((_, insns)), Some(rest)) = (current.as_mut(), line.strip_prefix("/*")) {
            // `/*0150*/  @P0 BRA 0x440 ;  /* 0x0000000000b80947 */`; encoding-only lines are
            // `/* 0x... */` and have no address.
            let Some((addr, rest)) = rest.split_once("*/") else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let insn = rest.split("/*").next().unwrap_or("").trim();
            let insn = insn.trim_end_matches(';').trim();
            insns.push((addr, insn.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    if let Some((name, insns)) = current {
        functions.insert(name, normalize(&insns));
    }
    functions
}

/// The opcode of a SASS instruction, past its guard (`@!P0`).
fn opcode(insn: &str) -> &str {
    let mut words = insn.split_whitespace();
    let first = words.next().unwrap_or("");
    if first.starts_with('@') {
        words.next().unwrap_or("")
    } else {
        first
    }
}

/// The address operand of a control-flow instruction, if it is one of `addresses`.
fn target(insn: &str, addresses: &BTreeSet<u64>) -> Option<u64> {
    let op = opcode(insn);
    if !TARGETED.iter().any(|t| op.split('.').next() == Some(t)) {
        return None;
    }
    insn.split([' ', ','])
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .find(|a| addresses.contains(a))
}

fn normalize(insns: &[(u64, String)]) -> String {
    let addresses: BTreeSet<u64> = insns.iter().map(|(a, _)| *a).collect();
    let targets: BTreeSet<u64> = insns
        .iter()
        .filter_map(|(_, i)| target(i, &addresses))
        .collect();
    let label: BTreeMap<u64, usize> = targets.iter().enumerate().map(|(i, &a)| (a, i)).collect();
    let mut out = String::new();
    for (addr, insn) in insns {
        if let Some(l) = label.get(addr) {
            out.push_str(&format!("L{l}:\n"));
        }
        match target(insn, &addresses) {
            Some(t) => {
                let hex = format!("0x{t:x}");
                let words: Vec<String> = insn
                    .split(' ')
                    .map(|w| match w.strip_suffix(',').unwrap_or(w) == hex {
                        true => w.replacen(&hex, &format!("L{}", label[&t]), 1),
                        false => w.to_string(),
                    })
                    .collect();
                out.push_str(&words.join(" "));
            }
            None => out.push_str(insn),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(body: &str) -> String {
        format!(
            "\n\tcode for sm_90\n\t.target\tsm_90\n\n\t\tFunction : k\n\t.headerflags\t@\"EF_CUDA_SM90\"\n\
             {body}\t\t..........\n"
        )
    }

    fn line(addr: u32, insn: &str) -> String {
        format!(
            "        /*{addr:04x}*/                   {insn} ;    /* 0x000000000000094d */\n\
             \x20                                                      /* 0x000fe20003800000 */\n"
        )
    }

    #[test]
    fn addresses_become_labels_and_encodings_go() {
        let a = listing(&format!(
            "{}{}{}{}",
            line(0x0, "@P0 BRA 0x30"),
            line(0x10, "MOV R1, 0x10"),
            line(0x20, "FFMA R2, R1, R1, R2"),
            line(0x30, "EXIT")
        ));
        // One instruction more ahead of the branch shifts every address.
        let b = listing(&format!(
            "{}{}{}{}{}",
            line(0x0, "NOP"),
            line(0x10, "@P0 BRA 0x40"),
            line(0x20, "MOV R1, 0x10"),
            line(0x30, "FFMA R2, R1, R1, R2"),
            line(0x40, "EXIT")
        ));
        let a = &parse_listing(&a)["k"];
        let b = &parse_listing(&b)["k"];
        assert_eq!(
            a,
            "@P0 BRA L0\nMOV R1, 0x10\nFFMA R2, R1, R1, R2\nL0:\nEXIT\n"
        );
        assert_eq!(b.strip_prefix("NOP\n"), Some(a.as_str()));
    }
}
