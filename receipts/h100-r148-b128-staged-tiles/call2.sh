#!/bin/bash
# r148, second call: h38's GPU tests, and compute-sanitizer (memcheck, initcheck, racecheck) on its
# e4m3 GEMV entries at the 1.7B sheet, every class.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r148b; mkdir -p $R; cp .gpu/call2.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r148b.tgz -C /tmp r148b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 200 .gpu/h38/gpu-tests; save
grep -E "test result|FAIL|panicked" $R/gpu-tests.log | tail -3
S="compute-sanitizer --error-exitcode 1"
for t in memcheck initcheck racecheck; do
  run $t 90 $S --tool $t --kernel-name kns=gemv_e4m3 .gpu/h38/gates gemv --no-timing --no-peers --shapes 1p7b; save
done
for f in $R/memcheck.log $R/initcheck.log $R/racecheck.log; do echo "$f: $(tail -n 1 $f)"; done
grep -E "checks passed|FAIL" $R/*.log | head -20
