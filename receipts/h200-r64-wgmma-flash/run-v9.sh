#!/bin/bash
# Prototype v9: v8 with both products pipelined; variants leaving a copy out.
set -o pipefail
R=/tmp/r64c; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/v9.cu -o /tmp/v9 > $R/build-v9.log 2>&1; echo "build rc=$?"
timeout 200 /tmp/v9 2>&1 | tee $R/proto-v9.log
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed|lts__throughput.avg.pct_of_peak_sustained_elapsed|lts__t_bytes.sum'
for cfg in "64 8" "16 1"; do
  set -- $cfg
  timeout 60 $NCU -k regex:flash_v9 --metrics "$M" /tmp/v9 $1 $2 > $R/ncu-v9-h$1-t$2.log 2>&1; echo "ncu h$1 t$2 rc=$?"
  grep -E "stalled|duration.sum  |tensor|inst_executed.sum  |dram__throughput.avg.pct_of_peak_sustained_elapsed  |lts__throughput.avg.pct_of_peak_sustained_elapsed  |lts__t_bytes.sum  " $R/ncu-v9-h$1-t$2.log | awk '{print $1, $NF}' | awk '$2+0 > 0.1 || !/stalled/'
done
cp .gpu/proto/v9.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64c.tgz -C /tmp r64c
