// r108: the gathered attention on Hopper's warpgroup tensor cores with attn_flash's own bits.
//
// r64's v15 (receipts/h200-r64-wgmma-flash: a producer warpgroup streaming one ring of stages,
// a block per (token, pair of chunks, head group), the rows as wgmma's register operand) with
// every operation of attn_flash (reference/mla_flash.cu, compiled beside it) in attn_flash's
// order:
// - each operand split by attn_flash's tf32_split (a rounded head and the exact rest), where v15
//   truncated;
// - the scores S^T = K Q^T (M = the chunk's 64 slots, N = the heads) in FLASH_K_PARTS parts of
//   ceil(k-steps / 8) k-steps, each a chain from +0 of head(row) x ... in mma_3xtf32's order
//   (tail x head, head x tail, head x head with the query as attn_flash's A), the parts added in
//   order; two accumulators alternate by part, so a part is added while the next one runs;
// - the k-steps' columns in their natural order (attn_flash's ldmatrix fragments), where v15
//   permuted them to load float2s;
// - the softmax in attn_flash's mapping (thread 16 h + q over slots 4q..4q + 3, the 16-lane
//   butterflies), through shared memory, with its __fmul_rn, fmaxf, expf and __fadd_rn;
// - the weighted sum O^T = V^T E^T per 64-column tile, a chain from +0 over the slots' k-steps in
//   order, each k-step's slots in attn_flash's order 0, 2, 4, 6, 1, 3, 5, 7;
// - the committed mla_attn_flash_combine over the same workspace layout.
// If wgmma rounds a chain as mma.sync does with the operands' roles swapped
// (scripts/tf32-mma-orient.cu asks), the workspace and the outputs equal attn_flash's bit for bit.
// The program says whether they do, holds the partials to f64, and times both arms.
//
// The seed's geometry (64 heads, kv_rank 512, no rope), or with -DV32 DeepSeek-V3.2's (128 heads,
// kv_rank 512, d_rope 64: rows of 576 floats, 72 k-steps in parts of 9); any n_slots (a chunk's
// slots past it are zero rows, left out of its softmax, as attn_flash's; the second warpgroup of
// a last pair with one chunk computes on zero rows and stores nothing) and any t.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I reference [-DV32] flash_bits.cu -lcuda
// Run: flash_bits [RUST_MODULE]: with the Rust port's cubin or PTX for the same geometry (rust/,
// flash_bits.cubin, or flash_bits_v32.cubin for -DV32), its entries run as three arms more, held
// to the same bits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <string>
#include <cuda.h>

#include "mla_flash.cu"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

#ifdef V32
constexpr int NH = 128, KV = 512, DR = 64;
#else
constexpr int NH = 64, KV = 512, DR = 0;
#endif
constexpr int D = KV + DR, CHUNK = FLASH_CHUNK, SL = 32, NSL = D/SL, NT = KV/64, ITEMS = NSL + NT;
constexpr int KSTEPS = D/8, PER = (KSTEPS + FLASH_K_PARTS - 1)/FLASH_K_PARTS;   // k-steps of a part
constexpr int CONSUMERS = 256, THREADS = CONSUMERS + 128, PW = 4;
constexpr int RS_STR = SL + 4, RO_STR = 64 + 8, SC_STR = CHUNK + 4;   // floats a staged row
// Score items of KS k-steps (a part's k-steps a whole number of items, an item within a slab).
constexpr int KS = PER % 2 ? 1 : 2, SPI = SL/8/KS, NS = NSL*SPI, IPP = PER/KS;
constexpr int OK = 4, TPI = 8/OK, NO = NT*TPI;                         // output items of OK k-steps
static_assert(D % SL == 0 && KV % 64 == 0 && PER*FLASH_K_PARTS == KSTEPS && PER % KS == 0, "the geometry's slabs and parts");

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
__device__ __forceinline__ void wg_sync(int wg) { asm volatile("bar.sync %0, 128;" :: "r"(2 + wg) : "memory"); }

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
// 16 bytes, or zeros where `live` is false (cp.async's source size 0, `src` any valid address).
__device__ __forceinline__ void cp16z(uint32_t dst, const void * src, bool live) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(live ? 16 : 0) : "memory");
}
__device__ __forceinline__ void mbar_arrive_copies(uint32_t a) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(a) : "memory");
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

template <int NHB, int ST> struct Layout {
    static constexpr int QBYTES = 2*NHB*SL*4;               // a query slab's heads, then tails
    static constexpr int RSBYTES = CHUNK*RS_STR*4, ROBYTES = CHUNK*RO_STR*4;
    static constexpr int STAGE = QBYTES + 2*RSBYTES > 2*ROBYTES ? QBYTES + 2*RSBYTES : 2*ROBYTES;
    // A chunk's numerators (heads, then tails), first its scores (NHB rows of SC_STR floats).
    static constexpr int P_OFF = ST*STAGE, P_BYTES = 2*NHB*CHUNK*4;
    static constexpr int RTAB_OFF = P_OFF + 2*P_BYTES, MBAR_OFF = RTAB_OFF + 2*CHUNK*4, SMEM = MBAR_OFF + 8*2*ST;
    static_assert(NHB*SC_STR*4 <= P_BYTES, "the scores fit the numerators' place");
};

