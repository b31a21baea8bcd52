#!/bin/bash
# .gpu/gates-old: the gate of 9cc6c7b; .gpu/gates-grid: 9cc6c7b with every tensor-core launch
# given all its resident blocks (fewest_blocks returning `resident`); .gpu/new: 9cc6c7b with
# r31's per-warp staging (ca06a39) for the 16-head attn_flash entry alone.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/gates-* .gpu/new/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r52; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run checks-mla 120 .gpu/new/gates mla --no-timing
run checks-v32 60 .gpu/new/gates mla --no-timing --geometry v3.2 --max-kv 2048
for i in 1 2 3; do
  run mla-old-$i 60 .gpu/gates-old mla --max-kv 2048 --classes uniform,edge --no-peers --jsonl $R/mla-old-$i.jsonl
  run mla-new-$i 60 .gpu/new/gates mla --max-kv 2048 --classes uniform,edge --no-peers --jsonl $R/mla-new-$i.jsonl
done
for i in 1 2; do
  run v32-old-$i 60 .gpu/gates-old mla --geometry v3.2 --max-kv 2048 --classes uniform --no-peers --jsonl $R/v32-old-$i.jsonl
  run v32-new-$i 60 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --classes uniform --no-peers --jsonl $R/v32-new-$i.jsonl
done
for i in 1 2; do
  run gemv-old-$i 120 .gpu/gates-old gemv --classes uniform --no-peers --jsonl $R/gemv-old-$i.jsonl
  run gemv-grid-$i 120 .gpu/gates-grid gemv --classes uniform --no-peers --jsonl $R/gemv-grid-$i.jsonl
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
tar czf $OUT/r52.tgz -C /tmp r52
