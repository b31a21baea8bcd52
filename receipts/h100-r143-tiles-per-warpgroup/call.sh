#!/bin/bash
# r143: h34 = 85fca2e (main's kernels); h36 = f8419c2, each Hopper warpgroup taking every other output
# tile for both chunks and folding the pair in registers. A/B on both geometries, the decode-step
# MLA chain, h36's GPU tests and sanitizers, main's arm kernel by kernel without cache flushes and
# the 64-head entry's shared-memory wavefronts by kind for both builds (Nsight Compute); on an H200
# also the GEMV every-m and decode-step gates.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r143; mkdir -p $R; cp .gpu/call.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r143.tgz -C /tmp r143; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
SH=1x2048,2x2048,4x2048,8x2048
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h36/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests.log | tail -3
run racecheck-wgmma 120 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h36/gates mla --no-timing --no-peers --classes edge --shapes 4x2048,8x2048; save
run memcheck-wgmma 60 $S --tool memcheck --kernel-name kns=mla_attn_flash .gpu/h36/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-wgmma 60 $S --tool initcheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h36/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
for i in 1 2; do
  if [ $((i % 2)) = 0 ]; then order="h36 h34"; else order="h34 h36"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h34,h36 2 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h34,h36 2 > $R/ab-v32.txt 2>&1; save
grep -E "wgmma|geomean" $R/ab-mla.txt | cut -c1-170; grep -E "wgmma|geomean" $R/ab-v32.txt | cut -c1-170
for b in h34 h36; do run step-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b-$RANDOM.jsonl; done; save
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | grep -v " 268 of 268" | head -40
M=gpu__time_duration.sum,sm__cycles_elapsed.max
W=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum,sm__inst_executed_pipe_tensor_op_gmma.sum
run ncu-chain-h34 90 $NCU --clock-control none --cache-control none --metrics $M -k regex:mla_attn_flash .gpu/h34/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
for b in h34 h36; do
  run ncu-lsu-$b 90 $NCU --clock-control none --metrics $W -k regex:mla_attn_flash_wgmma_h64 --launch-count 1 .gpu/$b/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
done
grep -E "Duration|wavefronts|gmma" $R/ncu-lsu-*.log | head -30
if grep -q H200 $R/nvidia-smi.csv; then
  run gemv-every-m-h36 120 .gpu/h36/gates gemv --classes uniform --batches 1,2,4,8 --jsonl $R/gemv-every-m-h36.jsonl --plot $R/gemv-every-m-h36.svg; save
  run decode-step-h36 100 .gpu/h36/gates decode-step --jsonl $R/decode-step-h36.jsonl --plot $R/decode-step-h36.svg; save
fi
