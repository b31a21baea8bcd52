// Prototype v9 (v8 with both products pipelined, registers moved from the producers to the consumers by setmaxnreg; SKIP leaves a copy out, for attribution): the gathered MLA attention's main kernel on Hopper's warpgroup tensor cores
// (wgmma, sm_90a), 3xTF32, with the gathered rows as the register operand.
// Seed geometry: 64 heads, rows of 512 f32, chunks of 64 slots.
//
// Block (token, chunk, head group of NHB heads): two consumer warpgroups and one producer warp.
// - The producer bulk-copies the chunk's 64 rows into shared memory once (a padded row layout,
//   kept for the whole block), slab by slab on one mbarrier a slab group, and streams the
//   queries' tf32 heads and tails (split once per token by a prepass, stored in the core-matrix
//   layout wgmma reads) through a ring of stages on full/empty mbarriers.
// - Scores S^T = K Q^T: M = the 64 slots, N = the group's heads, K = 512 split by slab parity
//   between the two warpgroups; A = the rows from shared memory into registers, split at use.
// - A softmax within the chunk; the numerators' heads and tails stored as B.
// - O^T = V^T P^T: M = 64-column tiles of the rows (again from the resident rows, split at use),
//   N = the heads, K = the 64 slots.
// Partials (o, m, l) per (token, chunk, head), as the committed kernel's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int NH = 64, D = 512, CHUNK = 64, SL = 32, NSL = D/SL, QSTAGES = 4;
constexpr int CONSUMERS = 256, PRODUCERS = 128, THREADS = CONSUMERS + PRODUCERS;
constexpr int RSTR = D + 8;    // floats a resident row: float2 fragment loads fall on 32 banks
constexpr int R_BYTES = CHUNK*RSTR*4, SSTR = CHUNK + 4;

template <int NHB> struct Layout {
    static constexpr int QSTAGE = 2*NHB*SL*4;                    // a slab's heads then tails
    static constexpr int S_BYTES = 2*NHB*SSTR*4, P_BYTES = NHB*CHUNK*4;
    static constexpr int RING = QSTAGES*QSTAGE > S_BYTES + 2*P_BYTES ? QSTAGES*QSTAGE : S_BYTES + 2*P_BYTES;
    static constexpr int RING_OFF = R_BYTES, MBAR_OFF = R_BYTES + RING;
    static constexpr int SMEM = MBAR_OFF + 8*(NSL + 2*QSTAGES);
};

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

// Core-matrix (no swizzle, K-major) offset in floats of element (row n, column k) of a tile whose
// rows hold `kcols` columns.
__host__ __device__ __forceinline__ int core_off(int n, int k, int kcols) {
    return (n/8)*(kcols/4*32) + (k/4)*32 + (n%8)*4 + (k%4);
}

// The prepass: each token's queries as per-slab blocks of (heads, then tf32 tails) in the
// core-matrix layout, a head group's blocks together: [token][group][slab][2][NHB x SL]. Within a
// k-step of 8 columns, column e sits at k = e/2 + 4 (e % 2), so that a thread's two A values of a
// k-step are adjacent columns of a row (one float2 load).
template <int NHB>
__global__ void q_split(const float * __restrict__ q, float * __restrict__ qs, int t_q) {
    const int i = blockIdx.x*blockDim.x + threadIdx.x;
    if (i >= t_q*NH*D) return;
    const int token = i/(NH*D), h = i/D % NH, col = i % D;
    const int grp = h/NHB, hl = h % NHB, slab = col/SL, e = col % 8, kk = col % SL/8;
    const int k = 8*kk + e/2 + 4*(e % 2);
    const float x = q[i];
    float * blk = qs + ((((size_t) token*(NH/NHB) + grp)*NSL + slab)*2)*NHB*SL;
    blk[core_off(hl, k, SL)] = x;
    blk[NHB*SL + core_off(hl, k, SL)] = __uint_as_float(tail(x));
}

