#!/bin/bash
# r70: mma.sync m16n8k16 f16 bits under a permutation of k; an e4m3 GEMV at one row on the
# tensor cores with its fragments loaded straight from global memory, against a CUDA-core kernel
# and a read stream in one program (scripts/e4m3-m1-direct.cu); the committed GEMV gate at m = 1
# in the same call for the project's kernels beside the same shapes' read streams.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r70; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
$NVCC -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v scripts/e4m3-m1-direct.cu -o /tmp/direct > $R/build.log 2>&1; echo "build rc=$?"
timeout 200 /tmp/direct 2>&1 | tee $R/e4m3-m1-direct.log
timeout 120 .gpu/new/gates gemv --classes uniform --no-peers --batches 1 --jsonl $R/gemv-m1.jsonl > $R/gemv-m1.log 2>&1; echo "gemv rc=$?"
grep -E "q_proj|read stream" $R/gemv-m1.log | head -20
tar czf $OUT/r70.tgz -C /tmp r70
