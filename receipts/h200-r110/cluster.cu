// attn_flash's workspace from a cluster of eight blocks a chunk, each block one eighth of
// the row (one of attn_flash's FLASH_K_PARTS score parts) for all of the cluster's heads.
//
// attn_flash (reference/mla_flash.cu, compiled beside it) gives a block a chunk of 64 slots and
// 16, 32 or 64 heads, whole rows: at t_q 1 (seed: 64 heads, 2048 slots) 128 blocks, each a long
// serial chain (stage the chunk's rows, score, softmax, sum). Here the eight blocks of a cluster
// share a chunk: block j stages only the columns of score part j (ceil(k-steps / 8) k-steps) of the 64
// rows and the queries, computes p_j for every head of the cluster, and after a cluster barrier
// the owner of each head (block j owns heads 2M j..) adds the eight p in part order from the
// blocks' shared memory (DSMEM), takes attn_flash's chunk softmax and stores the numerators into
// every block; after a second barrier block j sums numerator x value over the output column
// tiles it staged (the row's columns of part j below kv_rank). Every value is formed by the
// operations attn_flash forms it with, in its order (the same mma chains per output, the parts
// added in order, the same softmax function and numerator order), so the workspace and the
// committed combine's outputs are attn_flash's bits.
//
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I reference cluster.cu
// Run: cluster NH KV_RANK D_ROPE (64 512 0 for the seed's geometry, 128 512 64 for V3.2's)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include "mla_flash_base.cu"

