// Prototype: the gathered MLA attention's main kernel on Hopper's warpgroup tensor cores (wgmma,
// sm_90a), 3xTF32. Seed geometry: 64 heads, rows of 512 f32, chunks of 64 slots.
// Block (token, chunk, part): all 64 heads; S = Q K^T over four k-slabs of 128 (two warpgroups,
// 32 slots each, A = Q from registers split at use, B = K slab and its tf32 tails from shared
// memory); a softmax within the chunk; O^T = V^T P^T for the part's column slabs (A = V^T from
// registers, B = P and its tails). Partials (o, m, l) per (token, chunk).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int NH = 64, D = 512, CHUNK = 64, SLAB = 64, NSLAB = D/SLAB, THREADS = 256, STAGES = 4;
constexpr int VSLAB = 128, NVSLAB = D/VSLAB, VSTAGES = 3;
constexpr int QSTR = SLAB + 4, VSTR = VSLAB + 8, SSTR = CHUNK + 4;
// Shared memory (bytes). S phase: two stages of {Q slab [64][QSTR], K slab, K tails (core
// matrices)}. O phase (reusing it): S scratch, P and P tails, two V stages [64][VSTR].
constexpr int Q_BYTES = NH*QSTR*4, K_BYTES = CHUNK*SLAB*4, STAGE_S = Q_BYTES + 2*K_BYTES;
constexpr int S_OFF = 0, P_OFF = 2*NH*SSTR*4, PLO_OFF = P_OFF + NH*CHUNK*4, V_OFF = PLO_OFF + NH*CHUNK*4;
constexpr int V_BYTES = CHUNK*VSTR*4;
constexpr int SMEM = STAGES*STAGE_S > V_OFF + VSTAGES*V_BYTES ? STAGES*STAGE_S : V_OFF + VSTAGES*V_BYTES;

__device__ __forceinline__ uint32_t smem_addr(const void * p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t) ((addr >> 4) & 0x3fff) | (uint64_t) ((lbo >> 4) & 0x3fff) << 16 |
        (uint64_t) ((sbo >> 4) & 0x3fff) << 32;
}
__device__ __forceinline__ void cp16(void * dst, const void * src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

__device__ __forceinline__ uint32_t tail(float x) {
    return __float_as_uint(x - __uint_as_float(__float_as_uint(x) & 0xffffe000u));
}

#define R8(i) "+f"(d[i]), "+f"(d[i+1]), "+f"(d[i+2]), "+f"(d[i+3]), "+f"(d[i+4]), "+f"(d[i+5]), "+f"(d[i+6]), "+f"(d[i+7])

__device__ __forceinline__ void mma_n32(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;"
        : R8(0), R8(8) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void mma_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1;"
        : R8(0), R8(8), R8(16), R8(24) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// Core-matrix (no swizzle, K-major) offset of element (row n, column k) of a tile whose rows hold
// `kcols` columns: 8 rows x 16 bytes a core matrix, K-adjacent core matrices 128 bytes apart (LBO),
// 8-row groups kcols/4*128 bytes apart (SBO).
__device__ __forceinline__ int core_off(int n, int k, int kcols) {
    return (n/8)*(kcols/4*128) + (k/4)*128 + (n%8)*16 + (k%4)*4;
}

__global__ void __launch_bounds__(THREADS, 1)
flash_wgmma(const float * __restrict__ q, const float * __restrict__ pool, const int * __restrict__ idx,
            float * __restrict__ o, float * __restrict__ ml, int n_slots, int pool_rows, float scale,
            int parts, int lbo_sel, float * __restrict__ dbg, int s_only) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int part = blockIdx.x % parts, chunk = blockIdx.x / parts % (n_slots/CHUNK);
    const int token = blockIdx.x / parts / (n_slots/CHUNK), chunks = n_slots/CHUNK;
    const int tid = threadIdx.x, wg = tid/128, w = tid/32 % 4, lane = tid % 32, g = lane/4, c = lane%4;
    const float * qt = q + (size_t) token*NH*D;
    // The rows this thread copies: slot tid/32 + 8 r, 16-byte piece tid % 32.
    int rows[8], krows[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        krows[r] = min(max(idx[(size_t) token*n_slots + chunk*CHUNK + tid/16 + 16*r], 0), pool_rows - 1);
    }
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        rows[r] = min(max(idx[(size_t) token*n_slots + chunk*CHUNK + tid/32 + 8*r], 0), pool_rows - 1);
    }
    // lbo_sel 1: K-adjacent core matrices in the descriptor's leading field, 8-row groups in the
    // stride field; 0: the other way round.
    const uint32_t sbo_k = SLAB/4*128, sbo_p = CHUNK/4*128;
    const auto dk = [&](uint32_t addr) { return lbo_sel ? desc(addr, 128, sbo_k) : desc(addr, sbo_k, 128); };
    const auto dp = [&](uint32_t addr) { return lbo_sel ? desc(addr, 128, sbo_p) : desc(addr, sbo_p, 128); };
    const auto stage_s = [&](int j, int buf) {
        unsigned char * st = smem + buf*STAGE_S;
        float * qs = (float *) st;
        unsigned char * ks = st + Q_BYTES;
        if (j < NSLAB) {
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int s = tid/16 + 16*r, piece = tid % 16;
                cp16(qs + s*QSTR + piece*4, qt + (size_t) s*D + j*SLAB + piece*4);    // s: a head here
                cp16(ks + core_off(s, piece*4, SLAB), pool + (size_t) krows[r]*D + j*SLAB + piece*4);
            }
        }
        cp_commit();
    };
    // Each warpgroup: all 64 slots (N = 64) over its half of every slab's k-steps; the two partial
    // scores are added in the softmax.
    // Three independent accumulation chains (tail x head, head x tail, head x head), added at the end.
    float acc[32], acc_lh[32], acc_hl[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) { acc[i] = 0.0f; acc_lh[i] = 0.0f; acc_hl[i] = 0.0f; }
    for (int j = 0; j < STAGES - 1; ++j) {
        stage_s(j, j);
    }
    for (int j = 0; j < NSLAB; ++j) {
        const int buf = j % STAGES;
        cp_wait<STAGES - 2>();
        unsigned char * st = smem + buf*STAGE_S;
        const float * ks = (const float *) (st + Q_BYTES);
        float * klo = (float *) (st + Q_BYTES + K_BYTES);
        // The tails of the pieces this thread copied (its own copies are the ones its wait covers).
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int off = core_off(tid/16 + 16*r, tid % 16*4, SLAB)/4;
            const float4 v = *(const float4 *) (ks + off);
            *(float4 *) (klo + off) = make_float4(__uint_as_float(tail(v.x)), __uint_as_float(tail(v.y)),
                                                  __uint_as_float(tail(v.z)), __uint_as_float(tail(v.w)));
        }
        fence_async();
        __syncthreads();
        stage_s(j + STAGES - 1, (j + STAGES - 1) % STAGES);
        const float * qs = (const float *) st;
        const uint32_t kb = smem_addr(ks), lb = smem_addr(klo);
        constexpr int KW = SLAB/16;
        uint32_t hi[KW][4], lo[KW][4];
