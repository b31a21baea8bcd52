// What the decode-step stand-ins share (l2-prefetch-step.cu, persistent-step.cu): the 27B sheet's
// dense layer at one row, planar Q8_0, in the merged arm's order (norm (5120) -> q/k/v (78.0 MB)
// -> quantize (6144) -> o (33.4 MB) -> norm (5120) -> gate/up (189.4 MB) -> swiglu (34816) ->
// down (94.7 MB)), each GEMV a read stream of its weight bytes that first reads its activation,
// each small kernel an elementwise pass of its length over the outputs of the GEMV before it; and
// the timing of a list of graphs, the L2 scrubbed (a read of 256 MB) before each replay.
#pragma once
#include <cstdio>
#include <vector>
#include <algorithm>

#include "peak-timing.cuh"  // CHECK

namespace standin {

constexpr long MB = 1000000;
constexpr long GEMV_BYTES[4] = {78 * MB, 33 * MB + 400000, 189 * MB + 400000, 94 * MB + 700000};
constexpr int SMALL_N[4] = {5120, 6144, 5120, 34816};  // each small kernel's length
constexpr int GEMV_ROWS[4] = {14336, 5120, 34816, 5120};
constexpr int GEMV_ACT[4] = {1440, 1728, 1440, 4896};  // its q8_1 activation's bytes / 4
constexpr long SCRUB_BYTES = 256 * MB;
constexpr int STREAM_BLOCK = 512;

// A thread's grid-stride share of `x` from its trip `j0` on, four loads a trip.
__device__ __forceinline__ float stream_from(const float4 *__restrict__ x, const long n4, const long first,
                                             const long stride, const long j0) {
    float acc = 0.0f;
    long i = first + j0 * stride;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 p = __ldg(x + i), b = __ldg(x + i + stride), c = __ldg(x + i + 2 * stride),
                     d = __ldg(x + i + 3 * stride);
        acc += (p.x + p.y + p.z + p.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) +
               (d.x + d.y + d.z + d.w);
    }
    for (; i < n4; i += stride) {
        const float4 p = __ldg(x + i);
        acc += p.x + p.y + p.z + p.w;
    }
    return acc;
}

// A block's read of the activation `a` (L2-hot, written by the small kernel before it).
__device__ __forceinline__ float read_act(const float4 *__restrict__ a, const int a4) {
    float acc = 0.0f;
    for (int j = threadIdx.x; j < a4; j += blockDim.x) {
        const float4 v = a[j];
        acc += v.x + v.y + v.z + v.w;
    }
    return acc;
}

// A GEMV's stand-in: each block reads the activation, then the grid streams `x`; the grid writes
// `rows` outputs (L2-hot for the next small kernel).
__global__ void __launch_bounds__(STREAM_BLOCK) stream_k(const float4 *__restrict__ x, const long n4,
                                                         const float4 *__restrict__ a, const int a4,
                                                         float *__restrict__ out, const int rows) {
    const long stride = (long) gridDim.x * blockDim.x;
    const long first = (long) blockIdx.x * blockDim.x + threadIdx.x;
    const float acc = read_act(a, a4) + stream_from(x, n4, first, stride, 0);
    for (long r = first; r < rows; r += stride) out[r] = acc;
}

__device__ __forceinline__ void small_part(const float4 *__restrict__ x, float4 *__restrict__ y, const int n4,
                                           const long first, const long stride) {
    for (long i = first; i < n4; i += stride) {
        float4 v = x[i];
        v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
        y[i] = v;
    }
}

// A small kernel of the step: reads the previous GEMV's `n` outputs, writes `n` activations.
__global__ void small_k(const float4 *__restrict__ x, float4 *__restrict__ y, const int n4) {
    small_part(x, y, n4, (long) blockIdx.x * blockDim.x + threadIdx.x, (long) gridDim.x * blockDim.x);
}

// The layer's buffers: the four matrices back to back (zeros), the scrub, the layer's input x0
// (cold), the activation each small kernel writes and the outputs each GEMV writes.
struct Buffers {
    char *w;
    long total, off[4];
    const float4 *scrub, *x0;
    float4 *act;
    float *out;
};

static int alloc(Buffers *b) {
    b->total = 0;
    for (int k = 0; k < 4; ++k) {
        b->off[k] = b->total;
        b->total += GEMV_BYTES[k];
    }
    CHECK(cudaMalloc(&b->w, b->total));
    CHECK(cudaMemset(b->w, 0, b->total));
    char *scrub;
    CHECK(cudaMalloc(&scrub, SCRUB_BYTES));
    CHECK(cudaMemset(scrub, 0, SCRUB_BYTES));
    b->scrub = (const float4 *) scrub;
    float *v[3];
    for (auto &p : v) {
        CHECK(cudaMalloc(&p, 40000 * 4));
        CHECK(cudaMemset(p, 0, 40000 * 4));
    }
    b->x0 = (const float4 *) v[0];
    b->act = (float4 *) v[1];
    b->out = v[2];
    return 0;
}

// Small kernel k of the chain (its input the layer's x0, or the GEMV before it's outputs) and
// GEMV k's stand-in, each a plain launch on `s`.
static void launch_small(const Buffers &b, const int k, cudaStream_t s) {
    small_k<<<(SMALL_N[k] / 4 + 255) / 256, 256, 0, s>>>(k == 0 ? b.x0 : (const float4 *) b.out, b.act,
                                                         SMALL_N[k] / 4);
}

static void launch_gemv(const Buffers &b, const int k, const int sgrid, cudaStream_t s) {
    stream_k<<<sgrid, STREAM_BLOCK, 0, s>>>((const float4 *) (b.w + b.off[k]), GEMV_BYTES[k] / 16, b.act,
                                            GEMV_ACT[k] / 4, b.out, GEMV_ROWS[k]);
}

struct Arm {
    const char *name;
    long x;  // the arm's parameter, printed beside its name
    cudaGraphExec_t exec;
    std::vector<float> medians;  // one a round
};

// Each arm's replays in `rounds` rounds (the arms alternated), each replay after the scrub; the
// median, least and most of `samples` replays after two warm-ups.
static int time_arms(std::vector<Arm> &arms, cudaStream_t s, const Buffers &b, const int sgrid, const char *x_unit) {
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    const int samples = 15, rounds = 3;
    printf("dense step stand-in, planar Q8_0 m = 1 bytes (%.1f MB), L2 scrubbed before each replay, "
           "median of %d, us\n", b.total / 1e6, samples);
    for (int r = 0; r < rounds; ++r) {
        for (auto &a : arms) {
            std::vector<float> t;
            for (int k = 0; k < samples + 2; ++k) {
                stream_k<<<sgrid, STREAM_BLOCK, 0, s>>>(b.scrub, SCRUB_BYTES / 16, b.act, 0, b.out, 0);
                CHECK(cudaEventRecord(t0, s));
                CHECK(cudaGraphLaunch(a.exec, s));
                CHECK(cudaEventRecord(t1, s));
                CHECK(cudaEventSynchronize(t1));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, t0, t1));
                if (k >= 2) t.push_back(ms * 1000.0f);
            }
            std::sort(t.begin(), t.end());
            a.medians.push_back(t[samples / 2]);
            printf("round %d  %-9s %2ld %s  median %8.2f  min %8.2f  max %8.2f\n", r, a.name, a.x, x_unit,
                   t[samples / 2], t[0], t[samples - 1]);
        }
    }
    return 0;
}

}  // namespace standin
