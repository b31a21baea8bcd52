#!/bin/bash
# First call (MLA). h: this tree's build (the sm_90a module with the Hopper attention entries).
# 1. Does wgmma round a chain as mma.sync does with the operands' roles swapped
#    (scripts/tf32-mma-orient.cu)? The diagnosis, if the entries' bits differ.
# 2. The GPU tests (every family, and the Hopper entries against attn_flash in both builds).
# 3. mla at both geometries on h: the `attn_flash wgmma hN` arms beside attn_flash, in the
#    bit-equality group, against the oracle, timed; the attention chain peer's first run.
source .gpu/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
A="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a"
nvcc $A scripts/tf32-mma-orient.cu -o $R/tf32-mma-orient > $R/build-orient.log 2>&1
run tf32-mma-orient 60 $R/tf32-mma-orient
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h/gpu-tests
save
run mla 200 .gpu/h/gates mla --jsonl $R/mla.jsonl --plot $R/mla.svg
save
run v32 100 .gpu/h/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg
save
tail -8 $R/tf32-mma-orient.log
grep -E "passed, |FAIL|Hopper" $R/gpu-tests.log | tail -6
grep -E "checks passed|REGRESSION|FAIL|wgmma" $R/mla.log $R/v32.log | head -30
