//! The kernel ABI tables (the geometry, then the limits, alignment, shared-memory bounds and
//! non-finite values) have one source, `docs/abi.md`: the crate docs of `kernels-gpu` include
//! it, and README carries a copy that must equal it (GitHub cannot include a file).

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