// QB: the query slabs by one bulk copy each (1) or by the producers' cp.async (0). ORDER 0: the rows
// copied slab by slab (a barrier a slab); 1: row by row, every slab's barrier at the end.
template <int NHB, int QB, int ORDER, int SKIP>
__global__ void __launch_bounds__(THREADS, 1)
flash_v9(const float * __restrict__ qs, const float * __restrict__ pool, const int * __restrict__ idx,
         float * __restrict__ o, float * __restrict__ ml, int n_slots, int pool_rows, float scale, int s_only) {
    using L = Layout<NHB>;
    constexpr int GROUPS = NH/NHB, NF = NHB/2;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int chunks = n_slots/CHUNK;
    const int grp = blockIdx.x % GROUPS, chunk = blockIdx.x/GROUPS % chunks, token = blockIdx.x/GROUPS/chunks;
    const int tid = threadIdx.x;
    float * rs = (float *) smem;
    unsigned char * ring = smem + L::RING_OFF;
    const uint32_t mb = smem_addr(smem + L::MBAR_OFF);
    // Barriers: rows[NSL/RG] at mb, qfull[QSTAGES] after them, qempty[QSTAGES] last.
    const uint32_t mrows = mb, qfull = mb + 8*NSL, qempty = qfull + 8*QSTAGES;
    if (tid == 0) {
        for (int j = 0; j < NSL; ++j) mbar_init(mrows + 8*j, PRODUCERS);
        for (int s = 0; s < QSTAGES; ++s) { mbar_init(qfull + 8*s, QB ? 1 : PRODUCERS); mbar_init(qempty + 8*s, 128); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid >= CONSUMERS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        // The producer warpgroup: thread p copies 16-byte pieces p, p + 128, ... of what is copied.
        const int p = tid - CONSUMERS;
        const int * ix = idx + (size_t) token*n_slots + chunk*CHUNK;
        const float * qsrc = qs + ((size_t) token*GROUPS + grp)*NSL*L::QSTAGE/4;
        const auto rows_slab = [&](int j) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int piece = p + PRODUCERS*i, s = piece/8, part = piece % 8;
                const int row = min(max(ix[s], 0), pool_rows - 1);
                cp16(smem_addr(rs + s*RSTR + j*SL + 4*part), pool + (size_t) row*D + j*SL + 4*part);
            }
        };
        const auto q_slab = [&](int j) {
            const int st = j % QSTAGES;
            if (j >= QSTAGES) mbar_wait(qempty + 8*st, (j/QSTAGES - 1) & 1);
            if (SKIP == 1) {
                if (p == 0) mbar_arrive(qfull + 8*st);
            } else if (QB) {
                if (p == 0) {
                    mbar_expect(qfull + 8*st, L::QSTAGE);
                    bulk(smem_addr(ring + st*L::QSTAGE), qsrc + (size_t) j*L::QSTAGE/4, L::QSTAGE, qfull + 8*st);
                }
            } else {
                for (int i = p; i < L::QSTAGE/16; i += PRODUCERS) {
                    cp16(smem_addr(ring + st*L::QSTAGE + 16*i), qsrc + (size_t) j*L::QSTAGE/4 + 4*i);
                }
                mbar_arrive_copies(qfull + 8*st);
            }
        };
        if (ORDER == 0) {
            for (int j = 0; j < NSL; ++j) {
                if (SKIP != 2) rows_slab(j);
                mbar_arrive_copies(mrows + 8*j);
                if (j < QSTAGES) q_slab(j);
            }
        } else {
            for (int i = 0; i < 64; ++i) {    // row by row: a row's 128 pieces by one warp... of 4
                const int piece = p + PRODUCERS*i, s = piece/128, part = piece % 128;
                const int row = min(max(ix[s], 0), pool_rows - 1);
                cp16(smem_addr(rs + s*RSTR + 4*part), pool + (size_t) row*D + 4*part);
            }
            for (int j = 0; j < NSL; ++j) mbar_arrive_copies(mrows + 8*j);
            for (int j = 0; j < QSTAGES; ++j) q_slab(j);
        }
        for (int j = QSTAGES; j < NSL; ++j) q_slab(j);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int wg = tid/128, w = tid/32 % 4, lane = tid % 32, g = lane/4, c = lane % 4;
    // Scores: this warpgroup's slabs are wg, wg + 2, ...; three chains (tail x head, head x tail,
    // head x head) added at the end. Items of two k-steps (half a slab) are pipelined: item n + 1's
    // fragments are loaded and issued while item n's wgmma run.
    float acc[NF], acc_lh[NF], acc_hl[NF];
#pragma unroll
    for (int i = 0; i < NF; ++i) {
        acc[i] = 0.0f; acc_lh[i] = 0.0f; acc_hl[i] = 0.0f;
        asm volatile("" : "+f"(acc[i]), "+f"(acc_lh[i]), "+f"(acc_hl[i]));    // zeroed before the first wgmma's fence
    }
    const float * r0 = rs + (16*w + g)*RSTR + 2*c, * r1 = r0 + 8*RSTR;
    uint32_t xh[2][4], xl[2][4], yh[2][4], yl[2][4];
    const auto load = [&](int n, uint32_t (&hi)[2][4], uint32_t (&lo)[2][4]) {
        const int j = 2*(n/2) + wg, half = n % 2;
        if (half == 0) {
            mbar_wait(mrows + 8*j, 0);
            mbar_wait(qfull + 8*(j % QSTAGES), (j/QSTAGES) & 1);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int ks = 2*half + i;
            const float2 u0 = *(const float2 *) (r0 + j*SL + 8*ks), u1 = *(const float2 *) (r1 + j*SL + 8*ks);
            const float x[4] = {u0.x, u1.x, u0.y, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = tail(x[e]); }
        }
    };
    const auto issue = [&](int n, const uint32_t (&hi)[2][4], const uint32_t (&lo)[2][4]) {
        const int j = 2*(n/2) + wg, half = n % 2;
        const uint32_t qb = smem_addr(ring + (j % QSTAGES)*L::QSTAGE), qt = qb + NHB*SL*4;
        wg_fence();
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int ks = 2*half + i;
            const uint64_t bh = desc(qb + ks*256, SL/4*128), bt = desc(qt + ks*256, SL/4*128);
            Mma<NHB>::run(acc_lh, lo[i], bh);
            Mma<NHB>::run(acc_hl, hi[i], bt);
            Mma<NHB>::run(acc, hi[i], bh);
        }
        wg_commit();
    };
    load(0, xh, xl);
    issue(0, xh, xl);
