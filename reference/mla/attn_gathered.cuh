// Included by mla.cu: attn_gathered and its split twins.

// ---------------------------------------------------------------------------------------------
// attn_gathered: per token and head, scores over the gathered rows, softmax, weighted sum of the
// rows' latent part. A group of ATTN_HEADS heads of a token is SPLIT blocks of HEADS_PER_BLOCK = ATTN_HEADS/SPLIT
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

// Where chunk c of head h's query is staged in a block of HEADS_PER_BLOCK heads, in float4s from work: chunks
// grouped by eight, the group of all heads together, so the 8 lanes of a row read 128 consecutive
// bytes and a lane finds every head's chunk at a fixed offset from one address.
template <int HEADS_PER_BLOCK>
static __device__ __forceinline__ int query_index(const int c, const int h) {
    return (c/ATTN_ROW_LANES*HEADS_PER_BLOCK + h)*ATTN_ROW_LANES + c%ATTN_ROW_LANES;
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

// Dynamic shared memory of a block of HEADS_PER_BLOCK heads: work (the queries, then the warps' partial
// outputs), the scores (HEADS_PER_BLOCK per slot), each warp's maxima and sums, the reciprocal of each head's
// sum, and each slot's cache row (found by the scores for the weighted sum).
template <int HEADS_PER_BLOCK>
struct attn_smem {
    float4 * work;
    float * scores;
    float * warp_max;
    float * warp_sum;
    float * inv;
    int * rows;

    __device__ __forceinline__ attn_smem(char * base, const int n_slots, const int d4) {
        const int queries = query_index<HEADS_PER_BLOCK>((d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES, 0)*16;
        const int partials = ATTN_WARPS*HEADS_PER_BLOCK*ATTN_PASS*16;
        work = (float4 *) base;
        scores = (float *) (base + max(queries, partials));
        warp_max = scores + n_slots*HEADS_PER_BLOCK;
        warp_sum = warp_max + ATTN_WARPS*HEADS_PER_BLOCK;
        inv = warp_sum + ATTN_WARPS*HEADS_PER_BLOCK;
        rows = (int *) (inv + HEADS_PER_BLOCK);
    }
};

// HEADS_PER_BLOCK floats of shared memory: float4s where HEADS_PER_BLOCK is a multiple of 4, one float at a time otherwise.
template <int HEADS_PER_BLOCK>
static __device__ __forceinline__ void load_heads(float (&v)[HEADS_PER_BLOCK], const float * p) {
    if (HEADS_PER_BLOCK % 4 == 0) {
#pragma unroll
        for (int k = 0; k < HEADS_PER_BLOCK/4; ++k) {
            const float4 a = ((const float4 *) p)[k];
            v[4*k] = a.x; v[4*k + 1] = a.y; v[4*k + 2] = a.z; v[4*k + 3] = a.w;
        }
    } else {
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            v[h] = p[h];
        }
    }
}

template <int HEADS_PER_BLOCK>
static __device__ __forceinline__ void store_heads(float * p, const float (&v)[HEADS_PER_BLOCK]) {
    if (HEADS_PER_BLOCK % 4 == 0) {
#pragma unroll
        for (int k = 0; k < HEADS_PER_BLOCK/4; ++k) {
            ((float4 *) p)[k] = make_float4(v[4*k], v[4*k + 1], v[4*k + 2], v[4*k + 3]);
        }
    } else {
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            p[h] = v[h];
        }
    }
}

// The queries of the block's heads at query_index: q_lat's chunks, then q_pe's; zeros for heads
// past `heads` and for chunks past the row.
template <int HEADS_PER_BLOCK>
static __device__ __forceinline__ void attn_stage_queries(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                          float4 * work, const int heads, const int kv4, const int r4) {
    const int d4 = kv4 + r4;
    const int staged = (d4 + ATTN_ROW_LANES - 1)/ATTN_ROW_LANES*ATTN_ROW_LANES*HEADS_PER_BLOCK;
    for (int i = threadIdx.x; i < staged; i += ATTN_BLOCK) {
        const int h = i/ATTN_ROW_LANES % HEADS_PER_BLOCK;
        const int c = i/(ATTN_ROW_LANES*HEADS_PER_BLOCK)*ATTN_ROW_LANES + i%ATTN_ROW_LANES;
        work[i] = h >= heads || c >= d4 ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : c < kv4 ? q_lat[h*kv4 + c] : q_pe[h*r4 + c - kv4];
    }
}