__host__ __device__ __forceinline__ int core_off(int n, int k, int kcols) {
    return (n/8)*(kcols/4*32) + (k/4)*32 + (n%8)*4 + (k%4);
}

// Each query's tf32 heads and tails (attn_flash's split), per (token, head group, slab) in the core
// matrices wgmma reads as B: head h, column k of the slab at core_off(h, k, SL).
template <int NHB>
__global__ void q_split(const float * __restrict__ q, float * __restrict__ qs, int t_q) {
    const int i = blockIdx.x*blockDim.x + threadIdx.x;
    if (i >= t_q*NH*D) return;
    const int token = i/(NH*D), h = i/D % NH, col = i % D;
    const int grp = h/NHB, hl = h % NHB, slab = col/SL, k = col % SL;
    unsigned int hi, lo;
    tf32_split(q[i], hi, lo);
    float * blk = qs + ((((size_t) token*(NH/NHB) + grp)*NSL + slab)*2)*NHB*SL;
    blk[core_off(hl, k, SL)] = __uint_as_float(hi);
    blk[NHB*SL + core_off(hl, k, SL)] = __uint_as_float(lo);
}

// tf32_split with its subtraction rounded on its own, for a value still in registers as a
// contractible product (expf's last multiply): attn_flash splits its numerators after a round trip
// through shared memory, where no contraction reaches, and ptxas may fuse a plain multiply into a
// following plain subtraction.
__device__ __forceinline__ void tf32_split_rn(const float x, unsigned int & head, unsigned int & tail) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    tail = __float_as_uint(__fsub_rn(x, __uint_as_float(head)));
}

template <int NF>
__device__ __forceinline__ void zero(float (&a)[NF]) {
#pragma unroll
    for (int i = 0; i < NF; ++i) {
        a[i] = 0.0f;
        asm volatile("" : "+f"(a[i]));
    }
}

