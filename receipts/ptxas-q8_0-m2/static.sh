#!/bin/bash
# Registers, spills and SASS counts of the raw Q8_0 CUDA-core entries (gemv_q8_0_m1, _m2) for each
# arch, before and after ragged-ahead.patch (the ragged last trip of a row takes the activation
# blocks loaded during the trip before, as full trips do, instead of loading them again), and the
# .cu's under nvcc; then, without the patch, the m = 2 entry under launch bounds of 6, 7 and 8
# blocks an SM (bounds.patch); then the Q8_0 formats' m = 2 entries on the tensor cores
# (tc-m2.patch, tc-m2-staged.patch). No GPU needed.
# usage: static.sh CUDA_BIN CUDA_INCLUDE   (ptxas, cuobjdump and nvcc in CUDA_BIN; from the
# repository root at the commit the patch applies to, with the patch not applied)
set -e
B=$1; I=$2; T=$(mktemp -d); R=receipts/ptxas-q8_0-m2
counts() {  # counts LABEL PTX ARCH [KERNEL ...]
  "$B/ptxas" -arch=$3 -O3 -v "$2" -o $T/k.cubin 2> $T/v
  "$B/cuobjdump" -sass $T/k.cubin > $T/k.sass
  local label=$1 ptx=$2 arch=$3; shift 3
  for k in ${@:-gemv_q8_0_m1 gemv_q8_0_m2}; do
    regs=$(grep -A3 "entry function '$k'" $T/v | grep -o "Used [0-9]* registers")
    spill=$(grep -A3 "entry function '$k'" $T/v | grep -o "[0-9]* bytes spill stores")
    awk -v k="Function : $k\$" '$0 ~ k {f=1; next} /Function :/ {f=0} f' $T/k.sass > $T/f.sass
    echo "$label $arch $k: $regs, $spill, $(grep -c '/\*[0-9a-f]*\*/' $T/f.sass) SASS, $(grep -c LDG $T/f.sass) LDG"
  done
}
cu() {  # cu LABEL
  "$B/nvcc" -arch=sm_90 -O3 -c -Xptxas -v -I"$I" reference/gemv.cu -o $T/g.o 2>&1 |
    grep -A3 "entry function 'gemv_q8_0_m[12]'" | grep -E "entry|Used" | paste - - |
    sed -E "s/.*function '([a-z0-9_]*)'.*(Used [0-9]+ registers).*/$1 .cu nvcc sm_90 \1: \2/"
}
archs="sm_90 sm_80 sm_86 sm_89 sm_100 sm_120"
for a in $archs; do p=ptx/blessed/$a/kernels.ptx; [ $a = sm_90 ] && p=ptx/blessed/kernels.ptx; counts base $p $a; done
cu base
git apply $R/ragged-ahead.patch
cargo build --release -p gates > $T/build.log 2>&1 || { git apply -R $R/ragged-ahead.patch; cat $T/build.log; exit 1; }
for a in $archs; do p=target/ptx/release/$a/kernels.ptx; [ $a = sm_90 ] && p=target/ptx/release/kernels.ptx; counts patched $p $a; done
cu patched
git apply -R $R/ragged-ahead.patch
# Without the patch: the m = 2 entry bounded to 6, 7 and 8 blocks an SM instead (sm_90 only).
for n in 6 7 8; do
  sed "s/@N@/$n/" $R/bounds.patch | git apply
  FERROCUDA_ARCHS=sm_90 cargo build --release -p gates > $T/build.log 2>&1 || { sed "s/@N@/$n/" $R/bounds.patch | git apply -R; cat $T/build.log; exit 1; }
  counts "bound-$n" target/ptx/release/kernels.ptx sm_90
  sed "s/@N@/$n/" $R/bounds.patch | git apply -R
done
# Without the patch: the Q8_0 formats on the tensor cores from m = 2 (tc-m2.patch: the m = 4
# body at two rows, its activation loaded a trip ahead as the GLU entries' at m = 2), and with
# that activation staged (tc-m2-staged.patch on top), both builds; sm_90 only.
M2="gemv_q8_0_m2 gemv_q8_0_planar_m2 gemv_q8_0_glu_m2 gemv_q8_0_planar_glu_m2"
counts base ptx/blessed/kernels.ptx sm_90 $M2
for p in tc-m2 tc-m2-staged; do
  git apply $R/$p.patch
  FERROCUDA_ARCHS=sm_90 cargo build --release -p gates > $T/build.log 2>&1 || { cat $T/build.log; exit 1; }
  counts $p target/ptx/release/kernels.ptx sm_90 $M2
done
git apply -R $R/tc-m2-staged.patch
git apply -R $R/tc-m2.patch
rm -rf $T
