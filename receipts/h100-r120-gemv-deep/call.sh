#!/bin/bash
# h16: main's kernels; h17: gemv-deep (gates, GPU tests); h18: h17 with the Rust e4m3 four-row entries bounded to 7 blocks an SM.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r120; mkdir -p $R; cp .gpu/call.sh .gpu/ab.py .gpu/REV $R/ 2>/dev/null
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r120.tgz -C /tmp r120; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 120 .gpu/h17/gpu-tests; save
grep -E "deep|passed, |FAIL" $R/gpu-tests.log | tail -5
S="compute-sanitizer --error-exitcode 1"
C="gemv --no-timing --no-peers --classes uniform --shapes 6400x260,5120x1024"
run memcheck-deep 90 $S --tool memcheck .gpu/h17/gates $C; save
SMALL=5120x1024,4096x1024,8192x1024,2048x512,3584x512,4096x4096
for i in 1 2; do
  if [ $i = 1 ]; then order="h16 h17 h18"; else order="h18 h17 h16"; fi
  for b in $order; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2,4,8 --rounds 10 --jsonl $R/gemv-$b-$i.jsonl
    run small-$b-$i 60 .gpu/$b/gates gemv --shapes $SMALL --classes uniform --no-peers --batches 1,2,4,8 --rounds 10 --jsonl $R/small-$b-$i.jsonl
  done
  save
done
for f in e4m3 q8_0; do python3 .gpu/ab.py $R gemv h16,h17,h18 2 $f > $R/ab-$f.txt 2>&1; done
python3 .gpu/ab.py $R small h16,h17,h18 2 > $R/ab-small.txt 2>&1; save
grep geomean $R/ab-*.txt
run gemv-every-m 90 .gpu/h17/gates gemv --classes uniform --jsonl $R/gemv-every-m.jsonl --plot $R/gemv-every-m.svg; save
for b in h16 h17; do run step-$b 60 .gpu/$b/gates decode-step --shapes q8_0:1,q8_0-planar:1,e4m3:1,e4m3-b128:1,q8_0:4,q8_0-planar:4,e4m3:4,e4m3-b128:4 --jsonl $R/step-$b.jsonl; done; save
run racecheck-deep 60 $S --tool racecheck .gpu/h17/gates $C; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
for f in $R/memcheck-*.log $R/racecheck-*.log; do echo "$f: $(tail -1 $f)"; done
