#!/bin/bash
# base: a424ea9 (sm_90 module); new: Rust CUDA-core Q8_0 entries declare 128 threads a block.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r61; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC --version > $R/nvcc.log 2>&1
run build-wgmma 120 $NVCC -O3 -gencode arch=compute_90a,code=sm_90a .gpu/wgmma-tf32-peak.cu -o /tmp/wgmma-peak
run build-mma 120 $NVCC -O3 -arch=sm_90 .gpu/mma-tf32-peak.cu -o /tmp/mma-peak
run wgmma-peak 60 /tmp/wgmma-peak
run mma-peak 60 /tmp/mma-peak
for i in 1 2 3; do
  for b in base new; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2 --jsonl $R/gemv-$b-$i.jsonl
  done
done
cat $R/wgmma-peak.log $R/mma-peak.log
grep -E "checks passed|FAIL" $R/*.log | head -30
tar czf $OUT/r61.tgz -C /tmp r61
