#!/bin/bash
# .gpu/base: the gates before this change; .gpu/new: absorb_q / decompress_v (Rust) folding a trip
# that lies inside the row without a guard a chunk. The A/B rounds, the full mla gate, V3.2, the
# GPU tests, the MLA decode steps of both builds, and the sanitizers on the new build.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r81; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/new/gpu-tests
for i in 1 2 3; do
  for b in base new; do
    run mla-$b-$i 60 .gpu/$b/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-$b-$i.jsonl
  done
done
for b in base new; do
  run decode-step-mla-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/decode-step-mla-$b.jsonl
done
run mla 200 .gpu/new/gates mla --jsonl $R/mla.jsonl --plot $R/mla.svg
run v32 60 .gpu/new/gates mla --geometry v3.2 --max-kv 2048 --jsonl $R/v32.jsonl --plot $R/v32.svg
for tool in memcheck initcheck; do
  run sanitize-$tool-mla 150 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
done
for k in mla_absorb_q mla_decompress_v; do
  run sanitize-racecheck-$k 150 compute-sanitizer --tool racecheck --kernel-name kns=$k --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
grep -E "passed, |test result" $R/gpu-tests.log | tail -3
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r81.tgz -C /tmp r81
