// Reference CUDA C++ for the swiglu family: y = silu(g) * u, elementwise. Same symbol and
// arguments as kernels-gpu/src/swiglu.rs.

#include "chain.cuh"
#include "swiglu1.cuh"

// grid: ceil((n/4 + (n%4 != 0)) / 256), block: 256; a thread per float4, one more for the tail.
extern "C" __global__ void swiglu(const float4 * __restrict__ g, const float4 * __restrict__ u, float4 * __restrict__ y, const int n) {
    chain_entry();
    const int i = blockIdx.x*blockDim.x + threadIdx.x;
    const int n4 = n / 4;
    if (i < n4) {
        y[i] = swiglu4(g[i], u[i]);
    } else if (i == n4) {
        for (int j = 4*n4; j < n; ++j) {
            ((float *) y)[j] = swiglu1(((const float *) g)[j], ((const float *) u)[j]);
        }
    }
}
