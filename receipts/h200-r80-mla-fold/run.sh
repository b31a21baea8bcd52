#!/bin/bash
# .gpu/base: the committed gates; .gpu/full: absorb_q / decompress_v folding a trip that lies inside
# the row without a guard a chunk, both builds. And scripts/mla-gemv-timeline.cu on this tree.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r80; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
run build-timeline 180 $NVCC -O3 -arch=sm_90 scripts/mla-gemv-timeline.cu -o /tmp/mla-gemv-timeline
run checks-full 100 .gpu/full/gates mla --no-timing --max-kv 2048
run checks-full-v32 100 .gpu/full/gates mla --no-timing --geometry v3.2 --max-kv 2048
for i in 1 2 3; do
  for b in base full; do
    run mla-$b-$i 60 .gpu/$b/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-$b-$i.jsonl
  done
done
run timeline 120 /tmp/mla-gemv-timeline
grep -E "checks passed|REGRESSION" $R/*.log | head -30
cat $R/timeline.log
tar czf $OUT/r80.tgz -C /tmp r80
