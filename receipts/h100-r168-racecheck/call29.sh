#!/bin/bash
# r168: main's block-128 one-row entry under racecheck (r164's form: uniform, four shapes; r166's:
# five shapes, every class; main before r165 in r166's form only if main fails it). On an H200:
# r150's stand-in, main beside the CUDA-core e4m3 kernels at m = 1 (two rounds), the decode-step
# gate, r160's probes, main's GEMV phases.
set -o pipefail
R=$OUT/r168; mkdir -p $R; cp .gpu/call29.sh .gpu/REV $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
H200=0; grep -q H200 $R/nvidia-smi.csv && H200=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; return $rc; }
for b in main before old; do xz -T4 -dc .gpu/$b/gates.xz > .gpu/$b/gates && chmod +x .gpu/$b/gates; done; chmod +x .gpu/probe/*
RC="compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=gemv_e4m3_b128_m1"
if [ $H200 = 1 ]; then
  run persistent-step 120 .gpu/probe/persistent-step; tail -n 20 $R/persistent-step.log
  scripts/gpu-suite ab $R/m1 2 old=.gpu/old main=.gpu/main -- gemv-e4m3 --classes uniform --no-peers --shapes 5120x12288,6144x5120,5120x17408,17408x5120 --batches 1
  grep -E "e4m3|geomean" $R/m1/gemv-e4m3-ab.txt | cut -c1-150
  for i in 1 2; do run mma-clock-$i 60 .gpu/probe/mma-clock; cat $R/mma-clock-$i.log; done
  run decode-step 150 .gpu/main/gates decode-step --jsonl $R/decode-step.jsonl; grep -A 12 "best x bytes" $R/decode-step.log | cut -c1-150
fi
run racecheck-main-r164 150 $RC .gpu/main/gates gemv --no-timing --classes uniform --shapes 32x1,160x129,4096x4100,6144x5120 --batches 1 --no-peers
run racecheck-main-r166 150 $RC .gpu/main/gates gemv --no-timing --shapes 32x1,160x129,4000x1040,4096x4100,6144x5120 --batches 1 --no-peers ||
  run racecheck-before-r166 120 $RC .gpu/before/gates gemv --no-timing --shapes 32x1,160x129,4000x1040,4096x4100,6144x5120 --batches 1 --no-peers
for f in $R/racecheck-*.log; do echo "$f: $(grep -E 'checks|hazard|ERROR SUMMARY' $f | tail -n 3 | tr '\n' ' ')"; done
if [ $H200 = 1 ]; then
  run wgmma-bits 90 .gpu/probe/wgmma-bits; tail -n 12 $R/wgmma-bits.log
  run phases 30 .gpu/probe/gemv-phases
fi
grep -rhE "checks passed|FAIL" $R | sort | uniq -c | head
