#!/bin/bash
# .gpu/b: the committed kernels (eba65bd, sm_90 module); .gpu/c: raw Q8_0's tensor-core quants read
# as two 8-byte loads in both builds (r105's Rust kernels, the .cu's the same way; every arch).
# Two alternated gemv rounds at m = 4 and 8, the Q8_0 decode-step layers, memcheck at m = 8, the
# GPU tests, on c.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r106; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  if [ $((i % 2)) = 1 ]; then order="b c"; else order="c b"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r106.tgz -C /tmp r106
done
run step-q8_0-c 90 .gpu/c/gates decode-step --shapes q8_0:1,q8_0:2,q8_0:4,q8_0:8 --jsonl $R/step-q8_0-c.jsonl
run sanitize-memcheck-m8 120 compute-sanitizer --error-exitcode 1 --tool memcheck .gpu/c/gates gemv --shapes 1p7b --no-timing --no-peers --classes uniform --batches 4,8
tar czf $OUT/r106.tgz -C /tmp r106
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/t/gpu-tests
tar czf $OUT/r106.tgz -C /tmp r106
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
grep -E "passed, |test result" $R/*gpu-tests.log | tail -4
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