#pragma unroll
        for (int i = 0; i < KW; ++i) {
            const int kk = wg*KW + i, h0 = 16*w + g, k0 = kk*8 + c;
            const float x[4] = {qs[h0*QSTR + k0], qs[(h0 + 8)*QSTR + k0], qs[h0*QSTR + k0 + 4], qs[(h0 + 8)*QSTR + k0 + 4]};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[i][e] = __float_as_uint(x[e]); lo[i][e] = tail(x[e]); }
        }
        wg_fence();
#pragma unroll
        for (int i = 0; i < KW; ++i) {
            const int kk = wg*KW + i;
            const uint64_t bk = dk(kb + kk*256), bl = dk(lb + kk*256);
            mma_n64(acc_lh, lo[i], bk);
            mma_n64(acc_hl, hi[i], bl);
            mma_n64(acc, hi[i], bk);
        }
        wg_commit();
        wg_wait<0>();
        __syncthreads();
    }
    // Softmax within the chunk: each warpgroup's partial scores to shared memory, four threads a head.
    float * ss = (float *) (smem + S_OFF) + wg*NH*SSTR;
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int h = 16*w + g + (e >= 2 ? 8 : 0), s = 8*jj + 2*c + (e & 1);
            ss[h*SSTR + s] = (acc_lh[4*jj + e] + acc_hl[4*jj + e]) + acc[4*jj + e];
        }
    }
    __syncthreads();
    // The first V slab's copy goes out under the softmax.
    const int slabs = NVSLAB/parts, first = part*slabs;
    const auto stage_v = [&](int j, int buf) {
        float * vs = (float *) (smem + V_OFF + buf*V_BYTES);
        if (j < first + slabs) {
#pragma unroll
            for (int r = 0; r < 8; ++r) {
                const int s = tid/32 + 8*r, piece = tid % 32;
                cp16(vs + s*VSTR + piece*4, pool + (size_t) rows[r]*D + j*VSLAB + piece*4);
            }
        }
        cp_commit();
    };
    for (int jj = 0; jj < VSTAGES - 1; ++jj) {
        stage_v(first + jj, jj);
    }
    {
        const int h = tid/4, q4 = tid % 4;
        float m = -INFINITY;
        const float * s0 = (const float *) (smem + S_OFF), * s1 = s0 + NH*SSTR;
        float z[16];
        for (int i = 0; i < 16; ++i) {
            const int s = q4*16 + i;
            z[i] = (s0[h*SSTR + s] + s1[h*SSTR + s])*scale;
            if (dbg && part == 0) dbg[((size_t) token*chunks + chunk)*NH*CHUNK + h*CHUNK + s] = z[i];
            m = fmaxf(m, z[i]);
        }
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2));
        float l = 0.0f;
        float * p = (float *) (smem + P_OFF), * plo = (float *) (smem + PLO_OFF);
        for (int i = 0; i < 16; ++i) {
            const int s = q4*16 + i;
            const float e = expf(z[i] - m);
            l += e;
            p[core_off(h, s, CHUNK)/4] = e;
            plo[core_off(h, s, CHUNK)/4] = __uint_as_float(tail(e));
        }
        l += __shfl_xor_sync(0xffffffff, l, 1);
        l += __shfl_xor_sync(0xffffffff, l, 2);
        if (q4 == 0 && part == 0) {
            float * mlp = ml + ((size_t) token*chunks + chunk)*NH*2;
            mlp[2*h] = m;
            mlp[2*h + 1] = l;
        }
    }
    fence_async();
    if (s_only) {
        return;
    }
    const uint32_t pb = smem_addr(smem + P_OFF), plb = smem_addr(smem + PLO_OFF);
    float * ot = o + ((size_t) token*chunks + chunk)*NH*D;
    for (int jj = 0; jj < slabs; ++jj) {
        const int j = first + jj, buf = jj % VSTAGES;
        cp_wait<VSTAGES - 2>();
        __syncthreads();
        stage_v(j + VSTAGES - 1, (jj + VSTAGES - 1) % VSTAGES);
        const float * vs = (const float *) (smem + V_OFF + buf*V_BYTES);
        float d[32];
#pragma unroll
        for (int i = 0; i < 32; ++i) d[i] = 0.0f;
        uint32_t hi[8][4], lo[8][4];
#pragma unroll
        for (int kk = 0; kk < CHUNK/8; ++kk) {
            const int col = wg*64 + 16*w + g, s0 = kk*8 + c;
            const float x[4] = {vs[s0*VSTR + col], vs[s0*VSTR + col + 8], vs[(s0 + 4)*VSTR + col], vs[(s0 + 4)*VSTR + col + 8]};
#pragma unroll
            for (int e = 0; e < 4; ++e) { hi[kk][e] = __float_as_uint(x[e]); lo[kk][e] = tail(x[e]); }
        }
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < CHUNK/8; ++kk) {
            const uint64_t bp = dp(pb + kk*256), bl = dp(plb + kk*256);
            mma_n64(d, lo[kk], bp);
            mma_n64(d, hi[kk], bl);
            mma_n64(d, hi[kk], bp);
        }
        wg_commit();
        wg_wait<0>();
        // d[4 jh + e]: column (V's) wg*64 + 16w + g (+8 for e >= 2), head 8 jh + 2c + (e & 1).
