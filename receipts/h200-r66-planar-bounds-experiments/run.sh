#!/bin/bash
# r66: the planar Q8_0 CUDA-core entries (m = 1, 2) under launch bounds of 128 threads and 1, 4, 6
# or 8 blocks an SM (ptxas: 96/144, 96/128, 80/80, 62/64 registers at m = 1/2) against the
# committed build (48/48), three rounds alternated, uniform data, no peers, m = 1 and 2.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r66; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in base t1 b4 b6 b8; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2 --jsonl $R/gemv-$b-$i.jsonl
  done
done
grep -E "checks passed|FAIL" $R/*.log | head -30
tar czf $OUT/r66.tgz -C /tmp r66
