#!/bin/bash
# h16: main's kernels. What binds the GEMVs' small grids: k/v's in_f at 1024 to 8192 rows (the time's fixed part), and
# Nsight Compute on the k/v launches of four entries.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r121; mkdir -p $R; cp .gpu/call2.sh $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r121.tgz -C /tmp r121; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run rows 120 .gpu/h16/gates gemv --shapes 5120x1024,5120x2048,5120x4096,5120x8192,5120x12288 --batches 1,4,8 --classes uniform --no-peers --jsonl $R/rows.jsonl; save
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in gemv_e4m3_m1 gemv_e4m3_b128_m1 gemv_q8_0_m4 gemv_q8_0_planar_m8 gemv_q8_0_m1; do
  run ncu-$k 60 $NCU --clock-control none --kernel-name $k --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,smsp__inst_executed.sum .gpu/h16/gates gemv --shapes 5120x1024 --classes uniform --no-timing --no-peers
  save
done
grep -E "checks passed" $R/*.log
