#!/bin/bash
# .gpu/b0: the committed kernels (6473d2b); .gpu/v1: raw Q8_0 tensor-core fragments in the mma's
# own k order, rows 1104 bytes apart; .gpu/v2: v1 with the raw kernels' staged activation rows
# 1040 bytes apart. Memcheck of b0 at m = 8 (r94's stopped at 30 s), the sanitizers on v2, three
# alternated gemv rounds of each build at m = 4 and 8, then the GPU tests of v2.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r95; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
S="compute-sanitizer --error-exitcode 1"
A="gemv --shapes 1p7b --no-timing --no-peers --classes uniform"
run sanitize-memcheck-b0-m8 150 $S --tool memcheck .gpu/b0/gates $A --batches 8
for m in 4 8; do run sanitize-memcheck-v2-m$m 150 $S --tool memcheck .gpu/v2/gates $A --batches $m; done
run sanitize-initcheck-v2-m8 60 $S --tool initcheck .gpu/v2/gates $A --batches 8
run sanitize-racecheck-v2-2048x2048 60 $S --tool racecheck .gpu/v2/gates gemv --shapes 2048x2048 --batches 4,8 --no-timing --no-peers --classes uniform
tar czf $OUT/r95.tgz -C /tmp r95
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="b0 v1 v2"; else order="v2 v1 b0"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r95.tgz -C /tmp r95
done
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 .gpu/t/gpu-tests
tar czf $OUT/r95.tgz -C /tmp r95
