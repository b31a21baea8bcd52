#!/bin/bash
# r69: swiglu_q8_1 (swiglu and quantize_q8_1 in one launch) and the merged decode step on it,
# gate/up merged at every m (new) against the committed build before it (base): the decode-step
# gate alternated, two rounds of each; the GPU tests; memcheck, racecheck and initcheck on one
# dense case's checks (the merged step and swiglu_q8_1 alone among them).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r69; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in base new; do
    run decode-step-$b-$i 100 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b-$i.jsonl
  done
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
for tool in memcheck racecheck initcheck; do
  run sanitize-$tool-decode-step 150 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates decode-step --no-timing --shapes q8_0-planar:2
done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
grep -E "passed, |FAILED" $R/gpu-tests.log | tail -5
for f in $R/sanitize-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
tar czf $OUT/r69.tgz -C /tmp r69