// Block (token, pair of chunks, head group): warpgroup w takes chunk 2 pair + w; both read each
// query slab once. One ring of ST stages carries the 16 score items (a query slab and both chunks'
// row slabs) then the 8 output items (both chunks' 64-column row tiles); the producer warpgroup
// fills it, a quarter of the rows a warp.
template <int NHB, int ST>
__global__ void __launch_bounds__(THREADS, 1)
flash_bits(const float * __restrict__ qs, const float * __restrict__ pool, const int * __restrict__ idx,
           float * __restrict__ o, float * __restrict__ ml, int n_slots, int pool_rows, float scale) {
    using L = Layout<NHB, ST>;
    constexpr int GROUPS = NH/NHB, NF = NHB/2;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int chunks = (n_slots + CHUNK - 1)/CHUNK, pairs = (chunks + 1)/2;
    const int grp = blockIdx.x % GROUPS, pair = blockIdx.x/GROUPS % pairs, token = blockIdx.x/GROUPS/pairs;
    const int tid = threadIdx.x;
    const uint32_t full = smem_addr(smem + L::MBAR_OFF), empty = full + 8*ST;
    if (tid == 0) {
        for (int s = 0; s < ST; ++s) {
            mbar_init(full + 8*s, 32*PW + 1);
            mbar_init(empty + 8*s, CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid >= CONSUMERS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        // Lane l copies part l % 8 (and + 8 in the tiles) of rows l / 8 + 4 i of both chunks; the
        // rows' indices wait in shared memory, -1 for a slot past n_slots (a row of zeros).
        const int lane = tid % 32, pw = (tid - CONSUMERS)/32;
        int * rtab = (int *) (smem + L::RTAB_OFF);
        for (int i = tid - CONSUMERS; i < 2*CHUNK; i += 32*PW) {
            const int slot = 2*pair*CHUNK + i;
            rtab[i] = slot < n_slots ? min(max(idx[(size_t) token*n_slots + slot], 0), pool_rows - 1) : -1;
        }
        asm volatile("bar.sync 4, %0;" :: "n"(32*PW) : "memory");
        const float * base = pool + 4*(lane % 8);
        const float * qsrc = qs + ((size_t) token*GROUPS + grp)*NSL*L::QBYTES/4;
        for (int it = 0; it < ITEMS; ++it) {
            const int s = it % ST;
            if (it >= ST) mbar_wait(empty + 8*s, (it/ST - 1) & 1);
            unsigned char * stage = smem + s*L::STAGE;
            if (it < NSL) {
                if (lane == 0 && pw == 0) {
                    mbar_expect(full + 8*s, L::QBYTES);
                    bulk(smem_addr(stage), qsrc + (size_t) it*L::QBYTES/4, L::QBYTES, full + 8*s);
                }
#pragma unroll
                for (int ch = 0; ch < 2; ++ch) {
                    const uint32_t dst = smem_addr(stage + L::QBYTES + ch*L::RSBYTES) + 16*(lane % 8);
                    int r[16/PW];
#pragma unroll
                    for (int i = 0; i < 16/PW; ++i) r[i] = rtab[ch*CHUNK + lane/8 + 4*(16/PW*pw + i)];
#pragma unroll
                    for (int i = 0; i < 16/PW; ++i) {
                        cp16z(dst + (lane/8 + 4*(16/PW*pw + i))*RS_STR*4, base + (size_t) max(r[i], 0)*D + it*SL, r[i] >= 0);
                    }
                }
            } else {
                const int tile = it - NSL;
                if (lane == 0 && pw == 0) mbar_arrive(full + 8*s);
#pragma unroll
                for (int ch = 0; ch < 2; ++ch) {
                    const uint32_t dst = smem_addr(stage + ch*L::ROBYTES) + 16*(lane % 8);
                    int r[16/PW];
#pragma unroll
                    for (int i = 0; i < 16/PW; ++i) r[i] = rtab[ch*CHUNK + lane/8 + 4*(16/PW*pw + i)];
#pragma unroll
                    for (int i = 0; i < 16/PW; ++i) {
                        const float * src = base + (size_t) max(r[i], 0)*D + tile*64;
                        const uint32_t row = dst + (lane/8 + 4*(16/PW*pw + i))*RO_STR*4;
                        cp16z(row, src, r[i] >= 0);
                        cp16z(row + 128, src + 32, r[i] >= 0);
                    }
                }
            }
            mbar_arrive_copies(full + 8*s);
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int wg = tid/128, w = tid/32 % 4, lane = tid % 32, g = lane/4, c = lane % 4;
    const int chunk = 2*pair + wg;
    const bool stored = chunk < chunks;    // the second chunk of a last pair with one

    // Scores S^T = K Q^T. Lane (g, c) of warp w holds rows 16 w + g and + 8 (slots), columns c and
    // c + 4 of each k-step (A); the accumulators' element 4 jn + 2 hf + b is slot 16 w + g + 8 hf,
    // head 8 jn + 2 c + b.
    float acc_e[NF], acc_o[NF], sum[NF];
    zero(acc_e);
    zero(acc_o);
#pragma unroll
    for (int k = 0; k < NF; ++k) sum[k] = -0.0f;    // -0 + p0 is p0: ((p0 + p1) + ...) as attn_flash adds
    uint32_t xh[KS][4], xl[KS][4], yh[KS][4], yl[KS][4];
    const auto sload = [&](int n, uint32_t (&hi)[KS][4], uint32_t (&lo)[KS][4]) {
        const int j = n/SPI, half = n % SPI, s = j % ST;
        if (half == 0) mbar_wait(full + 8*s, (j/ST) & 1);
        const float * r0 = (const float *) (smem + s*L::STAGE + L::QBYTES + wg*L::RSBYTES) + (16*w + g)*RS_STR + c;
#pragma unroll
        for (int i = 0; i < KS; ++i) {
            const int col = 8*(KS*half + i);
            const float x[4] = {r0[col], r0[8*RS_STR + col], r0[col + 4], r0[8*RS_STR + col + 4]};
#pragma unroll
            for (int e = 0; e < 4; ++e) tf32_split(x[e], hi[i][e], lo[i][e]);
        }
    };
    const auto sissue = [&](int n, float (&acc)[NF], const uint32_t (&hi)[KS][4], const uint32_t (&lo)[KS][4]) {
        const int j = n/SPI, half = n % SPI;
        const uint32_t qb = smem_addr(smem + (j % ST)*L::STAGE), qt = qb + NHB*SL*4;
        wg_fence();
#pragma unroll
        for (int i = 0; i < KS; ++i) {
            const int ks = KS*half + i;
            const uint64_t bh = desc(qb + ks*256, SL/4*128), bt = desc(qt + ks*256, SL/4*128);
            Mma<NHB>::run(acc, lo[i], bh);    // head(q) x tail(row)
            Mma<NHB>::run(acc, hi[i], bt);    // tail(q) x head(row)
            Mma<NHB>::run(acc, hi[i], bh);    // head(q) x head(row)
        }
        wg_commit();
    };
    sload(0, xh, xl);
    sissue(0, acc_e, xh, xl);
#pragma unroll 1
    for (int p2 = 0; p2 < FLASH_K_PARTS/2; ++p2) {
#pragma unroll
        for (int i = 0; i < 2*IPP; ++i) {
            const int n = 2*IPP*p2 + i;
            // Item n + 1 into its part's accumulator (even parts acc_e, odd acc_o), then item n done.
            if (n + 1 < NS) {
                float (&next)[NF] = ((i + 1)/IPP) % 2 ? acc_o : acc_e;
                if (i % 2 == 0) { sload(n + 1, yh, yl); sissue(n + 1, next, yh, yl); }
                else { sload(n + 1, xh, xl); sissue(n + 1, next, xh, xl); }
                wg_wait<1>();
            } else {
                wg_wait<0>();
            }
            if (n % SPI == SPI - 1) mbar_arrive(empty + 8*((n/SPI) % ST));    // the slab's last item is done
            if (i % IPP == IPP - 1) {    // item n ends its part: added in part order, then cleared
                float (&done)[NF] = (i/IPP) % 2 ? acc_o : acc_e;
#pragma unroll
                for (int k = 0; k < NF; ++k) sum[k] = __fadd_rn(sum[k], done[k]);
                zero(done);
            }
        }
    }

    // Softmax in attn_flash's mapping: the sums into shared memory (head-major), then thread
    // 16 h + q of each head group of 8 takes head h's slots 4 q..4 q + 3.
    float * p = (float *) (smem + L::P_OFF + wg*L::P_BYTES), * plo = p + NHB*CHUNK;
    {
        float * sc = p;
#pragma unroll
        for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                sc[(8*jn + 2*c + e % 2)*SC_STR + 16*w + g + 8*(e/2)] = sum[4*jn + e];
            }
        }
    }
    wg_sync(wg);
    const int tw = tid % 128, hg = tw/16, q = tw % 16, s0 = chunk*CHUNK;
    float sv[NHB/8][4];
#pragma unroll
    for (int r = 0; r < NHB/8; ++r) {
        const float4 a = *(const float4 *) (p + (8*r + hg)*SC_STR + 4*q);
        sv[r][0] = a.x; sv[r][1] = a.y; sv[r][2] = a.z; sv[r][3] = a.w;
    }
    wg_sync(wg);    // every score is read before the numerators overwrite them
#pragma unroll
    for (int r = 0; r < NHB/8; ++r) {
        const int h = 8*r + hg;
        float * s = sv[r];
        float m = __int_as_float(0xff800000);  // -inf
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            s[i] = __fmul_rn(scale, s[i]);
            if (s0 + 4*q + i < n_slots) m = fmaxf(m, s[i]);
        }
#pragma unroll
        for (int offset = 8; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, offset, WARP_SIZE));
        float e[4];
        float l = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            e[i] = s0 + 4*q + i < n_slots ? expf(s[i] - m) : 0.0f;
            l = __fadd_rn(l, e[i]);
        }
#pragma unroll
        for (int offset = 8; offset > 0; offset >>= 1) l += __shfl_xor_sync(FULL_MASK, l, offset, WARP_SIZE);
        // Slot s at k-position 8 (s / 8) + 4 (s % 2) + s % 8 / 2 (attn_flash's order): slots 4 q and
        // 4 q + 2 at 8 (q / 2) + 2 (q % 2) and + 1, slots 4 q + 1 and 4 q + 3 four positions on, a
        // pair each as attn_flash stores them (scalar stores would meet 8-way bank conflicts).
        unsigned int hi[4], lo[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) tf32_split_rn(e[i], hi[i], lo[i]);
        const int pos = 8*(q/2) + 2*(q % 2);
        uint2 * p2 = (uint2 *) p, * plo2 = (uint2 *) plo;   // indexed as pairs: known 8-byte aligned
        p2[core_off(h, pos, CHUNK) >> 1] = make_uint2(hi[0], hi[2]);
        p2[core_off(h, pos + 4, CHUNK) >> 1] = make_uint2(hi[1], hi[3]);
        plo2[core_off(h, pos, CHUNK) >> 1] = make_uint2(lo[0], lo[2]);
        plo2[core_off(h, pos + 4, CHUNK) >> 1] = make_uint2(lo[1], lo[3]);
        if (q == 0 && stored) {
            float * out = ml + 2*(((size_t) token*chunks + chunk)*NH + grp*NHB + h);
            out[0] = m;
            out[1] = l;
        }
    }
    fence_async();
    wg_sync(wg);

    // O^T = V^T E^T, a 64-column tile an item pair: lane (g, c) of warp w holds columns 16 w + 2 g
    // and + 1 (M rows 16 w + g and + 8) and, in k-step kk, slots 8 kk + 2 c (k = c) and + 1
    // (k = c + 4). The stage is released once its fragments are in registers; two fragment sets
    // and two accumulators alternate.
    const uint32_t pb = smem_addr(p), plb = smem_addr(plo);
    float * ot = o + (((size_t) token*chunks + chunk)*NH + grp*NHB)*KV;
    float d0[NF], d1[NF];
    uint32_t ah[OK][4], al[OK][4], bh[OK][4], bl[OK][4];
    const auto oload = [&](int n, uint32_t (&hi)[OK][4], uint32_t (&lo)[OK][4]) {
        const int tile = n/TPI, qq = n % TPI, it = NSL + tile, s = it % ST;
        if (qq == 0) mbar_wait(full + 8*s, (it/ST) & 1);
        const float * v = (const float *) (smem + s*L::STAGE + wg*L::ROBYTES) + 2*c*RO_STR + 16*w + 2*g;
#pragma unroll
        for (int i = 0; i < OK; ++i) {
            const int kk = OK*qq + i;
            const float2 u0 = *(const float2 *) (v + 8*kk*RO_STR), u1 = *(const float2 *) (v + (8*kk + 1)*RO_STR);
            const float x[4] = {u0.x, u0.y, u1.x, u1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) tf32_split(x[e], hi[i][e], lo[i][e]);
        }
        if (qq == TPI - 1) mbar_arrive(empty + 8*s);    // the tile is in registers
    };
    const auto oissue = [&](float (&d)[NF], int n, const uint32_t (&hi)[OK][4], const uint32_t (&lo)[OK][4]) {
        wg_fence();
#pragma unroll
        for (int i = 0; i < OK; ++i) {
            const int kk = OK*(n % TPI) + i;
            const uint64_t bp = desc(pb + kk*256, CHUNK/4*128), bt = desc(plb + kk*256, CHUNK/4*128);
            Mma<NHB>::run(d, lo[i], bp);    // head(e) x tail(v)
            Mma<NHB>::run(d, hi[i], bt);    // tail(e) x head(v)
            Mma<NHB>::run(d, hi[i], bp);    // head(e) x head(v)
        }
        wg_commit();
    };
    const auto ostore = [&](const float (&d)[NF], int tile) {
        if (!stored) return;
#pragma unroll
        for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const int h = 8*jn + 2*c + b;
                *(float2 *) (ot + (size_t) h*KV + tile*64 + 16*w + 2*g) = make_float2(d[4*jn + b], d[4*jn + 2 + b]);
            }
        }
    };
