#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/new/*
N=.gpu/new; R=/tmp/r3; rm -rf $R; mkdir -p $R
pack() { tar czf $OUT/r3.tgz -C /tmp r3; }
run() { n=$1; t=$2; shift 2; echo "== $n"; start=$SECONDS; timeout $t "$@" > $R/$n.log 2>&1; echo "rc=$? secs=$((SECONDS-start))" >> $R/$n.log; tail -3 $R/$n.log; pack; }
run gpu-tests 120 env FERROCUDA_REQUIRE_GPU=1 $N/gpu-tests
export FERROCUDA_REQUIRE_GPU=1
run san-gpu-tests-memcheck 150 compute-sanitizer --error-exitcode 1 --tool memcheck $N/gpu-tests
pack
