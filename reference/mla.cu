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
#pragma unroll
        for (int i = 0; i < GEMV_ROWS; ++i) {
#pragma unroll
            for (int t = 0; t < T; ++t) {
                const float sum = warp_reduce_sum(acc[i][t]);
                if (lane == 0 && first + i < end) {
                    y[(t*nh + head)*r + first + i] = sum;
                }
            }
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
// attn_gathered: per token and group of ATTN_HEADS heads, scores over the gathered rows, softmax,
// weighted sum of the rows' latent part; a split cuts the output columns, every block of a split
// recomputing the group's scores.

#define ATTN_BLOCK 256
#define ATTN_WARPS (ATTN_BLOCK/WARP_SIZE)
#define ATTN_HEADS 8
#define ATTN_ROW_LANES 8      // lanes per row in the scores
#define ATTN_ROWS 4           // rows per lane in the scores
#define ATTN_SLOTS_PER_WARP (WARP_SIZE/ATTN_ROW_LANES*ATTN_ROWS)
#define ATTN_TRIP 2           // chunks per row loaded together in the scores
#define ATTN_OUT_TRIP 8       // rows loaded together in the weighted sum
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

// Where chunk c of head h's query is staged, in float4s from work: chunks grouped by eight, the
// group of all heads together, so the 8 lanes of a row read 128 consecutive bytes and a lane finds
// every head's chunk at a fixed offset from one address.
static __device__ __forceinline__ int query_index(const int c, const int h) {
    return (c/ATTN_ROW_LANES*ATTN_HEADS + h)*ATTN_ROW_LANES + c%ATTN_ROW_LANES;
}

// Dynamic shared memory: work (the queries, then the warps' partial outputs), the scores (8 per
// slot), each warp's maxima and sums, the reciprocal of each head's sum, and each slot's cache row
// (found by the scores for the weighted sum).
struct attn_smem {
    float4 * work;
    float * scores;
    float * warp_max;
    float * warp_sum;
    float * inv;
    int * rows;

    __device__ __forceinline__ attn_smem(char * base, const int n_slots, const int d4) {
        const int queries = query_index((d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES, 0)*16;
        const int partials = ATTN_WARPS*ATTN_HEADS*ATTN_PASS*16;
        work = (float4 *) base;
        scores = (float *) (base + max(queries, partials));
        warp_max = scores + n_slots*ATTN_HEADS;
        warp_sum = warp_max + ATTN_WARPS*ATTN_HEADS;
        inv = warp_sum + ATTN_WARPS*ATTN_HEADS;
        rows = (int *) (inv + ATTN_HEADS);
    }
};

static __device__ __forceinline__ void load_heads(float (&v)[ATTN_HEADS], const float * p) {
    const float4 a = ((const float4 *) p)[0];
    const float4 b = ((const float4 *) p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

static __device__ __forceinline__ void store_heads(float * p, const float (&v)[ATTN_HEADS]) {
    ((float4 *) p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    ((float4 *) p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// One halving step over the lane pairs l, l^BIT: a lane keeps the lower HALF values (upper, where
// l & BIT), sends the others to its partner, and adds what it receives to what it keeps.
template <int HALF, int BIT>
static __device__ __forceinline__ void exchange_halves(float (&v)[32]) {
    const bool upper = threadIdx.x & BIT;
#pragma unroll
    for (int j = 0; j < HALF; ++j) {
        const float keep = upper ? v[j + HALF] : v[j];
        const float send = upper ? v[j] : v[j + HALF];
        v[j] = keep + __shfl_xor_sync(FULL_MASK, send, BIT, WARP_SIZE);
    }
}

// Sums 32 values over each group of 8 lanes, leaving lane 8k+m with the sums of values 4m..4m+3
// in v[0..3]; each sum is the 8-lane butterfly's (offsets 4, 2, 1), in 28 shuffles instead of 96.
static __device__ __forceinline__ void group8_reduce_scatter(float (&v)[32]) {
    exchange_halves<16, 4>(v);
    exchange_halves<8, 2>(v);
    exchange_halves<4, 1>(v);
}

// The queries of the block's heads at query_index: q_lat's chunks, then q_pe's; zeros for heads
// past nh and for chunks past the row.
static __device__ __forceinline__ void attn_stage_queries(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                          float4 * work, const int heads, const int kv4, const int r4) {
    const int d4 = kv4 + r4;
    const int staged = (d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES*ATTN_HEADS;
    for (int i = threadIdx.x; i < staged; i += ATTN_BLOCK) {
        const int h = i/ATTN_ROW_LANES % ATTN_HEADS;
        const int c = i/(ATTN_ROW_LANES*ATTN_HEADS)*ATTN_ROW_LANES + i%ATTN_ROW_LANES;
        work[i] = h >= heads || c >= d4 ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : c < kv4 ? q_lat[h*kv4 + c] : q_pe[h*r4 + c - kv4];
    }
}

// Step 1: each warp scores 16 slots at a time; lane l takes rows l/8 + 4j and chunks l%8 + 8m.
// Lane 0 of each row's 8 keeps the row for step 3.
static __device__ __forceinline__ void attn_score(const gather g, const attn_smem sm, const float scale) {
    const int lane = threadIdx.x % WARP_SIZE;
    const int quad = lane / ATTN_ROW_LANES;
    const int kl = lane % ATTN_ROW_LANES;
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
        float acc[ATTN_ROWS*ATTN_HEADS] = {};
        for (int c0 = kl; c0 < g.d4; c0 += ATTN_ROW_LANES*ATTN_TRIP) {
            float4 v[ATTN_TRIP][ATTN_ROWS];
#pragma unroll
            for (int u = 0; u < ATTN_TRIP; ++u) {
#pragma unroll
                for (int j = 0; j < ATTN_ROWS; ++j) {
                    const int c = c0 + ATTN_ROW_LANES*u;
                    v[u][j] = rows[j] && c < g.d4 ? rows[j][c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
#pragma unroll
            for (int u = 0; u < ATTN_TRIP; ++u) {
                const int c = c0 + ATTN_ROW_LANES*u;
                if (c >= g.d4) {
                    continue;
                }
#pragma unroll
                for (int h = 0; h < ATTN_HEADS; ++h) {
                    const float4 q = sm.work[query_index(c, h)];
#pragma unroll
                    for (int j = 0; j < ATTN_ROWS; ++j) {
                        acc[j*ATTN_HEADS + h] = dot4(v[u][j], q, acc[j*ATTN_HEADS + h]);
                    }
                }
            }
        }
        group8_reduce_scatter(acc);
        const int slot = first + quad + 4*(kl/2);
        if (slot < g.n_slots) {
            ((float4 *) (sm.scores + ATTN_HEADS*slot))[kl % 2] =
                make_float4(scale*acc[0], scale*acc[1], scale*acc[2], scale*acc[3]);
        }
    }
}

// Step 2: softmax numerators expf(s - max) in place of the scores, and 1/sum per head in inv.
static __device__ __forceinline__ void attn_softmax(const attn_smem sm, const int n_slots) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;

    float m[ATTN_HEADS];
#pragma unroll
    for (int h = 0; h < ATTN_HEADS; ++h) {
        m[h] = __int_as_float(0xff800000);  // -inf
    }
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float s[ATTN_HEADS];
        load_heads(s, sm.scores + ATTN_HEADS*i);
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            m[h] = fmaxf(m[h], s[h]);
        }
    }
#pragma unroll
    for (int h = 0; h < ATTN_HEADS; ++h) {
        m[h] = warp_reduce_max(m[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_max + ATTN_HEADS*warp, m);
    }
    __syncthreads();
    load_heads(m, sm.warp_max);
    for (int w = 1; w < ATTN_WARPS; ++w) {
        float other[ATTN_HEADS];
        load_heads(other, sm.warp_max + ATTN_HEADS*w);
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            m[h] = fmaxf(m[h], other[h]);
        }
    }

    float sum[ATTN_HEADS] = {};
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float e[ATTN_HEADS];
        load_heads(e, sm.scores + ATTN_HEADS*i);
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            e[h] = expf(e[h] - m[h]);
        }
        store_heads(sm.scores + ATTN_HEADS*i, e);
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            sum[h] += e[h];
        }
    }
#pragma unroll
    for (int h = 0; h < ATTN_HEADS; ++h) {
        sum[h] = warp_reduce_sum(sum[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_sum + ATTN_HEADS*warp, sum);
    }
    __syncthreads();
    if (tid < ATTN_HEADS) {
        float total = sm.warp_sum[tid];
        for (int w = 1; w < ATTN_WARPS; ++w) {
            total += sm.warp_sum[ATTN_HEADS*w + tid];
        }
        sm.inv[tid] = 1.0f / total;  // total >= 1: the largest score contributes expf(0)
    }
}

// Step 3: out[h, c] = inv[h] * sum_i e[i][h] * row_i[c] for the chunks [begin, end), a pass of
// ATTN_PASS chunks at a time; warp w sums its slots w + ATTN_WARPS*j, and the warps' partials are
// added in warp order through shared memory.
static __device__ __forceinline__ void attn_weighted_sum(const gather g, const attn_smem sm, float4 * __restrict__ out,
                                                         const int heads, const int kv4, const int begin, const int end) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;
    for (int base = begin; base < end; base += ATTN_PASS) {
        const int chunk = base + lane;
        const bool live = chunk < end;
        float4 a[ATTN_HEADS];
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            a[h] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        for (int first = warp; first < g.n_slots; first += ATTN_WARPS*ATTN_OUT_TRIP) {
            float4 v[ATTN_OUT_TRIP];
#pragma unroll
            for (int s = 0; s < ATTN_OUT_TRIP; ++s) {
                const int i = first + ATTN_WARPS*s;
                v[s] = i < g.n_slots && live ? g.row(sm.rows[i])[chunk] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int s = 0; s < ATTN_OUT_TRIP; ++s) {
                const int i = first + ATTN_WARPS*s;
                if (i >= g.n_slots) {
                    continue;
                }
                float e[ATTN_HEADS];
                load_heads(e, sm.scores + ATTN_HEADS*i);
#pragma unroll
                for (int h = 0; h < ATTN_HEADS; ++h) {
                    a[h].x += e[h]*v[s].x;
                    a[h].y += e[h]*v[s].y;
                    a[h].z += e[h]*v[s].z;
                    a[h].w += e[h]*v[s].w;
                }
            }
        }
#pragma unroll
        for (int h = 0; h < ATTN_HEADS; ++h) {
            sm.work[(warp*ATTN_HEADS + h)*ATTN_PASS + lane] = a[h];
        }
        __syncthreads();
        const int h = tid / ATTN_PASS;
        const int c = tid % ATTN_PASS;
        if (h < heads && base + c < end) {
            float4 sum = sm.work[h*ATTN_PASS + c];
            for (int w = 1; w < ATTN_WARPS; ++w) {
                const float4 p = sm.work[(w*ATTN_HEADS + h)*ATTN_PASS + c];
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

// grid: t * ceil(nh/ATTN_HEADS) * SPLIT (column part fastest), block: ATTN_BLOCK, dynamic shared
// memory: attn_smem's layout for n_slots and (kv_rank + d_rope)/4 chunks per row.
template <int SPLIT>
static __device__ __forceinline__ void attn_gathered(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                     const float4 * __restrict__ cache, const int * __restrict__ idx,
                                                     float4 * __restrict__ out, const int nh, const int kv_rank,
                                                     const int d_rope, const int t, const int n_slots,
                                                     const float scale, const int pool) {
    extern __shared__ char attn_shared[];
    const int kv4 = kv_rank/4;
    const int r4 = d_rope/4;
    const int groups = (nh + ATTN_HEADS - 1) / ATTN_HEADS;
    const int token = blockIdx.x / SPLIT / groups;
    const int group = blockIdx.x / SPLIT % groups;
    int begin, end;
    split_range(kv4, SPLIT, blockIdx.x % SPLIT, begin, end);
    if (token >= t || begin >= end) {
        return;
    }
    const int h0 = group*ATTN_HEADS;
    const int heads = min(nh - h0, ATTN_HEADS);
    const gather g = {cache, idx + token*n_slots, n_slots, pool, kv4 + r4};
    const attn_smem sm(attn_shared, n_slots, g.d4);
    const int first = token*nh + h0;

    attn_stage_queries(q_lat + first*kv4, q_pe + first*r4, sm.work, heads, kv4, r4);
    __syncthreads();
    attn_score(g, sm, scale);
    __syncthreads();
    attn_softmax(sm, n_slots);
    attn_weighted_sum(g, sm, out + first*kv4, heads, kv4, begin, end);
}

#define MLA_ATTN_GATHERED(name, split)                                                                 \
    extern "C" __global__ void name(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe, \
                                    const float4 * __restrict__ cache, const int * __restrict__ idx,  \
                                    float4 * __restrict__ out, const int nh, const int kv_rank,        \
                                    const int d_rope, const int t, const int n_slots,                  \
                                    const float scale, const int pool) {                               \
        attn_gathered<split>(q_lat, q_pe, cache, idx, out, nh, kv_rank, d_rope, t, n_slots, scale, pool); \
    }

MLA_ATTN_GATHERED(mla_attn_gathered, 1)
MLA_ATTN_GATHERED(mla_attn_gathered_s2, 2)
MLA_ATTN_GATHERED(mla_attn_gathered_s4, 4)
MLA_ATTN_GATHERED(mla_attn_gathered_s8, 8)
