#!/bin/bash
# base: a424ea9 (sm_90 module); pf: the .cu GEMV entries prefetch their first rows into L2 before the wait.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r62; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in base pf; do
    run decode-step-$b-$i 150 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b-$i.jsonl
  done
done
grep -E "checks passed|FAIL" $R/*.log | head -30
tar czf $OUT/r62.tgz -C /tmp r62
