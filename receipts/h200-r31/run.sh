#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/bin*/*
B=.gpu/bin; R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
echo "== gpu tests"; FERROCUDA_REQUIRE_GPU=1 timeout 60 $B/gpu-tests > $R/gpu-tests.log 2>&1; echo "rc=$?" >> $R/gpu-tests.log; tail -2 $R/gpu-tests.log; pack
run() { n=$1; t=$2; shift 2; echo "== $n"; start=$SECONDS; timeout $t "$@" > $R/$n.log 2>&1; echo "rc=$? secs=$((SECONDS-start))" >> $R/$n.log; tail -1 $R/$n.log; pack; }
S=1x2048,2x2048,4x2048,8x2048
run ab-v10 100 $B/gates mla-decode --classes uniform --no-peers --rounds 10 --shapes $S --jsonl $R/ab-v10.jsonl
run ab-v8 100 .gpu/bin-v8/gates mla-decode --classes uniform --no-peers --rounds 10 --shapes $S --jsonl $R/ab-v8.jsonl
run mla-decode 200 $B/gates mla-decode --jsonl $R/mla-decode.jsonl --plot $R/mla-decode.svg
run v32 150 $B/gates mla-decode --geometry v3.2 --jsonl $R/v32.jsonl --plot $R/v32.svg
for tool in memcheck initcheck racecheck; do
  run sanitize-$tool 150 compute-sanitizer --tool $tool --error-exitcode 1 $B/gates mla-decode --no-timing --classes uniform --max-kv 2048 --no-peers
done
