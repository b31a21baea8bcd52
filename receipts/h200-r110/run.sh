#!/bin/bash
# The cluster prototype (seed and V3.2 geometry), then run4 (serving on the Hopper entry, 3c9ac76).
source .gpu/common.sh
run cluster-seed 120 .gpu/src/cluster 64 512 0
run cluster-v32 120 .gpu/src/cluster 128 512 64
save
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 160 .gpu/h2/gpu-tests
save
run mla 120 .gpu/h2/gates mla --shapes 1x2048,2x2048,4x2048,8x2048,1x262144,2x262144,4x262144,8x262144 --jsonl $R/mla.jsonl --plot $R/mla.svg
save
cat $R/cluster-seed.log $R/cluster-v32.log
grep -E "passed, |FAIL" $R/gpu-tests.log | tail -3
grep -E "checks passed|launcher's|REGRESSION" $R/mla.log | head -20
