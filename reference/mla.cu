// Reference CUDA C++ for the MLA decode family: absorb_q, decompress_v and attn_gathered, each as
// the unsplit kernel and its split-2/4/8 twins. Same symbols and argument lists as
// kernels-gpu/src/mla/*.rs, and per output element the same floating-point operations in the
// same order (the module docs there state each sequence).
//
// A split changes the launch geometry only: SPLIT blocks share what one unsplit block computes,
// each keeping a slice of its outputs, so every twin gives the unsplit kernel's bits.

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

#include "tf32.cuh"

static __device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(FULL_MASK, x, offset, WARP_SIZE);
    }
    return x;
}

static __device__ __forceinline__ float warp_reduce_max(float x) {
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        x = fmaxf(x, __shfl_xor_sync(FULL_MASK, x, offset, WARP_SIZE));
    }
    return x;
}

// The slice [begin, end) of 0..n that block `part` of a split launch keeps: ceil(n/split) each.
static __device__ __forceinline__ void split_range(const int n, const int split, const int part,
                                                   int & begin, int & end) {
    const int per = (n + split - 1) / split;
    begin = min(part*per, n);
    end = min(begin + per, n);
}

// Asks for the 128-byte line holding p to be brought into L2, with no register to receive it: a
// hint, which writes nothing and changes no value.
static __device__ __forceinline__ void prefetch_l2(const void * p) {
    asm volatile("prefetch.global.L2 [%0];" :: "l"(__cvta_generic_to_global(p)));
}

// p + a.b over one float4, one fma per lane in order (contracted by --fmad=true).
static __device__ __forceinline__ float dot4(const float4 a, const float4 b, float p) {
    p += a.x*b.x;
    p += a.y*b.y;
    p += a.z*b.z;
    p += a.w*b.w;
    return p;
}

// ---------------------------------------------------------------------------------------------
// absorb_q / decompress_v: y[t, h, r] = sum_k x[t, h, k] * w[h, r, k], on the tensor cores
//
// block: one head, rows split_range(r, SPLIT, blockIdx.x % SPLIT); x of the head staged in
// shared memory as the mma's B fragments, split. The block takes tiles of 16 rows in turn, each in
// passes of GEMV_WARPS*GEMV_WARP_GROUPS groups of 16 floats: the block copies a pass of all 16
// rows at once through a ring in shared memory (cp.async, GEMV_STAGES - 1 passes ahead), and warp
// w folds groups 2(8 pass + w) + u (u < 2) into acc[u] as mma.m16n8k8 chains in 3xTF32: the
// weights are A (by ldmatrix), the tokens the B columns (token g = lane/4). Group j's k-step s
// takes floats 16j + 8s + c (the mma's k = c) and 16j + 8s + 4 + c (k = c + 4), zeros past the
// row. After a tile's last pass each warp's partial acc[0] + acc[1] goes to shared memory, and
// y = the warps' partials added in warp order from warp 0. Weights and activations are split by
// truncation (tf32_tail).

#define GEMV_BLOCK 256
#define GEMV_WARPS (GEMV_BLOCK/WARP_SIZE)
#define GEMV_TILE_ROWS 16    // weight rows of a tile: the mma's m
#define GEMV_WARP_GROUPS 2   // groups of 16 floats a warp folds per pass, one accumulator each
#define GEMV_STAGES 3        // passes of the block's ring
#define GEMV_MAX_T 8         // tokens per launch: the mma's n
#define GEMV_ROW_BYTES (GEMV_WARP_GROUPS*64)                          // a warp's part of a row in a stage
#define GEMV_WARP_STAGE_BYTES (GEMV_TILE_ROWS*GEMV_ROW_BYTES)
#define GEMV_STAGE_BYTES (GEMV_WARPS*GEMV_WARP_STAGE_BYTES)
#define GEMV_RING (GEMV_STAGES*GEMV_STAGE_BYTES)
#define GEMV_PARTIALS (2*GEMV_WARPS*WARP_SIZE*16)                     // two tiles of the warps' partials

