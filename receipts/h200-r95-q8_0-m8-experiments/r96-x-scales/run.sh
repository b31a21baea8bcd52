#!/bin/bash
# .gpu/b0: the committed kernels (6473d2b); .gpu/v3: the tensor-core kernels' staged activation
# scales copied 16 bytes at a time where their rows are 16-byte aligned (Rust build only).
# Three alternated gemv rounds of each build at m = 4 and 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r96; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="b0 v3"; else order="v3 b0"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r96.tgz -C /tmp r96
done
