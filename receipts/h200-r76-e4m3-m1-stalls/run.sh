#!/bin/bash
# r76: e4m3 at one row, q_proj (5120 -> 12288): the committed tensor-core kernel (`new`) and the
# CUDA-core kernel it replaced (`old`, the build of 8c558d2's parent), each timed by the GEMV gate
# and profiled once by Nsight Compute (warp states, scheduler, memory), in one call.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r76; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
# The gate's name then and now.
gate() { [ "$1" = old ] && echo gemv-e4m3 || echo gemv; }
for b in old new old new; do
  n=1; [ -f $R/gemv-$b-1.log ] && n=2
  run gemv-$b-$n 60 .gpu/$b/gates $(gate $b) --shapes 5120x12288 --batches 1 --classes uniform --no-peers --jsonl $R/gemv-$b-$n.jsonl
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for b in old new; do
  run ncu-$b 100 $NCU --clock-control none --kernel-name gemv_e4m3_m1 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics smsp__inst_executed.sum,sm__cycles_active.avg,dram__bytes_read.sum .gpu/$b/gates $(gate $b) --shapes 5120x12288 --batches 1 --classes uniform --no-timing --no-peers
done
grep -E "checks passed" $R/*.log | head
grep -E "e4m3 m=1|read stream" $R/gemv-*.log | head -20
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Issued Warp|No Eligible|Achieved Occupancy|Registers Per" $R/ncu-*.log
tar czf $OUT/r76.tgz -C /tmp r76
