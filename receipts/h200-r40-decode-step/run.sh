#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/r3
find .gpu -name "*.xz" -exec xz -d -T4 {} + 2>/dev/null; chmod +x .gpu/new/*
run() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a /tmp/r3/run.log
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/r3/$name.log" 2>&1
    local rc=$?
    echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a /tmp/r3/run.log
    tail -n 4 "/tmp/r3/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > /tmp/r3/nvidia-smi.csv 2>&1
run decode-step 240 .gpu/new/gates decode-step --jsonl /tmp/r3/decode-step.jsonl --plot /tmp/r3/decode-step.svg
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
run memcheck-decode-step 120 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/new/gates decode-step --no-timing --shapes q8_0:1 --shapes q8_0-planar:2 --shapes e4m3:4 --shapes e4m3-b128:8
tar czf "$out/r3.tgz" -C /tmp r3
