#!/bin/bash
# r72: a decode step's GEMVs stood in for by read streams, with and without the head of the next
# weight matrix prefetched into L2 on a graph branch beside each small kernel
# (scripts/l2-prefetch-step.cu).
set -o pipefail
R=/tmp/r72; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
$NVCC -O3 -gencode arch=compute_90,code=sm_90 scripts/l2-prefetch-step.cu -o /tmp/l2p > $R/build.log 2>&1; echo "build rc=$?"
timeout 300 /tmp/l2p 2>&1 | tee $R/l2-prefetch-step.log
tar czf $OUT/r72.tgz -C /tmp r72
