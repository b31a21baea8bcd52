#!/bin/bash
# Prototype v15: v14 with the whole producer warpgroup copying; its clock stamps at t_q 1 and 8.
set -o pipefail
R=/tmp/r64i; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v15.cu -o /tmp/v15 > $R/build-v15.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/v15 2>&1 | tee $R/stamps-v15.log
cp .gpu/proto/v15.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64i.tgz -C /tmp r64i
