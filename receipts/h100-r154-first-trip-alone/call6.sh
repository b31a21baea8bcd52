#!/bin/bash
# r154: r152 with the first group holding the first trip alone (h43) against main (h40): three
# alternated rounds of the GEMV gate on the four big 27B shapes at m = 1, 4, 5, 8 (uniform, no
# peers); on an H200 r150's stand-in of the decode step (scripts/persistent-step.cu); the stamped
# timeline of both builds' .cu entries; racecheck on h43's Q8_0 entries; h43's GPU tests.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r154; mkdir -p $R; cp .gpu/call6.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r154.tgz -C /tmp r154; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
SH=5120x12288,6144x5120,5120x17408,17408x5120
ab() { for b in $2; do run gemv-$b-$1 90 .gpu/$b/gates gemv --classes uniform --no-peers --shapes $SH --batches 1,4,5,8 --jsonl $R/gemv-$b-$1.jsonl; done; save; }
ab 1 "h40 h43"; ab 2 "h43 h40"
python3 .gpu/ab.py $R gemv h40,h43 2 > $R/ab-gemv.txt 2>&1; save; grep -E "geomean" $R/ab-gemv.txt
if grep -q H200 $R/nvidia-smi.csv; then run persistent-step 60 .gpu/h40/persistent-step; save; tail -n 15 $R/persistent-step.log; fi
for b in h40 h43; do run phases-$b 30 .gpu/$b/gemv-phases; save; done
ab 3 "h40 h43"
python3 .gpu/ab.py $R gemv h40,h43 3 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h43 90 .gpu/h43/gpu-tests; save
grep -E "test result|FAIL|panicked" $R/gpu-tests-h43.log | tail -3
run racecheck-6144x5120 100 compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=gemv_q8_0 .gpu/h43/gates gemv --no-timing --classes uniform --shapes 6144x5120 --batches 5,8 --no-peers; save
for f in $R/racecheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head -20
