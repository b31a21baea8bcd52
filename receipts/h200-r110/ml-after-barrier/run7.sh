#!/bin/bash
# The cluster prototype with the statistics stored after the second barrier, and with every
# operand split once (PRESPLIT).
source .gpu/common.sh
run bits-seed 90 .gpu/src/cluster_v0 64 512 0
run bits-ps-seed 90 .gpu/src/cluster_ps 64 512 0
for v in v0 v4 ps; do run time-$v 60 .gpu/src/cluster_$v 64 512 0 time; done
run time-v0-v32 60 .gpu/src/cluster_v0 128 512 64 time
run time-ps-v32 60 .gpu/src/cluster_ps 128 512 64 time
save
grep -h -E "bits|DIFFER|us \(" $R/bits-*.log
grep -H "variant" $R/time-*.log