static __host__ __device__ constexpr int gemv_passes(const int k) {
    return (k + 16*GEMV_WARPS*GEMV_WARP_GROUPS - 1)/(16*GEMV_WARPS*GEMV_WARP_GROUPS);
}

// Bytes of one staged token: a float4 per group, k-step and lane column, and 64 more so that the
// two tokens a quarter warp reads fall in different halves of the banks.
static __host__ __device__ constexpr int gemv_x_token_bytes(const int k) {
    return gemv_passes(k)*GEMV_WARPS*GEMV_WARP_GROUPS*2*4*16 + 64;
}

// Byte offset in a warp's part of a stage of chunk `chunk` of the tile's row `row`: chunks swizzled
// by the row's low three bits, so that the eight rows one ldmatrix matrix reads fall in eight bank
// groups.
static __device__ __forceinline__ int gemv_slot(const int row, const int chunk) {
    return row*GEMV_ROW_BYTES + 16*(chunk ^ (row % 8));
}

static __device__ __forceinline__ void cp_async_cg_16_zfill(char * dst, const void * src, const bool copy) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 : : "r"((unsigned int) __cvta_generic_to_shared(dst)), "l"(__cvta_generic_to_global(src)), "r"(copy ? 16 : 0));
}

// Copies the warp's part of pass `pass` of the tile at row0 into a stage (`stage`, the warp's
// part): lane (g, c) chunk 4j + c of rows g and g + 8 for each of the warp's groups j, zeros past
// the row and past end; then commits the group.
static __device__ __forceinline__ void gemv_copy_pass(char * stage, const float4 * __restrict__ w, const int row0,
                                                      const int end, const int pass, const int k4) {
    const int warp = threadIdx.x / WARP_SIZE;
    const int g = threadIdx.x % WARP_SIZE / 4;
    const int c = threadIdx.x % 4;
#pragma unroll
    for (int u = 0; u < GEMV_WARP_GROUPS; ++u) {
        const int chunk = 4*(GEMV_WARP_GROUPS*(GEMV_WARPS*pass + warp) + u) + c;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int row = g + 8*i;
            const bool copy = row0 + row < end && chunk < k4;
            cp_async_cg_16_zfill(stage + gemv_slot(row, 4*u + c), copy ? w + (row0 + row)*k4 + chunk : w, copy);
        }
    }
    asm volatile("cp.async.commit_group;");
}

// acc[u] += the products of the warp's group u of a pass: k-step s on chunks 4u + 2s (k 0..3) and
// 4u + 2s + 1 (k 4..7), the weights by ldmatrix (lanes 8m..8m+7 name rows 8(m%2).. of chunk
// 4u + 2s + m/2), split here, the token's as staged (xs points at the lane's first of the pass);
// every group's first k-step before any second.
static __device__ __forceinline__ void gemv_fold_pass(float (&acc)[GEMV_WARP_GROUPS][4], const char * stage,
                                                      const float4 * xs) {
    const int lane = threadIdx.x % WARP_SIZE;
    const int m = lane / 8;
    const int r = lane % 8;
    unsigned int a[GEMV_WARP_GROUPS][2][4];
    float4 b[GEMV_WARP_GROUPS][2];
#pragma unroll
    for (int u = 0; u < GEMV_WARP_GROUPS; ++u) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            ldmatrix_x4(a[u][s], (const float *) (stage + gemv_slot(r + 8*(m % 2), 4*u + 2*s + m/2)));
            b[u][s] = xs[8*u + 4*s];
        }
    }
#pragma unroll
    for (int s = 0; s < 2; ++s) {
        unsigned int ah[GEMV_WARP_GROUPS][4], at[GEMV_WARP_GROUPS][4], bh[GEMV_WARP_GROUPS][2], bt[GEMV_WARP_GROUPS][2];
#pragma unroll
        for (int u = 0; u < GEMV_WARP_GROUPS; ++u) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                ah[u][i] = a[u][s][i];
                at[u][i] = __float_as_uint(tf32_tail(__uint_as_float(a[u][s][i])));
            }
            bh[u][0] = __float_as_uint(b[u][s].x);
            bh[u][1] = __float_as_uint(b[u][s].y);
            bt[u][0] = __float_as_uint(b[u][s].z);
            bt[u][1] = __float_as_uint(b[u][s].w);
        }
        mma_3xtf32_each<GEMV_WARP_GROUPS>(acc, ah, at, bh, bt);
    }
}