#pragma unroll
        for (int jh = 0; jh < 8; ++jh) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = j*VSLAB + wg*64 + 16*w + g + (e >= 2 ? 8 : 0), h = 8*jh + 2*c + (e & 1);
                ot[(size_t) h*D + col] = d[4*jh + e];
            }
        }
    }
}

int main(int argc, char ** argv) {
    const int n_slots = 2048, pool_rows = 65536, chunks = n_slots/CHUNK;
    const float scale = 1.0f/sqrtf(192.0f);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, shared %d bytes a block\n", prop.name, prop.multiProcessorCount, SMEM);
    const int tmax = 8;
    std::vector<float> hq((size_t) tmax*NH*D), hpool((size_t) pool_rows*D);
    std::vector<int> hidx((size_t) tmax*n_slots);
    srand(1);
    for (auto & x : hq) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hpool) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hidx) x = rand() % pool_rows;
    float * q, * pool, * o, * ml, * scrub;
    int * idx;
    CHECK(cudaMalloc(&q, hq.size()*4));
    CHECK(cudaMalloc(&pool, hpool.size()*4));
    CHECK(cudaMalloc(&idx, hidx.size()*4));
    CHECK(cudaMalloc(&o, (size_t) tmax*chunks*NH*D*4));
    CHECK(cudaMalloc(&ml, (size_t) tmax*chunks*NH*2*4));
    const size_t scrub_bytes = 256u << 20;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    float * dbg;
    CHECK(cudaMalloc(&dbg, (size_t) tmax*chunks*NH*CHUNK*4));
    CHECK(cudaMemcpy(q, hq.data(), hq.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(pool, hpool.data(), hpool.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(idx, hidx.data(), hidx.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaFuncSetAttribute(flash_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));

    // Correctness: token 1 (t_q 8 layout), two chunks, both LBO readings, against f64.
    for (int lbo_sel = 0; lbo_sel < 2; ++lbo_sel) {
        for (int parts : {1, 4}) {
            CHECK(cudaMemset(o, 0xff, (size_t) tmax*chunks*NH*D*4));
            CHECK(cudaMemset(ml, 0, (size_t) tmax*chunks*NH*2*4));
            flash_wgmma<<<tmax*chunks*parts, THREADS, SMEM>>>(q, pool, idx, o, ml, n_slots, pool_rows, scale, parts, lbo_sel, dbg, 0);
            CHECK(cudaDeviceSynchronize());
            double worst = 0, worst_ml = 0;
            for (int token : {1, 7}) for (int chunk : {0, 13}) {
                std::vector<float> ho((size_t) NH*D), hml(NH*2);
                CHECK(cudaMemcpy(ho.data(), o + ((size_t) token*chunks + chunk)*NH*D, ho.size()*4, cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(hml.data(), ml + ((size_t) token*chunks + chunk)*NH*2, NH*2*4, cudaMemcpyDeviceToHost));
                for (int h = 0; h < NH; ++h) {
                    double sc[CHUNK], m = -1e300, l = 0;
                    std::vector<float> hz(CHUNK);
                    CHECK(cudaMemcpy(hz.data(), dbg + ((size_t) token*chunks + chunk)*NH*CHUNK + h*CHUNK, CHUNK*4, cudaMemcpyDeviceToHost));
                    for (int s = 0; s < CHUNK; ++s) {
                        const float * row = &hpool[(size_t) hidx[(size_t) token*n_slots + chunk*CHUNK + s]*D];
                        double acc = 0;
                        for (int k = 0; k < D; ++k) acc += (double) hq[((size_t) token*NH + h)*D + k]*row[k];
                        sc[s] = acc*scale;
                        if (lbo_sel == 1 && parts == 1 && !(fabs(hz[s] - sc[s]) <= 1e-4) && h < 3) {
                            printf("    S token %d chunk %d head %d slot %d (row %d): %.7f ref %.7f\n", token, chunk, h, s,
                                   hidx[(size_t) token*n_slots + chunk*CHUNK + s], hz[s], sc[s]);
                        }
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
                    if (lbo_sel == 1 && !(em <= 1e-4 && el <= 1e-4) && worst_ml < 1e-4) {
                        printf("  token %d chunk %d head %d: m %.8f ref %.8f, l %.8f ref %.8f\n", token, chunk, h, hml[2*h], m, hml[2*h + 1], l);
                    }
                    worst_ml = std::isnan(em + el) ? INFINITY : std::max(worst_ml, std::max(em, el));
                }
            }
            printf("check lbo_sel=%d parts=%d: max |o - ref| / l = %.3e, m and l rel %.3e\n", lbo_sel, parts, worst, worst_ml);
        }
    }

    // Timing: each launch after a scrub of L2, events around the kernel alone, median of 21.
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    const int lbo_sel = argc > 1 ? atoi(argv[1]) : 1;
    for (int s_only : {0, 1})
    for (int t : {1, 2, 4, 8}) {
        for (int parts : {1, 2, 4}) {
            std::vector<float> ms;
            for (int r = 0; r < 21; ++r) {
                CHECK(cudaMemsetAsync(scrub, r, scrub_bytes));
                cudaEventRecord(a);
                flash_wgmma<<<t*chunks*parts, THREADS, SMEM>>>(q, pool, idx, o, ml, n_slots, pool_rows, scale, parts, lbo_sel, nullptr, s_only);
                cudaEventRecord(b);
                CHECK(cudaEventSynchronize(b));
                float x;
                cudaEventElapsedTime(&x, a, b);
                ms.push_back(x);
            }
            std::sort(ms.begin(), ms.end());
            const double us = ms[10]*1e3, flop = 2.0*t*NH*n_slots*(D + D);
            printf("%st_q %d parts %d: %d blocks, %.2f us (min %.2f), %.1f TFLOP/s of f32 work\n", s_only ? "scores and softmax only: " : "", t, parts,
                   t*chunks*parts, us, ms[0]*1e3, flop/us/1e6);
        }
    }
    return 0;
}
