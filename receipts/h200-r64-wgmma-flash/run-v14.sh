#!/bin/bash
# Prototype v14: v13 (64 heads, 2/4 k-steps an item, two accumulators) with clock stamps of each
# ring item, at t_q 1 and 8.
set -o pipefail
R=/tmp/r64h; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v14.cu -o /tmp/v14 > $R/build-v14.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/v14 2>&1 | tee $R/stamps-v14.log
cp .gpu/proto/v14.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64h.tgz -C /tmp r64h
