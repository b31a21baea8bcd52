#!/bin/bash
# The Rust port to PTX for sm_90a as the project builds its kernels (Debian's rustc-web, build-std
# core, fat LTO, --emit=asm), the launch bounds its entries ask for written in as the project's
# builder writes them (.maxntid 384 / .minnctapersm 1), then ptxas. Output: flash_bits.ptx and
# flash_bits.cubin (what the run loads: the SASS checked here, not a JIT of the PTX) here,
# ptxas's report on stdout. Args: the ptxas directory (the pip wheels' nvidia/cu13/bin), then
# `v32` for DeepSeek-V3.2's geometry (flash_bits_v32.ptx, flash_bits_v32.cubin).
set -euo pipefail
cd "$(dirname "$0")"
T=${CARGO_TARGET_DIR:-/tmp/flash-bits-rust-target}
if [ "${2:-}" = v32 ]; then features=(--features v32); out=flash_bits_v32; else features=(); out=flash_bits; fi
RUSTC=/usr/bin/rustc CARGO_TARGET_DIR=$T RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Ctarget-cpu=sm_90a" \
    /usr/bin/cargo rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core "${features[@]}" -- --emit=asm -Zno-link
python3 - "$T/nvptx64-nvidia-cuda/release/deps/flash_bits.s" $out.ptx <<'PY'
import sys
s = open(sys.argv[1]).read()
marker = "// ferrocuda.maxntid "
starts = [i for i in range(len(s)) if s.startswith('.visible .entry ', i)]
out = s[:starts[0]]
for k, st in enumerate(starts):
    e = s[st:(starts[k + 1] if k + 1 < len(starts) else len(s))]
    i = e.find(marker)
    if i >= 0:
        n, b = e[i + len(marker):].split('\n')[0].split()[:2]
        c = e.find('\n)\n{')
        e = e[:c + 3] + f'.maxntid {n}, 1, 1\n.minnctapersm {b}\n' + e[c + 3:]
    out += e
open(sys.argv[2], 'w').write(out)
PY
"$1/ptxas" -arch=sm_90a -v $out.ptx -o $out.cubin 2>&1 | grep -v C7519