// A t outside 1..GEMV_MAX_T writes nothing.
template <int SPLIT>
static __device__ __forceinline__ void gemv(const float * __restrict__ x, const float4 * __restrict__ w,
                                            float * __restrict__ y, const int t, const int nh, const int k,
                                            const int r) {
    extern __shared__ __align__(16) char smem[];
    if (t < 1 || t > GEMV_MAX_T) {
        return;
    }
    const int k4 = k/4;
    const int head = blockIdx.x / SPLIT;
    int begin, end;
    split_range(r, SPLIT, blockIdx.x % SPLIT, begin, end);
    if (begin >= end) {
        return;
    }
    w += head*r*k4;
    float4 * xs = (float4 *) (smem + GEMV_RING);
    const int xt = gemv_x_token_bytes(k)/16;
    float * partials = (float *) (smem + GEMV_RING + GEMV_MAX_T*gemv_x_token_bytes(k));
    const int warp = threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    char * ring = smem + warp*GEMV_WARP_STAGE_BYTES;
    const int tiles = (end - begin + GEMV_TILE_ROWS - 1)/GEMV_TILE_ROWS;
    const int passes = gemv_passes(k);

    // Past the last tile the copies read nothing and fill zeros.
    int ahead_tile = 0, ahead_pass = 0, ahead_stage = 0;
    const auto advance = [passes](int & tile, int & pass, int & stage) {
        if (++pass == passes) {
            pass = 0;
            ++tile;
        }
        stage = stage + 1 == GEMV_STAGES ? 0 : stage + 1;
    };
#pragma unroll
    for (int p = 0; p < GEMV_STAGES - 1; ++p) {
        gemv_copy_pass(ring + ahead_stage*GEMV_STAGE_BYTES, w, begin + GEMV_TILE_ROWS*ahead_tile, end, ahead_pass, k4);
        advance(ahead_tile, ahead_pass, ahead_stage);
    }

    // x as B fragments: for group j, k-step s and column c, floats 16j + 8s + c and + 4, then their
    // tails; zeros for the tokens from t and past the row.
    const int per_token = passes*GEMV_WARPS*GEMV_WARP_GROUPS*8;
    for (int i = threadIdx.x; i < GEMV_MAX_T*per_token; i += blockDim.x) {
        const int token = i / per_token;
        const int e = i % per_token;
        const int first = 16*(e/8) + 8*(e/4 % 2) + e%4;
        const float lo = token < t && first < k ? x[(token*nh + head)*k + first] : 0.0f;
        const float hi = token < t && first + 4 < k ? x[(token*nh + head)*k + first + 4] : 0.0f;
        xs[token*xt + e] = make_float4(lo, hi, tf32_tail(lo), tf32_tail(hi));
    }
    __syncthreads();

    float acc[GEMV_WARP_GROUPS][4] = {};
    const float4 * xl = xs + lane/4*xt + lane%4;
    int tile = 0, pass = 0, stage = 0;
    while (tile < tiles) {
        __syncwarp();  // every lane is done with the stage the copy overwrites
        gemv_copy_pass(ring + ahead_stage*GEMV_STAGE_BYTES, w, begin + GEMV_TILE_ROWS*ahead_tile, end, ahead_pass, k4);
        advance(ahead_tile, ahead_pass, ahead_stage);
        asm volatile("cp.async.wait_group %0;" : : "n"(GEMV_STAGES - 1) : "memory");
        __syncwarp();  // every lane's copies of this pass are visible to the warp
        gemv_fold_pass(acc, ring + stage*GEMV_STAGE_BYTES, xl + 8*GEMV_WARP_GROUPS*(GEMV_WARPS*pass + warp));
        if (pass + 1 == passes) {
            float * buf = partials + (tile % 2)*GEMV_WARPS*WARP_SIZE*4;
            ((float4 *) buf)[warp*WARP_SIZE + lane] =
                make_float4(acc[0][0] + acc[1][0], acc[0][1] + acc[1][1], acc[0][2] + acc[1][2], acc[0][3] + acc[1][3]);
#pragma unroll
            for (int u = 0; u < GEMV_WARP_GROUPS; ++u) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    acc[u][e] = 0.0f;
                }
            }
            __syncthreads();
            if (threadIdx.x < 128) {
                // Lane l's output e of every warp, added in warp order. d0, d1: row g, tokens 2c and
                // 2c + 1; d2, d3: row g + 8.
                const int l = threadIdx.x / 4;
                const int e = threadIdx.x % 4;
                float sum = buf[4*l + e];
#pragma unroll
                for (int v = 1; v < GEMV_WARPS; ++v) {
                    sum += buf[4*(v*WARP_SIZE + l) + e];
                }
                const int row = begin + GEMV_TILE_ROWS*tile + l/4 + 8*(e/2);
                const int token = 2*(l % 4) + e % 2;
                if (row < end && token < t) {
                    y[(token*nh + head)*r + row] = sum;
                }
            }
        }
        advance(tile, pass, stage);
    }
    asm volatile("cp.async.wait_group 0;" : : : "memory");
}

