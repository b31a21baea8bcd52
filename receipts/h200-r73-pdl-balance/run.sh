#!/bin/bash
# r73: the decode-step gate on the committed build (`base`) and on one whose GEMV launcher pads
# the dynamic shared memory of a resident-grid GEMV so that an SM holds no more of its blocks
# than the grid needs (`new`, balance.patch), alternated, two rounds each.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r73; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in base new; do
    run decode-step-$b-$i 100 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b-$i.jsonl
  done
done
grep -E "checks passed" $R/*.log | head
tar czf $OUT/r73.tgz -C /tmp r73
