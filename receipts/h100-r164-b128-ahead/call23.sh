#!/bin/bash
# r164: main with r163 as landed (h49): the GPU tests, racecheck, memcheck and initcheck on
# gemv_e4m3_b128_m1 at ragged and gate shapes; main before r163 (h40), h48 and h49 in three
# alternated rounds at m = 1 on the four big shapes (and the CUDA-core e4m3 kernels, old, on an
# H200). On an H200 too, first: r150's stand-in of the decode step against its floor and main's
# GEMV phases; last: the decode-step gate of h40 and h49, and r160's probes.
set -o pipefail
R=/tmp/r164; mkdir -p $R; cp .gpu/call23.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
H200=0; grep -q H200 $R/nvidia-smi.csv && H200=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r164.tgz -C /tmp r164; }
for b in h40 h48 h49 old; do for f in gates gemv-phases persistent-step gpu-tests; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
if [ $H200 = 1 ]; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 20 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
fi
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h49 150 /tmp/h49-gpu-tests; save; grep -E "test result|FAIL|panicked" $R/gpu-tests-h49.log | tail -3
for t in racecheck memcheck initcheck; do
  run $t-b128-m1 120 compute-sanitizer --tool $t --error-exitcode 1 --kernel-name kns=gemv_e4m3_b128_m1 /tmp/h49-gates gemv --no-timing --classes uniform --shapes 32x1,160x129,4096x4100,6144x5120 --batches 1 --no-peers; save
done
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
SH=5120x12288,6144x5120,5120x17408,17408x5120
B="h40 h48 h49"; [ $H200 = 1 ] && B="old h40 h48 h49"
for i in 1 2 3; do
  for b in $B; do
    g=gemv; [ $b = old ] && g=gemv-e4m3
    run m1-$b-$i 90 /tmp/$b-gates $g --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl
  done
  save
done
[ $H200 = 1 ] && python3 .gpu/ab.py $R m1 old,h40,h48,h49 3 e4m3 > $R/m1.txt 2>&1
python3 .gpu/ab.py $R m1 h40,h48,h49 3 > $R/m1-main.txt 2>&1; save; cut -c1-170 $R/m1-main.txt | grep -E "b128|geomean"; [ -f $R/m1.txt ] && cut -c1-170 $R/m1.txt
if [ $H200 = 1 ]; then
  for b in h40 h49; do run decode-step-$b 150 /tmp/$b-gates decode-step --jsonl $R/decode-step-$b.jsonl; save; grep -A 12 "best x bytes" $R/decode-step-$b.log | cut -c1-150; done
  chmod +x .gpu/probe/mma-clock .gpu/probe/wgmma-bits
  for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
  run wgmma-bits 180 .gpu/probe/wgmma-bits; save; tail -n 12 $R/wgmma-bits.log
fi
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
