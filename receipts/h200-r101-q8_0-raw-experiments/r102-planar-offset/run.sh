#!/bin/bash
# .gpu/x: the committed kernels; the gate uploads the planar quants FERROCUDA_EXP_WQ_OFFSET bytes
# into their buffer (0, 64, 512), so that each trip's 1024 quant bytes of a row straddle 1 KB
# boundaries as raw Q8_0's 1088-byte trips do. Two alternated rounds, m = 1, 4 and 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r102; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  if [ $((i % 2)) = 1 ]; then order="0 64 512"; else order="512 64 0"; fi
  for o in $order; do FERROCUDA_EXP_WQ_OFFSET=$o run gemv-o$o-$i 90 .gpu/x/gates gemv --classes uniform --no-peers --batches 1,4,8 --jsonl $R/gemv-o$o-$i.jsonl; done
  tar czf $OUT/r102.tgz -C /tmp r102
done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
