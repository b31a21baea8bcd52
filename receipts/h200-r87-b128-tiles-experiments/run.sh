#!/bin/bash
# .gpu/b0: the committed build; .gpu/v2: block-128's tile scales staged with the activation at
# m = 8 (Rust only). Three alternated gemv rounds at m = 8, Nsight Compute of both e4m3 m = 8
# kernels at down on each build, then the block-128 decode-step layer at m = 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r87; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in b0 v2; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for b in b0 v2; do
  for k in gemv_e4m3_m8 gemv_e4m3_b128_m8; do
    run ncu-$b-$k 120 ncu --clock-control none --kernel-name $k --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_lg_throttle .gpu/$b/gates gemv --shapes 17408x5120 --batches 8 --classes uniform --no-timing --no-peers
  done
done
for b in b0 v2; do
  run decode-step-$b 120 .gpu/$b/gates decode-step --shapes e4m3-b128:8 --jsonl $R/decode-step-$b.jsonl
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
tar czf $OUT/r87.tgz -C /tmp r87