// Step 1: each warp scores 16 slots at a time; lane l takes rows l/8 + 4j and chunks l%8 + 8m, CHUNKS_PER_TRIP
// chunks of every row loaded before any is used. Lane 0 of each row's 8 keeps the row for step 3.
// After the reduction lane kl holds per values of one row from kl*N/8 on; at HEADS_PER_BLOCK = 1 lanes kl and
// kl^1 hold the same score and the even one stores it.
template <int HEADS_PER_BLOCK, int CHUNKS_PER_TRIP>
static __device__ __forceinline__ void attn_score(const gather g, const attn_smem<HEADS_PER_BLOCK> sm, const float scale) {
    constexpr int N = ATTN_ROWS*HEADS_PER_BLOCK;
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
        for (int c0 = kl; c0 < g.d4; c0 += ATTN_ROW_LANES*CHUNKS_PER_TRIP) {
            float4 v[CHUNKS_PER_TRIP][ATTN_ROWS];
#pragma unroll
            for (int u = 0; u < CHUNKS_PER_TRIP; ++u) {
#pragma unroll
                for (int j = 0; j < ATTN_ROWS; ++j) {
                    const int c = c0 + ATTN_ROW_LANES*u;
                    v[u][j] = rows[j] && c < g.d4 ? rows[j][c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
#pragma unroll
            for (int u = 0; u < CHUNKS_PER_TRIP; ++u) {
                const int c = c0 + ATTN_ROW_LANES*u;
                if (c >= g.d4) {
                    continue;
                }
#pragma unroll
                for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
                    const float4 q = sm.work[query_index<HEADS_PER_BLOCK>(c, h)];
#pragma unroll
                    for (int j = 0; j < ATTN_ROWS; ++j) {
                        acc[j*HEADS_PER_BLOCK + h] = dot4(v[u][j], q, acc[j*HEADS_PER_BLOCK + h]);
                    }
                }
            }
        }
        group8_reduce_scatter<N>(acc);
        const int slot = first + quad + 4*(start/HEADS_PER_BLOCK);
        if (slot < g.n_slots && kl*N % ATTN_ROW_LANES == 0) {
#pragma unroll
            for (int k = 0; k < per; ++k) {
                sm.scores[HEADS_PER_BLOCK*slot + start%HEADS_PER_BLOCK + k] = scale*acc[k];
            }
        }
    }
}

// Step 2: softmax numerators expf(s - max) in place of the scores, and 1/sum per head in inv.
template <int HEADS_PER_BLOCK>
static __device__ __forceinline__ void attn_softmax(const attn_smem<HEADS_PER_BLOCK> sm, const int n_slots) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;

    float m[HEADS_PER_BLOCK];
#pragma unroll
    for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
        m[h] = __int_as_float(0xff800000);  // -inf
    }
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float s[HEADS_PER_BLOCK];
        load_heads(s, sm.scores + HEADS_PER_BLOCK*i);
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            m[h] = fmaxf(m[h], s[h]);
        }
    }
#pragma unroll
    for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
        m[h] = warp_reduce_max(m[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_max + HEADS_PER_BLOCK*warp, m);
    }
    __syncthreads();
    load_heads(m, sm.warp_max);
    for (int w = 1; w < ATTN_WARPS; ++w) {
        float other[HEADS_PER_BLOCK];
        load_heads(other, sm.warp_max + HEADS_PER_BLOCK*w);
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            m[h] = fmaxf(m[h], other[h]);
        }
    }

    float sum[HEADS_PER_BLOCK] = {};
    for (int i = tid; i < n_slots; i += ATTN_BLOCK) {
        float e[HEADS_PER_BLOCK];
        load_heads(e, sm.scores + HEADS_PER_BLOCK*i);
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            e[h] = expf(e[h] - m[h]);
        }
        store_heads(sm.scores + HEADS_PER_BLOCK*i, e);
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            // Rounded on its own: expf's last multiply is contractible, and ptxas may fuse it
            // into a plain add.
            sum[h] = __fadd_rn(sum[h], e[h]);
        }
    }
#pragma unroll
    for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
        sum[h] = warp_reduce_sum(sum[h]);
    }
    if (lane == 0) {
        store_heads(sm.warp_sum + HEADS_PER_BLOCK*warp, sum);
    }
    __syncthreads();
    if (tid < HEADS_PER_BLOCK) {
        float total = sm.warp_sum[tid];
        for (int w = 1; w < ATTN_WARPS; ++w) {
            total += sm.warp_sum[HEADS_PER_BLOCK*w + tid];
        }
        sm.inv[tid] = 1.0f / total;  // total >= 1: the largest score contributes expf(0)
    }
}