#pragma unroll
    for (int n2 = 0; n2 < NSL/2; ++n2) {
        load(2*n2 + 1, yh, yl);
        issue(2*n2 + 1, yh, yl);
        wg_wait<1>();
        if (n2 + 1 < NSL/2) {
            load(2*n2 + 2, xh, xl);
            issue(2*n2 + 2, xh, xl);
            wg_wait<1>();
        } else {
            wg_wait<0>();
        }
        mbar_arrive(qempty + 8*((2*n2 + wg) % QSTAGES));    // both halves of slab 2 n2 + wg are done
    }
    consumer_sync();    // both warpgroups are done with the ring: it becomes the scores and numerators
    float * ss = (float *) ring + wg*NHB*SSTR;
#pragma unroll
    for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int s = 16*w + g + (e >= 2 ? 8 : 0), h = 8*jn + 2*c + (e & 1);
            ss[h*SSTR + s] = (acc_lh[4*jn + e] + acc_hl[4*jn + e]) + acc[4*jn + e];
        }
    }
    consumer_sync();
    float * p = (float *) (ring + L::S_BYTES), * plo = p + NHB*CHUNK;
    {
        constexpr int TPH = CONSUMERS/NHB, SPT = CHUNK/TPH;
        const int h = tid/TPH, q4 = tid % TPH;
        const float * s0 = (const float *) ring, * s1 = s0 + NHB*SSTR;
        float z[SPT], m = -INFINITY;
#pragma unroll
        for (int i = 0; i < SPT; ++i) {
            const int s = q4*SPT + i;
            z[i] = (s0[h*SSTR + s] + s1[h*SSTR + s])*scale;
            m = fmaxf(m, z[i]);
        }
#pragma unroll
        for (int off = 1; off < TPH; off *= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, off));
        float l = 0.0f;
#pragma unroll
        for (int i = 0; i < SPT; ++i) {
            const int s = q4*SPT + i;
            const float e = expf(z[i] - m);
            l += e;
            p[core_off(h, s, CHUNK)] = e;
            plo[core_off(h, s, CHUNK)] = __uint_as_float(tail(e));
        }
