// A microbenchmark of the scores loop of prototypes v11 to v13 (wgmma m64n64k8 tf32, 3xTF32), data resident in shared memory.
// (wgmma, sm_90a), 3xTF32, the gathered rows as the register operand. Seed geometry.
// Block (token, pair of chunks, head group): a producer warp streams one ring of stages (the
// query slabs, split once per token by a prepass, by bulk copy; the rows by cp.async), and each
// consumer warpgroup takes one chunk of the pair: scores over 16 slabs, a softmax in registers,
// the output in eight 64-column tiles. Partials (o, m, l) per (token, chunk, head).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)



constexpr int NH = 64, D = 512, CHUNK = 64, SL = 32, NSL = D/SL, NT = D/64, ITEMS = NSL + NT;
constexpr int CONSUMERS = 256, THREADS = CONSUMERS + 128;
constexpr int RS_STR = SL + 8, RO_STR = 64 + 8;    // floats a row of a staged slab / tile

__device__ __forceinline__ uint32_t smem_addr(const void * p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// No swizzle, K-major: K-adjacent core matrices 128 bytes apart, 8-row groups `sbo` apart.
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t sbo) {
    return (uint64_t) ((addr >> 4) & 0x3fff) | (uint64_t) ((128 >> 4) & 0x3fff) << 16 |
        (uint64_t) ((sbo >> 4) & 0x3fff) << 32;
}
__device__ __forceinline__ void fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

__device__ __forceinline__ void mbar_init(uint32_t a, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t a) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}" :: "r"(a) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t a, uint32_t bytes) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" :: "r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t a, uint32_t parity) {
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}"
                 :: "r"(a), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk(uint32_t dst, const void * src, uint32_t bytes, uint32_t mbar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(mbar) : "memory");
}
__device__ __forceinline__ void cp16(uint32_t dst, const void * src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void mbar_arrive_copies(uint32_t a) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(a) : "memory");
}
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS) : "memory"); }

__device__ __forceinline__ uint32_t tail(float x) {
    return __float_as_uint(x - __uint_as_float(__float_as_uint(x) & 0xffffe000u));
}

#define R8(i) "+f"(d[i]), "+f"(d[i+1]), "+f"(d[i+2]), "+f"(d[i+3]), "+f"(d[i+4]), "+f"(d[i+5]), "+f"(d[i+6]), "+f"(d[i+7])
template <int N> struct Mma;
template <> struct Mma<16> {
    static __device__ __forceinline__ void run(float (&d)[8], const uint32_t * a, uint64_t b) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
            "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, 1, 1, 1;"
            : R8(0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
    }
};
template <> struct Mma<32> {
    static __device__ __forceinline__ void run(float (&d)[16], const uint32_t * a, uint64_t b) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;"
            : R8(0), R8(8) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
    }
};
template <> struct Mma<64> {
    static __device__ __forceinline__ void run(float (&d)[32], const uint32_t * a, uint64_t b) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
            "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1;"
            : R8(0), R8(8), R8(16), R8(24) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
    }
};

