#!/bin/bash
# .gpu/b0: the committed kernels (6473d2b); .gpu/v4: the Q8_0 tensor-core kernels at m = 8 with
# three stages, the activation in each stage (no ring): two blocks an SM (Rust build only).
# Nsight Compute per-instruction stalls of b0's planar and raw Q8_0 and e4m3 at m = 8 at down,
# then three alternated gemv rounds of b0 and v4 at m = 8. (The .ncu-rep reports are not kept;
# sass-*.log.gz are their per-instruction pages, details-*.log their sections.)
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r97; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for k in gemv_q8_0_planar_m8 gemv_q8_0_m8 gemv_e4m3_m8; do
  run ncu-$k 120 ncu --clock-control none --kernel-name $k --launch-count 1 --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --import-source no -o $R/$k .gpu/b0/gates gemv --shapes 17408x5120 --batches 8 --classes uniform --no-timing --no-peers
  run sass-$k 60 ncu -i $R/$k.ncu-rep --page source --csv --print-source sass
  run details-$k 60 ncu -i $R/$k.ncu-rep --page details --print-details all
done
tar czf $OUT/r97.tgz -C /tmp r97
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="b0 v4"; else order="v4 b0"; fi
  for b in $order; do run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --batches 8 --jsonl $R/gemv-$b-$i.jsonl; done
  tar czf $OUT/r97.tgz -C /tmp r97
done
