#!/usr/bin/env bash
# One GPU call: the GLU's checks and timings, the plain GEMVs against the previous build, sanitizers.
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/r; ln -sfn /tmp/r "$out/r" 2>/dev/null || true
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
find .gpu -name "*.xz" -exec xz -d -T4 {} +; chmod +x .gpu/new/* .gpu/old/*
run() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a "$out/r/run.log"
    local t0=$(date +%s)
    timeout "$limit" "$@" > "$out/r/$name.log" 2>&1
    local rc=$?
    echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$out/r/run.log"
    tail -n 5 "$out/r/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/r/nvidia-smi.csv" 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/new/gpu-tests
run decode-step 200 .gpu/new/gates decode-step --jsonl "$out/r/decode-step.jsonl" --plot "$out/r/decode-step.svg"
run gemv-m48-old 120 .gpu/old/gates gemv --batches 4 --batches 8 --classes uniform --no-peers --jsonl "$out/r/gemv-m48-old.jsonl"
run gemv-m48-new 120 .gpu/new/gates gemv --batches 4 --batches 8 --classes uniform --no-peers --jsonl "$out/r/gemv-m48-new.jsonl"
S=(--no-timing --shapes q8_0:1 --shapes q8_0-planar:2 --shapes e4m3:4 --shapes e4m3-b128:8)
for tool in memcheck racecheck initcheck; do
    run $tool-decode-step 150 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates decode-step "${S[@]}"
done
tar czf "$out/r.tgz" -C /tmp r; rm -f "$out/r"
