#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/new/*
N=.gpu/new; R=/tmp/r2; rm -rf $R; mkdir -p $R
pack() { tar czf $OUT/r2.tgz -C /tmp r2; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run() { n=$1; t=$2; shift 2; echo "== $n"; start=$SECONDS; timeout $t "$@" > $R/$n.log 2>&1; echo "rc=$? secs=$((SECONDS-start))" >> $R/$n.log; tail -1 $R/$n.log; pack; }
CS="compute-sanitizer --error-exitcode 1 --tool"
for tool in memcheck initcheck; do
  run san-gemv-$tool 60 $CS $tool $N/gates gemv --no-timing --classes uniform --no-peers --shapes 1p7b,96x40,1056x17
  run san-mla-$tool 60 $CS $tool $N/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
  run san-norm-q8-$tool 60 $CS $tool $N/gates norm-q8 --no-timing
  run san-swiglu-$tool 60 $CS $tool $N/gates swiglu --no-timing
done
run san-gemv-racecheck 60 $CS racecheck $N/gates gemv --no-timing --classes uniform --no-peers --shapes 2048x1024,1056x17
run san-norm-q8-racecheck 90 $CS racecheck $N/gates norm-q8 --no-timing
run san-mla-racecheck 200 $CS racecheck $N/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
run norm-q8 200 $N/gates norm-q8 --jsonl $R/norm-q8.jsonl --plot $R/norm-q8.svg
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/nvidia-smi.csv 2>&1
pack
