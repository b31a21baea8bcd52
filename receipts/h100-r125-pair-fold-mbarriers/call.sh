#!/bin/bash
# r125: h21 = main before the pair fold (7ad4ae2); h23 = the pair fold with the exchange handed over by two mbarriers (r124's build used bar.arrive / bar.sync, which racecheck did not pass).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r125; mkdir -p $R; cp .gpu/call.sh .gpu/ab.py .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r125.tgz -C /tmp r125; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
run racecheck-wgmma 90 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h23/gates mla --no-timing --no-peers --classes edge --shapes 4x2048,8x2048; save
tail -n 3 $R/racecheck-wgmma.log
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h23/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests.log | tail -4
run racecheck-v32 90 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h23/gates mla --geometry v3.2 --no-timing --no-peers --classes edge --shapes 8x2048; save
tail -n 3 $R/racecheck-v32.log
run memcheck-flash 60 $S --tool memcheck --kernel-name kns=mla_attn_flash .gpu/h23/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-flash 60 $S --tool initcheck --kernel-name kns=mla_attn_flash .gpu/h23/gates mla --no-timing --no-peers --classes uniform --shapes 1x2048,8x2048; save
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2; do
  if [ $i = 1 ]; then order="h21 h23"; else order="h23 h21"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h21,h23 2 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h21,h23 2 > $R/ab-v32.txt 2>&1; save
grep -E "wgmma|geomean" $R/ab-*.txt | cut -c1-160 | head -40
for b in h21 h23; do run step-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b.jsonl; done; save
run mla-edge-h23 60 .gpu/h23/gates mla --classes edge,outliers --no-peers --shapes 1x2048,4x2048,8x2048,8x32768 --jsonl $R/mla-edge-h23.jsonl; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
