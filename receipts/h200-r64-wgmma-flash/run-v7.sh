#!/bin/bash
# Prototype v7 (rows as the register operand, a producer warp, bulk copies) beside v6.
set -o pipefail
R=/tmp/r64; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in v7 v6; do
  $NVCC -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v .gpu/proto/$v.cu -o /tmp/$v > $R/build-$v.log 2>&1; echo "build $v rc=$?"
done
timeout 150 /tmp/v7 2>&1 | tee $R/proto-v7.log
timeout 100 /tmp/v6 1 2>&1 | tee $R/proto-v6.log
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_.*cycles_active.avg.pct_of_peak_sustained_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum|smsp__inst_executed.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed'
for cfg in "64 8" "16 1" "32 2"; do
  set -- $cfg
  timeout 60 $NCU -k regex:flash_v7 --metrics "$M" /tmp/v7 $1 $2 > $R/ncu-v7-h$1-t$2.log 2>&1; echo "ncu h$1 t$2 rc=$?"
  grep -E "stalled|duration|tensor|bank|inst_exec|dram" $R/ncu-v7-h$1-t$2.log | awk '$NF+0 > 0.05 || /duration|tensor|bank|inst|dram/' | head -30
done
cp .gpu/proto/*.cu .gpu/proto/run.sh $R/
tar czf $OUT/r64.tgz -C /tmp r64
