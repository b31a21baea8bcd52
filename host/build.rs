//! Embeds every reference source of `reference/` (one `.cu` per kernel family), so that a new
//! family's reference is picked up by adding its file, with no list to edit.

use std::path::PathBuf;
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
        let path = dir.join(name).canonicalize().expect("listed file exists");
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    Source {{ name: {name:?}, text: include_str!({:?}) }},\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    fs::write(
        PathBuf::from(env::var("OUT_DIR").unwrap()).join("sources.rs"),
        out,
    )
    .unwrap();
}
