#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in $(find .gpu -name "*.xz"); do xz -d -f $f; done; chmod +x .gpu/ex/* .gpu/new/*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
for n in 100 1000; do echo "== decode_step $n"; timeout 60 .gpu/ex/decode_step $n; echo "rc=$?"; done
echo "== decode_step 0 (refused)"; timeout 10 .gpu/ex/decode_step 0; echo "rc=$?"
echo "== gpu-tests"; FERROCUDA_REQUIRE_GPU=1 timeout 120 .gpu/new/gpu-tests > /tmp/gpu-tests.log 2>&1; echo "rc=$?"; cp /tmp/gpu-tests.log $OUT/; tail -5 /tmp/gpu-tests.log
