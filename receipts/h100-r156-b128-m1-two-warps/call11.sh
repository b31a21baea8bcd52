#!/bin/bash
# r156 (h44: block-128 at m = 1, a tile shared by two warps) against main (h40) and the CUDA-core
# e4m3 kernels (old: d215112, gate gemv-e4m3): three alternated rounds at m = 1 on the four big
# 27B shapes (uniform, no peers); h44's checks on every shape, class and m (no timing), its GPU
# tests, racecheck and memcheck on gemv_e4m3_b128_m1 at ragged and gate shapes. On an H200 first:
# r150's stand-in of the decode step against its floor and main's GEMV phases; last, time left,
# r152+r153 (h42) and r154 (h43) against main at m = 4 and 8.
set -o pipefail
R=/tmp/r156; mkdir -p $R; cp .gpu/call11.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for b in h40 h42 h43 h44 old; do for f in gates gemv-phases persistent-step gpu-tests; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r156.tgz -C /tmp r156; }
SH=5120x12288,6144x5120,5120x17408,17408x5120
H200=0; grep -q H200 $R/nvidia-smi.csv && H200=1
if [ $H200 = 1 ]; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 16 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
fi
for i in 1 2 3; do
  for b in old h40 h44; do
    g=gemv; [ $b = old ] && g=gemv-e4m3
    run m1-$b-$i 90 /tmp/$b-gates $g --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R m1 old,h40,h44 3 e4m3 > $R/m1.txt 2>&1; python3 .gpu/ab.py $R m1 h40,h44 3 > $R/m1-main.txt 2>&1; save; cut -c1-160 $R/m1.txt; grep geomean $R/m1-main.txt
run checks-h44 120 /tmp/h44-gates gemv --no-timing --no-peers; save; grep -E "checks passed|FAIL" $R/checks-h44.log | head -3
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h44 120 /tmp/h44-gpu-tests; save; grep -E "test result|FAIL|panicked" $R/gpu-tests-h44.log | tail -3
for t in racecheck memcheck; do
  run $t-b128-m1 120 compute-sanitizer --tool $t --error-exitcode 1 --kernel-name kns=gemv_e4m3_b128_m1 /tmp/h44-gates gemv --no-timing --classes uniform --shapes 32x1,160x129,4096x4100,6144x5120 --batches 1 --no-peers; save
done
for f in $R/racecheck-*.log $R/memcheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
if [ $H200 = 1 ]; then
  for b in h40 h42 h43; do run gemv-$b-1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 4,8 --jsonl $R/gemv-$b-1.jsonl; done; save
  python3 .gpu/ab.py $R gemv h40,h42,h43 1 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
  run phases-h43 30 /tmp/h43-gemv-phases; save
fi
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
