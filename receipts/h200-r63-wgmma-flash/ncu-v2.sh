#!/bin/bash
# The prototype under Nsight Compute: the first timed launch (t_q 1, one part, 32 blocks), and the
# t_q 8 one-part launch (the 64th timed launch after the four checks: 4 + 21*9).
set -o pipefail
R=/tmp/r63; mkdir -p $R
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
$NVCC -O3 -gencode arch=compute_90a,code=sm_90a .gpu/proto/wgmma-flash.cu -o /tmp/wf > $R/build.log 2>&1; echo "build rc=$?"
timeout 200 $NCU -k regex:flash_wgmma --launch-skip 4 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy /tmp/wf 1 > $R/ncu-t1.log 2>&1; echo "ncu t1 rc=$?"
timeout 200 $NCU -k regex:flash_wgmma --launch-skip 193 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats /tmp/wf 1 > $R/ncu-t8.log 2>&1; echo "ncu t8 rc=$?"
grep -E "Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|t_q|Grid Size|Block Size" $R/ncu-t1.log | head -40
grep -E "Duration|Grid Size|Stall|Warp Cycles" $R/ncu-t8.log | head -12
cp .gpu/proto/wgmma-flash.cu $R/
tar czf $OUT/r63.tgz -C /tmp r63
