#!/bin/bash
# Prototype v10: v9 with each phase's clock, and a launch that does nothing (skip 3).
set -o pipefail
R=/tmp/r64d; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v10.cu -o /tmp/v10 > $R/build-v10.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/v10 c 2>&1 | tee $R/phases-v10.log
timeout 200 /tmp/v10 2>&1 | tee $R/proto-v10.log
cp .gpu/proto/v10.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64d.tgz -C /tmp r64d