// absorb_q: x = q_nope [t, nh, d_nope], w = w_kb [nh, kv_rank, d_nope], y = q_lat [t, nh, kv_rank].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: GEMV_RING + GEMV_MAX_T*gemv_x_token_bytes(d_nope) + GEMV_PARTIALS bytes
#define MLA_ABSORB_Q(name, split)                                                                      \
    extern "C" __global__ void name(const float4 * __restrict__ q_nope, const float4 * __restrict__ w_kb, \
                                    float * __restrict__ q_lat, const int t, const int nh,            \
                                    const int d_nope, const int kv_rank) {                             \
        gemv<split>((const float *) q_nope, w_kb, q_lat, t, nh, d_nope, kv_rank);                                      \
    }

// decompress_v: x = o_lat [t, nh, kv_rank], w = w_vb [nh, d_v, kv_rank], y = out [t, nh, d_v].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: GEMV_RING + GEMV_MAX_T*gemv_x_token_bytes(kv_rank) + GEMV_PARTIALS bytes
#define MLA_DECOMPRESS_V(name, split)                                                                  \
    extern "C" __global__ void name(const float4 * __restrict__ o_lat, const float4 * __restrict__ w_vb, \
                                    float * __restrict__ out, const int t, const int nh,              \
                                    const int d_v, const int kv_rank) {                                \
        gemv<split>((const float *) o_lat, w_vb, out, t, nh, kv_rank, d_v);                                            \
    }

MLA_ABSORB_Q(mla_absorb_q, 1)
MLA_ABSORB_Q(mla_absorb_q_s2, 2)
MLA_ABSORB_Q(mla_absorb_q_s4, 4)
MLA_ABSORB_Q(mla_absorb_q_s8, 8)

MLA_DECOMPRESS_V(mla_decompress_v, 1)
MLA_DECOMPRESS_V(mla_decompress_v_s2, 2)
MLA_DECOMPRESS_V(mla_decompress_v_s4, 4)
MLA_DECOMPRESS_V(mla_decompress_v_s8, 8)

// Reduce-scatter of the first N values (a power of two up to 32) over the lane offsets TOP, TOP/2,
// ..., 1: each step over the lane pairs l, l^BIT halves what a lane holds: it keeps the lower half
// (upper, where l & BIT), sends the other to its partner and adds what it receives to what it
// keeps; a step that finds one value left adds the partner's copy instead. Each sum is the
// butterfly's over those offsets, whichever lane ends with it.
template <int N, int TOP>
static __device__ __forceinline__ void halving_sums(float (&v)[32]) {
    int len = N;
#pragma unroll
    for (int bit = TOP; bit > 0; bit >>= 1) {
        if (len > 1) {
            len /= 2;
            const bool upper = threadIdx.x & bit;
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                if (j < len) {
                    const float keep = upper ? v[j + len] : v[j];
                    const float send = upper ? v[j] : v[j + len];
                    v[j] = keep + __shfl_xor_sync(FULL_MASK, send, bit, WARP_SIZE);
                }
            }
        } else {
            v[0] += __shfl_xor_sync(FULL_MASK, v[0], bit, WARP_SIZE);
        }
    }
}

