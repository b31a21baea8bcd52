#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r52; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
run sanitize-racecheck-mla_attn 280 compute-sanitizer --tool racecheck --kernel-name kns=mla_attn_ --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
run mla-sm_80 120 .gpu/new/gates mla --arch sm_80 --no-timing --max-kv 2048 --jsonl $R/mla-sm_80.jsonl
run v32-sm_80 120 .gpu/new/gates mla --geometry v3.2 --arch sm_80 --no-timing --max-kv 2048 --jsonl $R/v32-sm_80.jsonl
grep -E "checks passed" $R/*.log; tail -2 $R/sanitize-racecheck-mla_attn.log
tar czf $OUT/r52.tgz -C /tmp r52
