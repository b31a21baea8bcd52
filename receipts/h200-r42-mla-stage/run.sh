#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/new/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r45; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
s=$(date +%s)
timeout 150 .gpu/new/gates mla --jsonl $R/mla-decode.jsonl --plot $R/mla-decode.svg > $R/mla-decode.log 2>&1; echo "mla exit $? $(( $(date +%s) - s ))s"
s=$(date +%s)
timeout 60 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg > $R/v32.log 2>&1; echo "v32 exit $? $(( $(date +%s) - s ))s"
s=$(date +%s)
FERROCUDA_REQUIRE_GPU=1 timeout 120 .gpu/new/gpu-tests > $R/gpu-tests.log 2>&1; echo "gpu-tests exit $? $(( $(date +%s) - s ))s"
for tool in memcheck initcheck racecheck; do s=$(date +%s)
timeout 70 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers > $R/sanitize-$tool-mla.log 2>&1; echo "$tool exit $? $(( $(date +%s) - s ))s"; tail -2 $R/sanitize-$tool-mla.log; done
grep -E "absorb_q split=8|decompress_v split=8|read stream" $R/mla-decode.log | grep "kv2048 " | grep -v "outliers\|edge"
grep -E "absorb_q split=8|decompress_v split=8|read stream" $R/v32.log | grep "kv2048 " | grep -v "outliers\|edge"
grep -E "checks passed|geomean|REGRESSION" $R/mla-decode.log $R/v32.log | head
grep -E "passed, " $R/gpu-tests.log
tar czf $OUT/r45.tgz -C /tmp r45
