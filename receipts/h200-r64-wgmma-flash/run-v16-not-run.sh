#!/bin/bash
# Prototype v16 (not yet run): its checks and timings, its clock stamps, and the whole arm beside
# the committed kernels. The programs go to the staging folder as v16.cu and arm16.cu.
set -o pipefail
R=/tmp/r65; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v16.cu -o /tmp/v16 > $R/build-v16.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/v16 2>&1 | tee $R/stamps-v16.log
$NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ireference -Xptxas -v .gpu/proto/arm16.cu -o /tmp/arm16 > $R/build-arm16.log 2>&1; echo "build arm rc=$?"
timeout 200 /tmp/arm16 2>&1 | tee $R/arm-v16.log
cp .gpu/proto/v16.cu .gpu/proto/arm16.cu $R/
tar czf $OUT/r65.tgz -C /tmp r65
