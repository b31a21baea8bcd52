#!/bin/bash
# .gpu/base: the committed build; .gpu/x8: the e4m3 tensor-core kernels staging the trip's
# activation rows with the weights at m = 8 (both builds); .gpu/x4: the same from m = 4. Two
# alternated gemv rounds each; the full gemv gate on x8; the decode-step
# e4m3 layers at m = 8; the GPU tests and the GEMV sanitizers at m = 8 on x8; Nsight Compute.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r84; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/t8/gpu-tests
for i in 1 2; do
  for b in base x8 x4; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --jsonl $R/gemv-$b-$i.jsonl
  done
done
run gemv 220 .gpu/x8/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
for b in base x8; do
  run decode-step-$b 150 .gpu/$b/gates decode-step --shapes e4m3:8,e4m3-b128:8 --jsonl $R/decode-step-$b.jsonl
done
for tool in memcheck initcheck; do
  run sanitize-$tool-gemv 150 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/x8/gates gemv --shapes 1p7b --batches 8 --no-timing --no-peers --classes uniform
done
for s in 2048x2048 2048x1024 2048x6144 6144x2048; do
  run sanitize-racecheck-gemv-$s 120 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/x8/gates gemv --shapes $s --batches 8 --no-timing --no-peers --classes uniform
done
run ncu-e4m3-m8-17408x5120 120 ncu --clock-control none --kernel-name gemv_e4m3_m8 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --metrics smsp__inst_executed.sum,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts.sum .gpu/x8/gates gemv --shapes 17408x5120 --batches 8 --classes uniform --no-timing --no-peers
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r84.tgz -C /tmp r84
