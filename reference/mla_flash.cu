// Reference CUDA C++ for the MLA family's flash attention over a gathered latent cache:
// mla_attn_gathered_flash (one block per token, chunk of slots and group of heads, on the tensor
// cores) and mla_attn_flash_combine (the chunks of each token and head, folded in pairs, the
// pairs added in order; _pairs for a workspace of pairs folded already). Same
// symbols and argument lists as kernels-gpu/src/mla/flash.rs (the combine in flash/combine.rs),
// and per output the same operations in the same order. mla/flash_wgmma.cuh, included at the end,
// computes the same workspace on Hopper's warpgroup tensor cores (flash/wgmma.rs).
//
// Every product goes through mma.sync m16n8k8 with tf32 operands in three terms (3xTF32): each
// f32 operand x is split into a tf32 head h (rounded to nearest, ties away, by an integer add and
// mask) and the exact rest x - h as the tail, whose low 13 bits the tensor cores ignore; acc +=
// a*b is acc = mma(head_a, tail_b, acc), then mma(tail_a, head_b, acc), then mma(head_a, head_b,
// acc): about 2^-20 of each product is lost, f32-grade at the tensor cores' rate.
//
// What a value's bits depend on: the chunks (FLASH_CHUNK slots each, from slot 0) and the k-step
// parts of the scores are functions of n_slots and kv_rank + d_rope alone, and each output of
// an mma depends on its own row and column only. So a token's outputs are the same bits whatever
// t, the grid or the head group that computed them.

#include "chain.cuh"
#include "cp_async.cuh"

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

#define FLASH_TILE_HEADS 16                      // heads of an m16 tile; a block takes 1 or 2
#define FLASH_K_PARTS 8                          // parts of a score's k-steps, added in order
#define FLASH_WARPS 16                           // a part for half of the slot tiles each
#define FLASH_S_TILES (FLASH_TILES*FLASH_K_PARTS/FLASH_WARPS)  // slot tiles a warp scores
#define FLASH_BLOCK (FLASH_WARPS*WARP_SIZE)
#define FLASH_CHUNK 64                           // slots of a chunk
#define FLASH_TILES (FLASH_CHUNK/8)              // n8 tiles of the scores, k8 steps of the sum
#define FLASH_PASS_TILES 4                       // n8 output tiles a warp holds per pass
#define FLASH_S_STRIDE (FLASH_CHUNK + 8)         // floats per head row of a warp's score partial
#define FLASH_P_STRIDE (FLASH_CHUNK + 4)         // floats per head row of the numerators
#define FLASH_COMBINE_COLUMNS 64                 // float4 columns of one (token, head) a block takes
#define FLASH_COMBINE_GROUPS 4                   // groups of pairs of chunks folded side by side
#define FLASH_COMBINE_BLOCK (FLASH_COMBINE_COLUMNS*FLASH_COMBINE_GROUPS)

// Floats per staged row (cache row or query): the row, zeros to a multiple of 8, and 4 more so
// that the 8 rows a fragment load touches start in different banks.
static __device__ __forceinline__ int flash_stride(const int d) {
    return (d + 7)/8*8 + 4;
}

// cp.async of 16 bytes that copies `bytes` (16 or 0) of them and zero-fills the rest.
static __device__ __forceinline__ void cp_async_cg_16_zfill(const unsigned int dst, const void * src, const int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" : : "r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes));
}

// The same through L1: for the gathered rows, so that a row gathered many times over (padding
// clamped onto one row) is read from L2 once an SM, not once a slot from one L2 slice.
static __device__ __forceinline__ void cp_async_ca_16_zfill(const unsigned int dst, const void * src, const int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" : : "r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes));
}

// x as a tf32 head (CUTLASS's round_half_ulp_truncate) and the exact rest as the tail.
static __device__ __forceinline__ void tf32_split(const float x, unsigned int & head, unsigned int & tail) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    tail = __float_as_uint(x - __uint_as_float(head));
}

// Four 8 x 8 b16 matrices, lanes 8i..8i+7 naming the rows of matrix i: as 8 x 4 matrices of
// 32-bit words, a whole tf32 fragment in one shared-memory load.
static __device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const float * p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((unsigned int) __cvta_generic_to_shared(p)));
}

