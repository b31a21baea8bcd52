#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r49; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for rep in 1 2; do for v in o a f g; do
s=$(date +%s); timeout 100 .gpu/$v/gates mla --max-kv 2048 --no-peers --jsonl $R/$v-seed-$rep.jsonl > $R/$v-seed-$rep.log 2>&1; echo "$v seed $rep exit $? $(( $(date +%s) - s ))s"
done; done
for v in o a f g; do
s=$(date +%s); timeout 100 .gpu/$v/gates mla --geometry v3.2 --max-kv 2048 --no-peers --jsonl $R/$v-v32.jsonl > $R/$v-v32.log 2>&1; echo "$v v32 exit $? $(( $(date +%s) - s ))s"
done
for f in $R/*.log; do echo "$f: $(grep -E 'checks passed' $f)"; done
for v in o a f g; do for rep in 1 2; do echo "== $v $rep"; grep -E "kv2048 .*attn_flash h" $R/$v-seed-$rep.log | grep -v "outliers\|edge"; done; done
tar czf $OUT/r49.tgz -C /tmp r49
