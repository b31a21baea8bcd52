#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/*/*
pack() { tar czf $OUT/r.tgz -C /tmp/r . 2>/dev/null; }
mkdir -p /tmp/r; rm -rf /tmp/r/*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > /tmp/r/nvidia-smi.csv
run() { local name=$1 t=$2; shift 2; echo "== $name: $*"; timeout $t "$@" > /tmp/r/$name.log 2>&1; echo "== $name rc=$?"; tail -3 /tmp/r/$name.log; pack; }
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
FERROCUDA_REQUIRE_GPU=1 run user-gpu-tests 90 .gpu/new/user-gpu-tests
run user-axpby 90 .gpu/new/user-kernels axpby --jsonl /tmp/r/user-axpby.jsonl --plot /tmp/r/user-axpby.svg
run mla-new 120 .gpu/new/gates mla --jsonl /tmp/r/mla-new.jsonl --plot /tmp/r/mla-new.svg
run mla-old 120 .gpu/old/gates mla --jsonl /tmp/r/mla-old.jsonl
run mla-v32-new 150 .gpu/new/gates mla --geometry v3.2 --jsonl /tmp/r/mla-v32-new.jsonl
run swiglu 60 .gpu/new/gates swiglu --jsonl /tmp/r/swiglu.jsonl
run norm-q8-checks 100 .gpu/new/gates norm-q8 --no-timing
run gemv-checks 120 .gpu/new/gates gemv --no-timing --no-peers
run racecheck-mla 200 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/new/gates mla --max-kv 2048 --no-peers --no-timing
