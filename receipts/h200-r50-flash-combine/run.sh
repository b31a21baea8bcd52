#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r50; mkdir -p $R/softmax16
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
# the .cu softmax over 16 lanes a head (new bits: rust == cu fails by design), against the committed Rust build
for rep in 1 2; do run softmax16/mla-$rep 100 .gpu/s/gates mla --max-kv 2048 --no-peers --classes uniform --jsonl $R/softmax16/mla-$rep.jsonl; done
run softmax16/v32 100 .gpu/s/gates mla --geometry v3.2 --max-kv 2048 --no-peers --classes uniform --jsonl $R/softmax16/v32.jsonl
# the committed kernels
run mla-decode 200 .gpu/new/gates mla --jsonl $R/mla-decode.jsonl --plot $R/mla-decode.svg
run v32 100 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
for tool in memcheck initcheck; do run sanitize-$tool-mla 100 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers; done
run sanitize-racecheck-mla_attn_flash_combine 150 compute-sanitizer --tool racecheck --kernel-name kns=mla_attn_flash_combine --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
run decode-step 200 .gpu/new/gates decode-step --jsonl $R/decode-step.jsonl --plot $R/decode-step.svg
grep -E "checks passed|geomean|REGRESSION" $R/*.log $R/softmax16/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r50.tgz -C /tmp r50
