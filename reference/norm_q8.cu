// Reference CUDA C++ for the norm_q8 family: rms_norm, quantize_q8_1 and the fused
// rms_norm_zq8_f32. Same symbols and argument lists as kernels-gpu/src/norm_q8.rs; written the
// way a CUDA engineer would write them (ggml-cuda style), not transcribed from the Rust.
//
// Layout: rows of ncols floats (ncols % 32 == 0), read and written as float4. The q8_1 output is
// two planes: qs (int8, one per value) and d (float, one per 32 values). A q8_1 block is 8
// consecutive lanes of a warp holding one float4 each.

#define WARP_SIZE 32
#define QK8_1 32
#define UNROLL 4    // float4 groups per thread per loop trip, all loaded before any is used

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

// Loads this thread's UNROLL groups i4[k] (zeros where !live[k]) before anything uses them.
static __device__ __forceinline__ void load_groups(float4 (&v)[UNROLL], const float4 * __restrict__ x,
                                                   const int (&i4)[UNROLL], const bool (&live)[UNROLL]) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        v[k] = live[k] ? x[i4[k]] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// Each thread owns float4 columns threadIdx.x + j*blockDim.x, visited UNROLL per trip.
static __device__ __forceinline__ float rms_scale(const float4 * __restrict__ x, const int ncols, const float eps) {
    float sum = 0.0f;
    for (int col0 = threadIdx.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        int col[UNROLL];
        bool live[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            col[k] = col0 + k*blockDim.x;
            live[k] = col[k] < ncols/4;
        }
        float4 v[UNROLL];
        load_groups(v, x, col, live);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            if (live[k]) {
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

// Quantizes this thread's UNROLL groups, each together with the 7 other lanes of its q8_1 block
// (liveness is uniform across those 8 lanes). Each stage runs over all groups before the next,
// so the shuffle chains and divisions of different groups overlap.
static __device__ __forceinline__ void quantize_groups(const float4 (&v)[UNROLL], const int (&i4)[UNROLL],
                                                       const bool (&live)[UNROLL],
                                                       char4 * __restrict__ qs, float * __restrict__ d) {
    float amax[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        amax[k] = fmaxf(fmaxf(fabsf(v[k].x), fabsf(v[k].y)), fmaxf(fabsf(v[k].z), fabsf(v[k].w)));
    }
    const unsigned mask = 0xffu << (threadIdx.x % WARP_SIZE & 24);
#pragma unroll
    for (int offset = 4; offset > 0; offset >>= 1) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            amax[k] = fmaxf(amax[k], __shfl_xor_sync(mask, amax[k], offset, WARP_SIZE));
        }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const float dq = amax[k] / 127;
        char4 q;
        q.x = amax[k] == 0.0f ? 0 : roundf(v[k].x / dq);
        q.y = amax[k] == 0.0f ? 0 : roundf(v[k].y / dq);
        q.z = amax[k] == 0.0f ? 0 : roundf(v[k].z / dq);
        q.w = amax[k] == 0.0f ? 0 : roundf(v[k].w / dq);
        if (live[k]) {
            qs[i4[k]] = q;
            if (i4[k] % (QK8_1/4) == 0) {
                d[i4[k] / (QK8_1/4)] = dq;
            }
        }
    }
}

// grid: nrows, block: row_block_dim(ncols) (UNROLL float4 per thread, whole warps, <= 1024)
extern "C" __global__ void rms_norm(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                    float4 * __restrict__ z, const int ncols, const float eps) {
    const size_t row = blockIdx.x;
    x += row*(ncols/4);
    z += row*(ncols/4);

    const float scale = rms_scale(x, ncols, eps);
    for (int col0 = threadIdx.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        int col[UNROLL];
        bool live[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            col[k] = col0 + k*blockDim.x;
            live[k] = col[k] < ncols/4;
        }
        float4 v[UNROLL], g[UNROLL];
        load_groups(v, x, col, live);
        load_groups(g, w, col, live);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            if (live[k]) {
                z[col[k]] = scale_mul(scale, v[k], g[k]);
            }
        }
    }
}

// block: 256; thread i handles float4 groups i + k*(all threads), k < UNROLL. The launcher sizes
// the grid for one live group per thread (small n) or UNROLL (large n).
extern "C" __global__ void quantize_q8_1(const float4 * __restrict__ x, char4 * __restrict__ qs,
                                         float * __restrict__ d, const int n) {
    const int span = gridDim.x*blockDim.x;
    int i4[UNROLL];
    bool live[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        i4[k] = blockIdx.x*blockDim.x + threadIdx.x + k*span;
        live[k] = i4[k] < n/4;
    }
    float4 v[UNROLL];
    load_groups(v, x, i4, live);
    quantize_groups(v, i4, live, qs, d);
}

// grid: nrows, block: row_block_dim(ncols); z, qs, d bit-identical to rms_norm then quantize_q8_1
extern "C" __global__ void rms_norm_zq8_f32(const float4 * __restrict__ x, const float4 * __restrict__ w,
                                            float4 * __restrict__ z, char4 * __restrict__ qs,
                                            float * __restrict__ d, const int ncols, const float eps) {
    const size_t row = blockIdx.x;
    x  += row*(ncols/4);
    z  += row*(ncols/4);
    qs += row*(ncols/4);
    d  += row*(ncols/QK8_1);

    const float scale = rms_scale(x, ncols, eps);
    for (int col0 = threadIdx.x; col0 < ncols/4; col0 += UNROLL*blockDim.x) {
        int col[UNROLL];
        bool live[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            col[k] = col0 + k*blockDim.x;
            live[k] = col[k] < ncols/4;
        }
        float4 v[UNROLL], g[UNROLL];
        load_groups(v, x, col, live);
        load_groups(g, w, col, live);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            v[k] = scale_mul(scale, v[k], g[k]);
            if (live[k]) {
                z[col[k]] = v[k];
            }
        }
        quantize_groups(v, col, live, qs, d);
    }
}
