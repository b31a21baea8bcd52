// Reference CUDA C++ for the MLA decode family: absorb_q, decompress_v and attn_gathered, each as
// the unsplit kernel and its split-2/4/8 twins. Same symbols and argument lists as
// kernels-gpu/src/mla/*.rs, and per output element the same floating-point operations in the
// same order (the module docs there state each sequence).
//
// A split changes the launch geometry only: SPLIT blocks share what one unsplit block computes,
// each keeping a slice of its outputs, so every twin gives the unsplit kernel's bits.

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

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
// absorb_q / decompress_v: y[t, h, r] = sum_k x[t, h, k] * w[h, r, k]
//
// block: one head, rows split_range(r, SPLIT, blockIdx.x % SPLIT); x of the head staged in
// shared memory; a warp takes GEMV_ROWS rows at a time, lane l the float4 chunks l, l+32, ...,
// in trips of GEMV_TRIP chunks of every row, loaded before any is used and folded token by token
// in ascending chunk order; then a warp butterfly per output.

#define GEMV_BLOCK 256
#define GEMV_ROWS 2      // rows per warp at a time
#define GEMV_TRIP 2      // chunks per row loaded together
#define GEMV_MAX_T 8     // tokens per launch

// One trip of a warp over its row group: chunks c0 + 32u of the rows first + i, zeros for rows from
// end on and chunks past the row.
static __device__ __forceinline__ void gemv_load_trip(float4 (&wv)[GEMV_TRIP][GEMV_ROWS], const float4 * __restrict__ w,
                                                      const int first, const int end, const int c0, const int k4) {
#pragma unroll
    for (int u = 0; u < GEMV_TRIP; ++u) {
#pragma unroll
        for (int i = 0; i < GEMV_ROWS; ++i) {
            const int c = c0 + WARP_SIZE*u;
            wv[u][i] = first + i < end && c < k4 ? w[(first + i)*k4 + c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
}

// Folds one trip into the lane partials, token by token, in ascending chunk order.
template <int T>
static __device__ __forceinline__ void gemv_fold_trip(float (&acc)[GEMV_ROWS][T], const float4 (&wv)[GEMV_TRIP][GEMV_ROWS],
                                                      const float4 * xs, const int c0, const int k4) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
        for (int u = 0; u < GEMV_TRIP; ++u) {
            const int c = c0 + WARP_SIZE*u;
            if (c < k4) {
                const float4 xv = xs[t*k4 + c];
#pragma unroll
                for (int i = 0; i < GEMV_ROWS; ++i) {
                    acc[i][t] = dot4(wv[u][i], xv, acc[i][t]);
                }
            }
        }
    }
}

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

// The warp sums of the first N values (a power of two up to 32) at once, lane l ending with the
// sum of value l/(32/N): each the 32-lane butterfly's (offsets 16, 8, 4, 2, 1), in far fewer
// shuffles than N butterflies.
template <int N>
static __device__ __forceinline__ float warp_reduce_scatter(float (&v)[32]) {
    halving_sums<N, 16>(v);
    return v[0];
}

static __host__ __device__ constexpr int pow2_at_least(const int n) {
    return n <= 1 ? 1 : 2*pow2_at_least((n + 1)/2);
}

// T tokens: a template parameter, so that every per-token loop unrolls and the partial sums stay
// in registers. A row group's first trip is loaded ahead: the block's first before x is staged
// (its latency overlaps the staging and the barrier), each next one before the butterflies of the
// group before it.
template <int SPLIT, int T>
static __device__ __forceinline__ void gemv_heads(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                                  float * __restrict__ y, const int nh, const int k4, const int r) {
    extern __shared__ float4 xs[];
    const int head = blockIdx.x / SPLIT;
    int begin, end;
    split_range(r, SPLIT, blockIdx.x % SPLIT, begin, end);
    if (begin >= end) {
        return;
    }
    w += head*r*k4;
    const int lane = threadIdx.x % WARP_SIZE;
    int first = begin + threadIdx.x/WARP_SIZE*GEMV_ROWS;
    float4 wv[GEMV_TRIP][GEMV_ROWS];
    gemv_load_trip(wv, w, first, end, lane, k4);

#pragma unroll
    for (int t = 0; t < T; ++t) {
        for (int c = threadIdx.x; c < k4; c += blockDim.x) {
            xs[t*k4 + c] = x[(t*nh + head)*k4 + c];
        }
    }
    __syncthreads();

    for (; first < end; first += GEMV_BLOCK/WARP_SIZE*GEMV_ROWS) {
        float acc[GEMV_ROWS][T] = {};
        gemv_fold_trip(acc, wv, xs, lane, k4);
        for (int c0 = lane + WARP_SIZE*GEMV_TRIP; c0 < k4; c0 += WARP_SIZE*GEMV_TRIP) {
            gemv_load_trip(wv, w, first, end, c0, k4);
            gemv_fold_trip(acc, wv, xs, c0, k4);
        }
        gemv_load_trip(wv, w, first + GEMV_BLOCK/WARP_SIZE*GEMV_ROWS, end, lane, k4);
        // The group's GEMV_ROWS*T sums in one reduce-scatter (zeros padding them to a power of
        // two): lane l ends with sum l/(32/SUMS), value i*T + t, and the first lane of each
        // stores it.
        constexpr int SUMS = pow2_at_least(GEMV_ROWS*T);
        constexpr int LANES = WARP_SIZE/SUMS;
        float v[32] = {};
#pragma unroll
        for (int i = 0; i < GEMV_ROWS; ++i) {
#pragma unroll
            for (int t = 0; t < T; ++t) {
                v[i*T + t] = acc[i][t];
            }
        }
        const float sum = warp_reduce_scatter<SUMS>(v);
        const int j = lane / LANES;
        if (lane % LANES == 0 && j < GEMV_ROWS*T && first + j/T < end) {
            y[(j%T*nh + head)*r + first + j/T] = sum;
        }
    }
}

// One body per token count; a t outside 1..GEMV_MAX_T writes nothing.
template <int SPLIT>
static __device__ __forceinline__ void gemv(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                            float * __restrict__ y, const int t, const int nh, const int k,
                                            const int r) {
    switch (t) {
        case 1: gemv_heads<SPLIT, 1>(x, w, y, nh, k/4, r); break;
        case 2: gemv_heads<SPLIT, 2>(x, w, y, nh, k/4, r); break;
        case 3: gemv_heads<SPLIT, 3>(x, w, y, nh, k/4, r); break;
        case 4: gemv_heads<SPLIT, 4>(x, w, y, nh, k/4, r); break;
        case 5: gemv_heads<SPLIT, 5>(x, w, y, nh, k/4, r); break;
        case 6: gemv_heads<SPLIT, 6>(x, w, y, nh, k/4, r); break;
        case 7: gemv_heads<SPLIT, 7>(x, w, y, nh, k/4, r); break;
        case 8: gemv_heads<SPLIT, 8>(x, w, y, nh, k/4, r); break;
        default: break;
    }
}

// absorb_q: x = q_nope [t, nh, d_nope], w = w_kb [nh, kv_rank, d_nope], y = q_lat [t, nh, kv_rank].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: t*d_nope*4 bytes
#define MLA_ABSORB_Q(name, split)                                                                      \
    extern "C" __global__ void name(const float4 * __restrict__ q_nope, const float4 * __restrict__ w_kb, \
                                    float * __restrict__ q_lat, const int t, const int nh,            \
                                    const int d_nope, const int kv_rank) {                             \
        gemv<split>(q_nope, w_kb, q_lat, t, nh, d_nope, kv_rank);                                      \
    }

// decompress_v: x = o_lat [t, nh, kv_rank], w = w_vb [nh, d_v, kv_rank], y = out [t, nh, d_v].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: t*kv_rank*4 bytes
#define MLA_DECOMPRESS_V(name, split)                                                                  \
    extern "C" __global__ void name(const float4 * __restrict__ o_lat, const float4 * __restrict__ w_vb, \
                                    float * __restrict__ out, const int t, const int nh,              \
                                    const int d_v, const int kv_rank) {                                \
        gemv<split>(o_lat, w_vb, out, t, nh, kv_rank, d_v);                                            \
    }

MLA_ABSORB_Q(mla_absorb_q, 1)
MLA_ABSORB_Q(mla_absorb_q_s2, 2)
MLA_ABSORB_Q(mla_absorb_q_s4, 4)
MLA_ABSORB_Q(mla_absorb_q_s8, 8)

MLA_DECOMPRESS_V(mla_decompress_v, 1)
MLA_DECOMPRESS_V(mla_decompress_v_s2, 2)
MLA_DECOMPRESS_V(mla_decompress_v_s4, 4)
MLA_DECOMPRESS_V(mla_decompress_v_s8, 8)

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