#pragma unroll
    for (int n = 0; n < NO; ++n) {
        float (&d)[NF] = (n/TPI) % 2 ? d1 : d0;
        if (n % TPI == 0) zero(d);
        if (n >= 2) {
            wg_wait<1>();    // item n - 2 is done: its fragment set is free
            if ((n - 2) % TPI == TPI - 1) ostore(((n - 2)/TPI) % 2 ? d1 : d0, (n - 2)/TPI);
        }
        if (n % 2 == 0) { oload(n, ah, al); oissue(d, n, ah, al); }
        else { oload(n, bh, bl); oissue(d, n, bh, bl); }
    }
    wg_wait<0>();
    ostore(d1, NT - 1);
}

// ---------------------------------------------------------------------------------------------
// The harness: both arms on the same inputs, their workspaces and outputs compared bit for bit.

struct Bufs {
    float * q, * qlat, * qpe, * qs, * pool, * o, * ml, * out;
    int * idx;
};

template <int NHB>
static void proto(const Bufs & b, int t, int n_slots, int pool_rows, float scale, bool split, bool main) {
    using L = Layout<NHB, 4>;
    static bool set = false;
    if (!set) {
        CHECK(cudaFuncSetAttribute(flash_bits<NHB, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        set = true;
    }
    if (split) q_split<NHB><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
    if (main) flash_bits<NHB, 4><<<t*((n_slots + 2*CHUNK - 1)/(2*CHUNK))*(NH/NHB), THREADS, L::SMEM>>>(b.qs, b.pool, b.idx, b.o, b.ml, n_slots, pool_rows, scale);
}

// The Rust port's entries (flash_bits_h16, _h32, _h64), loaded from its PTX by the driver.
static CUfunction rust_entry[3];
static bool have_rust = false;
#define CU(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char * m = ""; cuGetErrorString(r, &m); \
    printf("%s: %s\n", #x, m); exit(1); } } while (0)

static void load_rust(const char * path) {
    FILE * f = fopen(path, "rb");
    if (!f) { printf("cannot open %s\n", path); exit(1); }
    std::string text;
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    fclose(f);
    CHECK(cudaFree(0));    // the runtime's primary context, current for the driver's calls
    CUmodule mod;
    CU(cuModuleLoadData(&mod, text.c_str()));
    const char * names[3] = {"flash_bits_h16", "flash_bits_h32", "flash_bits_h64"};
    const int smem[3] = {Layout<16, 4>::SMEM, Layout<32, 4>::SMEM, Layout<64, 4>::SMEM};
    for (int i = 0; i < 3; ++i) {
        CU(cuModuleGetFunction(&rust_entry[i], mod, names[i]));
        CU(cuFuncSetAttribute(rust_entry[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem[i]));
    }
    have_rust = true;
}

template <int NHB>
static void rust(const Bufs & b, int t, int n_slots, int pool_rows, float scale, bool split, bool main) {
    if (split) q_split<NHB><<<(t*NH*D + 255)/256, 256>>>(b.q, b.qs, t);
    if (main) {
        const unsigned int grid = t*((n_slots + 2*CHUNK - 1)/(2*CHUNK))*(NH/NHB);
        void * args[] = {(void *) &b.qs, (void *) &b.pool, (void *) &b.idx, (void *) &b.o, (void *) &b.ml,
                         &n_slots, &pool_rows, &scale};
        CU(cuLaunchKernel(rust_entry[NHB == 16 ? 0 : NHB == 32 ? 1 : 2], grid, 1, 1, THREADS, 1, 1,
                          Layout<NHB, 4>::SMEM, 0, args, nullptr));
    }
}

// The arms held to attn_flash: the .cu prototype at 16, 32 and 64 heads a block, then the Rust
// port's where loaded.
static const char * arm_names[6] = {"cu h16", "cu h32", "cu h64", "rust h16", "rust h32", "rust h64"};
static int arms() { return have_rust ? 6 : 3; }
static void arm(int a, const Bufs & b, int t, int n_slots, int pool_rows, float scale, bool split, bool main) {
    switch (a) {
    case 0: proto<16>(b, t, n_slots, pool_rows, scale, split, main); break;
    case 1: proto<32>(b, t, n_slots, pool_rows, scale, split, main); break;
    case 2: proto<64>(b, t, n_slots, pool_rows, scale, split, main); break;
    case 3: rust<16>(b, t, n_slots, pool_rows, scale, split, main); break;
    case 4: rust<32>(b, t, n_slots, pool_rows, scale, split, main); break;
    case 5: rust<64>(b, t, n_slots, pool_rows, scale, split, main); break;
    }
}

static int committed_smem(int pass_heads) {
    const int s = D + 4, work = CHUNK*s, queries = pass_heads*s, partials = FLASH_K_PARTS*pass_heads*FLASH_S_STRIDE;
    return 4*(work + std::max(queries, partials) + pass_heads*FLASH_P_STRIDE);
}

static void committed(const Bufs & b, int heads, int t, int n_slots, int pool_rows, float scale) {
    const dim3 grid(t*((n_slots + CHUNK - 1)/CHUNK)*(NH/heads));
    const float4 * ql = (const float4 *) b.qlat, * qp = (const float4 *) b.qpe, * cache = (const float4 *) b.pool;
    if (heads == 16) mla_attn_gathered_flash<<<grid, FLASH_BLOCK, committed_smem(16)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
    if (heads == 32) mla_attn_gathered_flash_h32<<<grid, FLASH_BLOCK, committed_smem(32)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
    if (heads == 64) mla_attn_gathered_flash_h64<<<grid, FLASH_BLOCK, committed_smem(32)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
}

// The committed combine as the project chains it: a programmatic dependent of the flash kernel.
static void combine(const Bufs & b, int t, int n_slots) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(t*NH*((KV/4 + FLASH_COMBINE_COLUMNS - 1)/FLASH_COMBINE_COLUMNS));
    cfg.blockDim = dim3(FLASH_COMBINE_BLOCK);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, mla_attn_flash_combine, (const float4 *) b.o, (const float *) b.ml, (float4 *) b.out, NH, KV, t, n_slots));
}

static std::vector<float> fetch(const float * p, size_t n) {
    std::vector<float> h(n);
    CHECK(cudaMemcpy(h.data(), p, n*4, cudaMemcpyDeviceToHost));
    return h;
}

static size_t differ(const std::vector<float> & a, const std::vector<float> & b, double & worst) {
    size_t n = 0;
    worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (memcmp(&a[i], &b[i], 4)) {
            ++n;
            const double d = fabs((double) a[i] - b[i]);
            worst = std::isnan(d) ? INFINITY : std::max(worst, d);
        }
    }
    return n;
}

