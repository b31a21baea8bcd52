#!/bin/bash
# .gpu/b0: the kernels of 6473d2b; .gpu/v6: the Q8_0 tensor-core kernels' copies without a guard a
# copy in both builds (Rust: the thread index reduced to the block; .cu: fixed passes over the
# block's threads). Two alternated gemv rounds of each at m = 4 and 8 (both builds), the full gemv
# gate and the Q8_0 decode-step layers of v6, the sanitizers at m = 4 and 8, the GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r99; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  if [ $((i % 2)) = 1 ]; then order="b0 v6"; else order="v6 b0"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r99.tgz -C /tmp r99
done
run gemv-full 300 .gpu/v6/gates gemv --jsonl $R/gemv-full.jsonl
tar czf $OUT/r99.tgz -C /tmp r99
run step-q8_0 150 .gpu/v6/gates decode-step --shapes q8_0:1,q8_0:4,q8_0:8,q8_0-planar:1,q8_0-planar:4,q8_0-planar:8 --jsonl $R/step-q8_0.jsonl
tar czf $OUT/r99.tgz -C /tmp r99
S="compute-sanitizer --error-exitcode 1"
A="gemv --shapes 1p7b --no-timing --no-peers --classes uniform"
for m in 4 8; do run sanitize-memcheck-m$m 120 $S --tool memcheck .gpu/v6/gates $A --batches $m; done
run sanitize-initcheck-m8 60 $S --tool initcheck .gpu/v6/gates $A --batches 4,8
run sanitize-racecheck-2048x2048 90 $S --tool racecheck .gpu/v6/gates gemv --shapes 2048x2048 --batches 4,8 --no-timing --no-peers --classes uniform
tar czf $OUT/r99.tgz -C /tmp r99
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/t/gpu-tests
tar czf $OUT/r99.tgz -C /tmp r99
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -2
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