static __device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d[j] += a*b[j] for N tiles of a row of tiles, each in three tf32 terms into its own accumulator:
// head*tail, tail*head, then head*head, issued term by term across the tiles so that consecutive
// mma never depend on each other.
template <int N>
static __device__ __forceinline__ void mma_3xtf32(float (&d)[N][4], const unsigned int (&ah)[4], const unsigned int (&at)[4],
                                                  const unsigned int (&bh)[N][2], const unsigned int (&bt)[N][2]) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah, bt[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], at, bh[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah, bh[j]);
    }
}

// The A fragment of the 16 x 8 tile at `p` (row stride `stride` floats) as the lane
// (g = lane/4, c = lane%4) holds it: rows g and g+8, columns c and c+4, split; lanes 0-15 name
// rows 0-15 at column 0, lanes 16-31 the same rows at column 4.
static __device__ __forceinline__ void load_a(const float * p, const int stride, unsigned int (&h)[4], unsigned int (&t)[4]) {
    const int lane = threadIdx.x % WARP_SIZE;
    unsigned int r[4];
    ldmatrix_x4(r, p + lane%16*stride + lane/16*4);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        tf32_split(__uint_as_float(r[i]), h[i], t[i]);
    }
}

// The B fragments (k = c, c+4; n = g) of the two 8 x 8 tiles at `p` and 8 rows on, stored
// n-major (row n holds B[:, n]: the cache rows of the scores), split; lanes 8i..8i+7 name rows
// 8*(i/2).. at column 4*(i%2).
static __device__ __forceinline__ void load_b_pair(const float * p, const int stride, unsigned int (&h0)[2], unsigned int (&t0)[2],
                                                   unsigned int (&h1)[2], unsigned int (&t1)[2]) {
    const int lane = threadIdx.x % WARP_SIZE;
    unsigned int r[4];
    ldmatrix_x4(r, p + (lane/16*8 + lane%8)*stride + lane/8%2*4);
    tf32_split(__uint_as_float(r[0]), h0[0], t0[0]);
    tf32_split(__uint_as_float(r[1]), h0[1], t0[1]);
    tf32_split(__uint_as_float(r[2]), h1[0], t1[0]);
    tf32_split(__uint_as_float(r[3]), h1[1], t1[1]);
}

// The B fragment (k = c, c+4; n = g) of the 8 x 8 tile at `p`, stored k-major (row k holds
// B[k, :]: the rows of the sum), split, with k = c and c+4 taken from rows 2c and 2c+1: the
// numerators are stored in the same order (see the softmax), and the 32 lanes' loads fall in 32
// banks where rows c and c+4 would put two lanes in one.
static __device__ __forceinline__ void load_b(const float * p, const int stride, unsigned int (&h)[2], unsigned int (&t)[2]) {
    const int lane = threadIdx.x % WARP_SIZE;
    const float * q = p + 2*(lane%4)*stride + lane/4;
    tf32_split(q[0], h[0], t[0]);
    tf32_split(q[stride], h[1], t[1]);
}

// A chunk's softmax statistics for the 16 lanes of one head, this lane's scores s those of slots
// first..first + 3: the scores scaled, m their maximum over the live slots (below n_slots) across
// the 16 lanes, e = expf(s - m) (0 past n_slots), l the sum of e in slot order, then across the
// lanes (offsets 8, 4, 2, 1).
static __device__ __forceinline__ void flash_chunk_softmax(float (&s)[4], const float scale, const int first,
                                                           const int n_slots, float & m, float (&e)[4], float & l) {
    m = __int_as_float(0xff800000);  // -inf
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        // Rounded as a product of its own: contracted into the exponent's subtraction, the score
        // of the max and of the numerator would differ.
        s[i] = __fmul_rn(scale, s[i]);
        if (first + i < n_slots) {
            m = fmaxf(m, s[i]);
        }
    }
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, offset, WARP_SIZE));
    }
    l = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        e[i] = first + i < n_slots ? expf(s[i] - m) : 0.0f;
        // Rounded on its own: expf's last multiply is contractible, and ptxas may fuse it into a
        // plain add.
        l = __fadd_rn(l, e[i]);
    }
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) {
        l += __shfl_xor_sync(FULL_MASK, l, offset, WARP_SIZE);
    }
}

template <int R, int C>
static __device__ __forceinline__ void copy_fragments(unsigned int (&dst)[R][C], const unsigned int (&src)[R][C]) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            dst[r][c] = src[r][c];
        }
    }
}

