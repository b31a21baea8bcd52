#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/var/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r42; mkdir -p $R
G=.gpu/var/gates
s=$(date +%s)
# The .cu's absorb_q/decompress_v with each trip's loads issued before the previous trip's fold, beside the committed Rust kernels
timeout 200 $G mla --max-kv 2048 --no-peers --jsonl $R/mla-2k.jsonl > $R/mla-2k.log 2>&1; echo "mla exit $? $(( $(date +%s) - s ))s"
grep -E "absorb_q split=8|decompress_v split=8|read stream" $R/mla-2k.log | grep "kv2048 " | grep -v "outliers\|edge"
grep -E "checks passed|geomean" $R/mla-2k.log
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
for tq in 8 1; do
s=$(date +%s)
timeout 150 $NCU --clock-control none --kernel-name regex:"mla_(absorb_q|decompress_v)_s8" --launch-count 4 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  $G mla --shapes ${tq}x2048 --classes uniform --no-peers --no-timing > $R/ncu-t$tq.log 2>&1; echo "ncu t$tq exit $? $(( $(date +%s) - s ))s"
grep -E "mla_|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall Long|Warp Cycles Per Issued|Issue Slot|No Eligible" $R/ncu-t$tq.log | head -60
done
tar czf $OUT/r42.tgz -C /tmp r42
