#!/bin/bash
# r163 on any card: main (h40), block-128's two-set m = 1 entry with its tile scales loaded a trip
# ahead (h48) and the CUDA-core e4m3 kernels (old: d215112), three alternated rounds at m = 1 on the
# four big shapes; h48's checks on ragged shapes at every m.
# On an H200 first: r150's stand-in of the decode step against its floor (persistent-step) and main's
# GEMV phases; after: main's decode-step gate and r160's probes (mma-clock twice, wgmma-bits).
# On any other card after: r162 (.gpu/call21.sh).
set -o pipefail
R=/tmp/r163; mkdir -p $R; cp .gpu/call22.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
H200=0; grep -q H200 $R/nvidia-smi.csv && H200=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r163.tgz -C /tmp r163; }
for b in h40 h48 old; do for f in gates gemv-phases persistent-step; do [ -f .gpu/$b/$f.xz ] && xz -dc .gpu/$b/$f.xz > /tmp/$b-$f && chmod +x /tmp/$b-$f; done; done
if [ $H200 = 1 ]; then
  run persistent-step 120 /tmp/h40-persistent-step; save; tail -n 20 $R/persistent-step.log
  run phases-h40 30 /tmp/h40-gemv-phases; save
fi
SH=5120x12288,6144x5120,5120x17408,17408x5120
for i in 1 2 3; do
  for b in old h40 h48; do
    g=gemv; [ $b = old ] && g=gemv-e4m3
    run m1-$b-$i 90 /tmp/$b-gates $g --classes uniform --no-peers --shapes $SH --batches 1 --jsonl $R/m1-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R m1 old,h40,h48 3 e4m3 > $R/m1.txt 2>&1; python3 .gpu/ab.py $R m1 h40,h48 3 > $R/m1-main.txt 2>&1; save; cut -c1-160 $R/m1.txt; grep geomean $R/m1-main.txt
run ragged-h48 60 /tmp/h48-gates gemv --no-timing --shapes 1600x257,1792x5120,4000x1040,17408x1024,1600x40,4128x257,1056x4000,5152x1040,2080x6160; save
if [ $H200 = 1 ]; then
  run decode-step 150 /tmp/h40-gates decode-step --jsonl $R/decode-step.jsonl; save; grep -A 12 "best x bytes" $R/decode-step.log | cut -c1-150; grep -E "checks passed|FAIL" $R/decode-step.log | head -3
  chmod +x .gpu/probe/mma-clock .gpu/probe/wgmma-bits
  for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
  run wgmma-bits 180 .gpu/probe/wgmma-bits; save; tail -n 12 $R/wgmma-bits.log
fi
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head
[ $H200 = 1 ] || bash .gpu/call21.sh