// One k-step of the scores: the M head tiles' query fragments and the key fragments of the slot
// tiles tile0...
template <int M>
static __device__ __forceinline__ void load_scores_trip(const float * work, const float * rows, const int stride, const int ks,
                                                        const int tile0, unsigned int (&qh)[M][4], unsigned int (&qt)[M][4],
                                                        unsigned int (&kh)[FLASH_S_TILES][2], unsigned int (&kt)[FLASH_S_TILES][2]) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
        load_a(work + 16*m*stride + 8*ks, stride, qh[m], qt[m]);
    }
#pragma unroll
    for (int j = 0; j < FLASH_S_TILES; j += 2) {
        load_b_pair(rows + 8*(tile0 + j)*stride + 8*ks, stride, kh[j], kt[j], kh[j + 1], kt[j + 1]);
    }
}

// One k-step of the weighted sum: the M head tiles' numerator fragments and the warp's value
// fragments; tiles past the row repeat the last one (not stored later), so no branch separates
// the tiles' mma chains.
template <int M>
static __device__ __forceinline__ void load_sum_trip(const float * num, const float * rows, const int stride, const int base,
                                                     const int ntiles, const int ks,
                                                     unsigned int (&ph)[M][4], unsigned int (&pt)[M][4],
                                                     unsigned int (&vh)[FLASH_PASS_TILES][2], unsigned int (&vt)[FLASH_PASS_TILES][2]) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
        load_a(num + 16*m*FLASH_P_STRIDE + 8*ks, FLASH_P_STRIDE, ph[m], pt[m]);
    }
#pragma unroll
    for (int j = 0; j < FLASH_PASS_TILES; ++j) {
        load_b(rows + 8*ks*stride + 8*min(base + j, ntiles - 1), stride, vh[j], vt[j]);
    }
}

