#!/bin/bash
# The scores loop of prototypes v11 to v13 alone, data resident in shared memory.
set -o pipefail
R=/tmp/r64g; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/mb.cu -o /tmp/mb > $R/build-mb.log 2>&1; echo "build rc=$?"
timeout 100 /tmp/mb 2>&1 | tee $R/mb.log
cp .gpu/proto/mb.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64g.tgz -C /tmp r64g
