// Prototype v16 (not yet run): v15 with the softmax's instructions cut (offsets from one base, exp2 with log2(e) in the scale) and the pair merged in the output product (each warpgroup half the heads over both chunks, two accumulator chains a tile; partials per pair of chunks). v15: v14 with PW producer warps copying (4: the whole producer warpgroup). v14: v13 with clock stamps of each ring item (producer and consumers), for one block in each launch. (v13: v12 with items of KS / OK k-steps and ACCS accumulators in the scores; TAILS 1: the queries' tails taken in shared memory): the gathered MLA attention's main kernel on Hopper's warpgroup tensor cores
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
template <> struct Mma<8> {
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t * a, uint64_t b) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1;"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
    }
};
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

template <int NHB, int ST> struct Layout {
    static constexpr int QBYTES = 2*NHB*SL*4;               // a query slab's heads, then tails
    static constexpr int RSBYTES = CHUNK*RS_STR*4, ROBYTES = CHUNK*RO_STR*4;
    static constexpr int STAGE = QBYTES + 2*RSBYTES > 2*ROBYTES ? QBYTES + 2*RSBYTES : 2*ROBYTES;
    static constexpr int P_OFF = ST*STAGE, P_BYTES = 2*NHB*CHUNK*4;    // a chunk's numerators, heads then tails
    static constexpr int RED_OFF = P_OFF + 2*P_BYTES, RED_BYTES = 2*2*4*NHB*4;
    static constexpr int RTAB_OFF = RED_OFF + RED_BYTES, MBAR_OFF = RTAB_OFF + 2*CHUNK*4, SMEM = MBAR_OFF + 8*2*ST;
};

__host__ __device__ __forceinline__ int core_off(int n, int k, int kcols) {
    return (n/8)*(kcols/4*32) + (k/4)*32 + (n%8)*4 + (k%4);
}

template <int NHB, int TAILS>
__global__ void q_split(const float * __restrict__ q, float * __restrict__ qs, int t_q) {
    const int i = blockIdx.x*blockDim.x + threadIdx.x;
    if (i >= t_q*NH*D) return;
    const int token = i/(NH*D), h = i/D % NH, col = i % D;
    const int grp = h/NHB, hl = h % NHB, slab = col/SL, e = col % 8, kk = col % SL/8;
    const int k = 8*kk + e/2 + 4*(e % 2);
    const float x = q[i];
    float * blk = qs + ((((size_t) token*(NH/NHB) + grp)*NSL + slab)*(TAILS ? 1 : 2))*NHB*SL;
    blk[core_off(hl, k, SL)] = x;
    if (!TAILS) blk[NHB*SL + core_off(hl, k, SL)] = __uint_as_float(tail(x));
}

