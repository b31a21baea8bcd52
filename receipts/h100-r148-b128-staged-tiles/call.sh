#!/bin/bash
# r148: h37 = b419060's gates (main's kernels), h38 = block-128's tile scales through the stage at
# every m and the staged fold without a branch. A/B of the GEMV on the four big 27B shapes at
# m = 1, 2, 4, 8 (uniform, no peers), three alternated rounds; h38's GEMV gate (uniform, every m,
# both peers); the decode-step gate of the e4m3 layers, both builds.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r148; mkdir -p $R; cp .gpu/call.sh .gpu/call2.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r148.tgz -C /tmp r148; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
SH=5120x12288,5120x1024,6144x5120,5120x17408
for i in 1 2 3; do
  if [ $((i % 2)) = 0 ]; then order="h38 h37"; else order="h37 h38"; fi
  for b in $order; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --shapes $SH --batches 1,2,4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R gemv h37,h38 3 > $R/ab-gemv.txt 2>&1; save
grep -E "e4m3|geomean" $R/ab-gemv.txt | cut -c1-150
run gemv-full-h38 120 .gpu/h38/gates gemv --classes uniform --jsonl $R/gemv-full-h38.jsonl --plot $R/gemv-full-h38.svg; save
for b in h37 h38; do run step-$b 60 .gpu/$b/gates decode-step --shapes e4m3:1,e4m3:2,e4m3:4,e4m3:8,e4m3-b128:1,e4m3-b128:2,e4m3-b128:4,e4m3-b128:8 --jsonl $R/step-$b.jsonl; save; done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -20
