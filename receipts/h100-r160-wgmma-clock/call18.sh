#!/bin/bash
# r160: scripts/mma-clock.cu with a wgmma variant (twice) and scripts/wgmma-bits.cu (tf32 and f16), on any card.
# On an H200 also: r150's stand-in against its floor (persistent-step), the phase probe of main (h40),
# and one round of main (h40) against r152+r153 (h42) and r154 (h43) at m = 4 and 8 on the big four.
set -o pipefail
R=/tmp/r160; mkdir -p $R; cp .gpu/call18.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r160.tgz -C /tmp r160; }
chmod +x .gpu/probe/mma-clock .gpu/probe/wgmma-bits
for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
run wgmma-bits 180 .gpu/probe/wgmma-bits; save; cat $R/wgmma-bits.log
grep -q H200 $R/nvidia-smi.csv || { echo "not an H200: the H200 items not run"; exit 0; }
for b in h40 h42 h43; do for f in gates gemv-phases persistent-step; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 16 $R/persistent-step.log
run phases-h40 30 /tmp/h40-gemv-phases; save
grep -E "^[a-z]+ m=|event median|landed 0|exit|a block" $R/phases-h40.log | cut -c1-130
SH=5120x12288,6144x5120,5120x17408,17408x5120
for b in h40 h42 h43; do run gemv-$b-1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 4,8 --jsonl $R/gemv-$b-1.jsonl; done; save
python3 .gpu/ab.py $R gemv h40,h42,h43 1 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
