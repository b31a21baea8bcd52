#!/bin/bash
# r150: the decode-step stand-in (scripts/persistent-step.cu, with the GEMVs-alone arms and the step's
# floor against a 2 GiB read stream); a GEMV tile-count probe (o_proj and down in_f, out_f giving 2,
# 2.4, 3 and 4 tiles of 16 rows an SM); the gate's checks on ragged shapes (in_f not a multiple of 128).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r150; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r150.tgz -C /tmp r150; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run persistent-step 60 .gpu/h40/persistent-step; save
tail -n 16 $R/persistent-step.log
run tiles 90 .gpu/h40/gates gemv --classes uniform --no-peers --shapes 6144x4224,6144x5120,6144x6336,6144x8448,6144x12288,17408x5120,17408x6336 --batches 1,2,4,8 --jsonl $R/tiles.jsonl; save
grep -A40 "every timed m" $R/tiles.log | head -60
run ragged 60 .gpu/h40/gates gemv --no-timing --shapes 4128x257,1056x4000,160x1,32x129,5152x1040,2080x6160; save
grep -E "checks passed|FAIL" $R/ragged.log | head
run decode-step 150 .gpu/h40/gates decode-step --jsonl $R/decode-step.jsonl; save
tail -n 30 $R/decode-step.log