#pragma unroll
        for (int off = 1; off < TPH; off *= 2) l += __shfl_xor_sync(0xffffffff, l, off);
        if (q4 == 0) {
            float * mlp = ml + (((size_t) token*chunks + chunk)*NH + grp*NHB + h)*2;
            mlp[0] = m;
            mlp[1] = l;
        }
    }
    fence_async();
    consumer_sync();
    if (s_only) return;
    // Each thread waits on every row group (all complete by now), not only its warpgroup's.
    for (int j = 0; j < NSL; ++j) mbar_wait(mrows + 8*j, 0);
    const uint32_t pb = smem_addr(p), plb = smem_addr(plo);
    float * ot = o + (((size_t) token*chunks + chunk)*NH + grp*NHB)*D;
    // Output tiles of 64 columns, warpgroup wg taking tiles wg, wg + 2, ...; lane (g, c) of warp w
    // holds columns 16 w + 2 g and + 1 of the tile (M rows 16 w + g and + 8), slots c and c + 4.
    // Each tile in two halves of four k-steps; a half's fragments are loaded while the one before
    // runs, and two accumulators alternate between tiles.
    float d0[NF], d1[NF];
    const auto oload = [&](int tt, int half, uint32_t (&hi)[4][4], uint32_t (&lo)[4][4]) {
        const float * v = rs + c*RSTR + (2*tt + wg)*64 + 16*w + 2*g;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int kk = 4*half + i;
            const float2 u0 = *(const float2 *) (v + 8*kk*RSTR), u1 = *(const float2 *) (v + (8*kk + 4)*RSTR);
            const float x[4] = {u0.x, u0.y, u1.x, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = tail(x[e]); }
        }
    };
    const auto oissue = [&](float (&d)[NF], int half, const uint32_t (&hi)[4][4], const uint32_t (&lo)[4][4]) {
        wg_fence();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int kk = 4*half + i;
            const uint64_t bp = desc(pb + kk*256, CHUNK/4*128), bl = desc(plb + kk*256, CHUNK/4*128);
            Mma<NHB>::run(d, lo[i], bp);
            Mma<NHB>::run(d, hi[i], bl);
            Mma<NHB>::run(d, hi[i], bp);
        }
        wg_commit();
    };
    const auto ostore = [&](const float (&d)[NF], int tt) {
        const int tile = 2*tt + wg;
#pragma unroll
        for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const int h = 8*jn + 2*c + b;
                *(float2 *) (ot + (size_t) h*D + tile*64 + 16*w + 2*g) = make_float2(d[4*jn + b], d[4*jn + 2 + b]);
            }
        }
    };
    uint32_t ah[4][4], al[4][4], bh[4][4], bl[4][4];
#pragma unroll
    for (int tt = 0; tt < D/64/2; ++tt) {
        float (&d)[NF] = tt % 2 ? d1 : d0;
        float (&dp)[NF] = tt % 2 ? d0 : d1;
#pragma unroll
        for (int i = 0; i < NF; ++i) {
            d[i] = 0.0f;
            asm volatile("" : "+f"(d[i]));
        }
        if (tt > 0) wg_wait<1>();
        oload(tt, 0, ah, al);
        oissue(d, 0, ah, al);
        if (tt > 0) {
            wg_wait<1>();
            ostore(dp, tt - 1);
        }
        oload(tt, 1, bh, bl);
        oissue(d, 1, bh, bl);
    }
    wg_wait<0>();
    ostore(d1, D/64/2 - 1);
}

struct Bufs {
    float * q, * qs, * pool, * o, * ml;
    int * idx;
};

