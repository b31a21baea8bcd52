#!/bin/bash
# r132: h27 = the landed weighted-sum loop (745b2e2's Hopper SASS); h28 = h27 with the pair combine in batches of four pairs, eight blocks an SM declared (32 registers, 16 B spilled); h29 = the same, six blocks an SM declared (38 registers, no spill). The chunk combine's PTX is unchanged in both.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r132; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r132.tgz -C /tmp r132; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2; do
  if [ $i = 1 ]; then order="h27 h28 h29"; else order="h29 h28 h27"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h27,h28,h29 2 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h27,h28,h29 2 > $R/ab-v32.txt 2>&1; save
grep -E "wgmma h(32|64)|geomean" $R/ab-mla.txt | cut -c1-170; grep -E "wgmma h64|geomean attn" $R/ab-v32.txt | cut -c1-170
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-hopper 90 .gpu/h29/gpu-tests Hopper; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests-hopper.log | tail -3
for b in h27 h29; do run step-$b 40 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b.jsonl; done; save
run memcheck-combine 40 compute-sanitizer --error-exitcode 1 --tool memcheck --kernel-name kns=mla_attn_flash_combine .gpu/h29/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-combine 40 compute-sanitizer --error-exitcode 1 --tool initcheck --kernel-name kns=mla_attn_flash_combine .gpu/h29/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
grep -E "checks passed|REGRESSION|FAIL|SUMMARY" $R/*.log | head -30