// Sums the first N values (a power of two, 4..32) over each group of 8 lanes, leaving lane 8k+m
// with the sums of values m*N/8 on in v[0..max(N/8, 1)): the 8-lane butterfly's sums.
template <int N>
static __device__ __forceinline__ void group8_reduce_scatter(float (&v)[32]) {
    halving_sums<N, 4>(v);
}

// ---------------------------------------------------------------------------------------------
// attn_gathered: per token and head, scores over the gathered rows, softmax, weighted sum of the
// rows' latent part. A group of ATTN_HEADS heads of a token is SPLIT blocks of HB = ATTN_HEADS/SPLIT
// heads each; a block computes everything of its heads, so a split divides the scores as well as
// the weighted sum, and every value is computed the same way whichever block computes it.

#define ATTN_BLOCK 256
#define ATTN_WARPS (ATTN_BLOCK/WARP_SIZE)
#define ATTN_HEADS 8
#define ATTN_ROW_LANES 8      // lanes per row in the scores
#define ATTN_ROWS 4           // rows per lane in the scores
#define ATTN_SLOTS_PER_WARP (WARP_SIZE/ATTN_ROW_LANES*ATTN_ROWS)
#define ATTN_PASS 32          // output chunks per pass of the weighted sum

// One token's gathered rows; an index outside the pool is clamped into it.
struct gather {
    const float4 * __restrict__ cache;
    const int * __restrict__ idx;
    int n_slots;
    int pool;
    int d4;

    __device__ __forceinline__ int slot_row(const int i) const {
        return min(max(idx[i], 0), pool - 1);
    }

    __device__ __forceinline__ const float4 * row(const int r) const {
        return cache + (size_t)r*d4;
    }
};

// Where chunk c of head h's query is staged in a block of HB heads, in float4s from work: chunks
// grouped by eight, the group of all heads together, so the 8 lanes of a row read 128 consecutive
// bytes and a lane finds every head's chunk at a fixed offset from one address.
template <int HB>
static __device__ __forceinline__ int query_index(const int c, const int h) {
    return (c/ATTN_ROW_LANES*HB + h)*ATTN_ROW_LANES + c%ATTN_ROW_LANES;
}

// Asks L2 for the token's gathered rows, shared among the `blocks` blocks that read them (all of
// the token's groups and parts): thread i of block `part` takes the slots part*ATTN_BLOCK + i +
// m*blocks*ATTN_BLOCK, and for each loads its index once and prefetches every 128-byte line of
// its row. A block scores its rows in dependent trips; with the rows on their way to L2 at entry,
// a trip waits for L2, not DRAM.
static __device__ __forceinline__ void attn_prefetch_rows(const gather g, const int blocks, const int part) {
    for (int i = part*ATTN_BLOCK + threadIdx.x; i < g.n_slots; i += blocks*ATTN_BLOCK) {
        const char * row = (const char *) g.row(g.slot_row(i));
        for (int line = 0; line < 16*g.d4; line += 128) {
            prefetch_l2(row + line);
        }
    }
}

// Dynamic shared memory of a block of HB heads: work (the queries, then the warps' partial
// outputs), the scores (HB per slot), each warp's maxima and sums, the reciprocal of each head's
// sum, and each slot's cache row (found by the scores for the weighted sum).
template <int HB>
struct attn_smem {
    float4 * work;
    float * scores;
    float * warp_max;
    float * warp_sum;
    float * inv;
    int * rows;

