#!/bin/bash
# r129: h24 = main (4a326d6); h25 = the Hopper entries' weighted sum as a loop over pairs of tiles (items of two k-steps), the warpgroup index broadcast from lane 0, row tiles 68 floats apart (both builds); h26 = h25's row tiles and broadcast with main's unrolled weighted sum.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r129; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r129.tgz -C /tmp r129; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-hopper 90 .gpu/h25/gpu-tests Hopper; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests-hopper.log | tail -3
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2; do
  if [ $i = 1 ]; then order="h24 h25 h26"; else order="h26 h25 h24"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h24,h25,h26 2 wgmma > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h24,h25,h26 2 wgmma > $R/ab-v32.txt 2>&1; save
cat $R/ab-mla.txt | cut -c1-170 | head -30; grep geomean $R/ab-v32.txt
for b in h24 h25; do run step-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b.jsonl; done; save
run racecheck-wgmma 150 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h25/gates mla --no-timing --no-peers --classes edge --shapes 4x2048,8x2048; save
run racecheck-v32 100 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h25/gates mla --geometry v3.2 --no-timing --no-peers --classes edge --shapes 8x2048; save
run memcheck-wgmma 60 $S --tool memcheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h25/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-wgmma 60 $S --tool initcheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h25/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
run mla-edge-h25 60 .gpu/h25/gates mla --classes edge,outliers --no-peers --shapes 1x2048,4x2048,8x2048,8x32768 --jsonl $R/mla-edge-h25.jsonl; save
run v32-edge-h25 60 .gpu/h25/gates mla --geometry v3.2 --classes edge,outliers --no-peers --shapes 1x2048,8x2048 --jsonl $R/v32-edge-h25.jsonl; save
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
run ncu-h25-durations 60 $NCU --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.max -k "regex:mla_attn_flash_wgmma_h64|mla_attn_flash_combine_pairs" .gpu/h25/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h25-source 120 $NCU --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight -k regex:mla_attn_flash_wgmma_h64 --launch-count 1 -o $R/h25 .gpu/h25/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h25-sass 60 $NCU -i $R/h25.ncu-rep --page source --csv --print-source sass; xz -T0 $R/ncu-h25-sass.log; rm -f $R/h25.ncu-rep; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -30
