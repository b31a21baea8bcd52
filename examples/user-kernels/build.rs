//! Compiles the example's kernel crate, `user-kernels-gpu` (`kernels/`), for
//! `nvptx64-nvidia-cuda` into one PTX module and embeds it, with `ferrocuda-builder` as the project
//! builds its own: or, without a PTX-capable Rust toolchain, embeds the blessed PTX of
//! `ptx/blessed/` while the sources still hash to what was blessed. Those sources are the kernel
//! crate and the crates that shape its PTX (`ferrocuda-abi` with `kernels-macros`, and
//! `ferrocuda-device`), wherever they sit; the builds go to `<target>/ptx-user-kernels/` so that
//! they never overwrite the project's own.
//!
//! `ptx/blessed/` is written from a source build by
//! `FERROCUDA_BLESS=1 cargo test --release -p user-kernels --test golden`.

fn main() {
    ferrocuda_builder::Builder::new("user-kernels-gpu")
        .source_crates(&[
            "kernels",
            "../../abi",
            "../../kernels-macros",
            "../../device",
        ])
        .ptx_dir("ptx-user-kernels")
        .build();
}
