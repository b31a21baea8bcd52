#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/var/* .gpu/var2/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r43; mkdir -p $R
s=$(date +%s)
# The .cu: eight lanes a row, each trip's loads issued before the trip before it is folded (new bits: rust == cu fails by design), beside the committed Rust kernels
timeout 200 .gpu/var/gates mla --max-kv 2048 --no-peers --jsonl $R/mla-2k.jsonl > $R/mla-2k.log 2>&1; echo "mla exit $? $(( $(date +%s) - s ))s"
grep -E "absorb_q split=|decompress_v split=|read stream" $R/mla-2k.log | grep "kv2048 " | grep -v "outliers\|edge"
grep -E "checks passed|geomean" $R/mla-2k.log
s=$(date +%s)
timeout 200 .gpu/var2/gates mla --max-kv 2048 --no-peers --jsonl $R/mla-2k-both.jsonl > $R/mla-2k-both.log 2>&1; echo "mla both exit $? $(( $(date +%s) - s ))s"
grep -E "absorb_q split=|decompress_v split=|read stream" $R/mla-2k-both.log | grep "kv2048 " | grep -v "outliers\|edge"
grep -E "checks passed|geomean" $R/mla-2k-both.log
tar czf $OUT/r43.tgz -C /tmp r43
