#!/bin/bash
# r65: tf32 bits of wgmma against mma.sync; prototype v16 (checks, stamps, the whole arm).
set -o pipefail
R=/tmp/r65; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/nvidia-smi.csv
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a scripts/tf32-mma-bits.cu -o /tmp/bits > $R/build-bits.log 2>&1; echo "build bits rc=$?"
timeout 120 /tmp/bits 2>&1 | tee $R/tf32-mma-bits.log
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v16.cu -o /tmp/v16 > $R/build-v16.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/v16 2>&1 | tee $R/stamps-v16.log
$NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ireference -Xptxas -v .gpu/proto/arm16.cu -o /tmp/arm16 > $R/build-arm16.log 2>&1; echo "build arm rc=$?"
timeout 200 /tmp/arm16 2>&1 | tee $R/arm-v16.log
tar czf $OUT/r65.tgz -C /tmp r65
