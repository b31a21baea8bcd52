#!/bin/bash
# r158: scripts/mma-clock.cu (r157's sections and the chain of launches with and without mma.sync),
# twice.
set -o pipefail
R=/tmp/r158; mkdir -p $R; cp .gpu/call15.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r158.tgz -C /tmp r158; }
chmod +x .gpu/probe/mma-clock
for i in 1 2; do run mma-clock-$i 120 .gpu/probe/mma-clock; save; cat $R/mma-clock-$i.log; done