// A block of P passes of M head tiles (HB = 16*M heads a pass). grid: t * ceil(n_slots/FLASH_CHUNK)
// * ceil(nh/(P*HB)) blocks (head group fastest, so the blocks that read one chunk's rows run side by side), block:
// FLASH_BLOCK, dynamic shared memory: 4*(FLASH_CHUNK*stride + max(HB*stride,
// FLASH_K_PARTS*HB*FLASH_S_STRIDE) + HB*FLASH_P_STRIDE) bytes, stride = flash_stride(kv_rank +
// d_rope). o_part [t, chunks, nh, kv_rank] gets each chunk's unnormalised sum, ml [t, chunks, nh,
// 2] its maximum score and its sum of numerators.
template <int M, int P>
static __device__ __forceinline__ void attn_flash(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                  const float4 * __restrict__ cache, const int * __restrict__ idx,
                                                  float * __restrict__ o_part, float * __restrict__ ml,
                                                  const int nh, const int kv_rank, const int d_rope, const int t,
                                                  const int n_slots, const float scale, const int pool) {
    constexpr int HB = FLASH_TILE_HEADS*M;
    extern __shared__ float flash_shared[];
    // The combine launches as this grid's blocks exit, not at their entry: launched early, it
    // would crowd onto the SMs this grid leaves idle.
    chain_wait();
    const int d = kv_rank + d_rope;
    const int kv4 = kv_rank/4, r4 = d_rope/4, d4 = d/4;
    const int stride = flash_stride(d);
    const int ksteps = (d + 7)/8;
    const int groups = (nh + HB*P - 1)/(HB*P);
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK;
    const int group = blockIdx.x % groups;
    const int chunk = blockIdx.x / groups % chunks;
    const int token = blockIdx.x / groups / chunks;
    if (token >= t) {
        return;
    }
    const int s0 = chunk*FLASH_CHUNK;
    const int warp = threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    const int staged = 2*ksteps;
    float * rows = flash_shared;
    float * work = rows + FLASH_CHUNK*stride;
    float * num = work + max(HB*stride, FLASH_K_PARTS*HB*FLASH_S_STRIDE);

    // The queries of the HB heads from h0 (zeros for heads past nh) into work, warp w the heads w,
    // w + FLASH_WARPS, ...
    const auto stage_queries = [&](const int h0) {
        for (int h = warp; h < HB; h += FLASH_WARPS) {
            const bool live = h0 + h < nh;
            const size_t head = (size_t) token*nh + h0 + h;
            const unsigned int dst = (unsigned int) __cvta_generic_to_shared(work + h*stride);
            for (int k = lane; k < staged; k += WARP_SIZE) {
                const bool copy = live && k < d4;
                const float4 * src = k < kv4 ? q_lat + head*kv4 + k : q_pe + head*r4 + (k - kv4);
                cp_async_cg_16_zfill(dst + 16*k, copy ? src : q_lat, copy ? 16 : 0);
            }
        }
    };
    // The queries first: their copies need no index, so they overlap the indices' round trip.
    stage_queries(group*P*HB);
    // Stage the chunk's rows (zeros past n_slots and past each row), warp w the rows w, w +
    // FLASH_WARPS, ...: every index of the warp's rows is loaded before the first copy (one round
    // trip, not one a row); a slot past n_slots reads the last slot's index and copies nothing.
    {
        constexpr int ROWS = FLASH_CHUNK/FLASH_WARPS;
        int found[ROWS];
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            found[i] = idx[(size_t) token*n_slots + min(s0 + warp + FLASH_WARPS*i, n_slots - 1)];
        }
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            const int r = warp + FLASH_WARPS*i;
            const bool live = s0 + r < n_slots;
            const float4 * src = cache + (size_t) min(max(found[i], 0), pool - 1)*d4;
            const unsigned int dst = (unsigned int) __cvta_generic_to_shared(rows + r*stride);
            for (int k = lane; k < staged; k += WARP_SIZE) {
                const bool copy = live && k < d4;
                cp_async_ca_16_zfill(dst + 16*k, copy ? src + k : cache, copy ? 16 : 0);
            }
        }
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    // The block's heads in passes of HB, over the chunk's rows staged once; a later pass's queries
    // are copied during this pass's weighted sum, once the scores no longer need work.
    for (int pass = 0; pass < P; ++pass) {
        const int h0 = (group*P + pass)*HB;
        // Scores: warp w the k-steps of part w % FLASH_K_PARTS for every head tile and the slot tiles
        // FLASH_S_TILES*(w/FLASH_K_PARTS)..; the parts added in order afterwards.
        {
            const int kpart = warp % FLASH_K_PARTS;
            const int tile0 = warp / FLASH_K_PARTS*FLASH_S_TILES;
            float acc[M][FLASH_S_TILES][4] = {};
            const int per = (ksteps + FLASH_K_PARTS - 1)/FLASH_K_PARTS;
            const int k_end = min(ksteps, (kpart + 1)*per);
            if (kpart*per < k_end) {
                // Each k-step's fragments are loaded during the previous one's mma.
                unsigned int qh[M][4], qt[M][4], kh[FLASH_S_TILES][2], kt[FLASH_S_TILES][2];
                load_scores_trip<M>(work, rows, stride, kpart*per, tile0, qh, qt, kh, kt);
                for (int ks = kpart*per; ks < k_end; ++ks) {
                    unsigned int nqh[M][4], nqt[M][4], nkh[FLASH_S_TILES][2], nkt[FLASH_S_TILES][2];
                    load_scores_trip<M>(work, rows, stride, min(ks + 1, k_end - 1), tile0, nqh, nqt, nkh, nkt);
    #pragma unroll
                    for (int m = 0; m < M; ++m) {
                        mma_3xtf32(acc[m], qh[m], qt[m], kh, kt);
                    }
                    copy_fragments(qh, nqh); copy_fragments(qt, nqt);
                    copy_fragments(kh, nkh); copy_fragments(kt, nkt);
                }
            }
            __syncthreads();
            float * part = work + kpart*HB*FLASH_S_STRIDE + lane/4*FLASH_S_STRIDE + 2*(lane%4);
    #pragma unroll
            for (int m = 0; m < M; ++m) {
    #pragma unroll
                for (int j = 0; j < FLASH_S_TILES; ++j) {
                    float * at = part + 16*m*FLASH_S_STRIDE + 8*(tile0 + j);
                    *(float2 *) at = make_float2(acc[m][j][0], acc[m][j][1]);
                    *(float2 *) (at + 8*FLASH_S_STRIDE) = make_float2(acc[m][j][2], acc[m][j][3]);
                }
            }
        }
        __syncthreads();

        // Softmax within the chunk: 16 lanes a head, each 4 consecutive slots; the numerators to num.
        if (threadIdx.x < 16*HB) {
            const int h = threadIdx.x / 16;
            const int q = threadIdx.x % 16;
            // The thread's four partials of each part in one float4 load; each score's parts
            // added in part order.
            const float4 * at = (const float4 *) (work + h*FLASH_S_STRIDE + 4*q);
            float s[4];
            {
                const float4 a = at[0];
                s[0] = a.x; s[1] = a.y; s[2] = a.z; s[3] = a.w;
            }
    #pragma unroll
            for (int p = 1; p < FLASH_K_PARTS; ++p) {
                const float4 a = at[p*HB*FLASH_S_STRIDE/4];
                s[0] += a.x; s[1] += a.y; s[2] += a.z; s[3] += a.w;
            }
            float m, e[4], l;
            flash_chunk_softmax(s, scale, s0 + 4*q, n_slots, m, e, l);
            // In the weighted sum's k order: each 8-slot group as slots 0, 2, 4, 6, then 1, 3, 5,
            // 7 (see load_b); this thread's half of its group at 2*(q%2) and 4 + 2*(q%2).
            float * dst = num + h*FLASH_P_STRIDE + 8*(q/2) + 2*(q%2);
            *(float2 *) dst = make_float2(e[0], e[2]);
            *(float2 *) (dst + 4) = make_float2(e[1], e[3]);
            if (q == 0 && h0 + h < nh) {
                float * out = ml + 2*(((size_t) token*chunks + chunk)*nh + h0 + h);
                out[0] = m;
                out[1] = l;
            }
        }
        __syncthreads();

        const bool more = pass + 1 < P && h0 + HB < nh;
        if (more) {
            stage_queries(h0 + HB);
            cp_async_commit();
        }

        // The chunk's sum of numerator x row: warp w the column tiles w*FLASH_PASS_TILES.. of each
        // pass, for every head tile, the slots' k-steps in order.
        const int ntiles = (kv_rank + 7)/8;
        const int g = lane/4, c = lane%4;
        for (int base = warp*FLASH_PASS_TILES; base < ntiles; base += FLASH_WARPS*FLASH_PASS_TILES) {
            float o[M][FLASH_PASS_TILES][4] = {};
            // Each k-step's fragments are loaded during the previous one's mma.
            unsigned int ph[M][4], pt[M][4], vh[FLASH_PASS_TILES][2], vt[FLASH_PASS_TILES][2];
            load_sum_trip<M>(num, rows, stride, base, ntiles, 0, ph, pt, vh, vt);
            for (int ks = 0; ks < FLASH_TILES; ++ks) {
                unsigned int nph[M][4], npt[M][4], nvh[FLASH_PASS_TILES][2], nvt[FLASH_PASS_TILES][2];
                load_sum_trip<M>(num, rows, stride, base, ntiles, min(ks + 1, FLASH_TILES - 1), nph, npt, nvh, nvt);
    #pragma unroll
                for (int m = 0; m < M; ++m) {
                    mma_3xtf32(o[m], ph[m], pt[m], vh, vt);
                }
                copy_fragments(ph, nph); copy_fragments(pt, npt);
                copy_fragments(vh, nvh); copy_fragments(vt, nvt);
            }
    #pragma unroll
            for (int m = 0; m < M; ++m) {
    #pragma unroll
                for (int j = 0; j < FLASH_PASS_TILES; ++j) {
                    const int col = 8*(base + j) + 2*c;
                    if (base + j >= ntiles || col >= kv_rank) {
                        continue;
                    }
    #pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const int h = h0 + 16*m + g + 8*half;
                        if (h < nh) {
                            float * out = o_part + (((size_t) token*chunks + chunk)*nh + h)*kv_rank + col;
                            *(float2 *) out = make_float2(o[m][j][2*half], o[m][j][2*half + 1]);
                        }
                    }
                }
            }
        }
        if (!more) {
            return;
        }
        // The next pass's queries have landed, and its numerators may overwrite num.
        cp_async_wait_all();
        __syncthreads();
    }
}