__device__ uint32_t g_st[1024][5][ITEMS];
__device__ __forceinline__ void stamp(uint32_t * p, bool on, uint32_t t0) {
    uint32_t t;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t) :: "memory");
    asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %0, 0;\n @q st.global.u32 [%1], %2;\n}" :: "r"((uint32_t) on), "l"(p), "r"(t - t0) : "memory");
}
__device__ __forceinline__ float ex2(float x) {    // 2^x by the MUFU alone; underflow flushes to zero
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ void wg_sync(int wg) { asm volatile("bar.sync %0, 128;" :: "r"(2 + wg) : "memory"); }

// Block (token, pair of chunks, head group): warpgroup w takes chunk 2 pair + w; both read each
// query slab once. One ring of ST stages carries the 16 score items (a query slab and both chunks'
// row slabs) then the 8 output items (both chunks' 64-column row tiles).
// TAILS 1: the prepass writes the queries' heads alone; the producer warpgroup's other three warps
// take each slab's tails in shared memory once its heads have landed.
template <int NHB, int ST, int TAILS, int KS, int ACCS, int OK, int PW>
__global__ void __launch_bounds__(THREADS, 1)
flash_v13(const float * __restrict__ qs, const float * __restrict__ pool, const int * __restrict__ idx,
          float * __restrict__ o, float * __restrict__ ml, int n_slots, int pool_rows, float scale) {
    using L = Layout<NHB, ST>;
    constexpr int GROUPS = NH/NHB, NF = NHB/2;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int chunks = n_slots/CHUNK, pairs = chunks/2;
    const int grp = blockIdx.x % GROUPS, pair = blockIdx.x/GROUPS % pairs, token = blockIdx.x/GROUPS/pairs;
    const int tid = threadIdx.x;
    uint32_t t0;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t0) :: "memory");
    uint32_t (*st)[ITEMS] = g_st[blockIdx.x % 1024];
    const uint32_t full = smem_addr(smem + L::MBAR_OFF), empty = full + 8*ST, qraw = empty + 8*ST;
    if (tid == 0) {
        for (int s = 0; s < ST; ++s) {
            mbar_init(full + 8*s, TAILS ? 128 : 32*PW + 1);
            mbar_init(empty + 8*s, CONSUMERS);
            mbar_init(qraw + 8*s, 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid >= CONSUMERS) {
        // The producer warpgroup gives its registers to the consumers; its first warp copies.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        static_assert(PW == 1 || !TAILS, "the tails' warps are the other producers");
        if (tid >= CONSUMERS + 32*PW) {
            if (!TAILS) return;
            const int tt = tid - CONSUMERS - 32;
            for (int it = 0; it < ITEMS; ++it) {
                const int s = it % ST;
                if (it >= ST) mbar_wait(empty + 8*s, (it/ST - 1) & 1);
                if (it < NSL) {
                    mbar_wait(qraw + 8*s, (it/ST) & 1);
                    const float4 * hi = (const float4 *) (smem + s*L::STAGE);
                    float4 * lo = (float4 *) (smem + s*L::STAGE + NHB*SL*4);
                    for (int i = tt; i < NHB*SL/4; i += 96) {
                        const float4 v = hi[i];
                        lo[i] = make_float4(__uint_as_float(tail(v.x)), __uint_as_float(tail(v.y)),
                                            __uint_as_float(tail(v.z)), __uint_as_float(tail(v.w)));
                    }
                    fence_async();
                }
                mbar_arrive(full + 8*s);
            }
            return;
        }
        // Lane l copies part l % 8 (and + 8 in the tiles) of rows l / 8 + 4 i of both chunks; the
        // rows' indices wait in shared memory.
        const int lane = tid % 32, pw = (tid - CONSUMERS)/32;
        int * rtab = (int *) (smem + L::RTAB_OFF);
        for (int i = tid - CONSUMERS; i < 2*CHUNK; i += 32*PW) {
            rtab[i] = min(max(idx[(size_t) token*n_slots + 2*pair*CHUNK + i], 0), pool_rows - 1);
        }
        asm volatile("bar.sync 4, %0;" :: "n"(32*PW) : "memory");
        const float * base = pool + 4*(lane % 8);
        constexpr int QG = TAILS ? L::QBYTES/2 : L::QBYTES;    // bytes of a query slab in global memory
        const float * qsrc = qs + ((size_t) token*GROUPS + grp)*NSL*QG/4;
        for (int it = 0; it < ITEMS; ++it) {
            const int s = it % ST;
            if (it >= ST) mbar_wait(empty + 8*s, (it/ST - 1) & 1);
            stamp(&st[0][it], lane == 0 && pw == 0, t0);
            unsigned char * stage = smem + s*L::STAGE;
            if (it < NSL) {
                if (lane == 0 && pw == 0) {
                    const uint32_t bar = TAILS ? qraw + 8*s : full + 8*s;
                    mbar_expect(bar, QG);
                    bulk(smem_addr(stage), qsrc + (size_t) it*QG/4, QG, bar);
                }
#pragma unroll
                for (int ch = 0; ch < 2; ++ch) {
                    const uint32_t dst = smem_addr(stage + L::QBYTES + ch*L::RSBYTES) + 16*(lane % 8);
#pragma unroll
                    for (int i0 = 16/PW*pw; i0 < 16/PW*(pw + 1); i0 += 16/PW) {
                        int r[16/PW];
#pragma unroll
                        for (int i = 0; i < 16/PW; ++i) r[i] = rtab[ch*CHUNK + lane/8 + 4*(i0 + i)];
#pragma unroll
                        for (int i = 0; i < 16/PW; ++i) cp16(dst + (lane/8 + 4*(i0 + i))*RS_STR*4, base + (size_t) r[i]*D + it*SL);
                    }
                }
            } else {
                const int tile = it - NSL;
                if (lane == 0 && pw == 0 && !TAILS) mbar_arrive(full + 8*s);
#pragma unroll
                for (int ch = 0; ch < 2; ++ch) {
                    const uint32_t dst = smem_addr(stage + ch*L::ROBYTES) + 16*(lane % 8);
#pragma unroll
                    for (int i0 = 16/PW*pw; i0 < 16/PW*(pw + 1); i0 += 16/PW) {
                        int r[16/PW];
#pragma unroll
                        for (int i = 0; i < 16/PW; ++i) r[i] = rtab[ch*CHUNK + lane/8 + 4*(i0 + i)];
#pragma unroll
                        for (int i = 0; i < 16/PW; ++i) {
                            const float * src = base + (size_t) r[i]*D + tile*64;
                            cp16(dst + (lane/8 + 4*(i0 + i))*RO_STR*4, src);
                            cp16(dst + (lane/8 + 4*(i0 + i))*RO_STR*4 + 128, src + 32);
                        }
                    }
                }
            }
            stamp(&st[1][it], lane == 0 && pw == 0, t0);
            mbar_arrive_copies(full + 8*s);
        }
        return;
    }
    static_assert(ACCS == 2, "the scores' chains are two");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int wg = tid/128, w = tid/32 % 4, lane = tid % 32, g = lane/4, c = lane % 4;
    // Scores S^T = K Q^T: M = the chunk's 64 slots, N = the heads, all 512 columns. ACCS 3: three
    // chains (tail x head, head x tail, head x head); 2: the two cross terms in one. Items of KS
    // k-steps; an item's fragments are loaded while the one before runs.
    constexpr int SPI = 4/KS, NS = NSL*SPI;
    float acc[NF], acc_lh[NF], acc_hl[NF];
#pragma unroll
    for (int i = 0; i < NF; ++i) {
        acc[i] = 0.0f; acc_lh[i] = 0.0f; acc_hl[i] = 0.0f;
        asm volatile("" : "+f"(acc[i]), "+f"(acc_lh[i]), "+f"(acc_hl[i]));
    }
    uint32_t xh[KS][4], xl[KS][4], yh[KS][4], yl[KS][4];
    const auto sload = [&](int n, uint32_t (&hi)[KS][4], uint32_t (&lo)[KS][4]) {
        const int j = n/SPI, part = n % SPI, s = j % ST;
        if (part == 0) {
            mbar_wait(full + 8*s, (j/ST) & 1);
            stamp(&st[2 + wg][j], tid % 128 == 0, t0);
        }
        const float * r0 = (const float *) (smem + s*L::STAGE + L::QBYTES + wg*L::RSBYTES) + (16*w + g)*RS_STR + 2*c;
#pragma unroll
        for (int i = 0; i < KS; ++i) {
            const int ks = KS*part + i;
            const float2 u0 = *(const float2 *) (r0 + 8*ks), u1 = *(const float2 *) (r0 + 8*RS_STR + 8*ks);
            const float x[4] = {u0.x, u1.x, u0.y, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = tail(x[e]); }
        }
    };
    const auto sissue = [&](int n, const uint32_t (&hi)[KS][4], const uint32_t (&lo)[KS][4]) {
        const int j = n/SPI, part = n % SPI;
        const uint32_t qb = smem_addr(smem + (j % ST)*L::STAGE), qt = qb + NHB*SL*4;
        wg_fence();
#pragma unroll
        for (int i = 0; i < KS; ++i) {
            const int ks = KS*part + i;
            const uint64_t bh = desc(qb + ks*256, SL/4*128), bt = desc(qt + ks*256, SL/4*128);
            Mma<NHB>::run(acc_lh, lo[i], bh);
            Mma<NHB>::run(ACCS == 3 ? acc_hl : acc_lh, hi[i], bt);
            Mma<NHB>::run(acc, hi[i], bh);
        }
        wg_commit();
    };
    const auto sdone = [&](int n) {
        if (n % SPI == SPI - 1) mbar_arrive(empty + 8*((n/SPI) % ST));    // the slab's last item is done
    };
    sload(0, xh, xl);
    sissue(0, xh, xl);
#pragma unroll 1
    for (int n2 = 0; n2 < NS/2; ++n2) {
        sload(2*n2 + 1, yh, yl);
        sissue(2*n2 + 1, yh, yl);
        wg_wait<1>();
        sdone(2*n2);
        if (2*n2 + 2 < NS) {
            sload(2*n2 + 2, xh, xl);
            sissue(2*n2 + 2, xh, xl);
            wg_wait<1>();
        } else {
            wg_wait<0>();
        }
        sdone(2*n2 + 1);
    }
    stamp(&st[4][wg], tid % 128 == 0, t0);
    // Softmax over the pair's 128 slots, from the accumulators, in the log2 domain (the scale
    // times log2(e) folded into one multiply, exp2 by the MUFU): lane (g, c) of warp w holds slots
    // 16 w + g and + 8 of its chunk for heads 8 jn + 2 c + b. Maxima over g by shuffles, over both
    // warpgroups' warps through shared memory; each warpgroup stores its chunk's numerators (heads
    // and tails) for all heads; the sums likewise, added in a fixed order (warps, then chunks).
    float * red = (float *) (smem + L::RED_OFF);    // [2 warpgroups][4 warps][NHB] maxima, then sums
    const float scale2 = scale*1.4426950408889634f;
    float z[NF];
#pragma unroll
    for (int i = 0; i < NF; ++i) z[i] = (acc_lh[i] + acc[i])*scale2;
#pragma unroll
    for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            float m = fmaxf(z[4*jn + b], z[4*jn + 2 + b]);
            m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 4));
            m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 8));
            m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 16));
            if (g == 0) red[(wg*4 + w)*NHB + 8*jn + 2*c + b] = m;
        }
    }
    consumer_sync();
    stamp(&st[4][6 + wg], tid % 128 == 0, t0);
    // This thread's numerators: P[wg] at core_off(h, s) for h = 8 jn + 2 c + b, s = 16 w + g (+ 8):
    // one base, plus 512 jn + 4 b (+ 64) floats.
    float * p = (float *) (smem + L::P_OFF + wg*L::P_BYTES);
    float * pt = p + (4*w + g/4)*32 + (2*c)*4 + g % 4;
