#!/bin/bash
# Third call. h2: this tree's build with the GPU test holding the Hopper entries' workspace (not
# only the outputs) to attn_flash's, and the gate poisoning the flash workspace before each arm.
# The GPU tests; mla at both geometries, checks only; racecheck on the Hopper entries alone.
source .gpu/common.sh
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 160 .gpu/h2/gpu-tests
save
run mla-checks 120 .gpu/h2/gates mla --no-timing --jsonl $R/mla-checks.jsonl
run v32-checks 60 .gpu/h2/gates mla --geometry v3.2 --max-kv 2048 --no-timing --jsonl $R/v32-checks.jsonl
save
S="compute-sanitizer --error-exitcode 1 --kernel-name regex:mla_attn_flash_wgmma"
M="mla --no-timing --no-peers --classes uniform --shapes 1x2048,8x2048"
run sanitize-racecheck-mla-wgmma 200 $S --tool racecheck .gpu/h2/gates $M
save
grep -E "passed, |FAIL|Hopper" $R/gpu-tests.log | tail -6
grep -E "checks passed|FAIL" $R/mla-checks.log $R/v32-checks.log | head
tail -3 $R/sanitize-racecheck-mla-wgmma.log
# The kernels include raw Q8_0's ragged trip from the activation loaded ahead (r107's ra): the
# gemv gate's checks at m = 1 and 2.
run gemv-checks 120 .gpu/h2/gates gemv --no-timing --batches 1,2
save
grep -E "checks passed|FAIL" $R/gemv-checks.log | head -3
