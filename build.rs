//! Compiles `kernels-gpu` (with `kernels-macros` and `ferrocuda-abi`, whose `#[kernel]` and
//! `variants!` shape its PTX, and `ferrocuda-device`, the instruction wrappers it is written with)
//! for `nvptx64-nvidia-cuda` into one PTX module and embeds it, or, on a machine without a
//! PTX-capable Rust toolchain, embeds the blessed PTX of `ptx/blessed/`: the project's own use of
//! `ferrocuda-builder` (`builder/`), whose docs say how and which settings it reads.
//!
//! `ptx/blessed/` is written from a source build by
//! `FERROCUDA_BLESS=1 cargo test --release -p gates --test golden`.

fn main() {
    ferrocuda_builder::Builder::new("kernels-gpu")
        .source_crates(&["kernels-gpu", "kernels-macros", "abi", "device"])
        .build();
}
