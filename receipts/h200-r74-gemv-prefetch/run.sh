#!/bin/bash
# r74: the GEMVs' L2 prefetch of their first weight rows between the trigger and the wait, with
# r73's balanced resident grids (`new`), against the committed build (`base`) and r73's balance
# alone (`bal`): the decode-step gate (base once, bal and new twice, alternated) and the GEMV gate
# at every m (base and new alternated, two rounds).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r74; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for b in base bal new bal new; do
  n=1; [ -f $R/decode-step-$b-1.log ] && n=2
  run decode-step-$b-$n 100 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b-$n.jsonl
done
for i in 1 2; do
  for b in base new; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2,4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
tar czf $OUT/r74.tgz -C /tmp r74
