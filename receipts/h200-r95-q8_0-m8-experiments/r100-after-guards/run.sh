#!/bin/bash
# .gpu/h: the committed kernels (718790a, sm_90 module); .gpu/v7: with r95's raw Q8_0 fragments in
# the mma's k order (v1.patch); .gpu/v8: with r96's activation scales by 16-byte copies (v3.patch),
# both Rust builds alone, now that the copies carry no guard. Three alternated gemv rounds at m = 4
# and 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r100; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="h v7 v8"; else order="v8 v7 h"; fi
  for b in $order; do run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r100.tgz -C /tmp r100
done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
