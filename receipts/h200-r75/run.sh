#!/bin/bash
# r75: the launcher's balanced resident GEMV grids under programmatic launches, as committed
# (`new`), against the build before (`base`): the decode-step gate alternated, two rounds each;
# the GPU tests; memcheck and racecheck on decode-step checks that launch programmatically.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r75; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in new base; do
    run decode-step-$b-$i 100 .gpu/$b/gates decode-step --jsonl $R/decode-step-$b-$i.jsonl
  done
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
for tool in memcheck racecheck; do
  run sanitize-$tool-decode-step 120 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates decode-step --no-timing --shapes e4m3:1,q8_0:2,e4m3-b128:4
done
grep -E "checks passed" $R/*.log | head
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
tar czf $OUT/r75.tgz -C /tmp r75