template <int NHB, int QB, int ORDER, int SKIP>
void launch(const Bufs & b, int t, int n_slots, int pool_rows, float scale, int s_only, bool split) {
    using L = Layout<NHB>;
    static bool set = false;
    if (!set) {
        CHECK(cudaFuncSetAttribute(flash_v9<NHB, QB, ORDER, SKIP>, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        set = true;
    }
    if (split) q_split<NHB><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
    flash_v9<NHB, QB, ORDER, SKIP><<<t*(n_slots/CHUNK)*(NH/NHB), THREADS, L::SMEM>>>(b.qs, b.pool, b.idx, b.o, b.ml, n_slots, pool_rows, scale, s_only);
}

template <int NHB, int QB, int ORDER, int SKIP>
void run(const Bufs & b, const std::vector<float> & hq, const std::vector<float> & hpool, const std::vector<int> & hidx,
         float * scrub, size_t scrub_bytes, int n_slots, int pool_rows, float scale) {
    const int chunks = n_slots/CHUNK, tmax = 8;
    CHECK(cudaMemset(b.o, 0xff, (size_t) tmax*chunks*NH*D*4));
    CHECK(cudaMemset(b.ml, 0xff, (size_t) tmax*chunks*NH*2*4));
    launch<NHB, QB, ORDER, SKIP>(b, tmax, n_slots, pool_rows, scale, 0, true);
    CHECK(cudaDeviceSynchronize());
    double worst = 0, worst_ml = 0;
    for (int token : {1, 7}) for (int chunk : {0, 13, 31}) {
        std::vector<float> ho((size_t) NH*D), hml(NH*2);
        CHECK(cudaMemcpy(ho.data(), b.o + ((size_t) token*chunks + chunk)*NH*D, ho.size()*4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hml.data(), b.ml + ((size_t) token*chunks + chunk)*NH*2, NH*2*4, cudaMemcpyDeviceToHost));
        for (int h = 0; h < NH; ++h) {
            double sc[CHUNK], m = -1e300, l = 0;
            for (int s = 0; s < CHUNK; ++s) {
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + chunk*CHUNK + s]*D];
                double acc = 0;
                for (int k = 0; k < D; ++k) acc += (double) hq[((size_t) token*NH + h)*D + k]*row[k];
                sc[s] = acc*scale;
                m = std::max(m, sc[s]);
            }
            double ref[D] = {};
            for (int s = 0; s < CHUNK; ++s) {
                const double e = exp(sc[s] - m);
                l += e;
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + chunk*CHUNK + s]*D];
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
    printf("v9 heads %d, q bulk %d, order %d, skip %d: check max |o - ref| / l = %.3e, m and l %.3e%s\n", NHB, QB, ORDER, SKIP, worst, worst_ml, SKIP ? " (a copy left out: not a check)" : "");
    cudaEvent_t a, ev;
    cudaEventCreate(&a);
    cudaEventCreate(&ev);
    for (int s_only : {0, 1})
    for (int t : {1, 2, 4, 8}) {
        std::vector<float> ms, msp;
        for (int r = 0; r < 21; ++r) {
            CHECK(cudaMemsetAsync(scrub, r, scrub_bytes));
            launch<NHB, QB, ORDER, SKIP>(b, t, n_slots, pool_rows, scale, s_only, true);    // the split: not timed here
            CHECK(cudaMemsetAsync(scrub, r + 1, scrub_bytes));
            cudaEventRecord(a);
            launch<NHB, QB, ORDER, SKIP>(b, t, n_slots, pool_rows, scale, s_only, false);
            cudaEventRecord(ev);
            CHECK(cudaEventSynchronize(ev));
            float x;
            cudaEventElapsedTime(&x, a, ev);
            ms.push_back(x);
            if (s_only == 0) {
                CHECK(cudaMemsetAsync(scrub, r + 2, scrub_bytes));
                cudaEventRecord(a);
                q_split<NHB><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
                cudaEventRecord(ev);
                CHECK(cudaEventSynchronize(ev));
                cudaEventElapsedTime(&x, a, ev);
                msp.push_back(x);
            }
        }
        CHECK(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        const double us = ms[10]*1e3, flop = 2.0*t*NH*n_slots*(D + D);
        printf("%sheads %d qb %d order %d skip %d t_q %d: %d blocks, %.2f us (min %.2f), %.1f TFLOP/s of f32 work", s_only ? "scores and softmax only: " : "",
               NHB, QB, ORDER, SKIP, t, t*(n_slots/CHUNK)*(NH/NHB), us, ms[0]*1e3, flop/us/1e6);
        if (!msp.empty()) {
            std::sort(msp.begin(), msp.end());
            printf("; the split alone %.2f us", msp[10]*1e3);
        }
        printf("\n");
    }
}

int main(int argc, char ** argv) {
    const int n_slots = 2048, pool_rows = 65536, chunks = n_slots/CHUNK, tmax = 8;
    const float scale = 1.0f/sqrtf(192.0f);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; shared bytes a block: %d (16 heads), %d (32), %d (64)\n", prop.name, prop.multiProcessorCount,
           Layout<16>::SMEM, Layout<32>::SMEM, Layout<64>::SMEM);
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
        if (nhb == 64) launch<64, 1, 0, 0>(b, t, n_slots, pool_rows, scale, 0, true);
        if (nhb == 16) launch<16, 1, 0, 0>(b, t, n_slots, pool_rows, scale, 0, true);
        CHECK(cudaDeviceSynchronize());
        return 0;
    }
    run<64, 1, 0, 0>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<64, 1, 0, 1>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<64, 1, 0, 2>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<32, 1, 0, 0>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<16, 1, 0, 0>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<16, 1, 0, 1>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    run<16, 1, 0, 2>(b, hq, hpool, hidx, scrub, scrub_bytes, n_slots, pool_rows, scale);
    return 0;
}
