#!/bin/bash
# base: 831727c. q2tc: Q8_0 on the tensor cores from m = 2 (activation loaded a trip ahead);
# q2tcs: the same, the activation staged from m = 2. s2: e4m3 m = 1 tiles of two row sets
# sharing each pair's activation fragment (Rust only; bits unchanged); s2b6, s2b8: s2 bounded
# to six and eight blocks an SM; s2m2: two row sets at m = 1 and 2.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r58; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in base q2tc q2tcs; do
    run gemv-m2-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 2 --jsonl $R/gemv-m2-$b-$i.jsonl
  done
  for b in base s2 s2b6 s2b8 s2m2; do
    run gemv-m1-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1 --jsonl $R/gemv-m1-$b-$i.jsonl
  done
  for b in base s2m2; do
    run gemv-e2-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 2 --jsonl $R/gemv-e2-$b-$i.jsonl
  done
done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
tar czf $OUT/r58.tgz -C /tmp r58
