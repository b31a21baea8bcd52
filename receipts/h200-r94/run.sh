#!/bin/bash
# .gpu/n1: the committed kernels (a6bd199); .gpu/nw: the Q8_0 tensor-core kernels at m = 8 stage
# their activation in a ring of its own, a trip ahead of the weights, both builds. The GEMV
# sanitizers at m = 8, a gemv round at m = 8 of each build, then the GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r94; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for tool in memcheck initcheck; do
  run sanitize-$tool-gemv 30 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/nw/gates gemv --shapes 1p7b --batches 8 --no-timing --no-peers --classes uniform
done
run sanitize-racecheck-gemv-2048x2048 40 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/nw/gates gemv --shapes 2048x2048 --batches 8 --no-timing --no-peers --classes uniform
for b in n1 nw; do
  run gemv-$b-1 45 .gpu/$b/gates gemv --classes uniform --no-peers --batches 8 --jsonl $R/gemv-$b-1.jsonl
done
tar czf $OUT/r94.tgz -C /tmp r94
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 90 .gpu/t2/gpu-tests
tar czf $OUT/r94.tgz -C /tmp r94
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -2
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r94.tgz -C /tmp r94
