#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/main/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r47; mkdir -p $R
G=.gpu/main/gates
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
s=$(date +%s); timeout 60 $G mla --shapes 1x2048,2x2048,4x2048,8x2048 --classes uniform --no-peers --jsonl $R/base.jsonl > $R/base.log 2>&1; echo "base exit $? $(( $(date +%s) - s ))s"
s=$(date +%s); timeout 120 ncu --clock-control none --kernel-name regex:"mla_attn_(gathered_flash|flash_combine)" --metrics gpu__time_duration.sum,sm__cycles_active.avg,smsp__cycles_active.avg,launch__grid_size \
  $G mla --shapes 1x2048,2x2048,4x2048,8x2048 --classes uniform --no-peers --no-timing > $R/ncu-durations.log 2>&1; echo "ncu dur exit $? $(( $(date +%s) - s ))s"
for spec in "1 mla_attn_gathered_flash" "8 mla_attn_gathered_flash_h64" "1 mla_attn_flash_combine" "8 mla_attn_flash_combine"; do set -- $spec
s=$(date +%s); timeout 120 ncu --clock-control none --kernel-name $2 --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight --section Occupancy --section LaunchStats --print-details all -o $R/rep-t$1-$2 \
  $G mla --shapes ${1}x2048 --classes uniform --no-peers --no-timing > $R/ncu-t$1-$2.log 2>&1; echo "ncu t$1 $2 exit $? $(( $(date +%s) - s ))s"
ncu -i $R/rep-t$1-$2.ncu-rep --page details --print-details all > $R/details-t$1-$2.log 2>&1
ncu -i $R/rep-t$1-$2.ncu-rep --page source --print-source sass --csv > $R/sass-t$1-$2.csv 2>&1
done
for k in absorb_q decompress_v; do s=$(date +%s); timeout 120 ncu --clock-control none --kernel-name mla_${k}_s8 --launch-count 1 --section WarpStateStats --section SourceCounters --print-details all -o $R/rep-t8-$k \
  $G mla --shapes 8x2048 --classes uniform --no-peers --no-timing > $R/ncu-t8-$k.log 2>&1; echo "ncu $k exit $? $(( $(date +%s) - s ))s"
ncu -i $R/rep-t8-$k.ncu-rep --page source --print-source sass --csv > $R/sass-t8-$k.csv 2>&1; done
grep -E "gpu__time_duration|mla_attn" $R/ncu-durations.log | head -80
grep -E "attn_flash|read stream" $R/base.log | head -30
ls -la $R
tar czf $OUT/r47.tgz -C /tmp r47
