#!/bin/bash
# r151: where a Q8_0 tensor-core GEMV launch's time goes (scripts/gemv-phases.cu, the reference entries
# stamped); on an H200 also r150's stand-in and tile-count probe.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r151; mkdir -p $R; cp .gpu/call3.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r151.tgz -C /tmp r151; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run gemv-phases 120 .gpu/h40/gemv-phases; save
cat $R/gemv-phases.log
if grep -q H200 $R/nvidia-smi.csv; then
  run persistent-step 60 .gpu/h40/persistent-step; save
  tail -n 15 $R/persistent-step.log
  run tiles 90 .gpu/h40/gates gemv --classes uniform --no-peers --shapes 6144x4224,6144x5120,6144x6336,6144x8448,6144x12288,17408x5120,17408x6336 --batches 1,2,4,8 --jsonl $R/tiles.jsonl; save
  grep -A32 "every m (cell" $R/tiles.log
fi
