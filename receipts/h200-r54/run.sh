#!/bin/bash
# .gpu/old: the gate of a677c19 (the committed kernels); .gpu/new: e4m3 tensor-core GEMVs on two
# stages, absorb_q / decompress_v loading each trip before the trip before it is folded.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/old/* .gpu/new/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r54; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
run mla 150 .gpu/new/gates mla --jsonl $R/mla.jsonl --plot $R/mla.svg
run v32 60 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg
for i in 1 2; do
  run gemv-old-$i 60 .gpu/old/gates gemv --classes uniform --no-peers --jsonl $R/gemv-old-$i.jsonl
  run gemv-new-$i 60 .gpu/new/gates gemv --classes uniform --no-peers --jsonl $R/gemv-new-$i.jsonl
  run mla-old-$i 30 .gpu/old/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-old-$i.jsonl
  run mla-new-$i 30 .gpu/new/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-new-$i.jsonl
done
run gemv 200 .gpu/new/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
for tool in memcheck initcheck; do
  run sanitize-$tool-mla 90 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
  run sanitize-$tool-gemv 90 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates gemv --no-timing --classes uniform --no-peers --shapes 5120x1024,160x129
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r54.tgz -C /tmp r54
