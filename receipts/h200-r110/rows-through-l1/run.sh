#!/bin/bash
# The .cu's row copies through L1 (cp.async.ca) against the Rust build's (cp.async.cg): the
# mla gate at both geometries, every class.
source .gpu/common.sh
run mla-seed 150 .gpu/h3/gates mla --shapes 1x2048,2x2048,4x2048,8x2048 --jsonl $R/mla-seed.jsonl
run mla-v32 150 .gpu/h3/gates mla --geometry v3.2 --shapes 1x2048,2x2048,4x2048,8x2048 --jsonl $R/mla-v32.jsonl
save
grep -E "checks passed|FAIL" $R/mla-*.log
grep -h -E "launcher's" $R/mla-*.log | awk '{print $1,$2,$3,$4,$5,$6,$7,$8,$9,$10}'
