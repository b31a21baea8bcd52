#!/bin/bash
# .gpu/n1: the committed kernels (a6bd199); .gpu/x1: Q8_0 at m = 8 stages its activation in a ring of its own (three slots), a trip ahead of the weights, in the weights' cp.async groups; Rust build only.
# Alternated gemv rounds at m = 8, then x1's stall breakdown of planar Q8_0 at m = 8, at down.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r92; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in n1 x1; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
run stalls-x1-gemv_q8_0_planar_m8 90 ncu --clock-control none --kernel-name gemv_q8_0_planar_m8 --launch-count 1 --section WarpStateStats --section SpeedOfLight --print-details all .gpu/x1/gates gemv --shapes 17408x5120 --batches 8 --classes uniform --no-timing --no-peers
tar czf $OUT/r92.tgz -C /tmp r92
