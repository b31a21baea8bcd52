// Reference CUDA C++ for the norm_q8 family: rms_norm, quantize_q8_1, and the fused
// rms_norm_zq8_f32 and swiglu_q8_1. Same symbols and argument lists as
// kernels-gpu/src/norm_q8.rs; written the way a CUDA engineer would write them (ggml-cuda style),
// not transcribed from the Rust.
//
// Layout: rows of ncols floats (ncols % 32 == 0), read and written as float4. The q8_1 output is
// two planes: qs (int8, one per value) and d (float, one per 32 values).

#include "chain.cuh"
#include "swiglu1.cuh"

#define WARP_SIZE 32
#define QK8_1 32
#define UNROLL 4    // float4 column groups per thread per loop trip
#define MAX_ROW_THREADS 1024

static __device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(0xffffffff, x, offset, WARP_SIZE);
    }
    return x;
}

// The warp sums of V values at once (V is 1 or UNROLL = 4); lane l ends with the sum of value
// l / (WARP_SIZE/V). For V = 4: exchange halves at offset 16 (lanes with bit 16 keep x[2], x[3]
// and send x[0], x[1]), again at offset 8, then a butterfly over offsets 4, 2, 1: six shuffles
// where four butterflies take twenty. Each sum adds the same pairs in the same tree as
// warp_reduce_sum of that value alone, so it has the same bits.
template <int V>
static __device__ __forceinline__ float warp_reduce_sum_scatter(const float (&x)[V]) {
    static_assert(V == 1 || V == 4, "one or four values per lane");
    if constexpr (V == 1) {
        return warp_reduce_sum(x[0]);
    } else {
        const bool hi16 = threadIdx.x & 16;
        const float a = (hi16 ? x[2] : x[0]) + __shfl_xor_sync(0xffffffff, hi16 ? x[0] : x[2], 16, WARP_SIZE);
        const float b = (hi16 ? x[3] : x[1]) + __shfl_xor_sync(0xffffffff, hi16 ? x[1] : x[3], 16, WARP_SIZE);
        const bool hi8 = threadIdx.x & 8;
        float sum = (hi8 ? b : a) + __shfl_xor_sync(0xffffffff, hi8 ? a : b, 8, WARP_SIZE);
#pragma unroll
        for (int offset = 4; offset > 0; offset >>= 1) {
            sum += __shfl_xor_sync(0xffffffff, sum, offset, WARP_SIZE);
        }
        return sum;
    }
}

// Sum over V*blockDim.x "virtual threads"; this thread holds x[k], the value of virtual thread
// threadIdx.x + k*blockDim.x. Each virtual warp is reduced on its own and its sum stored at its
// virtual warp index (s_sum holds WARP_SIZE floats), so the tree depends on the virtual threads
// only, not on V. Every thread gets the result.
template <int V>
static __device__ __forceinline__ float block_reduce_sum(const float (&x)[V], float * s_sum) {
    const int warp_id = threadIdx.x / WARP_SIZE;
    const int lane_id = threadIdx.x % WARP_SIZE;
    const int nwarps  = blockDim.x / WARP_SIZE;

    const float sum = warp_reduce_sum_scatter<V>(x);
    if (lane_id % (WARP_SIZE/V) == 0) {
        s_sum[warp_id + lane_id / (WARP_SIZE/V) * nwarps] = sum;
    }
    __syncthreads();
    const float total = lane_id < V*nwarps ? s_sum[lane_id] : 0.0f;
    return warp_reduce_sum(total);
}

// Max over each group of 8 lanes that hold one q8_1 block (4 values per lane). mask: the lanes
// that call it, the block's own 8 (group8_mask) or the whole warp, which spares ptxas a check of
// the mask against the lanes that run it.
static __device__ __forceinline__ float group8_reduce_max(float x, const unsigned mask) {
#pragma unroll
    for (int offset = 4; offset > 0; offset >>= 1) {
        x = fmaxf(x, __shfl_xor_sync(mask, x, offset, WARP_SIZE));
    }
    return x;
}

static __device__ __forceinline__ unsigned group8_mask() {
    return 0xffu << (threadIdx.x % WARP_SIZE & 24);
}

// Each thread owns float4 columns threadIdx.x + k*blockDim.x, visited UNROLL per trip with all of
// a trip's loads issued before any is used, so enough bytes are in flight to keep HBM busy.
static __device__ __forceinline__ void load_row_trip(float4 (&v)[UNROLL], const float4 * __restrict__ p,
                                                     const int col0, const int ncols) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const int col = col0 + k*blockDim.x;
        if (col < ncols/4) {
            v[k] = p[col];
        }
    }
}

// A row's sum of squares is defined over P = row_threads(ncols) virtual threads, a function of
// ncols alone: virtual thread j sums float4 columns j, j + P, j + 2P, ... in order, then the warp
// and block trees of block_reduce_sum. The launcher runs it with P threads (V = 1, few rows) or
// P/UNROLL (V = UNROLL, many rows), and column col0 + k*blockDim.x of a trip belongs to this
// thread's virtual thread k % V. Both give the same bits, so a row's outputs do not depend on the
// number of rows in the launch.
static __device__ __forceinline__ int row_threads(const int ncols) {
    return min(MAX_ROW_THREADS, (ncols/4 + 4*WARP_SIZE - 1) / (4*WARP_SIZE) * (4*WARP_SIZE));
}

