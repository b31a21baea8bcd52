#!/bin/bash
# .gpu/n1: the committed kernels (a6bd199); .gpu/s2: the Q8_0 tensor-core kernels two stages deep
# from m = 4 (three before), both builds. Alternated gemv rounds at m = 4 and 8, then the warp
# stall breakdown of planar Q8_0 at m = 4 and 8 and e4m3 at m = 8, at down.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r90; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in n1 s2; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for k in gemv_q8_0_planar_m4 gemv_q8_0_planar_m8 gemv_e4m3_m8; do
  run stalls-$k 90 ncu --clock-control none --kernel-name $k --launch-count 1 --section WarpStateStats --print-details all .gpu/n1/gates gemv --shapes 17408x5120 --batches 4,8 --classes uniform --no-timing --no-peers
done
tar czf $OUT/r90.tgz -C /tmp r90
