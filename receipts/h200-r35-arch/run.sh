#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/*/*
pack() { tar czf $OUT/r.tgz -C /tmp/r . 2>/dev/null; }
mkdir -p /tmp/r; rm -rf /tmp/r/*
run() { local name=$1 t=$2; shift 2; echo "== $name: $*"; timeout $t "$@" > /tmp/r/$name.log 2>&1; echo "== $name rc=$?"; tail -2 /tmp/r/$name.log; pack; }
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 90 .gpu/new/gpu-tests
for g in swiglu norm-q8 gemv mla; do
  extra=(); [ $g = gemv ] && extra=(--no-peers); [ $g = mla ] && extra=(--no-peers)
  run $g-sm80 60 .gpu/new/gates $g --arch sm_80 --no-timing "${extra[@]}"
done
run mla-v32-sm80 45 .gpu/new/gates mla --geometry v3.2 --arch sm_80 --no-timing --no-peers
FERROCUDA_REQUIRE_GPU=1 FERROCUDA_MODULE_ARCH=sm_80 run gpu-tests-sm80 80 .gpu/new/gpu-tests
grep -h '^module\|arch' /tmp/r/*-sm80.log | sort | uniq -c | head
