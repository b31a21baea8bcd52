#!/bin/bash
# r144: h37 = b419060 (main's kernels), h38 = the pair combine a thread per float4 column with all
# its pairs in registers (one wave, one round trip at 2048 slots). A/B at both geometries, the
# decode-step MLA chain, the arm kernel by kernel (Nsight Compute, no flush) for both builds;
# h38's memcheck and initcheck on the combines, GPU tests, racecheck at both geometries, the full
# mla gate at both geometries. On an H200 a second call runs the GEMV and decode-step gates.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r144; mkdir -p $R; cp .gpu/call.sh .gpu/call2.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r144.tgz -C /tmp r144; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2 3 4; do
  if [ $((i % 2)) = 0 ]; then order="h38 h37"; else order="h37 h38"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h37,h38 4 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h37,h38 4 > $R/ab-v32.txt 2>&1; save
grep -E "flash|geomean" $R/ab-mla.txt | cut -c1-170; grep -E "flash|geomean" $R/ab-v32.txt | cut -c1-170
for b in h37 h38; do run step-$b 60 .gpu/$b/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-$b.jsonl; done; save
M=gpu__time_duration.sum,sm__cycles_elapsed.max
for b in h37 h38; do
  run ncu-chain-$b 90 $NCU --clock-control none --cache-control none --metrics $M -k regex:mla_attn_flash .gpu/$b/gates mla --no-timing --no-peers --classes uniform --shapes 4x2048,8x2048; save
  run ncu-chain-v32-$b 90 $NCU --clock-control none --cache-control none --metrics $M -k regex:mla_attn_flash .gpu/$b/gates mla --geometry v3.2 --no-timing --no-peers --classes uniform --shapes 8x2048; save
done
grep -E "combine|Duration" $R/ncu-chain-h3*.log | head -20
run memcheck-combine 60 $S --tool memcheck --kernel-name kns=mla_attn_flash_combine .gpu/h38/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-combine 60 $S --tool initcheck --kernel-name kns=mla_attn_flash_combine .gpu/h38/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h38/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests.log | tail -3
run racecheck-wgmma 100 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h38/gates mla --no-timing --no-peers --classes edge --shapes 4x2048,8x2048; save
run racecheck-v32 100 $S --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h38/gates mla --geometry v3.2 --no-timing --no-peers --classes edge --shapes 8x2048; save
run mla-full-h38 120 .gpu/h38/gates mla --jsonl $R/mla-full-h38.jsonl --plot $R/mla-full-h38.svg; save
run v32-full-h38 120 .gpu/h38/gates mla --geometry v3.2 --jsonl $R/v32-full-h38.jsonl --plot $R/v32-full-h38.svg; save
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
grep -E "checks passed|REGRESSION|FAIL" $R/*.log | grep -v " 268 of 268" | head -40
