#!/bin/bash
# r157: Nsight Compute on the e4m3 entries at m = 1 at o_proj (6144x5120, uniform), the CUDA-core
# kernels of d215112 (old) and main's tensor-core kernels (h40), both builds, clocks left alone,
# caches flushed. On an H200 first: r150's stand-in of the decode step against its floor, main's
# GEMV phases, and r152+r153 (h42) and r154 (h43) against main at m = 4 and 8, one round.
set -o pipefail
R=/tmp/r157; mkdir -p $R; cp .gpu/call12.sh .gpu/REV $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for b in h40 h42 h43 old; do for f in gates gemv-phases persistent-step; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r157.tgz -C /tmp r157; }
SH=5120x12288,6144x5120,5120x17408,17408x5120
if grep -q H200 $R/nvidia-smi.csv; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 16 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
  for b in h40 h42 h43; do run gemv-$b-1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 4,8 --jsonl $R/gemv-$b-1.jsonl; done; save
  python3 scripts/ab.py $R gemv h40,h42,h43 1 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
fi
for b in old h40; do
  g=gemv; [ $b = old ] && g=gemv-e4m3
  run ncu-$b 240 ncu --clock-control none --kernel-name "regex:^gemv_e4m3(_b128)?_m1$" --launch-count 8 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats \
    --metrics sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.min,dram__bytes_read.sum,sm__warps_active.avg.per_cycle_active \
    /tmp/$b-gates $g --no-timing --classes uniform --shapes 6144x5120 --batches 1 --no-peers
  save
done
grep -E "^  gemv_e4m3|Duration|DRAM Throughput|Achieved Active Warps|Registers Per|Warp Cycles Per Issued|Eligible Warps|sm__cycles_active|Grid Size" $R/ncu-*.log | cut -c1-140
grep -hE "checks passed|FAIL|==PROF==|error" $R/*.log | sort | uniq -c | head