#pragma unroll
    for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            const int h = 8*jn + 2*c + b;
            float m = red[h];
#pragma unroll
            for (int k = 1; k < 8; ++k) m = fmaxf(m, red[k*NHB + h]);
            const float e0 = ex2(z[4*jn + b] - m), e1 = ex2(z[4*jn + 2 + b] - m);
            float * q = pt + 512*jn + 4*b;
            q[0] = e0;
            q[64] = e1;
            q[NHB*CHUNK] = __uint_as_float(tail(e0));
            q[NHB*CHUNK + 64] = __uint_as_float(tail(e1));
            float l = e0 + e1;
            l += __shfl_xor_sync(0xffffffff, l, 4);
            l += __shfl_xor_sync(0xffffffff, l, 8);
            l += __shfl_xor_sync(0xffffffff, l, 16);
            if (g == 0) red[8*NHB + (wg*4 + w)*NHB + h] = l;
        }
    }
    stamp(&st[4][8 + wg], tid % 128 == 0, t0);
    fence_async();
    consumer_sync();
    stamp(&st[4][2 + wg], tid % 128 == 0, t0);
    const int tw = tid % 128;
    if (wg == 0 && tw < NHB) {
        const float * rl = red + 8*NHB;
        float m = red[tw];
        for (int k = 1; k < 8; ++k) m = fmaxf(m, red[k*NHB + tw]);
        const float l0 = ((rl[tw] + rl[NHB + tw]) + rl[2*NHB + tw]) + rl[3*NHB + tw];
        const float l1 = ((rl[4*NHB + tw] + rl[5*NHB + tw]) + rl[6*NHB + tw]) + rl[7*NHB + tw];
        float * mlp = ml + (((size_t) token*pairs + pair)*NH + grp*NHB + tw)*2;
        mlp[0] = m*0.6931471805599453f;    // the natural-log maximum the combine expects
        mlp[1] = l0 + l1;
    }
    // O^T = V^T P^T over the pair: warpgroup w takes heads w NHB/2 .. of both chunks (N = NHB/2), a
    // 64-column tile an output item; lane (g, c) of warp w holds columns 16 w + 2 g and + 1 (M rows
    // 16 w + g and + 8). A tile is four items of four k-steps (chunk 0's first half, chunk 1's,
    // chunk 0's second, chunk 1's), the chunks in two accumulators added when the tile is stored,
    // and two tiles' accumulators alternate.
    constexpr int HO = NHB/2, NO_F = HO/2;
    const uint32_t pbase = smem_addr(smem + L::P_OFF) + (wg*HO/8)*(CHUNK/4*128);
    float * ot = o + (((size_t) token*pairs + pair)*NH + grp*NHB + wg*HO)*D;
    float dA0[NO_F], dB0[NO_F], dA1[NO_F], dB1[NO_F];
    uint32_t ah[4][4], al[4][4], bh[4][4], bl[4][4];
    const auto oload = [&](int n, uint32_t (&hi)[4][4], uint32_t (&lo)[4][4]) {
        const int tile = n/4, ch = n % 2, half = n/2 % 2, it = NSL + tile, s = it % ST;
        if (n % 4 == 0) mbar_wait(full + 8*s, (it/ST) & 1);
        const float * v = (const float *) (smem + s*L::STAGE + ch*L::ROBYTES) + c*RO_STR + 16*w + 2*g;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int kk = 4*half + i;
            const float2 u0 = *(const float2 *) (v + 8*kk*RO_STR), u1 = *(const float2 *) (v + (8*kk + 4)*RO_STR);
            const float x[4] = {u0.x, u0.y, u1.x, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = tail(x[e]); }
        }
        if (n % 4 == 3) mbar_arrive(empty + 8*s);    // the tile is in registers
    };
    const auto oissue = [&](float (&d)[NO_F], int n, const uint32_t (&hi)[4][4], const uint32_t (&lo)[4][4]) {
        const int ch = n % 2, half = n/2 % 2;
        const uint32_t pb = pbase + ch*L::P_BYTES, plb = pb + NHB*CHUNK*4;
        wg_fence();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int kk = 4*half + i;
            const uint64_t bp = desc(pb + kk*256, CHUNK/4*128), bt = desc(plb + kk*256, CHUNK/4*128);
            Mma<HO>::run(d, lo[i], bp);
            Mma<HO>::run(d, hi[i], bt);
            Mma<HO>::run(d, hi[i], bp);
        }
        wg_commit();
    };
    const auto ostore = [&](const float (&da)[NO_F], const float (&db)[NO_F], int tile) {
#pragma unroll
        for (int jn = 0; jn < HO/8; ++jn) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const int h = 8*jn + 2*c + b;
                *(float2 *) (ot + (size_t) h*D + tile*64 + 16*w + 2*g) =
                    make_float2(da[4*jn + b] + db[4*jn + b], da[4*jn + 2 + b] + db[4*jn + 2 + b]);
            }
        }
    };
