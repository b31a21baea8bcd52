#!/bin/bash
# r144, second call (an H200 only): the GEMV every-m and decode-step gates on h38 (its GEMVs are main's).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r144b; mkdir -p $R; cp .gpu/call2.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r144b.tgz -C /tmp r144b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run gemv-every-m 240 .gpu/h38/gates gemv --classes uniform --batches 1,2,3,4,5,6,7,8 --jsonl $R/gemv-every-m.jsonl --plot $R/gemv-every-m.svg; save
run decode-step 200 .gpu/h38/gates decode-step --jsonl $R/decode-step.jsonl --plot $R/decode-step.svg; save
grep -E "checks passed|REGRESSION|FAIL|not met|met$" $R/*.log | head -60
