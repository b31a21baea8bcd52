#!/bin/bash
# r68: the e4m3 tensor-core entries under launch bounds (eb: e4m3 m = 2 five blocks an SM, both
# e4m3 formats at m = 4 eight, e4m3 m = 8 four; ptxas 96, 64 and 128 registers, no spills)
# against the committed build (base), three rounds alternated, uniform data, no peers, m = 2, 4, 8;
# the decode-step gate on both.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r68; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in base eb; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 2,4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for b in base eb; do
  run decode-step-$b 90 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b.jsonl
done
grep -E "checks passed|FAIL" $R/*.log | head -30
tar czf $OUT/r68.tgz -C /tmp r68