// The cluster's PTX: this block's rank, the barrier (release / acquire), and the address of the
// same shared-memory word in block `rank` of the cluster.
static __device__ __forceinline__ int cluster_rank() {
    int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
static __device__ __forceinline__ unsigned int cluster_map(const float * p, const int rank) {
    unsigned int a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"((unsigned int) __cvta_generic_to_shared(p)), "r"(rank));
    return a;
}
static __device__ __forceinline__ float4 ld_cluster_f4(const unsigned int a) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
    return v;
}
static __device__ __forceinline__ void st_cluster_f2(const unsigned int a, const float x, const float y) {
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" : : "r"(a), "f"(x), "f"(y) : "memory");
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s (line %d)\n", #x, cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

#ifndef VARIANT
#define VARIANT 0                 // 1 to 5: return early (after the staging, the scores, the first
#endif                            // barrier, the second barrier; at entry), for timing only
#define CL_SIZE 8                 // blocks of a cluster: one a score part
#define CL_WARPS 8
#define CL_BLOCK (CL_WARPS*WARP_SIZE)
#define CL_PER_MAX 11             // k-steps of a part for rows up to 704 floats

// Shared floats of a block of M head tiles for parts of `per` k-steps: the rows' slice, the
// queries' slice, the block's score part, the numerators.
static __host__ __device__ constexpr int cl_stride(int per) { return 8*per + 4; }
static __host__ __device__ constexpr int cl_floats(int m, int per) {
    return FLASH_CHUNK*cl_stride(per) + 16*m*cl_stride(per) + 16*m*FLASH_S_STRIDE + 16*m*FLASH_P_STRIDE;
}

template <int M>
__global__ void __cluster_dims__(CL_SIZE, 1, 1) __launch_bounds__(CL_BLOCK)
flash_cluster(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe, const float4 * __restrict__ cache,
              const int * __restrict__ idx, float * __restrict__ o_part, float * __restrict__ ml, const int nh,
              const int kv_rank, const int d_rope, const int t, const int n_slots, const float scale, const int pool) {
    constexpr int HB = 16*M;
    constexpr int G = CL_WARPS/M;               // warp groups per head tile
    constexpr int TPW = (CL_PER_MAX + G - 1)/G; // output column tiles a warp may hold
    extern __shared__ float cl_shared[];
    chain_wait();
    if (VARIANT == 5) return;
    const int rank = cluster_rank();
    const int d = kv_rank + d_rope;
    const int kv4 = kv_rank/4, r4 = d_rope/4, d4 = d/4;
    const int ksteps = (d + 7)/8;
    const int per = (ksteps + FLASH_K_PARTS - 1)/FLASH_K_PARTS;
    const int stride = cl_stride(per);
    const int k0 = rank*per, k1 = min(ksteps, k0 + per);
    const int groups = (nh + HB - 1)/HB;
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK;
    const int c_id = blockIdx.x / CL_SIZE;
    const int group = c_id % groups;
    const int chunk = c_id / groups % chunks;
    const int token = c_id / groups / chunks;
    const int s0 = chunk*FLASH_CHUNK, h0 = group*HB;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int g = lane/4, c = lane%4;
    float * rows = cl_shared;
    float * queries = rows + FLASH_CHUNK*stride;
    float * partial = queries + HB*stride;
    float * num = partial + HB*FLASH_S_STRIDE;

    // Stage the part's columns (float4 2 k0.. of each row and query; zeros past the row, past
    // n_slots and past nh): the queries first (no index needed), then every index of the
    // thread's row pieces before the first row copy.
    const int pieces = 2*per;
    for (int p = threadIdx.x; p < HB*pieces; p += CL_BLOCK) {
        const int h = p / pieces, i = p % pieces, k = 2*k0 + i;
        const bool copy = h0 + h < nh && k < d4;
        const size_t head = (size_t) token*nh + h0 + h;
        const float4 * src = k < kv4 ? q_lat + head*kv4 + k : q_pe + head*r4 + (k - kv4);
        cp_async_cg_16_zfill((unsigned int) __cvta_generic_to_shared(queries + h*stride + 4*i), copy ? src : q_lat, copy ? 16 : 0);
    }
    {
        constexpr int MAXP = (FLASH_CHUNK*2*CL_PER_MAX + CL_BLOCK - 1)/CL_BLOCK;
        int found[MAXP];
#pragma unroll
        for (int j = 0; j < MAXP; ++j) {
            const int p = threadIdx.x + j*CL_BLOCK;
            const int r = min(p / pieces, FLASH_CHUNK - 1);
            found[j] = p < FLASH_CHUNK*pieces ? idx[(size_t) token*n_slots + min(s0 + r, n_slots - 1)] : 0;
        }
#pragma unroll
        for (int j = 0; j < MAXP; ++j) {
            const int p = threadIdx.x + j*CL_BLOCK;
            if (p < FLASH_CHUNK*pieces) {
                const int r = p / pieces, i = p % pieces, k = 2*k0 + i;
                const bool copy = s0 + r < n_slots && k < d4;
                const float4 * src = cache + (size_t) min(max(found[j], 0), pool - 1)*d4 + k;
                cp_async_cg_16_zfill((unsigned int) __cvta_generic_to_shared(rows + r*stride + 4*i), copy ? src : cache, copy ? 16 : 0);
            }
        }
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    if (VARIANT == 1) return;

    // Score part `rank`: warp w the head tile w % M and the slot tiles M (w / M)..; a 3xTF32 chain
    // per tile over the part's k-steps in order, from zero.
    {
        const int m = warp % M, tile0 = warp / M*M;
        float acc[M][4] = {};
        for (int ks = 0; ks < k1 - k0; ++ks) {
            unsigned int ah[4], at[4], bh[M][2], bt[M][2];
            load_a(queries + 16*m*stride + 8*ks, stride, ah, at);
#pragma unroll
            for (int j = 0; j < M; ++j) {
                const float * b = rows + (8*(tile0 + j) + g)*stride + 8*ks + c;
                tf32_split(b[0], bh[j][0], bt[j][0]);
                tf32_split(b[4], bh[j][1], bt[j][1]);
            }
            mma_3xtf32(acc, ah, at, bh, bt);
        }
        float * out = partial + (16*m + g)*FLASH_S_STRIDE + 2*c;
#pragma unroll
        for (int j = 0; j < M; ++j) {
            *(float2 *) (out + 8*(tile0 + j)) = make_float2(acc[j][0], acc[j][1]);
            *(float2 *) (out + 8*FLASH_S_STRIDE + 8*(tile0 + j)) = make_float2(acc[j][2], acc[j][3]);
        }
    }
    if (VARIANT == 2) return;
    cluster_sync();
    if (VARIANT == 3) return;

    // Softmax of the block's 2M heads: the parts added in order from the eight blocks, the
    // numerators stored into every block in the weighted sum's k order.
    if (threadIdx.x < 32*M) {
        const int h = rank*2*M + threadIdx.x / 16, q = threadIdx.x % 16;
        float s[4];
#pragma unroll
        for (int r = 0; r < CL_SIZE; ++r) {
            const float4 a = ld_cluster_f4(cluster_map(partial + h*FLASH_S_STRIDE + 4*q, r));
            if (r == 0) {
                s[0] = a.x; s[1] = a.y; s[2] = a.z; s[3] = a.w;
            } else {
                s[0] += a.x; s[1] += a.y; s[2] += a.z; s[3] += a.w;
            }
        }
        float m, e[4], l;
        flash_chunk_softmax(s, scale, s0 + 4*q, n_slots, m, e, l);
        const int at = h*FLASH_P_STRIDE + 8*(q/2) + 2*(q%2);
#pragma unroll
        for (int r = 0; r < CL_SIZE; ++r) {
            const unsigned int dst = cluster_map(num + at, r);
            st_cluster_f2(dst, e[0], e[2]);
            st_cluster_f2(dst + 16, e[1], e[3]);
        }
        if (q == 0 && h0 + h < nh) {
            float * out = ml + 2*(((size_t) token*chunks + chunk)*nh + h0 + h);
            out[0] = m;
            out[1] = l;
        }
    }
    cluster_sync();
    if (VARIANT == 4) return;

    // The weighted sum over the block's column tiles k0..min(k1, ntiles): warp w the head tile
    // w % M and TPW tiles from TPW (w / M); tiles past the block's repeat its last (not stored).
    const int ntiles = (kv_rank + 7)/8;
    const int nt = min(k1, ntiles) - k0;
    const int m = warp % M, first = warp / M*TPW;
    if (first < nt) {
        float o[TPW][4] = {};
        for (int ks = 0; ks < FLASH_TILES; ++ks) {
            unsigned int ah[4], at[4], bh[TPW][2], bt[TPW][2];
            load_a(num + 16*m*FLASH_P_STRIDE + 8*ks, FLASH_P_STRIDE, ah, at);
#pragma unroll
            for (int j = 0; j < TPW; ++j) {
                load_b(rows + 8*ks*stride + 8*min(first + j, nt - 1), stride, bh[j], bt[j]);
            }
            mma_3xtf32(o, ah, at, bh, bt);
        }
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            const int col = 8*(k0 + first + j) + 2*c;
            if (first + j >= nt || col >= kv_rank) {
                continue;
            }
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int h = h0 + 16*m + g + 8*half;
                if (h < nh) {
                    float * out = o_part + (((size_t) token*chunks + chunk)*nh + h)*kv_rank + col;
                    *(float2 *) out = make_float2(o[j][2*half], o[j][2*half + 1]);
                }
            }
        }
    }
}

