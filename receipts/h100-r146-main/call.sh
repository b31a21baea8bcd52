#!/bin/bash
# r146: main's kernels (h37 = b419060's gates; main's PTX since) on whatever card came: the GEMV gate at every m with its peers,
# the decode-step gate, norm-q8 and swiglu.

set -o pipefail
R=/tmp/r146; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
save() { tar czf $OUT/r146.tgz -C /tmp r146; }

find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
B=.gpu/h37
run gemv 200 $B/gates gemv --jsonl $R/gemv.jsonl --plot $R/gemv.svg; save
run decode-step 150 $B/gates decode-step --jsonl $R/decode-step.jsonl --plot $R/decode-step.svg; save


run norm-q8 60 $B/gates norm-q8 --jsonl $R/norm_q8.jsonl --plot $R/norm_q8.svg; save
run swiglu 60 $B/gates swiglu --jsonl $R/swiglu.jsonl --plot $R/swiglu.svg; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -20
