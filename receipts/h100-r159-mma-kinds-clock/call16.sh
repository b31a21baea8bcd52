#!/bin/bash
# r159: scripts/mma-clock.cu with the other tensor-core shapes and types, twice.

set -o pipefail
R=/tmp/r159; mkdir -p $R; cp .gpu/call16.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r159.tgz -C /tmp r159; }
chmod +x .gpu/probe/mma-clock
for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