#pragma unroll
    for (int n = 0; n < 4*NT; ++n) {
        const bool odd_tile = (n/4) % 2;
        float (&d)[NO_F] = n % 2 ? (odd_tile ? dB1 : dB0) : (odd_tile ? dA1 : dA0);
        if (n % 4 < 2) {
#pragma unroll
            for (int i = 0; i < NO_F; ++i) {
                d[i] = 0.0f;
                asm volatile("" : "+f"(d[i]));
            }
        }
        if (n >= 2) {
            wg_wait<1>();    // item n - 2 is done: its fragment set is free
            if (n % 4 == 1 && n >= 5) {    // n - 2 ended the tile before (its chunk 1 item)
                if (odd_tile) ostore(dA0, dB0, n/4 - 1); else ostore(dA1, dB1, n/4 - 1);
            }
        }
        if (n % 2 == 0) { oload(n, ah, al); oissue(d, n, ah, al); }
        else { oload(n, bh, bl); oissue(d, n, bh, bl); }
    }
    wg_wait<0>();
    ostore(dA1, dB1, NT - 1);
    stamp(&st[4][4 + wg], tid % 128 == 0, t0);
}

struct Bufs {
    float * q, * qs, * pool, * o, * ml;
    int * idx;
};

template <int NHB, int ST, int TAILS, int KS = 2, int ACCS = 3, int OK = 2, int PW = 1>
void launch(const Bufs & b, int t, int n_slots, int pool_rows, float scale, bool split) {
    using L = Layout<NHB, ST>;
    static bool set = false;
    if (!set) {
        CHECK(cudaFuncSetAttribute(flash_v13<NHB, ST, TAILS, KS, ACCS, OK, PW>, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        set = true;
    }
    if (split) q_split<NHB, TAILS><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
    flash_v13<NHB, ST, TAILS, KS, ACCS, OK, PW><<<t*(n_slots/CHUNK/2)*(NH/NHB), THREADS, L::SMEM>>>(b.qs, b.pool, b.idx, b.o, b.ml, n_slots, pool_rows, scale);
}

template <int NHB, int ST, int TAILS, int KS = 2, int ACCS = 3, int OK = 2, int PW = 1>
void run(const Bufs & b, const std::vector<float> & hq, const std::vector<float> & hpool, const std::vector<int> & hidx,
         float * scrub, size_t scrub_bytes, int n_slots, int pool_rows, float scale) {
    const int chunks = n_slots/CHUNK, tmax = 8;
    CHECK(cudaMemset(b.o, 0xff, (size_t) tmax*chunks*NH*D*4));
    CHECK(cudaMemset(b.ml, 0xff, (size_t) tmax*chunks*NH*2*4));
    launch<NHB, ST, TAILS, KS, ACCS, OK, PW>(b, tmax, n_slots, pool_rows, scale, true);
    CHECK(cudaDeviceSynchronize());
    double worst = 0, worst_ml = 0;
    const int pairs = chunks/2;
    for (int token : {1, 7}) for (int pair : {0, 6, 15}) {
        std::vector<float> ho((size_t) NH*D), hml(NH*2);
        CHECK(cudaMemcpy(ho.data(), b.o + ((size_t) token*pairs + pair)*NH*D, ho.size()*4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hml.data(), b.ml + ((size_t) token*pairs + pair)*NH*2, NH*2*4, cudaMemcpyDeviceToHost));
        for (int h = 0; h < NH; ++h) {
            double sc[2*CHUNK], m = -1e300, l = 0;
            for (int s = 0; s < 2*CHUNK; ++s) {
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + pair*2*CHUNK + s]*D];
                double acc = 0;
                for (int k = 0; k < D; ++k) acc += (double) hq[((size_t) token*NH + h)*D + k]*row[k];
                sc[s] = acc*scale;
                m = std::max(m, sc[s]);
            }
            double ref[D] = {};
            for (int s = 0; s < 2*CHUNK; ++s) {
                const double e = exp(sc[s] - m);
                l += e;
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + pair*2*CHUNK + s]*D];
                for (int k = 0; k < D; ++k) ref[k] += e*row[k];
            }
            for (int k = 0; k < D; ++k) {
                const double err = fabs(ho[(size_t) h*D + k] - ref[k])/l;
                worst = err <= worst ? worst : (std::isnan(err) ? INFINITY : err);
            }
            const double em = fabs(hml[2*h] - m), el = fabs(hml[2*h + 1] - l)/l;
            worst_ml = std::isnan(em + el) ? INFINITY : std::max(worst_ml, std::max(em, el));
        }
    }
    printf("v16 producer warps %d, heads %d, stages %d, k-steps an item %d and %d, accumulators %d: check max |o - ref| / l = %.3e, m and l %.3e\n", PW, NHB, ST, KS, OK, ACCS, worst, worst_ml);
    cudaEvent_t a, ev;
    cudaEventCreate(&a);
    cudaEventCreate(&ev);
    for (int t : {1, 2, 4, 8}) {
        std::vector<float> ms, msp;
        for (int r = 0; r < 21; ++r) {
            CHECK(cudaMemsetAsync(scrub, r, scrub_bytes));
            launch<NHB, ST, TAILS, KS, ACCS, OK, PW>(b, t, n_slots, pool_rows, scale, true);    // the split: not timed here
            CHECK(cudaMemsetAsync(scrub, r + 1, scrub_bytes));
            cudaEventRecord(a);
            launch<NHB, ST, TAILS, KS, ACCS, OK, PW>(b, t, n_slots, pool_rows, scale, false);
            cudaEventRecord(ev);
            CHECK(cudaEventSynchronize(ev));
            float x;
            cudaEventElapsedTime(&x, a, ev);
            ms.push_back(x);
            {
                CHECK(cudaMemsetAsync(scrub, r + 2, scrub_bytes));
                cudaEventRecord(a);
                q_split<NHB, TAILS><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
                cudaEventRecord(ev);
                CHECK(cudaEventSynchronize(ev));
                cudaEventElapsedTime(&x, a, ev);
                msp.push_back(x);
            }
        }
        CHECK(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        const double us = ms[10]*1e3, flop = 2.0*t*NH*n_slots*(D + D);
        printf("producer warps %d heads %d stages %d ks %d/%d accs %d t_q %d: %d blocks, %.2f us (min %.2f), %.1f TFLOP/s of f32 work",
               PW, NHB, ST, KS, OK, ACCS, t, t*(n_slots/CHUNK/2)*(NH/NHB), us, ms[0]*1e3, flop/us/1e6);
        if (!msp.empty()) {
            std::sort(msp.begin(), msp.end());
            printf("; the split alone %.2f us", msp[10]*1e3);
        }
        printf("\n");
    }
}

