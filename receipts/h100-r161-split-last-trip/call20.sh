#!/bin/bash
# r161: a block's last trip in two halves (h45, the Rust build) against main (h40): two alternated
# rounds of the GEMV gate on the four big 27B shapes and square at m = 4 and 8 (uniform, no peers);
# h45's checks on ragged shapes (every m, every class), its GPU tests, racecheck and memcheck on the
# Q8_0 entries where they split. On an H200 also r150's stand-in against its floor.
set -o pipefail
R=/tmp/r161; mkdir -p $R; cp .gpu/call20.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r161.tgz -C /tmp r161; }
for f in h40/gates h45/gates h45/gpu-tests h40/persistent-step; do xz -dc .gpu/$f.xz > /tmp/${f/\//-} && chmod +x /tmp/${f/\//-}; done
SH=5120x12288,6144x5120,5120x17408,17408x5120,5120x5120
ab() { for b in $2; do run gemv-$b-$1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 4,8 --jsonl $R/gemv-$b-$1.jsonl; done; save; }
ab 1 "h40 h45"; ab 2 "h45 h40"
python3 .gpu/ab.py $R gemv h40,h45 2 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-h45 100 /tmp/h45-gpu-tests; save
grep -E "test result|FAIL|panicked" $R/gpu-tests-h45.log | tail -3
run ragged-h45 100 /tmp/h45-gates gemv --no-timing --shapes 1600x257,1792x5120,4000x1040,17408x1024,1600x40,4128x257,1056x4000,5152x1040,2080x6160; save
grep -E "checks passed|FAIL" $R/ragged-h45.log | head -12
SAN="gates gemv --no-timing --classes uniform --shapes 1792x5120,17408x1024 --batches 4,8 --no-peers"
run racecheck-h45 100 compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=gemv_q8_0 /tmp/h45-$SAN; save
run memcheck-h45 80 compute-sanitizer --tool memcheck --error-exitcode 1 --kernel-name kns=gemv_q8_0 /tmp/h45-$SAN; save
for f in $R/racecheck-*.log $R/memcheck-*.log; do echo "$f: $(tail -n 2 $f | tr '\n' ' ')"; done
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head -20
if grep -q H200 $R/nvidia-smi.csv; then run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 16 $R/persistent-step.log; fi
