#!/bin/bash
# h16: main's kernels; h19: the Q8_0 eight-row entries six stages deep on grids of a block an SM (the rest as main).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r122; mkdir -p $R; cp .gpu/call.sh .gpu/ab.py .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r122.tgz -C /tmp r122; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h19/gpu-tests; save
grep -E "deep|passed, |FAIL" $R/gpu-tests.log | tail -4
S="compute-sanitizer --error-exitcode 1"
C="gemv --no-timing --no-peers --classes uniform --shapes 6400x260,5120x1024"
run memcheck-deep 90 $S --tool memcheck .gpu/h19/gates $C; save
SMALL=5120x1024,4096x1024,8192x1024,2048x512,3584x512,4096x4096
for i in 1 2; do
  if [ $i = 1 ]; then order="h16 h19"; else order="h19 h16"; fi
  for b in $order; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 4,5,8 --rounds 10 --jsonl $R/gemv-$b-$i.jsonl
    run small-$b-$i 60 .gpu/$b/gates gemv --shapes $SMALL --classes uniform --no-peers --batches 4,5,8 --rounds 10 --jsonl $R/small-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R gemv h16,h19 2 q8_0 > $R/ab-q8_0.txt 2>&1
python3 .gpu/ab.py $R small h16,h19 2 q8_0 > $R/ab-small.txt 2>&1; save
grep geomean $R/ab-*.txt
run racecheck-deep 50 $S --tool racecheck .gpu/h19/gates gemv --no-timing --no-peers --classes uniform --shapes 6400x260 --batches 8; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
for f in $R/memcheck-*.log $R/racecheck-*.log; do echo "$f: $(tail -1 $f)"; done
run gemv-every-m-main 120 .gpu/h16/gates gemv --classes uniform --batches 1,2,4,8 --jsonl $R/gemv-every-m-main.jsonl --plot $R/gemv-every-m-main.svg; save
tail -40 $R/gemv-every-m-main.log
