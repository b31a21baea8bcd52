#!/bin/bash
# A standalone prototype: the gathered attention's main kernel on wgmma (sm_90a), 3xTF32.
set -o pipefail
R=/tmp/r63; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a .gpu/proto/wgmma-flash.cu -o /tmp/wf > $R/build.log 2>&1; echo "build rc=$?"
timeout 120 /tmp/wf 1 2>&1 | tee $R/proto.log
cp .gpu/proto/wgmma-flash.cu $R/
tar czf $OUT/r63.tgz -C /tmp r63
