#!/bin/bash
# .gpu/x8: the committed build (r84); .gpu/ca: the staged activation's quants copied through L1
# (cp.async.ca, 16 bytes) in the Q8_0 (m = 4, 8) and e4m3 (m = 8) tensor-core kernels, both
# builds. Three alternated gemv rounds at m = 4 and 8, then the decode-step layers at m = 4, 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r85; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in x8 ca; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for b in x8 ca; do
  run decode-step-$b 120 .gpu/$b/gates decode-step --shapes q8_0:8,q8_0-planar:8,e4m3:8,q8_0:4 --jsonl $R/decode-step-$b.jsonl
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
tar czf $OUT/r85.tgz -C /tmp r85
