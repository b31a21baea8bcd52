#!/bin/bash
# old: bf65f77; x3: the Q8_0 tensor-core activation staged with each trip, three stages;
# x2: the same, two stages.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r56; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in old x3 x2; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for b in x3 x2; do
  run ncu-$b-q8_0_m8 90 ncu --clock-control none --kernel-name gemv_q8_0_m8 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum .gpu/$b/gates gemv --shapes 5120x12288 --batches 8 --classes uniform --no-timing --no-peers
  run decode-step-$b 120 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b.jsonl
done
run gemv-x2-classes 120 .gpu/x2/gates gemv --batches 4,8 --no-peers --jsonl $R/gemv-x2-classes.jsonl
grep -E "checks passed|REGRESSION" $R/*.log | head -30
tar czf $OUT/r56.tgz -C /tmp r56
