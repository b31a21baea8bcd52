#!/bin/bash
# Prototype v8: v7 with the rows copied by a producer warpgroup's cp.async.
set -o pipefail
R=/tmp/r64b; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v8.cu -o /tmp/v8 > $R/build-v8.log 2>&1; echo "build rc=$?"
timeout 200 /tmp/v8 2>&1 | tee $R/proto-v8.log
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed'
for cfg in "64 8" "16 1"; do
  set -- $cfg
  timeout 60 $NCU -k regex:flash_v8 --metrics "$M" /tmp/v8 $1 $2 > $R/ncu-v8-h$1-t$2.log 2>&1; echo "ncu h$1 t$2 rc=$?"
  grep -E "stalled|duration.sum  |tensor|inst_executed.sum  |dram__throughput.avg.pct_of_peak_sustained_elapsed  " $R/ncu-v8-h$1-t$2.log | awk '{print $1, $NF}' | awk '$2+0 > 0.1 || !/stalled/'
done
cp .gpu/proto/v8.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64b.tgz -C /tmp r64b
