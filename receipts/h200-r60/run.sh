#!/bin/bash
# new2: r59's kernels, the .cu's block-128 launch bounds on the m = 1 entry alone.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r60; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run gemv 200 .gpu/new2/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new2/gpu-tests
for tool in memcheck racecheck; do
  run sanitize-$tool-gemv 120 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new2/gates gemv --no-timing --classes uniform --no-peers --shapes 160x129,1056x48,512x256
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -n 1 $f)"; done
tar czf $OUT/r60.tgz -C /tmp r60
