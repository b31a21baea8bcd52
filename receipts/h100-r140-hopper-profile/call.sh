#!/bin/bash
# r140: h34 = 85fca2e (main's kernels: r137's weighted sum and r138's pair l). The seed's t_q 8 arm
# under Nsight Compute: every MLA kernel's duration with the caches flushed, and the 64-head
# entry's stall samples by SASS instruction.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r140; mkdir -p $R; cp .gpu/call.sh .gpu/REV $R/
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r140.tgz -C /tmp r140; }
B=.gpu/h34
NCU=/usr/local/cuda/bin/ncu; [ -x $NCU ] || NCU=ncu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
M=gpu__time_duration.sum,sm__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
run ncu-durations-flushed 90 $NCU --clock-control none --metrics $M -k "regex:mla_attn_flash" $B/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h64-source 150 $NCU --clock-control none --section SourceCounters --section WarpStateStats --metrics regex:^smsp__pcsamp_warps_issue_stalled_[a-z_]+$,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum -k regex:mla_attn_flash_wgmma_h64 --launch-count 1 -o $R/h64 $B/gates mla --no-timing --no-peers --classes uniform --shapes 8x2048; save
run ncu-h64-print 60 $NCU -i $R/h64.ncu-rep --print-details all; save
run ncu-h64-sass 60 $NCU -i $R/h64.ncu-rep --page source --csv --print-source sass; save
xz -T0 $R/ncu-h64-sass.log; rm -f $R/h64.ncu-rep; save
grep -E "stalled|gmma|bank" $R/ncu-h64-print.log | head -40
