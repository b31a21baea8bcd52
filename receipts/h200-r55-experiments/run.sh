#!/bin/bash
# old: bf65f77 (four warps a Q8_0 tensor-core tile); new: eight warps a tile; b3: new with
# the plain Q8_0 tensor-core entries bounded to three blocks an SM (80 registers).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r55; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2; do
  for b in old new b3; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
done
run ncu-new-q8_0_m8 90 ncu --clock-control none --kernel-name gemv_q8_0_m8 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum .gpu/new/gates gemv --shapes 5120x12288 --batches 8 --classes uniform --no-timing --no-peers
run ncu-new-q8_0_planar_m8 90 ncu --clock-control none --kernel-name gemv_q8_0_planar_m8 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats .gpu/new/gates gemv --shapes 5120x12288 --batches 8 --classes uniform --no-timing --no-peers
run decode-step-old 120 .gpu/old/gates decode-step --jsonl $R/decode-step-old.jsonl
run decode-step-new 120 .gpu/new/gates decode-step --jsonl $R/decode-step-new.jsonl
run racecheck-gemv-old 150 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/old/gates gemv --no-timing --classes uniform --no-peers --shapes 160x129,512x256
run racecheck-gemv-new 150 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/new/gates gemv --no-timing --classes uniform --no-peers --shapes 160x129,512x256
grep -E "checks passed|REGRESSION" $R/*.log | head -30
for f in $R/racecheck-*.log; do echo "$f: $(tail -2 $f)"; done
tar czf $OUT/r55.tgz -C /tmp r55
