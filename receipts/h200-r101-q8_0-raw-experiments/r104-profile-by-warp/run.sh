#!/bin/bash
# .gpu/b: the committed kernels (eba65bd); .gpu/n: r101's raw Q8_0 reads by warp (sm_90 modules).
# Nsight Compute on raw Q8_0 at m = 4, down (17408x5120) and k/v (5120x1024), each build.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r104; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
k=gemv_q8_0_m4
for shape in 17408x5120 5120x1024; do
  for b in b n; do
    n=$b-$k-$shape
    run ncu-$n 120 ncu --kernel-name $k --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section LaunchStats --section Occupancy --import-source no -o $R/$n .gpu/$b/gates gemv --shapes $shape --batches 4 --classes uniform --no-timing --no-peers
    run details-$n 60 ncu -i $R/$n.ncu-rep --page details --print-details all
    run sass-$n 60 ncu -i $R/$n.ncu-rep --page source --csv --print-source sass
    gzip -f $R/sass-$n.log
  done
done
tar czf $OUT/r104.tgz -C /tmp r104
