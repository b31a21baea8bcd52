#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/bin/*
B=.gpu/bin; R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run() { n=$1; t=$2; shift 2; echo "== $n"; timeout $t "$@" > $R/$n.log 2>&1; echo "rc=$?" >> $R/$n.log; tail -2 $R/$n.log; pack; }
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 $B/gpu-tests
run swiglu 120 $B/gates swiglu --jsonl $R/swiglu.jsonl --plot $R/swiglu.svg
for tool in memcheck initcheck racecheck; do
  run sanitize-$tool-swiglu 120 compute-sanitizer --tool $tool --error-exitcode 1 $B/gates swiglu --no-timing --classes uniform
done
