#!/bin/bash
# r152: the Q8_0 eight-row tensor-core entries with three weight stages and a two-slot activation
# ring a trip ahead (h41), and r153, r152 with each warp's full-trip reads compiled for it (h42, the
# Rust build; its .cu is r152's), against main's kernels (h40): two alternated rounds of the GEMV gate on
# the four big 27B shapes at m = 1, 4, 5, 8 (uniform, no peers); racecheck on the
# Q8_0 entries of h41 (a plain grid; a deep grid with a ragged trip); the stamped timeline of
# both builds' .cu entries (scripts/gemv-phases.cu); h42's GPU tests; on an H200
# r150's stand-in.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r152; mkdir -p $R; cp .gpu/call5.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r152.tgz -C /tmp r152; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
SH=5120x12288,6144x5120,5120x17408,17408x5120
for i in 1 2; do
  case $i in 1) order="h40 h41 h42";; 2) order="h42 h40 h41";; 3) order="h41 h42 h40";; esac
  for b in $order; do
    run gemv-$b-$i 90 .gpu/$b/gates gemv --classes uniform --no-peers --shapes $SH --batches 1,4,5,8 --jsonl $R/gemv-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R gemv h40,h41,h42 2 > $R/ab-gemv.txt 2>&1; save
grep -E "q8_0" $R/ab-gemv.txt | cut -c1-150
for b in h40 h41; do run phases-$b 30 .gpu/$b/gemv-phases; save; done
grep -E "^raw|^planar|event median|landed 0 |a block's landing|exit" $R/phases-h41.log | cut -c1-120
run racecheck-6144x5120 60 compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=gemv_q8_0 .gpu/h42/gates gemv --no-timing --classes uniform --shapes 6144x5120 --no-peers; save
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h42 90 .gpu/h42/gpu-tests; save
grep -E "test result|FAIL|panicked" $R/gpu-tests-h42.log | tail -3
for f in $R/racecheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head -20
# On an H200, r150's stand-in of the decode step against its floor (scripts/persistent-step.cu).
if grep -q H200 $R/nvidia-smi.csv; then run persistent-step 60 .gpu/h40/persistent-step; save; tail -n 15 $R/persistent-step.log; fi
