#!/bin/bash
set -o pipefail
find .gpu -name "*.xz" -exec xz -d {} +
chmod +x .gpu/new/*
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
R=/tmp/r46; mkdir -p $R
for k in mla_absorb_q mla_decompress_v; do s=$(date +%s)
timeout 200 compute-sanitizer --tool racecheck --kernel-name kns=$k --error-exitcode 1 .gpu/new/gates mla --no-timing --classes uniform --max-kv 2048 --no-peers > $R/sanitize-racecheck-$k.log 2>&1; echo "racecheck $k exit $? $(( $(date +%s) - s ))s"; tail -3 $R/sanitize-racecheck-$k.log; done
tar czf $OUT/r46.tgz -C /tmp r46
