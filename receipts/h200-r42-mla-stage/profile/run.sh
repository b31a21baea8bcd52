#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/main/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r44; mkdir -p $R
# The committed absorb_q/decompress_v at split 8, t_q 8 and 4: stall reasons, per kernel and per SASS instruction
for tq in 8 4; do
s=$(date +%s)
timeout 200 ncu --clock-control none --kernel-name regex:"mla_(absorb_q|decompress_v)_s8" --launch-count 2 \
  --section WarpStateStats --section SourceCounters --section InstructionStats --section SpeedOfLight --print-details all \
  .gpu/main/gates mla --shapes ${tq}x2048 --classes uniform --no-peers --no-timing > $R/ncu-stalls-t$tq.log 2>&1; echo "ncu t$tq exit $? $(( $(date +%s) - s ))s"
done
grep -iE "^  mla_|Duration|Stall|Executed Instructions|Issued Instructions" $R/ncu-stalls-t8.log | head -60
tar czf $OUT/r44.tgz -C /tmp r44
