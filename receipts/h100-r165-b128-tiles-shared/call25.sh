#!/bin/bash
# r165, short: main before r163 (h40), h48 and main with r165 (h50) in three alternated rounds at
# m = 1 on the four big shapes; h50's GPU tests; memcheck, initcheck and racecheck on
# gemv_e4m3_b128_m1 at ragged and gate shapes. On an H200, first: r150's stand-in of the decode step.
set -o pipefail
R=/tmp/r165; mkdir -p $R; cp .gpu/call25.sh .gpu/REV $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r165.tgz -C /tmp r165; }
for b in h40 h48 h50; do for f in gates gpu-tests; do [ -f .gpu/$b/$f.xz ] && xz -T4 -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
if grep -q H200 $R/nvidia-smi.csv; then
  xz -dc .gpu/h40/persistent-step.xz > /tmp/h40-persistent-step && chmod +x /tmp/h40-persistent-step
  run persistent-step 90 /tmp/h40-persistent-step; save; tail -n 20 $R/persistent-step.log
fi
SH=5120x12288,6144x5120,5120x17408,17408x5120
for i in 1 2 3; do
  for b in h40 h48 h50; do run m1-$b-$i 60 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl; done
  save
done
python3 .gpu/ab.py $R m1 h40,h48,h50 3 > $R/m1-main.txt 2>&1; save; cut -c1-170 $R/m1-main.txt | grep -E "b128|geomean"
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h50 120 /tmp/h50-gpu-tests; save; grep -E "passed|FAIL|panicked" $R/gpu-tests-h50.log | tail -3
for t in memcheck initcheck racecheck; do
  run $t-b128-m1 90 compute-sanitizer --tool $t --error-exitcode 1 --kernel-name kns=gemv_e4m3_b128_m1 /tmp/h50-gates gemv --no-timing --classes uniform --shapes 32x1,160x129,4096x4100,6144x5120 --batches 1 --no-peers; save
done
for f in $R/memcheck-*.log $R/initcheck-*.log $R/racecheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
