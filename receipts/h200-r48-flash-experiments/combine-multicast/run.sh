#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r48; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for v in a b; do
s=$(date +%s); timeout 100 .gpu/$v/gates mla --max-kv 2048 --no-peers --jsonl $R/$v-seed.jsonl > $R/$v-seed.log 2>&1; echo "$v seed exit $? $(( $(date +%s) - s ))s"
s=$(date +%s); timeout 100 .gpu/$v/gates mla --geometry v3.2 --max-kv 2048 --no-peers --jsonl $R/$v-v32.jsonl > $R/$v-v32.log 2>&1; echo "$v v32 exit $? $(( $(date +%s) - s ))s"
done
for v in a b; do s=$(date +%s); timeout 120 ncu --clock-control none --kernel-name regex:"mla_attn_(gathered_flash|flash_combine)" --metrics gpu__time_duration.sum,sm__cycles_active.avg,launch__grid_size,launch__cluster_dim_x \
  .gpu/$v/gates mla --shapes 1x2048,8x2048 --classes uniform --no-peers --no-timing > $R/$v-ncu-durations.log 2>&1; echo "ncu $v exit $? $(( $(date +%s) - s ))s"; done
for v in a b; do grep -E "FAIL|checks passed|geomean" $R/$v-seed.log $R/$v-v32.log | head -8; grep -E "kv2048  attn_flash h|read stream" $R/$v-seed.log | head -32; grep -E "kv2048  attn_flash h" $R/$v-v32.log | head -24; done
tar czf $OUT/r48.tgz -C /tmp r48