    __device__ __forceinline__ attn_smem(char * base, const int n_slots, const int d4) {
        const int queries = query_index<HB>((d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES, 0)*16;
        const int partials = ATTN_WARPS*HB*ATTN_PASS*16;
        work = (float4 *) base;
        scores = (float *) (base + max(queries, partials));
        warp_max = scores + n_slots*HB;
        warp_sum = warp_max + ATTN_WARPS*HB;
        inv = warp_sum + ATTN_WARPS*HB;
        rows = (int *) (inv + HB);
    }
};

// HB floats of shared memory: float4s where HB is a multiple of 4, one float at a time otherwise.
template <int HB>
static __device__ __forceinline__ void load_heads(float (&v)[HB], const float * p) {
    if (HB % 4 == 0) {
#pragma unroll
        for (int k = 0; k < HB/4; ++k) {
            const float4 a = ((const float4 *) p)[k];
            v[4*k] = a.x; v[4*k + 1] = a.y; v[4*k + 2] = a.z; v[4*k + 3] = a.w;
        }
    } else {
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            v[h] = p[h];
        }
    }
}

template <int HB>
static __device__ __forceinline__ void store_heads(float * p, const float (&v)[HB]) {
    if (HB % 4 == 0) {
#pragma unroll
        for (int k = 0; k < HB/4; ++k) {
            ((float4 *) p)[k] = make_float4(v[4*k], v[4*k + 1], v[4*k + 2], v[4*k + 3]);
        }
    } else {
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            p[h] = v[h];
        }
    }
}

// The queries of the block's heads at query_index: q_lat's chunks, then q_pe's; zeros for heads
// past `heads` and for chunks past the row.
template <int HB>
static __device__ __forceinline__ void attn_stage_queries(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                          float4 * work, const int heads, const int kv4, const int r4) {
    const int d4 = kv4 + r4;
    const int staged = (d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES*HB;
    for (int i = threadIdx.x; i < staged; i += ATTN_BLOCK) {
        const int h = i/ATTN_ROW_LANES % HB;
        const int c = i/(ATTN_ROW_LANES*HB)*ATTN_ROW_LANES + i%ATTN_ROW_LANES;
        work[i] = h >= heads || c >= d4 ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : c < kv4 ? q_lat[h*kv4 + c] : q_pe[h*r4 + c - kv4];
    }
}

// Step 1: each warp scores 16 slots at a time; lane l takes rows l/8 + 4j and chunks l%8 + 8m, JT
// chunks of every row loaded before any is used. Lane 0 of each row's 8 keeps the row for step 3.
// After the reduction lane kl holds per values of one row from kl*N/8 on; at HB = 1 lanes kl and
// kl^1 hold the same score and the even one stores it.
template <int HB, int JT>
static __device__ __forceinline__ void attn_score(const gather g, const attn_smem<HB> sm, const float scale) {
    constexpr int N = ATTN_ROWS*HB;
    constexpr int per = N >= ATTN_ROW_LANES ? N/ATTN_ROW_LANES : 1;
    const int lane = threadIdx.x % WARP_SIZE;
    const int quad = lane / ATTN_ROW_LANES;
    const int kl = lane % ATTN_ROW_LANES;
    const int start = kl*N/ATTN_ROW_LANES;
    for (int first = threadIdx.x/WARP_SIZE*ATTN_SLOTS_PER_WARP; first < g.n_slots;
         first += ATTN_WARPS*ATTN_SLOTS_PER_WARP) {
        const float4 * rows[ATTN_ROWS];
#pragma unroll
        for (int j = 0; j < ATTN_ROWS; ++j) {
            const int slot = first + quad + 4*j;
            rows[j] = nullptr;
            if (slot < g.n_slots) {
                const int r = g.slot_row(slot);
                if (kl == 0) {
                    sm.rows[slot] = r;
                }
                rows[j] = g.row(r);
            }
        }
        float acc[32] = {};
        for (int c0 = kl; c0 < g.d4; c0 += ATTN_ROW_LANES*JT) {
            float4 v[JT][ATTN_ROWS];
#pragma unroll
            for (int u = 0; u < JT; ++u) {
#pragma unroll
                for (int j = 0; j < ATTN_ROWS; ++j) {
                    const int c = c0 + ATTN_ROW_LANES*u;
                    v[u][j] = rows[j] && c < g.d4 ? rows[j][c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
#pragma unroll
            for (int u = 0; u < JT; ++u) {
                const int c = c0 + ATTN_ROW_LANES*u;
                if (c >= g.d4) {
                    continue;
                }
#pragma unroll
                for (int h = 0; h < HB; ++h) {
                    const float4 q = sm.work[query_index<HB>(c, h)];
#pragma unroll
                    for (int j = 0; j < ATTN_ROWS; ++j) {
                        acc[j*HB + h] = dot4(v[u][j], q, acc[j*HB + h]);
                    }
                }
            }
        }
        group8_reduce_scatter<N>(acc);
        const int slot = first + quad + 4*(start/HB);
        if (slot < g.n_slots && kl*N % ATTN_ROW_LANES == 0) {
#pragma unroll
            for (int k = 0; k < per; ++k) {
                sm.scores[HB*slot + start%HB + k] = scale*acc[k];
            }
        }
    }
}

// Step 2: softmax numerators expf(s - max) in place of the scores, and 1/sum per head in inv.
template <int HB>
static __device__ __forceinline__ void attn_softmax(const attn_smem<HB> sm, const int n_slots) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;

    float m[HB];
#pragma unroll
    for (int h = 0; h < HB; ++h) {
        m[h] = __int_as_float(0xff800000);  // -inf
    }
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float s[HB];
        load_heads(s, sm.scores + HB*i);
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            m[h] = fmaxf(m[h], s[h]);
        }
    }
#pragma unroll
    for (int h = 0; h < HB; ++h) {
        m[h] = warp_reduce_max(m[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_max + HB*warp, m);
    }
    __syncthreads();
    load_heads(m, sm.warp_max);
    for (int w = 1; w < ATTN_WARPS; ++w) {
        float other[HB];
        load_heads(other, sm.warp_max + HB*w);
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            m[h] = fmaxf(m[h], other[h]);
        }
    }

    float sum[HB] = {};
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float e[HB];
        load_heads(e, sm.scores + HB*i);
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            e[h] = expf(e[h] - m[h]);
        }
        store_heads(sm.scores + HB*i, e);
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            // Rounded on its own: expf's last multiply is contractible, and ptxas may fuse it
            // into a plain add.
            sum[h] = __fadd_rn(sum[h], e[h]);
        }
    }
