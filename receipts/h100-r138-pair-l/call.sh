#!/bin/bash
# r138: h33 = 767225a (r137's landed build); h34 = 85fca2e, the pair's l folded by one function in
# the combine and the Hopper entries and the combine's live mask from its batch size (the same
# operations). A/B on both geometries, then every check on h34: the GPU tests, the combines under
# memcheck, initcheck and racecheck, the full mla gate at both geometries, the decode-step MLA
# chain; on an H200 also the GEMV every-m and full decode-step gates.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r138; mkdir -p $R; cp .gpu/call.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r138.tgz -C /tmp r138; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
S="compute-sanitizer --error-exitcode 1"
SH=1x2048,2x2048,4x2048,8x2048
for i in 1 2; do
  if [ $i = 2 ]; then order="h34 h33"; else order="h33 h34"; fi
  for b in $order; do
    run mla-$b-$i 90 .gpu/$b/gates mla --classes uniform --no-peers --shapes $SH --jsonl $R/mla-$b-$i.jsonl
    run v32-$b-$i 60 .gpu/$b/gates mla --geometry v3.2 --classes uniform --no-peers --shapes $SH --jsonl $R/v32-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R mla h33,h34 2 > $R/ab-mla.txt 2>&1
python3 .gpu/ab.py $R v32 h33,h34 2 > $R/ab-v32.txt 2>&1; save
grep -E "attn_flash|geomean" $R/ab-mla.txt | cut -c1-150; grep -E "geomean" $R/ab-v32.txt
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 150 .gpu/h34/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests.log | tail -3
run memcheck-combine 60 $S --tool memcheck --kernel-name kns=mla_attn_flash_combine .gpu/h34/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
run initcheck-combine 60 $S --tool initcheck --kernel-name kns=mla_attn_flash_combine .gpu/h34/gates mla --no-timing --no-peers --classes uniform --shapes 1x2048,8x2048; save
run racecheck-combine 90 $S --tool racecheck --kernel-name kns=mla_attn_flash_combine .gpu/h34/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,8x2048; save
for f in $R/racecheck-*.log $R/memcheck-*.log $R/initcheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
run mla-full-h34 120 .gpu/h34/gates mla --jsonl $R/mla-full-h34.jsonl --plot $R/mla-full-h34.svg; save
run v32-full-h34 80 .gpu/h34/gates mla --geometry v3.2 --jsonl $R/v32-full-h34.jsonl; save
run step-h34 60 .gpu/h34/gates decode-step --shapes mla:1,mla:2,mla:4,mla:8 --jsonl $R/step-h34.jsonl; save
if grep -q H200 $R/nvidia-smi.csv; then
  run gemv-every-m-h34 120 .gpu/h34/gates gemv --classes uniform --batches 1,2,4,8 --jsonl $R/gemv-every-m-h34.jsonl --plot $R/gemv-every-m-h34.svg; save
  run decode-step-h34 100 .gpu/h34/gates decode-step --jsonl $R/decode-step-h34.jsonl --plot $R/decode-step-h34.svg; save
fi
grep -E "checks passed|REGRESSION|FAIL|Rust/.cu over" $R/*.log | head -40
