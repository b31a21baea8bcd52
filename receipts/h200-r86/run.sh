#!/bin/bash
# .gpu/ca: the staged activation's quants copied through L1 (r85), the build to keep: the full gemv
# gate, the GEMV sanitizers at m = 4 and 8, and the GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r86; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run gemv 150 .gpu/ca/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
for tool in memcheck initcheck; do
  run sanitize-$tool-gemv 60 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/ca/gates gemv --shapes 1p7b --batches 4,8 --no-timing --no-peers --classes uniform
done
run sanitize-racecheck-gemv-2048x2048 60 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ca/gates gemv --shapes 2048x2048 --batches 4,8 --no-timing --no-peers --classes uniform
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 .gpu/t9/gpu-tests
grep -E "checks passed|REGRESSION" $R/*.log | head
grep -E "passed, |test result" $R/gpu-tests.log | tail -2
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r86.tgz -C /tmp r86
