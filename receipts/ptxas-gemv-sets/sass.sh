#!/bin/bash
# How the files here were made (ptxas and cuobjdump 13.0 from the CUDA pip wheels, sm_90):
#   ptxas -arch=sm_90 -v PTX         -> registers-*.txt (the GEMV plain entries' "Used N registers")
#   cuobjdump -sass -fun KERNEL CUBIN -> sass-loops.txt (instructions of the pipeline loop)
# PTX: 831727c's ptx/blessed/kernels.ptx, the committed one, the committed sources with
# cuda-core-q8_0-128-threads.patch applied (FERROCUDA_ARCHS=sm_90), and the .cu through
# `nvcc -arch=sm_90 -ptx reference/gemv.cu` (NVCC's front end, as a stand-in for NVRTC's).
