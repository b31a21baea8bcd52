//! Embeds every reference source of `reference/` (one `.cu` per kernel family), so that a new
//! family's reference is picked up by adding its file, with no list to edit. A line `#include
//! "name.cuh"` is replaced by that file of `reference/`: NVRTC compiles each source alone, with no
//! include path.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../reference");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".cu"))
        .collect();
    names.sort();
    let mut out = String::from("/// Every reference .cu file, one per kernel family, by name.\n");
    out.push_str("pub const SOURCES: &[Source] = &[\n");
    for name in &names {
        out.push_str(&format!(
            "    Source {{ name: {name:?}, text: {:?} }},\n",
            inlined(&dir, name, &[])
        ));
    }
    out.push_str("];\n");
    fs::write(
        PathBuf::from(env::var("OUT_DIR").unwrap()).join("sources.rs"),
        out,
    )
    .unwrap();
}

/// The text of `reference/name` with each `#include "x.cuh"` line replaced by that file's text;
/// `within` is the chain of files that included it, so that a file including itself is named.
fn inlined(dir: &Path, name: &str, within: &[&str]) -> String {
    if within.contains(&name) {
        panic!(
            "reference/{name} includes itself (through {})",
            within.join(" -> ")
        );
    }
    let path = dir.join(name);
    println!("cargo:rerun-if-changed={}", path.display());
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let within = [within, &[name]].concat();
    text.lines()
        .map(|line| {
            match line
                .strip_prefix("#include \"")
                .and_then(|l| l.strip_suffix('"'))
            {
                Some(header) => inlined(dir, header, &within),
                None => format!("{line}\n"),
            }
        })
        .collect()
}
