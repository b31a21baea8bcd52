// What rate does mma.sync m16n8k8 tf32 reach in the flash kernel's shapes? 3xTF32 chains
// (three dependent mma per accumulator per k-step, issued term by term across the accumulators),
// ACC accumulators a warp, WARPS warps a block, one block an SM (forced by shared memory).
#include <cstdio>
constexpr int ITERS = 2048;

__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void split(float x, unsigned & h, unsigned & t) {
    h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    t = __float_as_uint(x - __uint_as_float(h));
}

// LOADS: 0 = operands in registers; 1 = A and B fragments from shared memory and split every k-step
template <int ACC, int LOADS>
__global__ void chain(float * out) {
    extern __shared__ float sm[];
    float d[ACC][4] = {};
    unsigned ah[4], at[4], bh[ACC][2], bt[ACC][2];
    const int lane = threadIdx.x % 32;
    for (int i = 0; i < 4; ++i) { ah[i] = __float_as_uint(1.0f + lane*1e-3f + i); at[i] = ah[i] >> 3; }
    for (int j = 0; j < ACC; ++j) for (int i = 0; i < 2; ++i) { bh[j][i] = __float_as_uint(0.5f + i + j); bt[j][i] = bh[j][i] >> 3; }
    for (int i = threadIdx.x; i < 64*516; i += blockDim.x) sm[i] = i * 1e-4f;
    __syncthreads();
    for (int it = 0; it < ITERS; ++it) {
        if (LOADS >= 2) {
            const int ks = it % 64;
            unsigned r[4];
            const float * p = sm + (lane%16)*516 + lane/16*4 + 8*ks;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]),"=r"(r[1]),"=r"(r[2]),"=r"(r[3]) : "r"((unsigned)__cvta_generic_to_shared(p)));
            if (LOADS == 4) {
                unsigned q[4];
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(q[0]),"=r"(q[1]),"=r"(q[2]),"=r"(q[3]) : "r"((unsigned)__cvta_generic_to_shared(p + 32*516)));
                for (int i = 0; i < 4; ++i) { ah[i] = r[i]; at[i] = q[i]; }
            } else {
                for (int i = 0; i < 4; ++i) {
                    if (LOADS == 2) split(__uint_as_float(r[i]), ah[i], at[i]);
                    else { ah[i] = r[i]; at[i] = __float_as_uint(__uint_as_float(r[i]) - __uint_as_float(r[i] & 0xffffe000u)); }
                }
            }
#pragma unroll
            for (int j = 0; j < ACC; j += 2) {
                const float * q = sm + (8*(j%8) + lane/16*8 + lane%8)*516 + lane/8%2*4 + 8*ks;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]),"=r"(r[1]),"=r"(r[2]),"=r"(r[3]) : "r"((unsigned)__cvta_generic_to_shared(q)));
                if (LOADS == 4) {
                    unsigned u[4];
                    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(u[0]),"=r"(u[1]),"=r"(u[2]),"=r"(u[3]) : "r"((unsigned)__cvta_generic_to_shared(q + 16*516)));
                    bh[j][0] = r[0]; bh[j][1] = r[1]; bh[j+1][0] = r[2]; bh[j+1][1] = r[3];
                    bt[j][0] = u[0]; bt[j][1] = u[1]; bt[j+1][0] = u[2]; bt[j+1][1] = u[3];
                } else {
                    for (int i = 0; i < 4; ++i) {
                        unsigned h, t;
                        if (LOADS == 2) split(__uint_as_float(r[i]), h, t);
                        else { h = r[i]; t = __float_as_uint(__uint_as_float(r[i]) - __uint_as_float(r[i] & 0xffffe000u)); }
                        bh[j + i/2][i%2] = h; bt[j + i/2][i%2] = t;
                    }
                }
            }
        } else if (LOADS) {
            const int ks = it % 64;
            const float * p = sm + (lane/4)*516 + lane%4 + 8*ks;
            split(p[0], ah[0], at[0]); split(p[8*516], ah[1], at[1]); split(p[4], ah[2], at[2]); split(p[8*516+4], ah[3], at[3]);
#pragma unroll
            for (int j = 0; j < ACC; ++j) {
                const float * q = sm + (8*(j%8) + lane/4)*516 + lane%4 + 8*ks;
                split(q[0], bh[j][0], bt[j][0]); split(q[4], bh[j][1], bt[j][1]);
            }
        }
#pragma unroll
        for (int j = 0; j < ACC; ++j) mma(d[j], ah, bt[j]);
#pragma unroll
        for (int j = 0; j < ACC; ++j) mma(d[j], at, bh[j]);
#pragma unroll
        for (int j = 0; j < ACC; ++j) mma(d[j], ah, bh[j]);
    }
    float s = 0.0f;
    for (int j = 0; j < ACC; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    out[blockIdx.x*blockDim.x + threadIdx.x] = s;
}

template <int ACC, int LOADS>
void run(int warps, int sms) {
    const int threads = warps*32, blocks = sms;
    const int smem = 200*1024;  // one block an SM
    cudaFuncSetAttribute(chain<ACC, LOADS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    float * out; cudaMalloc(&out, sizeof(float)*blocks*threads);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 6; ++r) {
        cudaEventRecord(a);
        chain<ACC, LOADS><<<blocks, threads, smem>>>(out);
        cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best) best = ms;
    }
    const cudaError_t e = cudaGetLastError();
    const double flop = (double) blocks*warps*ITERS*ACC*3*2.0*16*8*8;
    printf("warps %2d  acc %d  %s: %6.1f TFLOP/s of mma  %s\n", warps, ACC, LOADS == 0 ? "operands in registers          " : LOADS == 1 ? "lds + round split              " : LOADS == 2 ? "ldmatrix + round split         " : LOADS == 3 ? "ldmatrix + trunc split         " : "ldmatrix of pre-split hi and lo",
           flop/best/1e9, e == cudaSuccess ? "" : cudaGetErrorString(e));
    cudaFree(out);
}

int main() {
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    for (int w : {16, 32}) {
        run<4, 0>(w, sms); run<8, 0>(w, sms); run<4, 1>(w, sms); run<8, 1>(w, sms);
        run<4, 2>(w, sms); run<8, 2>(w, sms); run<4, 3>(w, sms); run<8, 3>(w, sms); run<4, 4>(w, sms); run<8, 4>(w, sms);
    }
    return 0;
}