template <int V>
static __device__ __forceinline__ float row_sum_sq(const float4 * __restrict__ x, const int ncols, float * s_sum) {
    float sum[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
        sum[k] = 0.0f;
    }
    for (int col0 = threadIdx.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        float4 v[UNROLL];
        load_row_trip(v, x, col0, ncols);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            if (col0 + k*blockDim.x < ncols/4) {
                sum[k % V] += v[k].x*v[k].x;
                sum[k % V] += v[k].y*v[k].y;
                sum[k % V] += v[k].z*v[k].z;
                sum[k % V] += v[k].w*v[k].w;
            }
        }
    }
    return block_reduce_sum<V>(sum, s_sum);
}

static __device__ __forceinline__ float rms_scale(const float4 * __restrict__ x, const int ncols, const float eps) {
    __shared__ float s_sum[WARP_SIZE];
    const float sum = blockDim.x == row_threads(ncols) ? row_sum_sq<1>(x, ncols, s_sum)
                                                       : row_sum_sq<UNROLL>(x, ncols, s_sum);

    const float mean = sum / ncols;
    return rsqrtf(mean + eps);
}

static __device__ __forceinline__ float4 scale_mul(const float scale, const float4 v, const float4 g) {
    return make_float4(scale*v.x*g.x, scale*v.y*g.y, scale*v.z*g.z, scale*v.w*g.w);
}

// q = round(v/div) saturated to [-127, 127] (__float2int_rz gives 0 for NaN). A zero dividend
// sends IEEE division down its slow path, so a zero v is divided as zero_num = div/4 instead,
// whose quotient rounds to q = 0: the quotient is used whatever v is, and no select or branch
// follows the division.
static __device__ __forceinline__ int quantize_value(const float v, const float div, const float zero_num) {
    const float num = v != 0.0f ? v : zero_num;
    return max(-127, min(127, __float2int_rz(roundf(num / div))));
}

// Quantize the 4 values of column group i4 given the max |v| of its q8_1 block.
// A subnormal d (amax below 127*2^-126) has few significant bits and can put round(v/d) past
// 127, hence the saturation; for a normal d it changes nothing.
static __device__ __forceinline__ void quantize_group_amax(const float4 v, const float amax, char4 * __restrict__ qs,
                                                           float * __restrict__ d, const int i4) {
    // An all-zero block divides 127 by 127 for its values' divisor 1 and stores d = 0: 0/127
    // would take the slow path. The asm hides the selected dividend from the compiler, which
    // would otherwise turn (c ? amax : 127)/127 into c ? amax/127 : 1 and divide zero again.
    const bool nonzero = amax != 0.0f;
    float dividend = nonzero ? amax : 127.0f;
    asm("mov.b32 %0, %0;" : "+f"(dividend));
    const float div = dividend / 127;
    const float zero_num = div * 0.25f;
    char4 q;
    q.x = quantize_value(v.x, div, zero_num);
    q.y = quantize_value(v.y, div, zero_num);
    q.z = quantize_value(v.z, div, zero_num);
    q.w = quantize_value(v.w, div, zero_num);
    qs[i4] = q;

    if (i4 % (QK8_1/4) == 0) {
        d[i4 / (QK8_1/4)] = nonzero ? div : 0.0f;
    }
}

static __device__ __forceinline__ float lane_abs_max(const float4 v) {
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

// Quantize the 4 values of column group i4; the 8 lanes of its q8_1 block call this together.
static __device__ __forceinline__ void quantize_group(const float4 v, char4 * __restrict__ qs, float * __restrict__ d, const int i4) {
    quantize_group_amax(v, group8_reduce_max(lane_abs_max(v), group8_mask()), qs, d, i4);
}

// z = scale*x*w for one trip of groups; with QUANTIZE, also the q8_1 planes of that z. With
// WHOLE_WARP (every lane of the warp calls it) and every group of the trip in the row in every
// lane (the last group of lane 31 is, col0 | 31 being that lane's col0), the warp stores each
// group's z, reduces its block's amax with whole-warp shuffles (the same butterfly) and quantizes
// it, group after group, without a guard per group (one group's z live at a time keeps the
// registers within what a 1024-thread block may have on every arch). Otherwise each group in the
// row is done on its own, so that lanes holding one live group (few rows, up to 4096 columns)
// compute nothing for the others.
template <bool QUANTIZE, bool WHOLE_WARP = false>
static __device__ __forceinline__ void norm_trip(float4 * __restrict__ z, char4 * __restrict__ qs,
                                                 float * __restrict__ d, const float scale,
                                                 const float4 (&v)[UNROLL], const float4 (&g)[UNROLL],
                                                 const int col0, const int ncols) {
    if (WHOLE_WARP && (col0 | (WARP_SIZE - 1)) + (UNROLL - 1)*(int)blockDim.x < ncols/4) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const float4 zk = scale_mul(scale, v[k], g[k]);
            z[col0 + k*blockDim.x] = zk;
            quantize_group_amax(zk, group8_reduce_max(lane_abs_max(zk), 0xffffffff), qs, d, col0 + k*blockDim.x);
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const int col = col0 + k*blockDim.x;
        if (col < ncols/4) {
            const float4 zk = scale_mul(scale, v[k], g[k]);
            z[col] = zk;
            if (QUANTIZE) {
                quantize_group(zk, qs, d, col);  // col < ncols/4 is uniform across each 8-lane group
            }
        }
    }
}