// Two warpgroups a block, one block an SM, every SM. Each warpgroup runs ITERS slabs of 4 k-steps
// over one slab resident in shared memory, 3 wgmma a k-step into two accumulators:
// MODE 0: A from registers, never reloaded (the peak's form);
// MODE 1: A loaded from the row layout and split at every k-step, two fragment sets, wait 1 (v13);
// MODE 2: as 1 with wait 0 after each slab (no overlap of the loads with the products);
// MODE 3: A heads and tails from shared memory (SS), nothing loaded into registers;
// MODE 4: as 1, the split left out (tails = heads: the loads and the fence alone).
constexpr int ITERS = 2048;
__device__ __forceinline__ void mma_ss(float (&d)[32], uint64_t a, uint64_t b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1;"
        : R8(0), R8(8), R8(16), R8(24) : "l"(a), "l"(b));
}
template <int MODE>
__global__ void __launch_bounds__(256, 1) scores_loop(float * out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const int tid = threadIdx.x, wg = tid/128, w = tid/32 % 4, lane = tid % 32, g = lane/4, c = lane % 4;
    float * rows = (float *) smem + wg*64*RS_STR;                   // a slab of 64 rows, as staged
    float * qb = (float *) smem + 2*64*RS_STR;                      // queries: heads, then tails
    float * ab = qb + 2*64*SL + wg*2*64*SL;                          // SS: the rows' heads and tails
    for (int i = tid; i < 2*64*RS_STR + 2*64*SL + 4*64*SL; i += 256) ((float *) smem)[i] = 1.0f + (i % 13)*0.0625f;
    __syncthreads();
    float acc[32], accx[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) { acc[i] = 0.0f; accx[i] = 0.0f; asm volatile("" : "+f"(acc[i]), "+f"(accx[i])); }
    const uint32_t qh = smem_addr(qb), qt = qh + 64*SL*4, sa = smem_addr(ab), st = sa + 64*SL*4;
    const float * r0 = rows + (16*w + g)*RS_STR + 2*c;
    uint32_t xh[4][4], xl[4][4], yh[4][4], yl[4][4];
    const auto load = [&](uint32_t (&hi)[4][4], uint32_t (&lo)[4][4]) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 u0 = *(const float2 *) (r0 + 8*i), u1 = *(const float2 *) (r0 + 8*RS_STR + 8*i);
            const float x[4] = {u0.x, u1.x, u0.y, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = MODE == 4 ? hi[i][e] : tail(x[e]); }
        }
    };
    const auto issue = [&](const uint32_t (&hi)[4][4], const uint32_t (&lo)[4][4]) {
        wg_fence();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const uint64_t bh = desc(qh + i*256, SL/4*128), bt = desc(qt + i*256, SL/4*128);
            if (MODE == 3) {
                const uint64_t ah = desc(sa + i*256, SL/4*128), at = desc(st + i*256, SL/4*128);
                mma_ss(accx, at, bh);
                mma_ss(accx, ah, bt);
                mma_ss(acc, ah, bh);
            } else {
                Mma<64>::run(accx, lo[i], bh);
                Mma<64>::run(accx, hi[i], bt);
                Mma<64>::run(acc, hi[i], bh);
            }
        }
        wg_commit();
    };
    load(xh, xl);
    issue(xh, xl);
#pragma unroll 1
    for (int it = 0; it < ITERS; it += 2) {
        if (MODE != 0 || it == 0) load(yh, yl);
        issue(yh, yl);
        if (MODE == 2) wg_wait<0>(); else wg_wait<1>();
        if (MODE != 0) load(xh, xl);
        issue(xh, xl);
        if (MODE == 2) wg_wait<0>(); else wg_wait<1>();
    }
    wg_wait<0>();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) s += acc[i] + accx[i];
    out[blockIdx.x*256 + tid] = s;
}

template <int MODE>
void bench(int sms, float * out) {
    const int shared = (2*64*RS_STR + 2*64*SL + 4*64*SL)*4;
    CHECK(cudaFuncSetAttribute(scores_loop<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
        cudaEventRecord(a);
        scores_loop<MODE><<<sms, 256, shared>>>(out);
        cudaEventRecord(b);
        CHECK(cudaEventSynchronize(b));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        best = std::min(best, ms);
    }
    CHECK(cudaGetLastError());
    const double flop = (double) sms*2*ITERS*4*3*(2.0*64*64*8);
    printf("mode %d: %.1f TFLOP/s of tf32 wgmma (%.3f ms)\n", MODE, flop/best/1e9, best);
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    float * out;
    CHECK(cudaMalloc(&out, (size_t) p.multiProcessorCount*256*4));
    printf("%s, %d SMs; 3 wgmma m64n64k8 a k-step, two warpgroups an SM\n", p.name, p.multiProcessorCount);
    bench<0>(p.multiProcessorCount, out);
    bench<1>(p.multiProcessorCount, out);
    bench<2>(p.multiProcessorCount, out);
    bench<3>(p.multiProcessorCount, out);
    bench<4>(p.multiProcessorCount, out);
    return 0;
}
