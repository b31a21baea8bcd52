#!/bin/bash
# .gpu/b0: the committed kernels (6473d2b); .gpu/v5: the Q8_0 tensor-core kernels' thread index
# reduced to the block (tid % 128), so that the copies' row guards fold and each copy is one
# predicated cp.async instead of a branch region (Rust build only). Three alternated gemv rounds
# of each build at m = 4 and 8, then one decode-step round of each on the Q8_0 layers.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r98; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="b0 v5"; else order="v5 b0"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r98.tgz -C /tmp r98
done
for b in b0 v5; do
  run step-$b 150 .gpu/$b/gates decode-step --shapes q8_0:1,q8_0:4,q8_0:8,q8_0-planar:1,q8_0-planar:4,q8_0-planar:8 --jsonl $R/step-$b.jsonl
  tar czf $OUT/r98.tgz -C /tmp r98
done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
