#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/bin*/*
B=.gpu/bin; R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
echo "== gpu tests"; FERROCUDA_REQUIRE_GPU=1 timeout 60 $B/gpu-tests > $R/gpu-tests.log 2>&1; echo "rc=$?" >> $R/gpu-tests.log; tail -3 $R/gpu-tests.log; pack
ab() { n=$1; g=$2; shift 2; echo "== ab $n"; start=$SECONDS
  timeout 150 $g mla-decode --classes uniform --no-peers --rounds 10 --jsonl $R/ab-$n.jsonl "$@" > $R/ab-$n.log 2>&1; echo "rc=$? secs=$((SECONDS-start))" >> $R/ab-$n.log; tail -1 $R/ab-$n.log; pack; }
S=1x2048,2x2048,4x2048,8x2048
ab v9 $B/gates --shapes $S
ab v8 .gpu/bin-v8/gates --shapes $S
ab g9 $B/gates-g9 --shapes $S
ab vperm $B/gates-vperm --shapes $S
ab r4 $B/gates-r4 --shapes 4x2048,8x2048
ab r4t1 $B/gates-r4t1 --shapes 4x2048,8x2048
ab v32-v9 $B/gates --geometry v3.2 --shapes 1x2048,8x2048
ab v32-v8 .gpu/bin-v8/gates --geometry v3.2 --shapes 1x2048,8x2048
