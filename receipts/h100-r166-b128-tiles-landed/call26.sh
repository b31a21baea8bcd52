#!/bin/bash
# r165's checks before it lands (h50 = main at 53f6853 with r165; main's kernels are h40): h50's GPU
# tests, its GEMV checks on nine ragged shapes at every m and class, memcheck, initcheck and
# racecheck on gemv_e4m3_b128_m1; h40 and h50 alternated at m = 1 (two rounds) and m = 2, 4 (two
# rounds). On an H200, first: r150's stand-in of the decode step and main's GEMV phases; the m = 1
# rounds with the CUDA-core e4m3 kernels (old) on any card; last: the decode-step gate of h40 and h50, r160's probes.
set -o pipefail
R=/tmp/r166; mkdir -p $R; cp .gpu/call26.sh .gpu/REV $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
H200=0; grep -q H200 $R/nvidia-smi.csv && H200=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r166.tgz -C /tmp r166; }
for b in h40 h50 old; do for f in gates gemv-phases persistent-step gpu-tests; do [ -f .gpu/$b/$f.xz ] && xz -T4 -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
if [ $H200 = 1 ]; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 20 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
fi
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h50 150 /tmp/h50-gpu-tests; save; grep -E "passed|FAIL|panicked" $R/gpu-tests-h50.log | tail -3
run ragged-h50 90 /tmp/h50-gates gemv --no-timing --shapes 1600x257,1792x5120,4000x1040,17408x1024,1600x40,4128x257,1056x4000,5152x1040,2080x6160; save
for t in memcheck initcheck racecheck; do
  run $t-b128-m1 120 compute-sanitizer --tool $t --error-exitcode 1 --kernel-name kns=gemv_e4m3_b128_m1 /tmp/h50-gates gemv --no-timing --shapes 32x1,160x129,4000x1040,4096x4100,6144x5120 --batches 1 --no-peers; save
done
for f in $R/memcheck-*.log $R/initcheck-*.log $R/racecheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
SH=5120x12288,6144x5120,5120x17408,17408x5120
B="old h40 h50"
for i in 1 2; do
  for b in $B; do
    g=gemv; [ $b = old ] && g=gemv-e4m3
    run m1-$b-$i 90 /tmp/$b-gates $g --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl
  done
  for b in h40 h50; do run m24-$b-$i 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 2,4 --jsonl $R/m24-$b-$i.jsonl; done
  save
done
python3 .gpu/ab.py $R m1 old,h40,h50 2 e4m3 > $R/m1.txt 2>&1
python3 .gpu/ab.py $R m1 h40,h50 2 > $R/m1-main.txt 2>&1; python3 .gpu/ab.py $R m24 h40,h50 2 > $R/m24.txt 2>&1; save
grep -E "b128|geomean" $R/m1-main.txt | cut -c1-150; grep geomean $R/m24.txt; [ -f $R/m1.txt ] && cut -c1-150 $R/m1.txt
if [ $H200 = 1 ]; then
  for b in h40 h50; do run decode-step-$b 150 /tmp/$b-gates decode-step --jsonl $R/decode-step-$b.jsonl; save; grep -A 12 "best x bytes" $R/decode-step-$b.log | cut -c1-150; done
  chmod +x .gpu/probe/mma-clock .gpu/probe/wgmma-bits
  for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
  run wgmma-bits 180 .gpu/probe/wgmma-bits; save; tail -n 12 $R/wgmma-bits.log
fi
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