// The row kernels load their first trip of w before the row reduction, so that its latency (w
// comes cold from L2 or HBM, while x was just read by the same thread and comes from L1) overlaps
// the reduction.

// grid: nrows, block: row_block_dim(nrows, ncols): row_threads(ncols) below 256 rows, a quarter of
// it from 256 rows on (the two geometries the reduction is defined for)
extern "C" __global__ void rms_norm(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                    float4 * __restrict__ z, const int ncols, const float eps) {
    chain_entry();
    const size_t row = blockIdx.x;
    x += row*(ncols/4);
    z += row*(ncols/4);

    float4 v[UNROLL], g[UNROLL];
    load_row_trip(g, w, threadIdx.x, ncols);
    const float scale = rms_scale(x, ncols, eps);
    load_row_trip(v, x, threadIdx.x, ncols);
    norm_trip<false>(z, nullptr, nullptr, scale, v, g, threadIdx.x, ncols);
    for (int col0 = threadIdx.x + UNROLL*blockDim.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        load_row_trip(v, x, col0, ncols);
        load_row_trip(g, w, col0, ncols);
        norm_trip<false>(z, nullptr, nullptr, scale, v, g, col0, ncols);
    }
}

// block: 256; thread i handles float4 groups i + k*(all threads), k < UNROLL. The launcher
// sizes the grid for one group per thread (small n) or UNROLL (large n).
extern "C" __global__ void quantize_q8_1(const float4 * __restrict__ x, char4 * __restrict__ qs,
                                         float * __restrict__ d, const int n) {
    chain_entry();
    const int span = gridDim.x*blockDim.x;
    const int i0 = blockIdx.x*blockDim.x + threadIdx.x;
    float4 v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const int i4 = i0 + k*span;
        if (i4 < n/4) {
            v[k] = x[i4];
        }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const int i4 = i0 + k*span;
        if (i4 < n/4) {
            quantize_group(v[k], qs, d, i4);  // i4 < n/4 is uniform across each 8-lane group
        }
    }
}

// grid: nrows, block: row_block_dim(nrows, ncols); z, qs, d bit-identical to rms_norm then quantize_q8_1
extern "C" __global__ void rms_norm_zq8_f32(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                            float4 * __restrict__ z, char4 * __restrict__ qs,
                                            float * __restrict__ d, const int ncols, const float eps) {
    chain_entry();
    const size_t row = blockIdx.x;
    x  += row*(ncols/4);
    z  += row*(ncols/4);
    qs += row*(ncols/4);
    d  += row*(ncols/QK8_1);

    float4 v[UNROLL], g[UNROLL];
    load_row_trip(g, w, threadIdx.x, ncols);
    const float scale = rms_scale(x, ncols, eps);
    load_row_trip(v, x, threadIdx.x, ncols);
    norm_trip<true, true>(z, qs, d, scale, v, g, threadIdx.x, ncols);  // every lane runs the first trip
    // A warp's lanes may leave this loop at different trips, so later trips quantize group by
    // group: a whole-warp shuffle needs every lane.
    for (int col0 = threadIdx.x + UNROLL*blockDim.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        load_row_trip(v, x, col0, ncols);
        load_row_trip(g, w, col0, ncols);
        norm_trip<true>(z, qs, d, scale, v, g, col0, ncols);
    }
}

// grid: (ceil(ncols/4 / 256), nrows), block: 256; y, qs, d bit-identical to swiglu then
// quantize_q8_1. Rows of g and u are ld floats apart (the halves of a [rows][2*ffn] gate/up output).
extern "C" __global__ void swiglu_q8_1(const float4 * __restrict__ g, const float4 * __restrict__ u,
                                       float4 * __restrict__ y, char4 * __restrict__ qs,
                                       float * __restrict__ d, const int ncols, const int ld) {
    chain_entry();
    const int i4 = blockIdx.x*blockDim.x + threadIdx.x;
    if (i4 >= ncols/4) {
        return;  // ncols % 32 == 0: a q8_1 block's 8 lanes leave together
    }
    const size_t in  = (size_t) blockIdx.y*(ld/4) + i4;
    const size_t out = (size_t) blockIdx.y*(ncols/4);
    const float4 v = swiglu4(g[in], u[in]);
    y[out + i4] = v;
    quantize_group(v, qs + out, d + out/8, i4);
}
