// Reference CUDA C++ for the MLA decode family: absorb_q, decompress_v and attn_gathered, each as
// the unsplit kernel and its split-2/4/8 twins. Same symbols and argument lists as
// kernels-gpu/src/mla/*.rs, and per output element the same floating-point operations in the
// same order (the module docs there state each sequence).
//
// A split changes the launch geometry only: SPLIT blocks share what one unsplit block computes,
// each keeping a slice of its outputs, so every twin gives the unsplit kernel's bits.

#include "chain.cuh"

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
// shared memory; a warp takes GEMV_WARP_ROWS rows at a time, GEMV_ROW_LANES lanes a row: lane l
// row l/8 of the group and its float4 chunks l%8, l%8 + 8, ..., in trips of gemv_trip(T) chunks
// loaded before any is used and folded token by token in ascending chunk order (the warp's rows
// read the same chunk of x at once); then an 8-lane butterfly per output.

#define GEMV_BLOCK 256
#define GEMV_ROW_LANES 8                               // lanes per row
#define GEMV_WARP_ROWS (WARP_SIZE/GEMV_ROW_LANES)      // rows per warp at a time
#define GEMV_MAX_T 8                                   // tokens per launch

// Chunks per lane loaded together at T tokens: four, two from five tokens on, where the partial
// sums take the registers (a lane's chunks, and so the bits, are the same whatever its trips).
static __host__ __device__ constexpr int gemv_trip(const int t) {
    return t > 4 ? 2 : 4;
}

// One trip of a lane over row `row` from chunk `base`: chunks base + l%8 + 8u, zeros for a row
// from end on and chunks past the row.
template <int C>
static __device__ __forceinline__ void gemv_load_trip(float4 (&wv)[C], const float4 * __restrict__ w,
                                                      const int row, const int end, const int base, const int k4) {
    const int j = threadIdx.x % GEMV_ROW_LANES;
#pragma unroll
    for (int u = 0; u < C; ++u) {
        const int c = base + j + GEMV_ROW_LANES*u;
        wv[u] = row < end && c < k4 ? w[row*k4 + c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// Folds one trip into the lane partials, token by token, in ascending chunk order.
template <int T, int C>
static __device__ __forceinline__ void gemv_fold_trip(float (&acc)[T], const float4 (&wv)[C],
                                                      const float4 * xs, const int base, const int k4) {
    const int j = threadIdx.x % GEMV_ROW_LANES;
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
        for (int u = 0; u < C; ++u) {
            const int c = base + j + GEMV_ROW_LANES*u;
            if (c < k4) {
                acc[t] = dot4(wv[u], xs[t*k4 + c], acc[t]);
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

// Sums the first N values (a power of two up to 32) over each group of 8 lanes, leaving lane 8k+m
// with the sums of values m*N/8 on in v[0..max(N/8, 1)): the 8-lane butterfly's sums.
template <int N>
static __device__ __forceinline__ void group8_reduce_scatter(float (&v)[32]) {
    halving_sums<N, 4>(v);
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
    const int sub = lane / GEMV_ROW_LANES;
    int first = begin + threadIdx.x/WARP_SIZE*GEMV_WARP_ROWS;
    constexpr int C = gemv_trip(T);
    float4 wv[C];
    gemv_load_trip(wv, w, first + sub, end, 0, k4);

#pragma unroll
    for (int t = 0; t < T; ++t) {
        for (int c = threadIdx.x; c < k4; c += blockDim.x) {
            xs[t*k4 + c] = x[(t*nh + head)*k4 + c];
        }
    }
    __syncthreads();

    for (; first < end; first += GEMV_BLOCK/WARP_SIZE*GEMV_WARP_ROWS) {
        const int row = first + sub;
        float acc[T] = {};
        gemv_fold_trip(acc, wv, xs, 0, k4);
        for (int base = GEMV_ROW_LANES*C; base < k4; base += GEMV_ROW_LANES*C) {
            gemv_load_trip(wv, w, row, end, base, k4);
            gemv_fold_trip(acc, wv, xs, base, k4);
        }
        gemv_load_trip(wv, w, row + GEMV_BLOCK/WARP_SIZE*GEMV_WARP_ROWS, end, 0, k4);
        // The lane's T sums in one reduce-scatter over its row's 8 lanes (zeros padding them to a
        // power of two): lane j of the row ends with token j*SUMS/8, and the first lane of each
        // stores it.
        constexpr int SUMS = pow2_at_least(T);
        float v[32] = {};
#pragma unroll
        for (int t = 0; t < T; ++t) {
            v[t] = acc[t];
        }
        group8_reduce_scatter<SUMS>(v);
        const int j = lane % GEMV_ROW_LANES;
        const int t = j*SUMS/GEMV_ROW_LANES;
        if (j % (GEMV_ROW_LANES/SUMS) == 0 && t < T && row < end) {
            y[(t*nh + head)*r + row] = v[0];
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
        chain_entry();                                                                                 \
        gemv<split>(q_nope, w_kb, q_lat, t, nh, d_nope, kv_rank);                                      \
    }

// decompress_v: x = o_lat [t, nh, kv_rank], w = w_vb [nh, d_v, kv_rank], y = out [t, nh, d_v].
// grid: nh*SPLIT, block: GEMV_BLOCK, dynamic shared memory: t*kv_rank*4 bytes
#define MLA_DECOMPRESS_V(name, split)                                                                  \
    extern "C" __global__ void name(const float4 * __restrict__ o_lat, const float4 * __restrict__ w_vb, \
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
