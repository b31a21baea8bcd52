#!/bin/bash
# v5 of the prototype under Nsight Compute: its stall reasons at t_q 1 (one part, the first timed
# launch) and t_q 8 (one part).
set -o pipefail
R=/tmp/r63; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a .gpu/proto/wgmma-flash-v5.cu -o /tmp/wf > $R/build.log 2>&1; echo "build rc=$?"
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|gpu__time_duration.sum|sm__pipe_tensor_op_.*cycles_active.avg.pct_of_peak_sustained_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum|smsp__inst_executed.sum'
timeout 100 $NCU -k regex:flash_wgmma --launch-skip 4 --launch-count 1 --metrics "$M" /tmp/wf 1 > $R/ncu-v5-t1.log 2>&1; echo "t1 rc=$?"
timeout 100 $NCU -k regex:flash_wgmma --launch-skip 193 --launch-count 1 --metrics "$M" /tmp/wf 1 > $R/ncu-v5-t8.log 2>&1; echo "t8 rc=$?"
for f in $R/ncu-v5-t1.log $R/ncu-v5-t8.log; do echo "== $f"; grep -E "stalled|duration|tensor|bank|inst_exec" $f | awk '$NF+0 > 0.05 || /duration|tensor|bank|inst/' | head -30; done
tar czf $OUT/r63.tgz -C /tmp r63
