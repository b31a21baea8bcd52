#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/bin/*
R=/tmp/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1
for v in gates gates-approxdiv gates-fastexp; do
  echo "== $v"; timeout 60 .gpu/bin/$v swiglu --shapes 1x17408,8x17408 --classes uniform,edge --jsonl $R/$v.jsonl > $R/$v.log 2>&1; echo "rc=$?" >> $R/$v.log
  grep -E "^(1|8)x17408 .*swiglu " $R/$v.log
done
tar czf $OUT/r.tgz -C /tmp r
