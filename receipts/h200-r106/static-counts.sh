#!/bin/bash
# The static figures perf-notes quotes for r105/r106, no GPU needed: each commit's blessed PTX
# assembled by ptxas 13 (SASS instructions and registers of the raw and planar Q8_0 m = 4
# entries for sm_90, before (eba65bd) and after (2353c2e) the 8-byte reads), the sm_80 module
# with the 8-byte reads (2353c2e) and without (a4363a3, QUANT_PAIRS), and the .cu of 2353c2e
# under nvcc 13 for sm_80.
# usage: static-counts.sh CUDA_BIN CUDA_INCLUDE  (ptxas, cuobjdump and nvcc in CUDA_BIN; run from
# the repository root)
set -e
B=$1; I=$2; T=$(mktemp -d)
for rev in eba65bd 2353c2e; do
  git show $rev:ptx/blessed/kernels.ptx > $T/$rev.ptx
  "$B/ptxas" -arch=sm_90 -O3 -v $T/$rev.ptx -o $T/$rev.cubin 2> $T/$rev.v
  "$B/cuobjdump" -sass $T/$rev.cubin > $T/$rev.sass
  for k in gemv_q8_0_m4 gemv_q8_0_planar_m4; do
    awk -v k="Function : $k\$" '$0 ~ k {f=1; next} /Function :/ {f=0} f' $T/$rev.sass > $T/k.sass
    regs=$(grep -A3 "entry function '$k'" $T/$rev.v | grep -o "Used [0-9]* registers")
    echo "sm_90 $rev $k: $(grep -c '/\*[0-9a-f]*\*/' $T/k.sass) SASS instructions, $regs"
  done
done
for rev in 2353c2e a4363a3; do
  git show $rev:ptx/blessed/sm_80/kernels.ptx > $T/80-$rev.ptx
  "$B/ptxas" -arch=sm_80 -O3 -v $T/80-$rev.ptx -o $T/80-$rev.cubin 2>&1 |
    grep -A3 "entry function 'gemv_q8_0_glu_m2'" | grep -E "spill|Used" | tr -s ' ' | sed "s/^/sm_80 $rev gemv_q8_0_glu_m2:/"
done
mkdir -p $T/cu; git archive 2353c2e reference | tar x -C $T/cu
"$B/nvcc" -arch=sm_80 -O3 -c -Xptxas -v -I"$I" $T/cu/reference/gemv.cu -o $T/cu/g.o 2>&1 |
  grep -A3 "entry function 'gemv_q8_0_glu_m2'" | grep -E "spill|Used" | tr -s ' ' | sed "s/^/.cu 2353c2e nvcc sm_80 gemv_q8_0_glu_m2:/"
rm -rf $T
