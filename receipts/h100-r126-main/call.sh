#!/bin/bash
# r126: h24 = main at 4a326d6. Every gate's timings, the GPU tests, racecheck at the seed's geometry with room to finish.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r126; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
T0=$(date +%s)
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r126.tgz -C /tmp r126; }
B=.gpu/h24
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run gemv-every-m 120 $B/gates gemv --classes uniform --batches 1,2,4,8 --jsonl $R/gemv-every-m.jsonl --plot $R/gemv-every-m.svg; save
grep -A14 "batch targets" $R/gemv-every-m.log | cut -c1-200
run decode-step 120 $B/gates decode-step --jsonl $R/decode-step.jsonl --plot $R/decode-step.svg; save
run mla 100 $B/gates mla --jsonl $R/mla.jsonl --plot $R/mla.svg; save
run mla-v32 60 $B/gates mla --geometry v3.2 --classes uniform --jsonl $R/mla-v32.jsonl; save
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 $B/gpu-tests; save
tail -n 3 $R/gpu-tests.log
left=$(( 560 - ($(date +%s) - T0) )); [ $left -gt 30 ] || left=30
run racecheck-wgmma $left compute-sanitizer --error-exitcode 1 --tool racecheck --kernel-name kns=mla_attn_flash_wgmma $B/gates mla --no-timing --no-peers --classes edge --shapes 8x2048; save
tail -n 2 $R/racecheck-wgmma.log
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
