#!/bin/bash
# r149: h37 = b419060's gates (main's kernels), h38 = r148's build (4140637), h39 = r148 with a span's
# factors formed for every pair before its mma (32d7d04). A/B/C of the GEMV on the four big 27B
# shapes at m = 1, 2, 4, 8 (uniform, no peers), three alternated rounds; then for the faster of
# h38 and h39 over the e4m3 cells: racecheck on the e4m3 GEMV entries, one process per 1.7B shape
# (uniform), the GPU tests (h39; h38's ran in r148), the decode-step gate beside h37's (on an H200
# whole, else the e4m3 layers), and its GEMV gate (uniform, every m, both peers).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r149; mkdir -p $R; cp .gpu/call3.sh .gpu/REV .gpu/ab.py $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r149.tgz -C /tmp r149; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
SH=5120x12288,5120x1024,6144x5120,5120x17408
for i in 1 2 3; do
  case $i in 1) order="h37 h38 h39";; 2) order="h39 h37 h38";; 3) order="h38 h39 h37";; esac
  for b in $order; do
    run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --shapes $SH --batches 1,2,4,8 --jsonl $R/gemv-$b-$i.jsonl
  done
  save
done
python3 .gpu/ab.py $R gemv h37,h38,h39 3 > $R/ab-gemv.txt 2>&1; save
grep -E "e4m3|geomean" $R/ab-gemv.txt | cut -c1-170
pick=$(python3 - $R/ab-gemv.txt <<'PY'
import sys, re
g = {}
for l in open(sys.argv[1]):
    m = re.match(r"geomean e4m3 (h3\d)/h37: ([0-9.]+)", l)
    if m: g[m.group(1)] = float(m.group(2))
print(min(g, key=g.get) if g else "h38")
PY
)
echo "picked $pick" | tee -a $R/run.log
for s in 2048x2048 2048x1024 2048x6144 6144x2048; do
  run racecheck-$pick-$s 60 compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=gemv_e4m3 .gpu/$pick/gates gemv --no-timing --classes uniform --shapes $s --no-peers; save
done
[ -f .gpu/$pick/gpu-tests ] && FERROCUDA_REQUIRE_GPU=1 run gpu-tests-$pick 150 .gpu/$pick/gpu-tests; save
grep -E "passed, |FAIL|panicked" $R/gpu-tests-$pick.log | tail -3
# On an H200 the whole decode-step gate (main's and this build's), else its e4m3 layers.
L=""; grep -q H200 $R/nvidia-smi.csv || L="--shapes e4m3:1,e4m3:2,e4m3:4,e4m3:8,e4m3-b128:1,e4m3-b128:2,e4m3-b128:4,e4m3-b128:8"
for b in h37 $pick; do run step-$b 80 .gpu/$b/gates decode-step $L --jsonl $R/step-$b.jsonl --plot $R/step-$b.svg; save; done
run gemv-full-$pick 120 .gpu/$pick/gates gemv --classes uniform --jsonl $R/gemv-full-$pick.jsonl --plot $R/gemv-full-$pick.svg; save
for f in $R/racecheck-*.log; do echo "$f: $(tail -n 1 $f)"; done
grep -E "checks passed|FAIL" $R/*.log | grep -v "1016 of 1016" | head -20
