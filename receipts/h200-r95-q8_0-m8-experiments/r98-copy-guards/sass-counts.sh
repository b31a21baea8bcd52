#!/bin/bash
# Static SASS counts of the Q8_0 tensor-core entries, sm_90, before (6473d2b) and after (718790a):
# each commit's blessed PTX assembled by ptxas 13 and disassembled by cuobjdump. No GPU needed.
# usage: sass-counts.sh PTXAS CUOBJDUMP  (run from the repository root)
set -e
for rev in 6473d2b 718790a; do
  git show $rev:ptx/blessed/kernels.ptx > /tmp/sass-$rev.ptx
  "$1" -arch=sm_90 -O3 /tmp/sass-$rev.ptx -o /tmp/sass-$rev.cubin
  "$2" -sass /tmp/sass-$rev.cubin > /tmp/sass-$rev.sass
  for k in gemv_q8_0_m4 gemv_q8_0_m8 gemv_q8_0_planar_m4 gemv_q8_0_planar_m8 gemv_q8_0_glu_m8; do
    awk -v k="Function : $k\$" '$0 ~ k {f=1; next} /Function :/ {f=0} f' /tmp/sass-$rev.sass > /tmp/sass-k.sass
    echo "$rev $k instructions $(grep -c '/\*[0-9a-f]*\*/' /tmp/sass-k.sass) BSSY $(grep -c BSSY /tmp/sass-k.sass) BRA $(grep -c BRA /tmp/sass-k.sass) LDGSTS $(grep -c LDGSTS /tmp/sass-k.sass)"
  done
done
