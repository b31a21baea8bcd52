// Reference CUDA C++ for the norm_q8 family: rms_norm, quantize_q8_1 and the fused
// rms_norm_zq8_f32. Same symbols and argument lists as kernels-gpu/src/norm_q8.rs; written the
// way a CUDA engineer would write them (ggml-cuda style), not transcribed from the Rust.
//
// Layout: rows of ncols floats (ncols % 32 == 0), read and written as float4. The q8_1 output is
// two planes: qs (int8, one per value) and d (float, one per 32 values).

#define WARP_SIZE 32
#define QK8_1 32
#define UNROLL 4    // float4 column groups per thread per loop trip

static __device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(0xffffffff, x, offset, WARP_SIZE);
    }
    return x;
}

// Sum over the block; every thread gets the result.
static __device__ __forceinline__ float block_reduce_sum(float x) {
    __shared__ float s_sum[WARP_SIZE];
    const int warp_id = threadIdx.x / WARP_SIZE;
    const int lane_id = threadIdx.x % WARP_SIZE;

    x = warp_reduce_sum(x);
    if (lane_id == 0) {
        s_sum[warp_id] = x;
    }
    __syncthreads();
    x = lane_id < blockDim.x / WARP_SIZE ? s_sum[lane_id] : 0.0f;
    return warp_reduce_sum(x);
}

// Max over the 8 lanes that hold one q8_1 block (4 values per lane).
static __device__ __forceinline__ float group8_reduce_max(float x) {
    const unsigned mask = 0xffu << (threadIdx.x % WARP_SIZE & 24);
#pragma unroll
    for (int offset = 4; offset > 0; offset >>= 1) {
        x = fmaxf(x, __shfl_xor_sync(mask, x, offset, WARP_SIZE));
    }
    return x;
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

static __device__ __forceinline__ float rms_scale(const float4 * __restrict__ x, const int ncols, const float eps) {
    float sum = 0.0f;
    for (int col0 = threadIdx.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        float4 v[UNROLL];
        load_row_trip(v, x, col0, ncols);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            if (col0 + k*blockDim.x < ncols/4) {
                sum += v[k].x*v[k].x;
                sum += v[k].y*v[k].y;
                sum += v[k].z*v[k].z;
                sum += v[k].w*v[k].w;
            }
        }
    }
    sum = block_reduce_sum(sum);

    const float mean = sum / ncols;
    return rsqrtf(mean + eps);
}

static __device__ __forceinline__ float4 scale_mul(const float scale, const float4 v, const float4 g) {
    return make_float4(scale*v.x*g.x, scale*v.y*g.y, scale*v.z*g.z, scale*v.w*g.w);
}

// Quantize the 4 values of column group i4; the 8 lanes of its q8_1 block call this together.
static __device__ __forceinline__ void quantize_group(const float4 v, char4 * __restrict__ qs, float * __restrict__ d, const int i4) {
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    amax = group8_reduce_max(amax);

    const float dq = amax / 127;
    char4 q;
    q.x = amax == 0.0f ? 0 : roundf(v.x / dq);
    q.y = amax == 0.0f ? 0 : roundf(v.y / dq);
    q.z = amax == 0.0f ? 0 : roundf(v.z / dq);
    q.w = amax == 0.0f ? 0 : roundf(v.w / dq);
    qs[i4] = q;

    if (i4 % (QK8_1/4) == 0) {
        d[i4 / (QK8_1/4)] = dq;
    }
}

// z = scale*x*w for one trip of groups; with QUANTIZE, also the q8_1 planes of that z.
template <bool QUANTIZE>
static __device__ __forceinline__ void norm_trip(float4 * __restrict__ z, char4 * __restrict__ qs,
                                                 float * __restrict__ d, const float scale,
                                                 const float4 (&v)[UNROLL], const float4 (&g)[UNROLL],
                                                 const int col0, const int ncols) {
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

// grid: nrows, block: row_block_dim(nrows, ncols) (whole warps, <= 1024)
extern "C" __global__ void rms_norm(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                    float4 * __restrict__ z, const int ncols, const float eps) {
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
    const size_t row = blockIdx.x;
    x  += row*(ncols/4);
    z  += row*(ncols/4);
    qs += row*(ncols/4);
    d  += row*(ncols/QK8_1);

    float4 v[UNROLL], g[UNROLL];
    load_row_trip(g, w, threadIdx.x, ncols);
    const float scale = rms_scale(x, ncols, eps);
    load_row_trip(v, x, threadIdx.x, ncols);
    norm_trip<true>(z, qs, d, scale, v, g, threadIdx.x, ncols);
    for (int col0 = threadIdx.x + UNROLL*blockDim.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        load_row_trip(v, x, col0, ncols);
        load_row_trip(g, w, col0, ncols);
        norm_trip<true>(z, qs, d, scale, v, g, col0, ncols);
    }
}