#define MLA_ATTN_GATHERED_FLASH(name, m, p)                                                               \
    extern "C" __global__ void __launch_bounds__(FLASH_BLOCK, 1) name(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,  \
                                    const float4 * __restrict__ cache, const int * __restrict__ idx,   \
                                    float * __restrict__ o_part, float * __restrict__ ml, const int nh, \
                                    const int kv_rank, const int d_rope, const int t, const int n_slots, \
                                    const float scale, const int pool) {                                \
        attn_flash<m, p>(q_lat, q_pe, cache, idx, o_part, ml, nh, kv_rank, d_rope, t, n_slots, scale, pool); \
    }

// 16, 32 and 64 heads a block (the last in two passes of 32 over the rows): the same bits.
MLA_ATTN_GATHERED_FLASH(mla_attn_gathered_flash, 1, 1)
MLA_ATTN_GATHERED_FLASH(mla_attn_gathered_flash_h32, 2, 1)
MLA_ATTN_GATHERED_FLASH(mla_attn_gathered_flash_h64, 2, 2)

// A pair of chunks' weights: the pair's maximum mp, each chunk's expf(m - mp) (w1 = 0 where the
// pair has one chunk). The combine's first step for attn_flash's chunks, and the Hopper entries'
// before they store a pair.
static __device__ __forceinline__ void flash_pair_weights(const float m0, const float m1, const bool second,
                                                          float & mp, float & w0, float & w1) {
    mp = second ? fmaxf(m0, m1) : m0;
    w0 = expf(m0 - mp);
    w1 = second ? expf(m1 - mp) : 0.0f;
}