// Step 3: out[h, c] = inv[h] * sum_i e[i][h] * row_i[c] for every chunk, a pass of ATTN_PASS
// chunks at a time; warp w sums its slots w + ATTN_WARPS*j (SLOTS_PER_TRIP rows loaded before any is used),
// and the warps' partials are added in warp order through shared memory.
template <int HEADS_PER_BLOCK, int SLOTS_PER_TRIP>
static __device__ __forceinline__ void attn_weighted_sum(const gather g, const attn_smem<HEADS_PER_BLOCK> sm, float4 * __restrict__ out,
                                                         const int heads, const int kv4) {
    const int tid = threadIdx.x;
    const int warp = tid / WARP_SIZE;
    const int lane = tid % WARP_SIZE;
    for (int base = 0; base < kv4; base += ATTN_PASS) {
        const int chunk = base + lane;
        const bool live = chunk < kv4;
        float4 a[HEADS_PER_BLOCK];
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            a[h] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        for (int first = warp; first < g.n_slots; first += ATTN_WARPS*SLOTS_PER_TRIP) {
            float4 v[SLOTS_PER_TRIP];
#pragma unroll
            for (int s = 0; s < SLOTS_PER_TRIP; ++s) {
                const int i = first + ATTN_WARPS*s;
                v[s] = i < g.n_slots && live ? g.row(sm.rows[i])[chunk] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int s = 0; s < SLOTS_PER_TRIP; ++s) {
                const int i = first + ATTN_WARPS*s;
                if (i >= g.n_slots) {
                    continue;
                }
                float e[HEADS_PER_BLOCK];
                load_heads(e, sm.scores + HEADS_PER_BLOCK*i);
#pragma unroll
                for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
                    a[h].x += e[h]*v[s].x;
                    a[h].y += e[h]*v[s].y;
                    a[h].z += e[h]*v[s].z;
                    a[h].w += e[h]*v[s].w;
                }
            }
        }
#pragma unroll
        for (int h = 0; h < HEADS_PER_BLOCK; ++h) {
            sm.work[(warp*HEADS_PER_BLOCK + h)*ATTN_PASS + lane] = a[h];
        }
        __syncthreads();
        const int h = tid / ATTN_PASS;
        const int c = tid % ATTN_PASS;
        if (h < heads && base + c < kv4) {
            float4 sum = sm.work[h*ATTN_PASS + c];
            for (int w = 1; w < ATTN_WARPS; ++w) {
                const float4 p = sm.work[(w*HEADS_PER_BLOCK + h)*ATTN_PASS + c];
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

// Blocks of HEADS_PER_BLOCK heads (SPLIT = ATTN_HEADS/HEADS_PER_BLOCK per group), CHUNKS_PER_TRIP chunks per row and SLOTS_PER_TRIP slots per trip.
// grid: t * ceil(nh/ATTN_HEADS) * SPLIT (part of the group fastest), block: ATTN_BLOCK, dynamic
// shared memory: attn_smem<HEADS_PER_BLOCK>'s layout for n_slots and (kv_rank + d_rope)/4 chunks per row.
template <int HEADS_PER_BLOCK, int CHUNKS_PER_TRIP, int SLOTS_PER_TRIP>
static __device__ __forceinline__ void attn_gathered(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                     const float4 * __restrict__ cache, const int * __restrict__ idx,
                                                     float4 * __restrict__ out, const int nh, const int kv_rank,
                                                     const int d_rope, const int t, const int n_slots,
                                                     const float scale, const int pool) {
    extern __shared__ char attn_shared[];
    constexpr int SPLIT = ATTN_HEADS/HEADS_PER_BLOCK;
    const int kv4 = kv_rank/4;
    const int r4 = d_rope/4;
    const int groups = (nh + ATTN_HEADS - 1) / ATTN_HEADS;
    const int token = blockIdx.x / SPLIT / groups;
    const int group = blockIdx.x / SPLIT % groups;
    const int h0 = group*ATTN_HEADS + blockIdx.x % SPLIT * HEADS_PER_BLOCK;
    if (token >= t || h0 >= nh) {
        return;
    }
    const int heads = min(nh - h0, HEADS_PER_BLOCK);
    const gather g = {cache, idx + token*n_slots, n_slots, pool, kv4 + r4};
    attn_prefetch_rows(g, groups*SPLIT, group*SPLIT + blockIdx.x % SPLIT);
    const attn_smem<HEADS_PER_BLOCK> sm(attn_shared, n_slots, g.d4);
    const int first = token*nh + h0;

    attn_stage_queries<HEADS_PER_BLOCK>(q_lat + first*kv4, q_pe + first*r4, sm.work, heads, kv4, r4);
    __syncthreads();
    attn_score<HEADS_PER_BLOCK, CHUNKS_PER_TRIP>(g, sm, scale);
    __syncthreads();
    attn_softmax(sm, n_slots);
    attn_weighted_sum<HEADS_PER_BLOCK, SLOTS_PER_TRIP>(g, sm, out + first*kv4, heads, kv4);
}

#define MLA_ATTN_GATHERED(name, hb, jt, ns)                                                            \
    extern "C" __global__ void name(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe, \
                                    const float4 * __restrict__ cache, const int * __restrict__ idx,  \
                                    float4 * __restrict__ out, const int nh, const int kv_rank,        \
                                    const int d_rope, const int t, const int n_slots,                  \
                                    const float scale, const int pool) {                               \
        chain_entry();                                                                                 \
        attn_gathered<hb, jt, ns>(q_lat, q_pe, cache, idx, out, nh, kv_rank, d_rope, t, n_slots, scale, pool); \
    }

// Heads per block, chunks per trip of the scores, slots per trip of the weighted sum: the split
// of ATTN_HEADS/HEADS_PER_BLOCK blocks per group.
MLA_ATTN_GATHERED(mla_attn_gathered, 8, 2, 8)
MLA_ATTN_GATHERED(mla_attn_gathered_s2, 4, 4, 16)
MLA_ATTN_GATHERED(mla_attn_gathered_s4, 2, 4, 16)
MLA_ATTN_GATHERED(mla_attn_gathered_s8, 1, 4, 16)
