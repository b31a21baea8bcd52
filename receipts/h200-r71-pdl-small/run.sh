#!/bin/bash
# r71: the decode-step gate with the merged step's small kernels alone launched as programmatic
# dependents (`step merged pdl small`), twice; the GPU tests of the same build.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r71; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  run decode-step-$i 100 .gpu/new/gates decode-step --jsonl $R/decode-step-$i.jsonl
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
grep -E "checks passed" $R/*.log | head
grep -E "passed, |FAILED" $R/gpu-tests.log | tail -5
for i in 1 2; do grep -E "m=1  step merged|m=2  step merged" $R/decode-step-$i.log; done
tar czf $OUT/r71.tgz -C /tmp r71
