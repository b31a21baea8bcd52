#!/bin/bash
# r157 (second call): scripts/mma-clock.cu (a read stream with and without tensor-core instructions,
# the SM clock read in the kernel), then Nsight Compute's SM frequency, cycles and time for main's
# m = 1 entries at o_proj (the CUDA-core Q8_0 kernels and the tensor-core e4m3 ones, both builds)
# and d215112's CUDA-core e4m3 kernels, clocks left alone.
set -o pipefail
R=/tmp/r157b; mkdir -p $R; cp .gpu/call13.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for b in h40 old; do xz -dc .gpu/$b/gates.xz > /tmp/$b-gates && chmod +x /tmp/$b-gates; done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r157b.tgz -C /tmp r157b; }
chmod +x .gpu/probe/mma-clock
run mma-clock 120 .gpu/probe/mma-clock; save; cat $R/mma-clock.log
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__cycles_active.avg,dram__throughput.avg.pct_of_peak_sustained_elapsed
run ncu-freq-h40 150 ncu --clock-control none --kernel-name "regex:^gemv_(q8_0|q8_0_planar|e4m3|e4m3_b128)_m1$" --launch-count 24 --metrics $M /tmp/h40-gates gemv --no-timing --classes uniform --shapes 6144x5120 --batches 1 --no-peers; save
run ncu-freq-old 150 ncu --clock-control none --kernel-name "regex:^gemv_(q8_0|q8_0_planar|e4m3|e4m3_b128)_m1$" --launch-count 24 --metrics $M /tmp/old-gates gemv-e4m3 --no-timing --classes uniform --shapes 6144x5120 --batches 1 --no-peers; save
for f in $R/ncu-freq-*.log; do echo "== $f"; grep -E "^  gemv|per_second|gpu__time_duration" $f | paste - - - | awk '{print $1, $(NF-4), $(NF)}' | sort | uniq -c | head -30; done
nvidia-smi -q -d PERFORMANCE > $R/nvidia-smi-performance.txt 2>&1; save
