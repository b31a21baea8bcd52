#!/bin/bash
# .gpu/base: the committed gates; .gpu/xfirst: the .cu's absorb_q / decompress_v issuing the
# activations' copies before the block's first weight loads (the Rust kernels unchanged).
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/gates
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r79; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
run checks-xfirst 100 .gpu/xfirst/gates mla --no-timing --max-kv 2048
for i in 1 2 3; do
  for b in base xfirst; do
    run mla-$b-$i 60 .gpu/$b/gates mla --max-kv 2048 --classes uniform --no-peers --jsonl $R/mla-$b-$i.jsonl
  done
done
grep -E "checks passed|REGRESSION" $R/*.log | head -30
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
tar czf $OUT/r79.tgz -C /tmp r79
