#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/gates-* .gpu/new/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r53; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
for g in norm-q8 swiglu gemv mla decode-step; do run checks-$g 200 .gpu/new/gates $g --no-timing; done
run checks-mla-v32 100 .gpu/new/gates mla --no-timing --geometry v3.2 --max-kv 2048
for i in 1 2; do
  run gemv-new-$i 120 .gpu/new/gates gemv --classes uniform --no-peers --jsonl $R/gemv-new-$i.jsonl
  run gemv-e4s2-$i 120 .gpu/gates-e4s2 gemv --classes uniform --no-peers --jsonl $R/gemv-e4s2-$i.jsonl
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for k in gemv_e4m3_m1 gemv_q8_0_m8 gemv_q8_0_planar_m8; do
  m=${k##*_m}
  run ncu-$k 120 $NCU --clock-control none --kernel-name $k --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg,sm__cycles_active.avg .gpu/new/gates gemv --shapes 5120x12288 --batches $m --classes uniform --no-timing --no-peers
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
grep -E "Duration|DRAM Throughput|Compute \(SM\)|SM Frequency" $R/ncu-*.log
tar czf $OUT/r53.tgz -C /tmp r53
