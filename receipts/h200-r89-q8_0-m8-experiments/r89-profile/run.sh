#!/bin/bash
# .gpu/n1: the committed kernels (a6bd199). Nsight Compute of the Q8_0 tensor-core kernels at
# m = 8 beside e4m3's, at down (17408 -> 5120) and o_proj (6144 -> 5120).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r89; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for s in 17408x5120 6144x5120; do
  for k in gemv_q8_0_m8 gemv_q8_0_planar_m8 gemv_e4m3_m8 gemv_q8_0_planar_m4; do
    run ncu-$k-$s 120 ncu --clock-control none --kernel-name $k --launch-count 1 --set full --import-source no .gpu/n1/gates gemv --shapes $s --batches 4,8 --classes uniform --no-timing --no-peers
  done
done
tar czf $OUT/r89.tgz -C /tmp r89
