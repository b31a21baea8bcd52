// Reference CUDA C++ for the example kernel crate: z = a x + b y, elementwise. Same symbol and
// arguments as kernels/src/lib.rs.

// b * y rounded, then a * x added to it exactly and rounded once (fmaf): a * x alone never
// overflows.
static __device__ __forceinline__ float axpby1(const float a, const float x, const float b, const float y) {
    return fmaf(a, x, b * y);
}

// grid: ceil((n/4 + (n%4 != 0)) / 256), block: 256; a thread per float4, one more for the tail.
extern "C" __global__ void axpby(const float4 * __restrict__ x, const float4 * __restrict__ y, float4 * __restrict__ z,
                                 const float a, const float b, const int n) {
    const int i = blockIdx.x*blockDim.x + threadIdx.x;
    const int n4 = n / 4;
    if (i < n4) {
        const float4 p = x[i];
        const float4 q = y[i];
        z[i] = make_float4(axpby1(a, p.x, b, q.x), axpby1(a, p.y, b, q.y), axpby1(a, p.z, b, q.z), axpby1(a, p.w, b, q.w));
    } else if (i == n4) {
        for (int j = 4*n4; j < n; ++j) {
            ((float *) z)[j] = axpby1(a, ((const float *) x)[j], b, ((const float *) y)[j]);
        }
    }
}
