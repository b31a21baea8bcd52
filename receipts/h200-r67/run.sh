#!/bin/bash
# r67: planar Q8_0 CUDA-core entries declaring 128 threads and six blocks an SM in both builds
# (new) against the committed build (base): alternated GEMV rounds at m = 1, 2; the full GEMV
# gate, the decode-step gate on both, the GPU tests, memcheck and racecheck on the GEMV checks.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r67; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in base new; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2 --jsonl $R/gemv-$b-$i.jsonl
  done
done
run gemv 200 .gpu/new/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
for b in base new; do
  run decode-step-$b 90 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b.jsonl
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 .gpu/new/gpu-tests
for tool in memcheck racecheck; do
  run sanitize-$tool-gemv 60 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates gemv --no-timing --classes uniform --no-peers --shapes 160x129,1056x48,512x256
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -n 1 $f)"; done
tar czf $OUT/r67.tgz -C /tmp r67
