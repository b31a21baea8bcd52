//! The kernel ABI tables (the geometry, then the limits, alignment, shared-memory bounds and
//! non-finite values) have one source, `docs/abi.md`: the crate docs of `kernels-gpu` include
//! it, README carries a copy that must equal it (GitHub cannot include a file), and the shared
//! memory it quotes is the launcher's.

#[test]
fn readme_carries_the_abi_table_of_docs_abi_md() {
    let root = env!("CARGO_MANIFEST_DIR");
    let table = std::fs::read_to_string(format!("{root}/docs/abi.md")).unwrap();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    assert!(table.starts_with("| kernel | arguments |"), "{table}");
    assert!(
        table.contains(
            "\n| kernel | limits | alignment | shared-memory bounds | non-finite values |\n"
        ),
        "docs/abi.md lacks its limits table"
    );
    assert!(
        readme.contains(&format!("## Kernel ABI\n\n{table}\n")),
        "README's Kernel ABI table differs from docs/abi.md: edit docs/abi.md and copy it into \
         README under `## Kernel ABI`"
    );
}

/// The dynamic shared memory the ABI table quotes for the tensor-core GEMVs is what the launcher
/// passes (`gemv::dynamic_shared_bytes`, `gemv::glu_shared_bytes`), so that a layout change cannot
/// leave the contract behind.
#[test]
fn docs_abi_md_quotes_the_launchers_shared_memory() {
    use kernels_gpu::gemv::{dynamic_shared_bytes as plain, glu_shared_bytes as glu, Format};
    let root = env!("CARGO_MANIFEST_DIR");
    let table = std::fs::read_to_string(format!("{root}/docs/abi.md")).unwrap();
    let e4m3 = [1, 2, 4, 8].map(|m| plain(Format::E4m3, m));
    let b128 = [1, 2, 4, 8].map(|m| plain(Format::E4m3B128, m));
    assert_eq!(
        b128[1..],
        e4m3[1..],
        "block-128 is quoted as e4m3 from m = 2"
    );
    let (q8_0, q8_0_glu) = ([4, 8].map(|m| plain(Format::Q8_0, m)), glu(Format::Q8_0, 1));
    assert_eq!(
        glu(Format::Q8_0, 2),
        q8_0_glu,
        "the GLU entries are quoted once for m = 1, 2"
    );
    let quotes = [
        format!(
            "({}, {}, {}, {} B at `m` = 1, 2, 4, 8,",
            e4m3[0], e4m3[1], e4m3[2], e4m3[3]
        ),
        format!("{} B at `m = 1`, then as `gemv_e4m3`", b128[0]),
        format!(
            "({} B at `m = 4`, {} B at `m = 8`, {} B for the GLU entries at `m = 1, 2`;",
            q8_0[0], q8_0[1], q8_0_glu
        ),
    ];
    for quote in quotes {
        assert!(
            table.contains(&quote),
            "docs/abi.md does not quote the launcher's shared memory: {quote}"
        );
    }
}

/// Every public wrapper of `ferrocuda-device` (`device/src/`: a `pub fn`, or an `mma!` or
/// `wgmma_tf32!` wrapper) has a row
/// in `docs/device.md`, the table of the CUDA C++ each one matches.
#[test]
fn docs_device_md_names_every_device_wrapper() {
    let root = env!("CARGO_MANIFEST_DIR");
    let table = std::fs::read_to_string(format!("{root}/docs/device.md")).unwrap();
    let dir = format!("{root}/device/src");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut names: Vec<String> = Vec::new();
        let mut hidden = false;
        for line in text.lines().map(str::trim) {
            let rest = line
                .strip_prefix("pub unsafe fn ")
                .or_else(|| line.strip_prefix("pub fn "));
            match rest {
                // A macro's template, or a helper its expansions call: not a wrapper.
                Some(rest) if !rest.starts_with('$') && !hidden => {
                    names.push(rest.split(['(', '<']).next().unwrap().to_string())
                }
                _ => {}
            }
            if !line.starts_with("#[") {
                hidden = false;
            }
            hidden |= line == "#[doc(hidden)]";
            if line.starts_with("mma_") && line.contains(") = \"mma.sync") {
                names.push(line.split('(').next().unwrap().to_string());
            }
            if line.starts_with("wgmma_tf32_n") && line.contains(',') {
                names.push(line.split(',').next().unwrap().to_string());
            }
        }
        for name in names {
            let named = [
                format!("`{name}"),
                format!(" {name}("),
                format!("::{name}("),
            ];
            if !named.iter().any(|n| table.contains(n.as_str())) {
                missing.push(format!("{} ({})", name, path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/device.md has no row for: {}",
        missing.join(", ")
    );
}
