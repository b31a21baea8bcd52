#!/bin/bash
# r142: h34 = 85fca2e (main's kernels); h35 = b6720cf, the Hopper fold's weights loaded before its
# wait and stores. A/B on both geometries, the decode-step MLA chain, every check on h35, the 64-head
# entry's full Nsight Compute sections at t_q 8; on an H200 also the GEMV every-m and decode-step gates.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r142; mkdir -p $R; cp .gpu/call.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r142.tgz -C /tmp r142; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2 3 4; do
  if [ $((i % 2)) = 0 ]; then order="h35 h34"; else order="h34 h35"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h34,h35 4 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h34,h35 4 > $R/ab-v32.txt 2>&1; save
grep -E "wgmma|geomean" $R/ab-mla.txt | cut -c1-170; grep -E "wgmma h64|geomean" $R/ab-v32.txt | cut -c1-170
for b in h34 h35 h34 h35; do run step-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b-$RANDOM.jsonl; done; save
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h35/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests.log | tail -3
run racecheck-wgmma 120 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h35/gates mla --no-timing --no-peers --classes edge --shapes 4x2048,8x2048; save
run racecheck-v32 100 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h35/gates mla --geometry v3.2 --no-timing --no-peers --classes edge --shapes 8x2048; save
run memcheck-wgmma 60 $S --tool memcheck --kernel-name kns=mla_attn_flash .gpu/h35/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-wgmma 60 $S --tool initcheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h35/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
run mla-full-h35 120 .gpu/h35/gates mla --jsonl $R/mla-full-h35.jsonl --plot $R/mla-full-h35.svg; save
run v32-full-h35 80 .gpu/h35/gates mla --geometry v3.2 --jsonl $R/v32-full-h35.jsonl; save
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | head -40
run ncu-h64-full 150 $NCU --clock-control none --set full -k regex:mla_attn_flash_wgmma_h64 --launch-count 1 -o $R/h64 .gpu/h35/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h64-details 60 $NCU -i $R/h64.ncu-rep --print-details all; rm -f $R/h64.ncu-rep; save
run ncu-metric-names 60 bash -c "$NCU --query-metrics --chip gh100 | grep -iE 'data_bank|gmma|pipe_shared|shared_ld|shared_st|lsu_mem_shared'"; save
grep -iE "Shared|Tensor|L1/TEX Cache Throughput|Data Bank|Duration" $R/ncu-h64-details.log | head -40
if grep -q H200 $R/nvidia-smi.csv; then
  run gemv-every-m-h35 120 .gpu/h35/gates gemv --classes uniform --batches 1,2,4,8 --jsonl $R/gemv-every-m-h35.jsonl --plot $R/gemv-every-m-h35.svg; save
  run decode-step-h35 100 .gpu/h35/gates decode-step --jsonl $R/decode-step-h35.jsonl --plot $R/decode-step-h35.svg; save
fi
