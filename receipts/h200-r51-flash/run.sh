#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r51; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run mla-decode 200 .gpu/new/gates mla --jsonl $R/mla-decode.jsonl --plot $R/mla-decode.svg
run v32 100 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
for tool in memcheck initcheck; do run sanitize-$tool-mla 100 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers; done
run sanitize-racecheck-mla_attn_flash 240 compute-sanitizer --tool racecheck --kernel-name regex:mla_attn_ --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
run decode-step 200 .gpu/new/gates decode-step --jsonl $R/decode-step.jsonl --plot $R/decode-step.svg
grep -E "checks passed|geomean|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
grep -E "attn_flash h.*launcher" $R/mla-decode.log | grep kv2048
grep -E "attn_flash h.*launcher" $R/v32.log | grep -v "outliers\|edge"
tar czf $OUT/r51.tgz -C /tmp r51
