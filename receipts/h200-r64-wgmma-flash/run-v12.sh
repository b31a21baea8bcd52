#!/bin/bash
# Prototypes v11 and v12 (chunk pairs, one ring for both products, the softmax in registers; v12
# takes the queries' tails in shared memory), and the whole arm beside the committed kernels.
set -o pipefail
R=/tmp/r64e; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v12.cu -o /tmp/v12 > $R/build-v12.log 2>&1; echo "build rc=$?"
timeout 150 /tmp/v12 2>&1 | tee $R/proto-v12.log
$NVCC -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ireference -Xptxas -v .gpu/proto/arm.cu -o /tmp/arm > $R/build-arm.log 2>&1; echo "build arm rc=$?"
timeout 200 /tmp/arm 2>&1 | tee $R/arm.log
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed|lts__throughput.avg.pct_of_peak_sustained_elapsed'
for cfg in "64 8" "16 1"; do
  set -- $cfg
  timeout 60 $NCU -k regex:flash_v12 --metrics "$M" /tmp/v12 $1 $2 > $R/ncu-v12-h$1-t$2.log 2>&1; echo "ncu h$1 t$2 rc=$?"
  grep -E "stalled|duration.sum  |tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active  |inst_executed.sum  |dram__throughput.avg.pct_of_peak_sustained_elapsed  |lts__throughput.avg.pct_of_peak_sustained_elapsed  " $R/ncu-v12-h$1-t$2.log | awk '{print $1, $NF}' | awk '$2+0 > 0.1 || !/stalled/'
done
cp .gpu/proto/v12.cu .gpu/proto/arm.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64e.tgz -C /tmp r64e
