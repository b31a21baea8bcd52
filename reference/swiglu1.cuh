// Included by swiglu.cu and gemv.cu (its GLU epilogue): silu(g) * u of one value.
//
// silu(g) = g * sigmoid(g), the sigmoid as a reciprocal (rcp.rn.f32) rather than a quotient:
// IEEE division takes its slow path for a zero dividend, and a batch's padding rows are zeros.
static __device__ __forceinline__ float swiglu1(const float g, const float u) {
    return g * (1.0f / (1.0f + expf(-g))) * u;
}