// grid: t * nh * ceil(kv_rank/4/FLASH_COMBINE_COLUMNS) blocks, block: FLASH_COMBINE_BLOCK, thread
// (group, column) for one float4 column of one token and head. The workspace holds chunks
// (PAIRS false: attn_flash's) or pairs of chunks folded (PAIRS true: the Hopper entries'). Each
// pair of chunks folded first: mp = max, w_i = expf(m_i - mp), l_p = l_0 w_0 then + w_1 l_1 (one
// fma), o_p alike; M = max of the maxima (block-wide); over its group's pairs (ceil(pairs/4)
// each) in order, w = expf(m_p - M), l += w*l_p, a += w*o_p; the groups' l and a added in group
// order; out = a * (1/l).
template <bool PAIRS>
static __device__ __forceinline__ void flash_combine(const float4 * __restrict__ o_part, const float * __restrict__ ml,
                                                     float4 * __restrict__ out, const int nh, const int kv_rank,
                                                     const int t, const int n_slots) {
    // Launched as a programmatic dependent of the flash kernel: nothing of its workspace is read
    // before that kernel has finished; and the kernel after it may launch early in turn.
    chain_entry();
    constexpr int FOLD_BATCH = 8;
    constexpr int SPAN = PAIRS ? 1 : 2;    // units of the workspace a pair
    // Each thread's batch of sums (slot u of thread i at u*FLASH_COMBINE_BLOCK + i), then each
    // group's partial sums.
    __shared__ float4 staged[FOLD_BATCH*FLASH_COMBINE_BLOCK];
    __shared__ float4 part_a[FLASH_COMBINE_BLOCK];
    __shared__ float part_l[FLASH_COMBINE_BLOCK];
    const int kv4 = kv_rank/4;
    const int parts = (kv4 + FLASH_COMBINE_COLUMNS - 1)/FLASH_COMBINE_COLUMNS;
    const int th = blockIdx.x / parts;
    const int group = threadIdx.x / FLASH_COMBINE_COLUMNS;
    const int c = blockIdx.x % parts*FLASH_COMBINE_COLUMNS + threadIdx.x % FLASH_COMBINE_COLUMNS;
    if (th >= t*nh) {
        return;
    }
    const int token = th / nh;
    const int h = th % nh;
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK;
    const int pairs = (chunks + 1)/2;
    const int units = PAIRS ? pairs : chunks;
    const float * stats = ml + 2*((size_t) token*units*nh + h);
    const float4 * part = o_part + ((size_t) token*units*nh + h)*kv4 + c;
    const int per = (pairs + FLASH_COMBINE_GROUPS - 1)/FLASH_COMBINE_GROUPS*SPAN;
    const int first = group*per;
    const int end = min(units, (group + 1)*per);
    const bool live_column = c < kv4;
    const unsigned int slots = (unsigned int) __cvta_generic_to_shared(staged + threadIdx.x);

    // A batch of the group's units from k: the sums copied to the thread's slots by cp.async
    // (zeros for a column past the row), the statistics loaded; all in flight together, the sums
    // landing in shared memory without passing through the thread.
    float ms[FOLD_BATCH], ls[FOLD_BATCH];
    const auto issue = [&](const int k) {
#pragma unroll
        for (int u = 0; u < FOLD_BATCH; ++u) {
            if (k + u < end) {
                const float4 * src = part + (size_t) (k + u)*nh*kv4;
                cp_async_cg_16_zfill(slots + 16*u*FLASH_COMBINE_BLOCK, live_column ? src : o_part, live_column ? 16 : 0);
            }
        }
        cp_async_commit();
#pragma unroll
        for (int u = 0; u < FOLD_BATCH; ++u) {
            const bool live = k + u < end;
            ms[u] = live ? stats[2*(size_t) (k + u)*nh] : 0.0f;
            ls[u] = live ? stats[2*(size_t) (k + u)*nh + 1] : 0.0f;
        }
    };
    // The first batch is in flight while M is found: one round trip for both.
    issue(first);

    // M: each warp over all units (lane k the units k, k + 32, ...), so no barrier is needed.
    float m = __int_as_float(0xff800000);  // -inf
    for (int k = threadIdx.x % WARP_SIZE; k < units; k += WARP_SIZE) {
        m = fmaxf(m, stats[2*(size_t) k*nh]);
    }
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, offset, WARP_SIZE));
    }

    // The group's pairs in order, a batch at a time (a thread reads only its own copies; a batch
    // holds whole pairs, first and FOLD_BATCH being multiples of SPAN).
    float l = 0.0f;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int k = first;;) {
        cp_async_wait_all();
#pragma unroll
        for (int u = 0; u < FOLD_BATCH; u += SPAN) {
            if (k + u < end) {
                float mp = ms[u], lp = ls[u];
                float4 o = staged[u*FLASH_COMBINE_BLOCK + threadIdx.x];
                if (!PAIRS) {
                    const bool second = k + u + 1 < end;
                    float w0, w1;
                    flash_pair_weights(ms[u], ms[u + 1], second, mp, w0, w1);
                    // Each product rounded on its own, then one fma a term: the Hopper entries' order.
                    lp = __fmul_rn(ls[u], w0);
                    o = make_float4(__fmul_rn(o.x, w0), __fmul_rn(o.y, w0), __fmul_rn(o.z, w0), __fmul_rn(o.w, w0));
                    if (second) {
                        const float4 o1 = staged[(u + 1)*FLASH_COMBINE_BLOCK + threadIdx.x];
                        lp = __fmaf_rn(w1, ls[u + 1], lp);
                        o = make_float4(__fmaf_rn(w1, o1.x, o.x), __fmaf_rn(w1, o1.y, o.y), __fmaf_rn(w1, o1.z, o.z),
                                        __fmaf_rn(w1, o1.w, o.w));
                    }
                }
                const float w = expf(mp - m);
                l += w*lp;
                a.x += w*o.x;
                a.y += w*o.y;
                a.z += w*o.z;
                a.w += w*o.w;
            }
        }
        k += FOLD_BATCH;
        if (k >= end) {
            break;
        }
        issue(k);
    }
    part_a[threadIdx.x] = a;
    part_l[threadIdx.x] = l;
    __syncthreads();
    if (group == 0 && live_column) {
#pragma unroll
        for (int g = 1; g < FLASH_COMBINE_GROUPS; ++g) {
            const float4 p = part_a[threadIdx.x + g*FLASH_COMBINE_COLUMNS];
            a.x += p.x;
            a.y += p.y;
            a.z += p.z;
            a.w += p.w;
            l += part_l[threadIdx.x + g*FLASH_COMBINE_COLUMNS];
        }
        const float inv = 1.0f/l;
        out[(size_t) th*kv4 + c] = make_float4(a.x*inv, a.y*inv, a.z*inv, a.w*inv);
    }
}

// attn_flash's chunks, and the Hopper entries' pairs.
extern "C" __global__ void mla_attn_flash_combine(const float4 * __restrict__ o_part, const float * __restrict__ ml,
                                                  float4 * __restrict__ out, const int nh, const int kv_rank,
                                                  const int t, const int n_slots) {
    flash_combine<false>(o_part, ml, out, nh, kv_rank, t, n_slots);
}

extern "C" __global__ void mla_attn_flash_combine_pairs(const float4 * __restrict__ o_part, const float * __restrict__ ml,
                                                        float4 * __restrict__ out, const int nh, const int kv_rank,
                                                        const int t, const int n_slots) {
    flash_combine<true>(o_part, ml, out, nh, kv_rank, t, n_slots);
}

#include "mla/flash_wgmma.cuh"