#pragma unroll
    for (int h = 0; h < HB; ++h) {
        sum[h] = warp_reduce_sum(sum[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_sum + HB*warp, sum);
    }
    __syncthreads();
    if (tid < HB) {
        float total = sm.warp_sum[tid];
        for (int w = 1; w < ATTN_WARPS; ++w) {
            total += sm.warp_sum[HB*w + tid];
        }
        sm.inv[tid] = 1.0f / total;  // total >= 1: the largest score contributes expf(0)
    }
}

// Step 3: out[h, c] = inv[h] * sum_i e[i][h] * row_i[c] for every chunk, a pass of ATTN_PASS
// chunks at a time; warp w sums its slots w + ATTN_WARPS*j (NS rows loaded before any is used),
// and the warps' partials are added in warp order through shared memory.
template <int HB, int NS>
static __device__ __forceinline__ void attn_weighted_sum(const gather g, const attn_smem<HB> sm, float4 * __restrict__ out,
                                                         const int heads, const int kv4) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;
    for (int base = 0; base < kv4; base += ATTN_PASS) {
        const int chunk = base + lane;
        const bool live = chunk < kv4;
        float4 a[HB];
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            a[h] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        for (int first = warp; first < g.n_slots; first += ATTN_WARPS*NS) {
            float4 v[NS];
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const int i = first + ATTN_WARPS*s;
                v[s] = i < g.n_slots && live ? g.row(sm.rows[i])[chunk] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const int i = first + ATTN_WARPS*s;
                if (i >= g.n_slots) {
                    continue;
                }
                float e[HB];
                load_heads(e, sm.scores + HB*i);
#pragma unroll
                for (int h = 0; h < HB; ++h) {
                    a[h].x += e[h]*v[s].x;
                    a[h].y += e[h]*v[s].y;
                    a[h].z += e[h]*v[s].z;
                    a[h].w += e[h]*v[s].w;
                }
            }
        }
