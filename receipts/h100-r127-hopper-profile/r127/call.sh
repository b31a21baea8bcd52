#!/bin/bash
# r127: h24 = main at 4a326d6. Nsight Compute on the Hopper arm at t_q 8 (seed geometry) and decompress_v at t_q 8.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r127; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r127.tgz -C /tmp r127; }
B=.gpu/h24
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
run ncu-durations 90 $NCU --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum -k "regex:mla_attn_flash|mla_absorb|mla_decompress" .gpu/h24/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h64-full 150 $NCU --clock-control none --set full --import-source no -k regex:mla_attn_flash_wgmma_h64 --launch-count 1 $B/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-combine 60 $NCU --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats -k regex:mla_attn_flash_combine_pairs --launch-count 1 $B/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-decompress 60 $NCU --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max -k regex:mla_decompress_v_s8 --launch-count 1 $B/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
grep -E "Duration|Throughput|Pipe|Issue Slot|Stall|tensor|gmma" $R/ncu-h64-full.log | head -60
