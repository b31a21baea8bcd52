#!/bin/bash
# .gpu/base: the gates of the committed kernels; .gpu/pf1, .gpu/pf2: absorb_q / decompress_v
# (Rust) prefetching the next 1 or 2 trips into L2 before the activations are staged. Then the
# e4m3 GEMV at m = 1 and 8 on down and q_proj under Nsight Compute (what binds at m = 8).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r82; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for i in 1 2 3; do
  for b in base pf1 pf2; do
    run mla-$b-$i 60 .gpu/$b/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-$b-$i.jsonl
  done
done
for b in base pf1 pf2; do
  run decode-step-mla-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:8 --jsonl $R/decode-step-mla-$b.jsonl
done
for s in 17408x5120 5120x12288; do
  for m in 1 8; do
    run ncu-e4m3-m$m-$s 120 ncu --clock-control none --kernel-name gemv_e4m3_m$m --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active .gpu/base/gates gemv --shapes $s --batches $m --classes uniform --no-timing --no-peers
  done
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
tar czf $OUT/r82.tgz -C /tmp r82