#pragma unroll
        for (int h = 0; h < HB; ++h) {
            sm.work[(warp*HB + h)*ATTN_PASS + lane] = a[h];
        }
        __syncthreads();
        const int h = tid / ATTN_PASS;
        const int c = tid % ATTN_PASS;
        if (h < heads && base + c < kv4) {
            float4 sum = sm.work[h*ATTN_PASS + c];
            for (int w = 1; w < ATTN_WARPS; ++w) {
                const float4 p = sm.work[(w*HB + h)*ATTN_PASS + c];
                sum.x += p.x;
                sum.y += p.y;
                sum.z += p.z;
                sum.w += p.w;
            }
            const float inv = sm.inv[h];
            out[h*kv4 + base + c] = make_float4(sum.x*inv, sum.y*inv, sum.z*inv, sum.w*inv);
        }
        __syncthreads();
    }
}

// Blocks of HB heads (SPLIT = ATTN_HEADS/HB per group), JT chunks per row and NS slots per trip.
// grid: t * ceil(nh/ATTN_HEADS) * SPLIT (part of the group fastest), block: ATTN_BLOCK, dynamic
// shared memory: attn_smem<HB>'s layout for n_slots and (kv_rank + d_rope)/4 chunks per row.
template <int HB, int JT, int NS>
static __device__ __forceinline__ void attn_gathered(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                     const float4 * __restrict__ cache, const int * __restrict__ idx,
                                                     float4 * __restrict__ out, const int nh, const int kv_rank,
                                                     const int d_rope, const int t, const int n_slots,
                                                     const float scale, const int pool) {
    extern __shared__ char attn_shared[];
    constexpr int SPLIT = ATTN_HEADS/HB;
    const int kv4 = kv_rank/4;
    const int r4 = d_rope/4;
    const int groups = (nh + ATTN_HEADS - 1) / ATTN_HEADS;
    const int token = blockIdx.x / SPLIT / groups;
    const int group = blockIdx.x / SPLIT % groups;
    const int h0 = group*ATTN_HEADS + blockIdx.x % SPLIT * HB;
    if (token >= t || h0 >= nh) {
        return;
    }
    const int heads = min(nh - h0, HB);
    const gather g = {cache, idx + token*n_slots, n_slots, pool, kv4 + r4};
    attn_prefetch_rows(g, groups*SPLIT, group*SPLIT + blockIdx.x % SPLIT);
    const attn_smem<HB> sm(attn_shared, n_slots, g.d4);
    const int first = token*nh + h0;

    attn_stage_queries<HB>(q_lat + first*kv4, q_pe + first*r4, sm.work, heads, kv4, r4);
    __syncthreads();
    attn_score<HB, JT>(g, sm, scale);
    __syncthreads();
    attn_softmax(sm, n_slots);
    attn_weighted_sum<HB, NS>(g, sm, out + first*kv4, heads, kv4);
}

#define MLA_ATTN_GATHERED(name, hb, jt, ns)                                                            \
    extern "C" __global__ void name(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe, \
                                    const float4 * __restrict__ cache, const int * __restrict__ idx,  \
                                    float4 * __restrict__ out, const int nh, const int kv_rank,        \
                                    const int d_rope, const int t, const int n_slots,                  \
                                    const float scale, const int pool) {                               \
        attn_gathered<hb, jt, ns>(q_lat, q_pe, cache, idx, out, nh, kv_rank, d_rope, t, n_slots, scale, pool); \
    }

// Heads per block, chunks per trip of the scores, slots per trip of the weighted sum: the split
// of ATTN_HEADS/HB blocks per group.
MLA_ATTN_GATHERED(mla_attn_gathered, 8, 2, 8)
MLA_ATTN_GATHERED(mla_attn_gathered_s2, 4, 4, 16)
MLA_ATTN_GATHERED(mla_attn_gathered_s4, 2, 4, 16)
MLA_ATTN_GATHERED(mla_attn_gathered_s8, 1, 4, 16)
