#!/bin/bash
# Second call (GEMV r107). b: the committed kernels of 91b3a65 (sm_90 module); ra: raw Q8_0's ragged trip from the
# activation loaded ahead (receipts/ptxas-q8_0-m2/ragged-ahead.patch, both builds); tcl: the Q8_0
# formats on the tensor cores from m = 2 (tc-m2.patch); tcs: tcl with the activation staged
# (tc-m2.patch, then tc-m2-staged.patch). Three alternated gemv rounds at m = 1 and 2 (uniform,
# no peers), then ab.txt.
source .gpu/common.sh
# The sanitizers on the mla kv 2k cells with the Hopper arms (h: this tree's build).
S="compute-sanitizer --error-exitcode 1"
M="mla --no-timing --no-peers --classes uniform --shapes 1x2048,8x2048"
for tool in memcheck racecheck initcheck; do run sanitize-$tool-mla 120 $S --tool $tool .gpu/h/gates $M; done
save
B="b ra tcl tcs"
for i in 1 2 3; do
  order=$(echo $B | tr ' ' '\n' | awk -v i=$i '{a[NR]=$0} END {for (k=0;k<NR;k++) print a[(k+i-1)%NR+1]}')
  for b in $order; do run gemv-$b-$i 60 .gpu/$b/gates gemv --classes uniform --no-peers --batches 1,2 --jsonl $R/gemv-$b-$i.jsonl; done
  save
done
python3 .gpu/ab.py $R b,ra,tcl,tcs 3 q8_0 > $R/ab.txt 2>&1; save
# The few-tile question (perf-notes GEMV r107): o_proj's and down's in_f with out_f from 264 to
# 792 16-row tiles (4224 to 12672 rows), at m = 1, 4 and 8, on b.
run gemv-tiles 120 .gpu/b/gates gemv --shapes 6144x4224,6144x5120,6144x6336,6144x7680,6144x12672,17408x5120,17408x6336 --batches 1,4,8 --classes uniform --no-peers --jsonl $R/gemv-tiles.jsonl
save
grep -E "checks passed|REGRESSION|FAIL" $R/gemv-*.log | head -20
cat $R/ab.txt
for f in $R/sanitize-*.log; do echo "$f: $(tail -1 $f)"; done
