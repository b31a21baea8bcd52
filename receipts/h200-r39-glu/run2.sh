#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/r2
find .gpu -name "*.xz" -exec xz -d -T4 {} + 2>/dev/null; chmod +x .gpu/new/* .gpu/old/*
run() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*" | tee -a /tmp/r2/run.log
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/r2/$name.log" 2>&1
    local rc=$?
    echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a /tmp/r2/run.log
    tail -n 4 "/tmp/r2/$name.log"
}
run gemv-m48-old 150 .gpu/old/gates gemv --batches 4,8 --classes uniform --no-peers --jsonl /tmp/r2/gemv-m48-old.jsonl
run gemv-m48-new 150 .gpu/new/gates gemv --batches 4,8 --classes uniform --no-peers --jsonl /tmp/r2/gemv-m48-new.jsonl
run racecheck-decode-step-e4m3-1 200 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/new/gates decode-step --no-timing --shapes e4m3:1
tar czf "$out/r2.tgz" -C /tmp r2
