// Reference CUDA C++ for the MLA decode family: absorb_q, decompress_v and attn_gathered, each as
// the unsplit kernel and its split-2/4/8 twins. Same symbols and argument lists as
// kernels-gpu/src/mla/*.rs, and per output element the same floating-point operations in the
// same order (the module docs there state each sequence).
//
// A split changes the launch geometry only: SPLIT blocks share what one unsplit block computes,
// each keeping a slice of its outputs, so every twin gives the unsplit kernel's bits.

#include "chain.cuh"
#include "cp_async.cuh"

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

// cp.async of 16 bytes from global to shared memory, through L2 only.
static __device__ __forceinline__ void cp_async_16(float4 * dst, const float4 * src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                 :: "r"((unsigned int) __cvta_generic_to_shared(dst)), "l"(__cvta_generic_to_global(src)));
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
// Blocks an SM holds at once, which the split entries declare, so that split 8's grid runs in one
// wave; fewer from sm_100 on, where four do not fit this body (perf-notes, MLA: each trip loaded
// before the one before it is folded).
#if __CUDA_ARCH__ >= 1000
#define GEMV_SPLIT_MIN_BLOCKS 3
#else
#define GEMV_SPLIT_MIN_BLOCKS 4
#endif
#define GEMV_MIN_BLOCKS(split) ((split) > 1 ? GEMV_SPLIT_MIN_BLOCKS : 1)

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
// in registers. Every trip is loaded a trip ahead: the block's first before x is staged (its
// latency overlaps the staging and the barrier), each next one before the trip before it is
// folded, so that a warp's weight loads stop neither while it folds nor while it reduces.
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

    // x staged by cp.async: every token's copies in flight at once, one round trip whatever T.
#pragma unroll
    for (int t = 0; t < T; ++t) {
        for (int c = threadIdx.x; c < k4; c += blockDim.x) {
            cp_async_16(xs + t*k4 + c, x + (t*nh + head)*k4 + c);
        }
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    // The warp's trips as one stream across its row groups (a group's trips, then the next
    // group's), each trip's loads issued before the trip before it is folded.
    constexpr int STEP = GEMV_BLOCK/WARP_SIZE*GEMV_ROWS;
    int base = 0;
    float acc[GEMV_ROWS][T] = {};
    while (first < end) {
        const bool last = base + WARP_SIZE*GEMV_TRIP >= k4;
        const int next = last ? first + STEP : first;
        const int next_base = last ? 0 : base + WARP_SIZE*GEMV_TRIP;
        float4 wn[GEMV_TRIP][GEMV_ROWS];
        gemv_load_trip(wn, w, next, end, next_base + lane, k4);
        gemv_fold_trip(acc, wv, xs, base + lane, k4);
        if (last) {
            // The group's GEMV_ROWS*T sums in one reduce-scatter (zeros padding them to a power
            // of two): lane l ends with sum l/(32/SUMS), value i*T + t, and the first lane of
            // each stores it.
            constexpr int SUMS = pow2_at_least(GEMV_ROWS*T);
            constexpr int LANES = WARP_SIZE/SUMS;
            float v[32] = {};
#pragma unroll
            for (int i = 0; i < GEMV_ROWS; ++i) {
#pragma unroll
                for (int t = 0; t < T; ++t) {
                    v[i*T + t] = acc[i][t];
                    acc[i][t] = 0.0f;
                }
            }
            const float sum = warp_reduce_scatter<SUMS>(v);
            const int j = lane / LANES;
            if (lane % LANES == 0 && j < GEMV_ROWS*T && first + j/T < end) {
                y[(j%T*nh + head)*r + first + j/T] = sum;
            }
        }
#pragma unroll
        for (int u = 0; u < GEMV_TRIP; ++u) {
#pragma unroll
            for (int i = 0; i < GEMV_ROWS; ++i) {
                wv[u][i] = wn[u][i];
            }
        }
        first = next;
        base = next_base;
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
    extern "C" __global__ void __launch_bounds__(GEMV_BLOCK, GEMV_MIN_BLOCKS(split)) name(const float4 * __restrict__ q_nope, const float4 * __restrict__ w_kb, \
                                    float * __restrict__ q_lat, const int t, const int nh,            \
                                    const int d_nope, const int kv_rank) {                             \
        chain_entry();                                                                                 \
        gemv<split>(q_nope, w_kb, q_lat, t, nh, d_nope, kv_rank);                                      \
    }

// decompress_v: x = o_lat [t, nh, kv_rank], w = w_vb [nh, d_v, kv_rank], y = out [t, nh, d_v].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: t*kv_rank*4 bytes
#define MLA_DECOMPRESS_V(name, split)                                                                  \
    extern "C" __global__ void __launch_bounds__(GEMV_BLOCK, GEMV_MIN_BLOCKS(split)) name(const float4 * __restrict__ o_lat, const float4 * __restrict__ w_vb, \
                                    float * __restrict__ out, const int t, const int nh,              \
                                    const int d_v, const int kv_rank) {                                \
        chain_entry();                                                                                 \
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

#include "mla/attn_gathered.cuh"
