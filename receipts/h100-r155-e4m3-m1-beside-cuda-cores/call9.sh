#!/bin/bash
# On an H200 first: r150's stand-in of the decode step against its floor, main's GEMV phases, and
# r152 + r153 (h42) and r154 (h43) against main (h40), two alternated rounds of the GEMV gate on the
# four big 27B shapes at m = 1, 4, 5, 8. On any card: the e4m3 formats at m = 1 on those shapes,
# main's tensor-core kernels (h40) against the CUDA-core kernels they replaced (old: d215112,
# 8c558d2's parent, whose gate was named gemv-e4m3), two alternated rounds.
set -o pipefail
R=/tmp/c9; mkdir -p $R; cp .gpu/call9.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for b in h40 h42 h43 old; do for f in gates gemv-phases persistent-step; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/c9.tgz -C /tmp c9; }
SH=5120x12288,6144x5120,5120x17408,17408x5120
if grep -q H200 $R/nvidia-smi.csv; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 16 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
  ab() { for b in $2; do run gemv-$b-$1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 1,4,5,8 --jsonl $R/gemv-$b-$1.jsonl; done; save; }
  ab 1 "h40 h42 h43"; ab 2 "h43 h42 h40"
  python3 .gpu/ab.py $R gemv h40,h42,h43 2 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
  run phases-h43 30 /tmp/h43-gemv-phases; save
fi
for i in 1 2; do
  for b in old h40; do
    g=gemv; [ $b = old ] && g=gemv-e4m3
    run m1-$b-$i 90 /tmp/$b-gates $g --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl
  done
  save
done
grep -hE "e4m3.* m=1 " $R/m1-*.log | cut -c1-110
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
