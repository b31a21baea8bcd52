// The attention chain peer's own kernels: the gather and the row softmax a framework runs around
// its two batched GEMMs (PyTorch's `cache[idx]` and `torch.softmax`), written as a CUDA engineer
// writes them. Compiled by NVRTC at run time; not a twin of any ferrocuda kernel.

// rows[r][:] = cache[clamp(idx[r])][:] for every gathered slot r of every token: a block a row,
// its threads over the row's float4s. Indices are clamped into the pool as the project's kernels
// clamp them.
extern "C" __global__ void peer_gather_rows(const float4 * __restrict__ cache, const int * __restrict__ idx,
                                            float4 * __restrict__ rows, const int row4, const int pool) {
    const int r = blockIdx.x;
    const int i = min(max(idx[r], 0), pool - 1);
    const float4 * src = cache + (size_t) i * row4;
    float4 * dst = rows + (size_t) r * row4;
    for (int c = threadIdx.x; c < row4; c += blockDim.x) {
        dst[c] = src[c];
    }
}

// Block-wide reduction of one value per thread (blockDim.x a multiple of 32, at most 1024).
template <typename Op>
static __device__ float block_reduce(float v, Op op, float * scratch) {
    for (int o = 16; o > 0; o >>= 1) {
        v = op(v, __shfl_xor_sync(0xffffffff, v, o));
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        scratch[warp] = v;
    }
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < blockDim.x / 32; ++w) {
        v = op(v, scratch[w]);
    }
    __syncthreads();
    return v;
}

// p[row][:] = softmax(s[row][:]) in place, a block a row of n scores: the maximum, then the sum of
// expf(s - max), then each expf(s - max) / sum.
extern "C" __global__ void peer_softmax_rows(float * __restrict__ s, const int n) {
    __shared__ float scratch[32];
    float * row = s + (size_t) blockIdx.x * n;
    float m = __int_as_float(0xff800000);  // -inf
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        m = fmaxf(m, row[c]);
    }
    m = block_reduce(m, [](float a, float b) { return fmaxf(a, b); }, scratch);
    float sum = 0.0f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        sum += expf(row[c] - m);
    }
    sum = block_reduce(sum, [](float a, float b) { return a + b; }, scratch);
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        row[c] = expf(row[c] - m) / sum;
    }
}