// The launch floor without a cluster: the same grid and shared memory, nothing done.
__global__ void __launch_bounds__(CL_BLOCK) empty_plain(int * p) {
    chain_wait();
    if (p && threadIdx.x == 999) *p = 0;
}

// ---------------------------------------------------------------------------------------------
// The harness: attn_flash's entries and the cluster arms on the same inputs, the workspaces and
// combined outputs compared bit for bit, then timed.

static int NH, KV, DR, D;

struct Bufs {
    float * qlat, * qpe, * pool, * o, * ml, * out;
    int * idx;
};

static int committed_smem(int pass_heads) {
    const int s = (D + 7)/8*8 + 4, work = FLASH_CHUNK*s, queries = pass_heads*s, partials = FLASH_K_PARTS*pass_heads*FLASH_S_STRIDE;
    return 4*(work + std::max(queries, partials) + pass_heads*FLASH_P_STRIDE);
}

static void committed(const Bufs & b, int heads, int t, int n_slots, int pool_rows, float scale) {
    const dim3 grid(t*((n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK)*((NH + heads - 1)/heads));
    const float4 * ql = (const float4 *) b.qlat, * qp = (const float4 *) b.qpe, * cache = (const float4 *) b.pool;
    if (heads == 16) mla_attn_gathered_flash<<<grid, FLASH_BLOCK, committed_smem(16)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
    if (heads == 32) mla_attn_gathered_flash_h32<<<grid, FLASH_BLOCK, committed_smem(32)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
    if (heads == 64) mla_attn_gathered_flash_h64<<<grid, FLASH_BLOCK, committed_smem(32)>>>(ql, qp, cache, b.idx, b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
}

static int per() { return ((D + 7)/8 + FLASH_K_PARTS - 1)/FLASH_K_PARTS; }

template <int M>
static void cluster_arm(const Bufs & b, int t, int n_slots, int pool_rows, float scale) {
    const int smem = 4*cl_floats(M, per());
    static bool set = false;
    if (!set) {
        CHECK(cudaFuncSetAttribute(flash_cluster<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        set = true;
    }
    const dim3 grid(t*((n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK)*((NH + 16*M - 1)/(16*M))*CL_SIZE);
    flash_cluster<M><<<grid, CL_BLOCK, smem>>>((const float4 *) b.qlat, (const float4 *) b.qpe, (const float4 *) b.pool, b.idx,
                                               b.o, b.ml, NH, KV, DR, t, n_slots, scale, pool_rows);
}

static const char * arm_names[] = {"attn_flash h16", "attn_flash h32", "attn_flash h64", "cluster h16", "cluster h32", "cluster h64"};
static void arm(int a, const Bufs & b, int t, int n_slots, int pool_rows, float scale) {
    switch (a) {
    case 0: committed(b, 16, t, n_slots, pool_rows, scale); break;
    case 1: committed(b, 32, t, n_slots, pool_rows, scale); break;
    case 2: committed(b, 64, t, n_slots, pool_rows, scale); break;
    case 3: cluster_arm<1>(b, t, n_slots, pool_rows, scale); break;
    case 4: cluster_arm<2>(b, t, n_slots, pool_rows, scale); break;
    case 5: cluster_arm<4>(b, t, n_slots, pool_rows, scale); break;
    }
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

static size_t differ(const std::vector<float> & a, const std::vector<float> & b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += memcmp(&a[i], &b[i], 4) != 0;
    return n;
}

int main(int argc, char ** argv) {
    if (argc < 4) { printf("usage: cluster NH KV_RANK D_ROPE [time]\n"); return 2; }
    const bool time_only = argc > 4;
    NH = atoi(argv[1]); KV = atoi(argv[2]); DR = atoi(argv[3]); D = KV + DR;
    const int pool_rows = 65536, tmax = 8, smax = 6000;
    const float scale = 1.0f/sqrtf(192.0f);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; %d heads, kv_rank %d, d_rope %d; parts of %d k-steps; cluster shared bytes a block: %d (16 heads), %d (32), %d (64)\n",
           prop.name, prop.multiProcessorCount, NH, KV, DR, per(), 4*cl_floats(1, per()), 4*cl_floats(2, per()), 4*cl_floats(4, per()));
    Bufs b;
    const size_t nq = (size_t) tmax*NH*KV, nqp = (size_t) tmax*NH*(DR ? DR : 4), npool = (size_t) pool_rows*D, nidx = (size_t) tmax*smax;
    const size_t no = (size_t) tmax*((smax + 63)/64)*NH*KV, nml = (size_t) tmax*((smax + 63)/64)*NH*2, nout = (size_t) tmax*NH*KV;
    CHECK(cudaMalloc(&b.qlat, nq*4));
    CHECK(cudaMalloc(&b.qpe, nqp*4));
    CHECK(cudaMalloc(&b.pool, npool*4));
    CHECK(cudaMalloc(&b.idx, nidx*4));
    CHECK(cudaMalloc(&b.o, no*4));
    CHECK(cudaMalloc(&b.ml, nml*4));
    CHECK(cudaMalloc(&b.out, nout*4));
    for (auto f : {(const void *) mla_attn_gathered_flash, (const void *) mla_attn_gathered_flash_h32, (const void *) mla_attn_gathered_flash_h64})
        CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(f == (const void *) mla_attn_gathered_flash ? 16 : 32)));
    std::vector<float> hq(nq), hqp(nqp), hpool(npool);
    std::vector<int> hidx(nidx);
    long total_differ = 0;
    const auto fill = [&](int cls, int n_slots) {
        srand(1 + cls);
        for (auto & x : hq) x = (rand()/(float) RAND_MAX*2 - 1)*(cls == 1 ? 300.0f : 1.0f);
        for (auto & x : hqp) x = (rand()/(float) RAND_MAX*2 - 1)*(cls == 1 ? 300.0f : 1.0f);
        for (auto & x : hpool) x = rand()/(float) RAND_MAX*2 - 1;
        for (auto & x : hidx) x = rand() % pool_rows;
        if (cls == 1) {    // outliers: eight rows a token 10 times larger
            for (int t = 0; t < tmax; ++t)
                for (int k = 0; k < 8; ++k) {
                    float * row = &hpool[(size_t) hidx[(size_t) t*n_slots + (n_slots/8)*k]*D];
                    for (int c = 0; c < D; ++c) row[c] *= 10.0f;
                }
        }
        if (cls == 2) {    // edge: indices outside the pool, one row repeated, zero rows
            for (size_t i = 0; i < nidx; ++i) hidx[i] = i % 3 == 0 ? -5 : i % 3 == 1 ? pool_rows + 9 : 17;
            for (int c = 0; c < D; ++c) hpool[(size_t) 17*D + c] = 0.0f;
        }
        CHECK(cudaMemcpy(b.qlat, hq.data(), nq*4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.qpe, hqp.data(), nqp*4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.pool, hpool.data(), npool*4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.idx, hidx.data(), nidx*4, cudaMemcpyHostToDevice));
    };
    const auto poison = [&] {
        CHECK(cudaMemset(b.o, 0xff, no*4)); CHECK(cudaMemset(b.ml, 0xff, nml*4)); CHECK(cudaMemset(b.out, 0xff, nout*4));
    };
    // Bits: every arm against attn_flash h16 on the workspace and the combined outputs.
    const std::pair<int, int> shapes[] = {{8, 2048}, {1, 2048}, {8, 2047}, {3, 1000}, {1, 65}, {2, 64}, {5, 7}, {1, 1}, {2, 6000}};
    for (int cls = 0; cls < (time_only ? 0 : 3); ++cls) {
        for (const auto & [t, ns] : shapes) {
            fill(cls, ns);
            const int ch = (ns + 63)/64;
            const size_t no_s = (size_t) t*ch*NH*KV, nml_s = (size_t) t*ch*NH*2, nout_s = (size_t) t*NH*KV;
            poison();
            arm(0, b, t, ns, pool_rows, scale);
            combine(b, t, ns);
            CHECK(cudaDeviceSynchronize());
            const std::vector<float> ro = fetch(b.o, no_s), rml = fetch(b.ml, nml_s), rout = fetch(b.out, nout_s);
            printf("%s t_q %d, n_slots %d:", cls == 0 ? "uniform" : cls == 1 ? "outliers" : "edge", t, ns);
            for (int a = 1; a < 6; ++a) {
                poison();
                arm(a, b, t, ns, pool_rows, scale);
                combine(b, t, ns);
                CHECK(cudaGetLastError());
                CHECK(cudaDeviceSynchronize());
                const size_t d = differ(ro, fetch(b.o, no_s)) + differ(rml, fetch(b.ml, nml_s)) + differ(rout, fetch(b.out, nout_s));
                total_differ += d;
                printf(" %s %zu;", arm_names[a], d);
            }
            printf(" (floats differing of %zu)\n", no_s + nml_s + nout_s);
        }
    }
    if (!time_only) printf("%s\n", total_differ ? "THE BITS DIFFER" : "every arm gives attn_flash h16's bits: every partial and every output");

    // Time: L2 scrubbed (a 256 MB memset) before each sample, events around the flash kernel and
    // the combine, median of 21; uniform data and the edge class.
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
    if (time_only) {
        fill(0, 2048);
        for (int t : {1, 2, 8}) {
            const int ch = 2048/64;
            printf("variant %d, uniform, t_q %d, us, kernel alone:", VARIANT, t);
            for (int a : {0, 3, 4, 5}) printf(" %s %.2f;", arm_names[a], time([&] { arm(a, b, t, 2048, pool_rows, scale); }));
            CHECK(cudaFuncSetAttribute(empty_plain, cudaFuncAttributeMaxDynamicSharedMemorySize, 4*cl_floats(4, per())));
            printf(" empty plain (h64 cluster grid) %.2f;", time([&] { empty_plain<<<t*ch*((NH + 63)/64)*CL_SIZE, CL_BLOCK, 4*cl_floats(4, per())>>>(nullptr); }));
            printf(" combine alone %.2f\n", time([&] { combine(b, t, 2048); }));
        }
        return 0;
    }
    for (int cls : {0, 2}) {
        fill(cls, 2048);
        for (int t : {1, 2, 4, 8}) {
            printf("%s, t_q %d, us (flash kernel + combine | kernel alone):", cls ? "edge" : "uniform", t);
            for (int a = 0; a < 6; ++a) {
                const double both = time([&] { arm(a, b, t, 2048, pool_rows, scale); combine(b, t, 2048); });
                const double alone = time([&] { arm(a, b, t, 2048, pool_rows, scale); });
                printf(" %s %.2f | %.2f;", arm_names[a], both, alone);
            }
            printf("\n");
        }
    }
    return 0;
}
