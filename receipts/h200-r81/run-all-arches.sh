#!/bin/bash
# The GPU tests again from a build of every arch's module (r81's first staging built sm_90 only,
# so its test of the sm_80 module could not run), and the sm_80 module's mla checks.
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/*/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r81b; mkdir -p $R
run() { local name=$1 limit=$2; shift 2; echo "== $name: $*" >> $R/run.log; local t0=$(date +%s); timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/run.log; }
FERROCUDA_REQUIRE_GPU=1 run gpu-tests-all-arches 200 .gpu/all/gpu-tests
run checks-mla-sm80 100 .gpu/all/gates mla --arch sm_80 --no-timing --max-kv 2048
grep -E "passed, |test result" $R/gpu-tests-all-arches.log | tail -3
grep -E "checks passed|module|arch" $R/checks-mla-sm80.log | head -5
tar czf $OUT/r81b.tgz -C /tmp r81b