#ifndef V11_NO_MAIN
int main(int argc, char ** argv) {
    const int n_slots = 2048, pool_rows = 65536, chunks = n_slots/CHUNK, tmax = 8;
    const float scale = 1.0f/sqrtf(192.0f);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; shared bytes a block: %d (16 heads), %d (32), %d (64, 3 stages), %d (64, 4 stages)\n", prop.name, prop.multiProcessorCount,
           Layout<16, 4>::SMEM, Layout<32, 4>::SMEM, Layout<64, 3>::SMEM, Layout<64, 4>::SMEM);
    std::vector<float> hq((size_t) tmax*NH*D), hpool((size_t) pool_rows*D);
    std::vector<int> hidx((size_t) tmax*n_slots);
    srand(1);
    for (auto & x : hq) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hpool) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hidx) x = rand() % pool_rows;
    Bufs b;
    float * scrub;
    CHECK(cudaMalloc(&b.q, hq.size()*4));
    CHECK(cudaMalloc(&b.qs, hq.size()*8));
    CHECK(cudaMalloc(&b.pool, hpool.size()*4));
    CHECK(cudaMalloc(&b.idx, hidx.size()*4));
    CHECK(cudaMalloc(&b.o, (size_t) tmax*chunks*NH*D*4));
    CHECK(cudaMalloc(&b.ml, (size_t) tmax*chunks*NH*2*4));
    const size_t scrub_bytes = 256u << 20;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemcpy(b.q, hq.data(), hq.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.pool, hpool.data(), hpool.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.idx, hidx.data(), hidx.size()*4, cudaMemcpyHostToDevice));
    if (argc > 2) {    // one launch of (heads, t_q), for a profiler
        const int nhb = atoi(argv[1]), t = atoi(argv[2]);
        if (nhb == 64) launch<64, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, true);
        if (nhb == 16) launch<16, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, true);
        CHECK(cudaDeviceSynchronize());
        return 0;
    }
    run<64, 4, 0, 2, 2, 4, 4>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<32, 4, 0, 2, 2, 4, 4>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<16, 4, 0, 2, 2, 4, 4>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    for (int t : {1, 8}) {
        const int blocks = t*(chunks/2);
        launch<64, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, true);
        CHECK(cudaMemsetAsync(scrub, 7, scrub_bytes));
        launch<64, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, false);
        CHECK(cudaDeviceSynchronize());
        std::vector<uint32_t> h((size_t) 1024*5*ITEMS);
        CHECK(cudaMemcpyFromSymbol(h.data(), g_st, h.size()*4));
        const auto at = [&](int blk, int r, int i) { return (double) (int32_t) h[((size_t) blk*5 + r)*ITEMS + i]; };
        printf("producer warps 4, t_q %d, 64 heads, %d blocks; cycles from the block's start, mean over blocks (block 0 in brackets):\n", t, blocks);
        printf("item: producer past its empty wait, producer issued, warpgroup 0 past its full wait, warpgroup 1\n");
        for (int i = 0; i < ITEMS; ++i) {
            printf("%2d %s:", i, i < NSL ? "S" : "O");
            for (int r = 0; r < 4; ++r) {
                double m = 0;
                for (int k = 0; k < blocks; ++k) m += at(k, r, i);
                printf(" %8.0f [%6.0f]", m/blocks, at(0, r, i));
            }
            printf("\n");
        }
        const char * names[10] = {"scores end wg0", "scores end wg1", "softmax end wg0", "softmax end wg1", "output end wg0", "output end wg1",
                                  "maxima exchanged wg0", "maxima exchanged wg1", "numerators stored wg0", "numerators stored wg1"};
        for (int r = 0; r < 10; ++r) {
            double m = 0;
            for (int k = 0; k < blocks; ++k) m += at(k, 4, r);
            printf("%s %.0f [%.0f]\n", names[r], m/blocks, at(0, 4, r));
        }
    }
    return 0;
}
#endif
