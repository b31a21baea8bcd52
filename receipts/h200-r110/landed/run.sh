#!/bin/bash
# 2658c26 (the gathered rows through L1 in both builds): the GPU tests, the mla gate timed at both
# geometries, memcheck on attn_flash's entries and racecheck on the Hopper entries (edge class).
source .gpu/common.sh
FERROCUDA_REQUIRE_GPU=1 run gpu-tests 160 .gpu/h4/gpu-tests
save
run mla-seed 120 .gpu/h4/gates mla --shapes 1x2048,2x2048,4x2048,8x2048,1x262144,8x262144 --jsonl $R/mla-seed.jsonl --plot $R/mla-seed.svg
save
run mla-v32 60 .gpu/h4/gates mla --geometry v3.2 --shapes 1x2048,2x2048,4x2048,8x2048 --jsonl $R/mla-v32.jsonl
save
run memcheck-flash 70 compute-sanitizer --error-exitcode 1 --tool memcheck --kernel-name kns=mla_attn_gathered_flash .gpu/h4/gates mla --no-timing --no-peers --classes edge --shapes 1x2048,2x2048
save
run racecheck-wgmma 70 compute-sanitizer --error-exitcode 1 --tool racecheck --kernel-name kns=mla_attn_flash_wgmma .gpu/h4/gates mla --no-timing --no-peers --classes edge --shapes 8x2048
save
grep -E "passed, |FAIL" $R/gpu-tests.log | tail -2
grep -E "checks passed|REGRESSION" $R/mla-*.log
grep -h "launcher's" $R/mla-*.log | cut -c1-100
tail -3 $R/memcheck-flash.log $R/racecheck-wgmma.log
