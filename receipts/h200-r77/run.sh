#!/bin/bash
# r77: the launcher's pads found once per kernel and geometry (Module::entry_balancing_pad), the
# same pads as r75's: the decode-step gate on raw Q8_0 and e4m3 at m = 1, its checks and times.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r77; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
timeout 120 .gpu/new/gates decode-step --shapes q8_0:1,e4m3:1,e4m3-b128:1 --jsonl $R/decode-step.jsonl > $R/decode-step.log 2>&1; echo "decode-step rc=$?"
grep -E "checks passed|m=1  step (pdl|merged pdl) " $R/decode-step.log
tar czf $OUT/r77.tgz -C /tmp r77
