#!/bin/bash
# Prototype v13 (v11 with larger items and two accumulators in the scores), and the whole arm
# beside the committed kernels.
set -o pipefail
R=/tmp/r64f; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v13.cu -o /tmp/v13 > $R/build-v13.log 2>&1; echo "build rc=$?"
timeout 150 /tmp/v13 2>&1 | tee $R/proto-v13.log
$NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ireference -Xptxas -v .gpu/proto/arm.cu -o /tmp/arm > $R/build-arm.log 2>&1; echo "build arm rc=$?"
timeout 200 /tmp/arm 2>&1 | tee $R/arm.log
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed|lts__throughput.avg.pct_of_peak_sustained_elapsed'
for cfg in "64 8" "16 1"; do
  set -- $cfg
  timeout 60 $NCU -k regex:flash_v13 --metrics "$M" /tmp/v13 $1 $2 > $R/ncu-v13-h$1-t$2.log 2>&1; echo "ncu h$1 t$2 rc=$?"
  grep -E "stalled|duration.sum  |tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active  |inst_executed.sum  |dram__throughput.avg.pct_of_peak_sustained_elapsed  |lts__throughput.avg.pct_of_peak_sustained_elapsed  " $R/ncu-v13-h$1-t$2.log | awk '{print $1, $NF}' | awk '$2+0 > 0.1 || !/stalled/'
done
cp .gpu/proto/v13.cu .gpu/proto/arm.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64f.tgz -C /tmp r64f
