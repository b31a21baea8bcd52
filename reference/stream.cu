// Reference CUDA C++ for the stream family: the read-only bandwidth ceiling. Same symbol and
// arguments as kernels-gpu/src/stream.rs.

static __device__ __forceinline__ float sum4(const float4 v) {
    return (v.x + v.y) + (v.z + v.w);
}

// grid: 4 * SMs, block: 512; any n4: four loads per step while four strides fit, then one.
extern "C" __global__ void read_stream(const float4 * __restrict__ x, float * __restrict__ sink, const long long n4) {
    const long long stride = (long long) gridDim.x*blockDim.x;
    float acc = 0.0f;
    long long i = (long long) blockIdx.x*blockDim.x + threadIdx.x;
    for (; i + 3*stride < n4; i += 4*stride) {
        const float4 a = x[i];
        const float4 b = x[i + stride];
        const float4 c = x[i + 2*stride];
        const float4 e = x[i + 3*stride];
        acc += sum4(a) + sum4(b) + sum4(c) + sum4(e);
    }
    for (; i < n4; i += stride) {
        acc += sum4(x[i]);
    }
    if (acc == -1.0f) {
        *sink = acc;
    }
}
