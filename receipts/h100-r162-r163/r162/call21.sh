#!/bin/bash
# r162: main (h40) against the split with every later trip's wait one group looser (h46) and the
# same code with the split never taken (h47): two alternated rounds of the GEMV gate on o_proj, square
# and q_proj at m = 4 and 8 (uniform, no peers); h46's checks on ragged shapes.
set -o pipefail
R=/tmp/r162; mkdir -p $R; cp .gpu/call21.sh .gpu/REV .gpu/ab.py $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $R/nvidia-smi.csv 2>&1; cat $R/nvidia-smi.csv
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
save() { tar czf $OUT/r162.tgz -C /tmp r162; }
for b in h40 h46 h47; do xz -dc .gpu/$b/gates.xz > /tmp/$b-gates && chmod +x /tmp/$b-gates; done
SH=6144x5120,5120x5120,5120x12288
ab() { for b in $2; do run gemv-$b-$1 90 /tmp/$b-gates gemv --classes uniform --no-peers --shapes $SH --batches 4,8 --jsonl $R/gemv-$b-$1.jsonl; done; save; }
ab 1 "h40 h46 h47"; ab 2 "h47 h46 h40"
python3 .gpu/ab.py $R gemv h40,h46,h47 2 q8_0 > $R/ab-gemv.txt 2>&1; save; cut -c1-150 $R/ab-gemv.txt
run ragged-h46 60 /tmp/h46-gates gemv --no-timing --shapes 1600x257,1792x5120,4000x1040,17408x1024,1600x40,4128x257,1056x4000,5152x1040,2080x6160; save
grep -hE "checks passed|FAIL" $R/*.log | sort | uniq -c | head -20
