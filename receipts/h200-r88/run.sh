#!/bin/bash
# .gpu/b0: the committed build; .gpu/n1: block-128's tile scales staged with the activation at
# m = 8, both builds. Three alternated gemv rounds at m = 8, the e4m3 decode-step layers at m = 8
# twice each, then on n1 the full gemv gate, the GEMV sanitizers at m = 8 and the GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r88; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in b0 n1; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
for i in 1 2; do
  for b in b0 n1; do
    run decode-step-$b-$i 120 .gpu/$b/gates decode-step --shapes e4m3:8,e4m3-b128:8 --jsonl $R/decode-step-$b-$i.jsonl
  done
done
run gemv 240 .gpu/n1/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
for tool in memcheck initcheck; do
  run sanitize-$tool-gemv 90 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/n1/gates gemv --shapes 1p7b --batches 8 --no-timing --no-peers --classes uniform
done
run sanitize-racecheck-gemv-2048x2048 60 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/n1/gates gemv --shapes 2048x2048 --batches 8 --no-timing --no-peers --classes uniform
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 .gpu/t1/gpu-tests
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -2
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r88.tgz -C /tmp r88
