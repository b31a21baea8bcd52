#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/new/* .gpu/old/*
N=.gpu/new; O=.gpu/old; R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run() { n=$1; t=$2; shift 2; echo "== $n"; start=$SECONDS; timeout $t "$@" > $R/$n.log 2>&1; echo "rc=$? secs=$((SECONDS-start))" >> $R/$n.log; tail -1 $R/$n.log; pack; }
run gpu-tests 90 env FERROCUDA_REQUIRE_GPU=1 $N/gpu-tests
run norm-q8 90 $N/gates norm-q8 --jsonl $R/norm-q8.jsonl --plot $R/norm-q8.svg
run norm-q8-old 90 $O/gates norm-q8 --jsonl $R/norm-q8-old.jsonl
run gemv 150 $N/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg
run gemv-old 120 $O/gates gemv --no-peers --jsonl $R/gemv-old.jsonl
run mla 90 $N/gates mla --jsonl $R/mla.jsonl --plot $R/mla.svg
S=1x2048,2x2048,4x2048,8x2048
run mla-ab-new 40 $N/gates mla --classes uniform --no-peers --rounds 10 --shapes $S --jsonl $R/mla-ab-new.jsonl
run mla-ab-old 40 $O/gates mla --classes uniform --no-peers --rounds 10 --shapes $S --jsonl $R/mla-ab-old.jsonl
run swiglu 60 $N/gates swiglu --jsonl $R/swiglu.jsonl --plot $R/swiglu.svg
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/nvidia-smi.csv 2>&1
pack
