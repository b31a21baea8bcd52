// The tensor cores' rate for the instruction attn_flash is made of, mma.sync m16n8k8 tf32 with
// f32 accumulation, and the f32 FMA rate beside it: the two compute ceilings of its roofline.
//
//   nvcc -O3 -arch=sm_90 scripts/mma-tf32-peak.cu -o mma-tf32-peak && ./mma-tf32-peak
//
// Every warp of a full grid issues long runs of independent mma (8 accumulators a warp, no
// memory traffic); the rate is FLOPs (2 x 16 x 8 x 8 per mma) over the kernel's time, best of
// five launches, at whatever clock the GPU runs (printed by the caller's nvidia-smi).
#include "peak-timing.cuh"

constexpr int ITERS = 4096;
constexpr int ACC = 8;

__global__ void mma_chain(float * out) {
    float d[ACC][4] = {};
    unsigned a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(1.0f + threadIdx.x*1e-3f + i);
    for (int i = 0; i < 2; ++i) b[i] = __float_as_uint(0.5f + i);
    for (int it = 0; it < ITERS; ++it) {
#pragma unroll
        for (int j = 0; j < ACC; ++j) {
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    float s = 0.0f;
    for (int j = 0; j < ACC; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    out[blockIdx.x*blockDim.x + threadIdx.x] = s;
}

__global__ void fma_chain(float * out) {
    float d[ACC];
    for (int j = 0; j < ACC; ++j) d[j] = threadIdx.x*1e-3f + j;
    const float a = 0.999f, b = 1e-3f;
    for (int it = 0; it < ITERS*8; ++it) {
#pragma unroll
        for (int j = 0; j < ACC; ++j) d[j] = fmaf(d[j], a, b);
    }
    float s = 0.0f;
    for (int j = 0; j < ACC; ++j) s += d[j];
    out[blockIdx.x*blockDim.x + threadIdx.x] = s;
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    const int blocks = p.multiProcessorCount*4, threads = 256;
    float * out;
    CHECK(cudaMalloc(&out, sizeof(float)*blocks*threads));
    const double warps = blocks*(threads/32.0);
    const float mma_ms = best_ms([&] { mma_chain<<<blocks, threads>>>(out); });
    CHECK(cudaGetLastError());
    const double mma_flop = warps*ITERS*ACC*2.0*16*8*8;
    const float fma_ms = best_ms([&] { fma_chain<<<blocks, threads>>>(out); });
    CHECK(cudaGetLastError());
    const double fma_flop = blocks*(double) threads*ITERS*8*ACC*2.0;
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    printf("mma.sync m16n8k8 tf32: %.1f TFLOP/s (%.3f ms)\n", mma_flop/mma_ms/1e9, mma_ms);
    printf("f32 fma: %.1f TFLOP/s (%.3f ms)\n", fma_flop/fma_ms/1e9, fma_ms);
    return 0;
}
