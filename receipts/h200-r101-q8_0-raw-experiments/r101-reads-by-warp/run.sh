#!/bin/bash
# .gpu/h: the committed Rust kernels (718790a, sm_90 module); .gpu/n: raw Q8_0 tensor-core reads
# by warp (each warp's quants at one offset mod 8), every arch. Three alternated gemv rounds at
# m = 4 and 8, the Q8_0 decode-step layers of each, then on n: the full gemv gate, the
# sanitizers at m = 4 and 8, the GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r101; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="h n"; else order="n h"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r101.tgz -C /tmp r101
done
for b in h n; do run step-q8_0-$b 90 .gpu/$b/gates decode-step --shapes q8_0:1,q8_0:2,q8_0:4,q8_0:8 --jsonl $R/step-q8_0-$b.jsonl; done
tar czf $OUT/r101.tgz -C /tmp r101
run gemv-full 300 .gpu/n/gates gemv --jsonl $R/gemv-full.jsonl
tar czf $OUT/r101.tgz -C /tmp r101
S="compute-sanitizer --error-exitcode 1"
A="gemv --shapes 1p7b --no-timing --no-peers --classes uniform"
for m in 4 8; do run sanitize-memcheck-m$m 120 $S --tool memcheck .gpu/n/gates $A --batches $m; done
run sanitize-initcheck-m8 60 $S --tool initcheck .gpu/n/gates $A --batches 4,8
run sanitize-racecheck-2048x2048 90 $S --tool racecheck .gpu/n/gates gemv --shapes 2048x2048 --batches 4,8 --no-timing --no-peers --classes uniform
tar czf $OUT/r101.tgz -C /tmp r101
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/t/gpu-tests
FERROCUDA_REQUIRE_GPU=1 run user-gpu-tests 60 .gpu/n/user-gpu-tests
tar czf $OUT/r101.tgz -C /tmp r101
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
grep -E "passed, |test result" $R/*gpu-tests.log | tail -4
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
