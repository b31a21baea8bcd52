#!/bin/bash
# Where the cluster prototype's time goes: variants that return early, timed; Nsight Compute on
# the full kernel (64 heads a cluster) and on attn_flash h16 at t_q 1.
source .gpu/common.sh
run bits-seed 90 .gpu/src/cluster_v0 64 512 0
run bits-v32 90 .gpu/src/cluster_v0 128 512 64
for v in 0 1 2 3 4 5; do run var$v 60 .gpu/src/cluster_v$v 64 512 0 time; done
save
S="--section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis"
run ncu-cluster 120 ncu --clock-control none --kernel-name regex:flash_cluster --launch-skip 42 --launch-count 1 $S .gpu/src/cluster_v0 64 512 0 time
run ncu-flash 120 ncu --clock-control none --kernel-name regex:mla_attn_gathered_flash --launch-count 1 $S .gpu/src/cluster_v0 64 512 0 time
save
grep -h -E "bits|DIFFER|us \(" $R/bits-*.log
grep -h "variant" $R/var*.log
grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occ|Warp Cycles Per Issued|Stall|Block Limit|Cluster|Waves" $R/ncu-*.log | head -60
