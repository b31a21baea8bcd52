// Included by swiglu.cu, norm_q8.cu (swiglu_q8_1) and gemv.cu (its GLU epilogue): silu(g) * u of
// one value, and of each of four.
//
// silu(g) = g * sigmoid(g), the sigmoid as a reciprocal (rcp.rn.f32) rather than a quotient:
// IEEE division takes its slow path for a zero dividend, and a batch's padding rows are zeros.
static __device__ __forceinline__ float swiglu1(const float g, const float u) {
    return g * (1.0f / (1.0f + expf(-g))) * u;
}

static __device__ __forceinline__ float4 swiglu4(const float4 g, const float4 u) {
    return make_float4(swiglu1(g.x, u.x), swiglu1(g.y, u.y), swiglu1(g.z, u.z), swiglu1(g.w, u.w));
}
