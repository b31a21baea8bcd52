#!/bin/bash
# Static comparison of the Hopper entries, Rust (the blessed sm_90a module) against the .cu
# (NVRTC, the host's options), ptxas 13.0 for sm_90a: ptxas -v, then per entry the instruction
# count and some kinds from cuobjdump -sass. Args: the pip wheels' nvidia/cu13 folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
cu13=$1
export LD_LIBRARY_PATH=$cu13/lib
t=$(mktemp -d)
python3 receipts/ptxas-sm90a-module/nvrtc_ptx.py reference/mla_flash.cu sm_90a $t/cu.ptx
for side in rust cu; do
    ptx=$t/cu.ptx; [ $side = rust ] && ptx=ptx/blessed/sm_90a/kernels.ptx
    echo "== $side: ptxas -arch=sm_90a -v"
    "$cu13/bin/ptxas" -arch=sm_90a -v $ptx -o $t/$side.cubin 2>&1 | grep -A2 "entry function 'mla_attn_flash_wgmma" | grep -v "^--"
    "$cu13/bin/cuobjdump" -sass $t/$side.cubin > $t/$side.sass
done
python3 - $t <<'PY'
import re, sys
def counts(path):
    out = {}
    for p in re.split(r'\n\s*Function : ', open(path).read())[1:]:
        name = p.split('\n')[0].strip()
        if 'wgmma' not in name:
            continue
        ins = re.findall(r'/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)', p)
        c = lambda k: sum(1 for i in ins if i.split('.')[0] == k)
        out[name] = [len(ins)] + [c(k) for k in ('HGMMA', 'LDS', 'STS', 'BAR', 'SHFL', 'SYNCS', 'FFMA', 'FADD', 'FMUL', 'MUFU')]
    return out
r, c = counts(sys.argv[1] + '/rust.sass'), counts(sys.argv[1] + '/cu.sass')
print('\n| entry | instructions Rust / .cu | HGMMA | LDS | STS | BAR | SHFL | SYNCS | FFMA | FADD | FMUL | MUFU |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
for n in sorted(r):
    print('| ' + n + ' | ' + ' | '.join(f'{a} / {b}' for a, b in zip(r[n], c[n])) + ' |')
PY
rm -rf $t
