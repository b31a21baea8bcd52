#!/bin/bash
# .gpu/base: the committed gates; .gpu/ring3, .gpu/ring2: the .cu's absorb_q / decompress_v from
# t 4 on with each lane's trips in a ring of 3 or 2 stages in shared memory (the Rust kernels
# unchanged, launched with the ring's shared memory, which they do not use).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r78; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run checks-ring3 100 .gpu/ring3/gates mla --no-timing --max-kv 2048
run checks-ring3-v32 100 .gpu/ring3/gates mla --no-timing --geometry v3.2 --max-kv 2048
run checks-ring2 100 .gpu/ring2/gates mla --no-timing --max-kv 2048
for i in 1 2; do
  for b in base ring3 ring2; do
    run mla-$b-$i 60 .gpu/$b/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-$b-$i.jsonl
  done
done
run sanitize-initcheck-ring3 120 compute-sanitizer --tool initcheck --error-exitcode 1 .gpu/ring3/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
grep -E "checks passed|REGRESSION" $R/*.log | head -30
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r78.tgz -C /tmp r78