int main(int argc, char ** argv) {
    if (argc > 1) load_rust(argv[1]);    // built for this program's geometry (rust/build.sh [v32])
    const int n_slots = 2048, pool_rows = 65536, chunks = n_slots/CHUNK, tmax = 8;
    const float scale = 1.0f/sqrtf(192.0f);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; %d heads, kv_rank %d, d_rope %d; prototype shared bytes a block: %d (16 heads), %d (32), %d (64)\n",
           prop.name, prop.multiProcessorCount, NH, KV, DR, Layout<16, 4>::SMEM, Layout<32, 4>::SMEM, Layout<64, 4>::SMEM);
    Bufs b;
    // The queries as one row of D a head for the prototype's split, as q_lat and q_pe for
    // attn_flash; the outputs nout = t x NH x KV.
    const size_t nq = (size_t) tmax*NH*D, npool = (size_t) pool_rows*D, nidx = (size_t) tmax*n_slots;
    const size_t no = (size_t) tmax*chunks*NH*KV, nml = (size_t) tmax*chunks*NH*2, nout = (size_t) tmax*NH*KV;
    CHECK(cudaMalloc(&b.q, nq*4));
    CHECK(cudaMalloc(&b.qlat, nout*4));
    CHECK(cudaMalloc(&b.qpe, (size_t) tmax*NH*(DR ? DR : 4)*4));
    CHECK(cudaMalloc(&b.qs, nq*8));
    CHECK(cudaMalloc(&b.pool, npool*4));
    CHECK(cudaMalloc(&b.idx, nidx*4));
    CHECK(cudaMalloc(&b.o, no*4));
    CHECK(cudaMalloc(&b.ml, nml*4));
    CHECK(cudaMalloc(&b.out, nout*4));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(16)));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash_h32, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(32)));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash_h64, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(32)));
    std::vector<float> hq(nq), hpool(npool);
    std::vector<int> hidx(nidx);
    long total_differ = 0;
    double worst_f64 = 0, worst_ref_f64 = 0;
    // Value classes: uniform in [-1, 1); outliers (the gate's: queries 300 times larger and eight
    // rows a token 10 times larger, so most weights underflow and a few scores are huge).
    for (int cls = 0; cls < 2; ++cls) {
        srand(1 + cls);
        for (auto & x : hq) x = (rand()/(float) RAND_MAX*2 - 1)*(cls ? 300.0f : 1.0f);
        for (auto & x : hpool) x = rand()/(float) RAND_MAX*2 - 1;
        for (auto & x : hidx) x = rand() % pool_rows;
        if (cls) {
            for (int t = 0; t < tmax; ++t)
                for (int k = 0; k < 8; ++k) {
                    float * row = &hpool[(size_t) hidx[(size_t) t*n_slots + 250*k + 3]*D];
                    for (int c = 0; c < D; ++c) row[c] *= 10.0f;
                }
        }
        CHECK(cudaMemcpy(b.q, hq.data(), nq*4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy2D(b.qlat, KV*4, hq.data(), D*4, KV*4, (size_t) tmax*NH, cudaMemcpyHostToDevice));
        if (DR) CHECK(cudaMemcpy2D(b.qpe, DR*4, hq.data() + KV, D*4, DR*4, (size_t) tmax*NH, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.pool, hpool.data(), npool*4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.idx, hidx.data(), nidx*4, cudaMemcpyHostToDevice));
        // The committed 16-head entry's workspace and outputs at t_q 8, then each prototype's.
        CHECK(cudaMemset(b.o, 0xff, no*4)); CHECK(cudaMemset(b.ml, 0xff, nml*4)); CHECK(cudaMemset(b.out, 0xff, nout*4));
        committed(b, 16, tmax, n_slots, pool_rows, scale);
        combine(b, tmax, n_slots);
        CHECK(cudaDeviceSynchronize());
        const std::vector<float> ro = fetch(b.o, no), rml = fetch(b.ml, nml), rout = fetch(b.out, nout);
        // The partials in f64 on a few (token, chunk, head) triples; attn_flash's own distance from
        // them is printed beside the prototype's (the outliers' large scores carry f32 errors).
        std::vector<size_t> f64_at;
        std::vector<double> f64_o, f64_l;
        for (int token : {1, 7}) for (int chunk : {0, 13, 31}) for (int h = 0; h < NH; h += 9) {
            double sc[CHUNK], m = -1e300, l = 0, ref[KV] = {};
            for (int s = 0; s < CHUNK; ++s) {
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + chunk*CHUNK + s]*D];
                double acc = 0;
                for (int k = 0; k < D; ++k) acc += (double) hq[((size_t) token*NH + h)*D + k]*row[k];
                sc[s] = acc*scale;
                m = std::max(m, sc[s]);
            }
            for (int s = 0; s < CHUNK; ++s) {
                const double e = exp(sc[s] - m);
                l += e;
                const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + chunk*CHUNK + s]*D];
                for (int k = 0; k < KV; ++k) ref[k] += e*row[k];
            }
            f64_at.push_back(((size_t) token*chunks + chunk)*NH + h);
            f64_l.push_back(l);
            f64_o.insert(f64_o.end(), ref, ref + KV);
        }
        const auto f64_worst = [&](const std::vector<float> & po) {
            double worst = 0;
            for (size_t j = 0; j < f64_at.size(); ++j)
                for (int k = 0; k < KV; ++k) {
                    const double err = fabs(po[f64_at[j]*KV + k] - f64_o[j*KV + k])/f64_l[j];
                    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
                }
            return worst;
        };
        const double ref_f64 = f64_worst(ro);
        worst_ref_f64 = std::max(worst_ref_f64, ref_f64);
        for (int a = 0; a < arms(); ++a) {
            CHECK(cudaMemset(b.o, 0xff, no*4)); CHECK(cudaMemset(b.ml, 0xff, nml*4)); CHECK(cudaMemset(b.out, 0xff, nout*4));
            arm(a, b, tmax, n_slots, pool_rows, scale, true, true);
            combine(b, tmax, n_slots);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            const std::vector<float> po = fetch(b.o, no), pml = fetch(b.ml, nml), pout = fetch(b.out, nout);
            double wo, wml, wout;
            const size_t d_o = differ(ro, po, wo), d_ml = differ(rml, pml, wml), d_out = differ(rout, pout, wout);
            total_differ += d_o + d_ml + d_out;
            // The prototype's partials against f64, on the triples above.
            const double worst = f64_worst(po);
            worst_f64 = std::max(worst_f64, worst);
            printf("%s, t_q 8, %s against attn_flash (16 heads): o_part %zu of %zu floats differ "
                   "(max |diff| %.3g), m and l %zu of %zu (%.3g), outputs %zu of %zu (%.3g); partials against f64: "
                   "max |o - ref| / l %.3g (attn_flash's %.3g)\n", cls ? "outliers" : "uniform", arm_names[a], d_o, no, wo, d_ml, nml, wml,
                   d_out, nout, wout, worst, ref_f64);
        }
    }
    // Irregular shapes, on the outlier data: a partial last chunk, an odd number of chunks (the
    // last pair's second warpgroup on zero rows), one slot, other token counts.
    const std::pair<int, int> shapes[] = {{8, 2047}, {3, 1000}, {1, 65}, {2, 64}, {5, 7}, {1, 1}};
    for (const auto & [t, ns] : shapes) {
        const int ch = (ns + CHUNK - 1)/CHUNK;
        const size_t no_s = (size_t) t*ch*NH*KV, nml_s = (size_t) t*ch*NH*2, nout_s = (size_t) t*NH*KV;
        CHECK(cudaMemset(b.o, 0xff, no*4)); CHECK(cudaMemset(b.ml, 0xff, nml*4)); CHECK(cudaMemset(b.out, 0xff, nout*4));
        committed(b, 16, t, ns, pool_rows, scale);
        combine(b, t, ns);
        CHECK(cudaDeviceSynchronize());
        const std::vector<float> ro = fetch(b.o, no_s), rml = fetch(b.ml, nml_s), rout = fetch(b.out, nout_s);
        printf("t_q %d, n_slots %d (outliers):", t, ns);
        for (int a = 0; a < arms(); ++a) {
            CHECK(cudaMemset(b.o, 0xff, no*4)); CHECK(cudaMemset(b.ml, 0xff, nml*4)); CHECK(cudaMemset(b.out, 0xff, nout*4));
            arm(a, b, t, ns, pool_rows, scale, true, true);
            combine(b, t, ns);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            double w;
            const size_t d = differ(ro, fetch(b.o, no_s), w) + differ(rml, fetch(b.ml, nml_s), w) + differ(rout, fetch(b.out, nout_s), w);
            total_differ += d;
            printf(" %s %zu of %zu floats differ;", arm_names[a], d, no_s + nml_s + nout_s);
        }
        printf("\n");
    }
    printf("%s\n", total_differ ? "THE PROTOTYPE'S BITS DIFFER FROM attn_flash's"
                                : "the prototype gives attn_flash's bits: every partial and every output");
    printf("%s (max %.3g; attn_flash's %.3g)\n", worst_f64 < 1e-5 ? "the partials are within 1e-5 x l of f64" : "THE PARTIALS ARE FAR FROM f64",
           worst_f64, worst_ref_f64);

    // Timing on uniform data: L2 scrubbed (a 256 MB memset) before each sample, events around the
    // arm, median of 21. The prototype's queries' split (a prepass) is timed alone and in the arm.
    srand(1);
    for (auto & x : hq) x = rand()/(float) RAND_MAX*2 - 1;
    CHECK(cudaMemcpy(b.q, hq.data(), nq*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(b.qlat, KV*4, hq.data(), D*4, KV*4, (size_t) tmax*NH, cudaMemcpyHostToDevice));
    if (DR) CHECK(cudaMemcpy2D(b.qpe, DR*4, hq.data() + KV, D*4, DR*4, (size_t) tmax*NH, cudaMemcpyHostToDevice));
    float * scrub;
    const size_t scrub_bytes = 256u << 20;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const auto time = [&](auto body) {
        std::vector<float> ms;
        for (int r = 0; r < 21; ++r) {
            CHECK(cudaMemsetAsync(scrub, r, scrub_bytes));
            cudaEventRecord(e0);
            body();
            cudaEventRecord(e1);
            CHECK(cudaEventSynchronize(e1));
            float x;
            cudaEventElapsedTime(&x, e0, e1);
            ms.push_back(x);
        }
        CHECK(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        return ms[10]*1e3;
    };
    for (int t : {1, 2, 4, 8}) {
        printf("t_q %d, us (flash kernel + combine):", t);
        for (int heads : {16, 32, 64}) {
            printf(" attn_flash h%d %.2f;", heads, time([&] { committed(b, heads, t, n_slots, pool_rows, scale); combine(b, t, n_slots); }));
        }
        for (int a = 0; a < arms(); ++a) {
            arm(a, b, t, n_slots, pool_rows, scale, true, false);    // the split, before the scrub
            const double main = time([&] { arm(a, b, t, n_slots, pool_rows, scale, false, true); combine(b, t, n_slots); });
            const double whole = time([&] { arm(a, b, t, n_slots, pool_rows, scale, true, true); combine(b, t, n_slots); });
            const double split = time([&] { arm(a, b, t, n_slots, pool_rows, scale, true, false); });
            printf(" %s %.2f (with the split %.2f; the split alone %.2f);", arm_names[a], main, whole, split);
        }
        printf("\n");
    }
    return 0;
}
