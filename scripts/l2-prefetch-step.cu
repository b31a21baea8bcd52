// Does prefetching the head of the next weight matrix into L2, on a graph branch that runs beside
// the small kernel between two GEMVs, take time off a decode step?
//
// A step of the 27B sheet's dense layer (planar Q8_0 at one row, the merged arm's order) with each
// GEMV stood in for by a read stream of its weight bytes and each small kernel by an elementwise
// kernel of its length that reads the GEMV's outputs before it (L2-hot, as in a step; the first
// reads the layer's input, cold) and writes the next GEMV's activation: norm (5120) -> q/k/v (78.0 MB) -> quantize (6144) -> o (33.4 MB) ->
// norm (5120) -> gate/up (189.4 MB) -> swiglu (34816) -> down (94.7 MB), one CUDA graph, the L2
// scrubbed (a read of 256 MB) before each replay. Arms:
//   - plain: the chain alone;
//   - bulk X: beside each small kernel, on a branch that starts where the small kernel does, one
//     grid of a warp an SM issues `cp.async.bulk.prefetch.L2` over the first X MB of the next
//     matrix (fire and forget: the grid exits at once);
//   - lines X: the same with `prefetch.global.L2::evict_last` a 128-byte line a thread;
//   - stream: one read stream over all four matrices' bytes (the step's floor as one kernel).
// Each stream reads its buffer in address order across the grid (grid-stride, four loads a trip),
// as the GEMVs take their row groups, so the prefetched head is what the next GEMV reads first.
//
// Build (sm_90): nvcc -O3 -gencode arch=compute_90,code=sm_90 l2-prefetch-step.cu -o l2-prefetch-step
#include <cstdint>
#include <vector>
#include <algorithm>

#include "peak-timing.cuh"  // CHECK

// A GEMV's stand-in: each block reads the activation `a` (L2-hot, written by the small kernel
// before it), then the grid streams `x`; the grid writes `rows` outputs (L2-hot for the next small
// kernel).
__global__ void __launch_bounds__(512) stream_k(const float4 *__restrict__ x, const long n4,
                                                const float4 *__restrict__ a, const int a4,
                                                float *__restrict__ out, const int rows) {
    float acc = 0.0f;
    for (int j = threadIdx.x; j < a4; j += blockDim.x) {
        const float4 v = a[j];
        acc += v.x + v.y + v.z + v.w;
    }
    const long stride = (long) gridDim.x * blockDim.x;
    const long first = (long) blockIdx.x * blockDim.x + threadIdx.x;
    long i = first;
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
    for (long r = first; r < rows; r += stride) out[r] = acc;
}

// A small kernel of the step: reads the previous GEMV's `n` outputs, writes `n` activations.
__global__ void small_k(const float4 *__restrict__ x, float4 *__restrict__ y, const int n4) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
        y[i] = v;
    }
}

// A warp a block; the bytes split evenly over every lane of the grid, each lane's share in
// pieces of at most 64 KB (a multiple of 16 bytes).
__global__ void prefetch_bulk(const char *p, const long bytes) {
    const long lanes = (long) gridDim.x * blockDim.x;
    const long lane = (long) blockIdx.x * blockDim.x + threadIdx.x;
    const long share = (bytes / lanes) & ~15L;
    const long lo = lane * share, hi = lane == lanes - 1 ? (bytes & ~15L) : lo + share;
    for (long o = lo; o < hi; o += 65536) {
        const unsigned n = (unsigned) min(65536L, hi - o);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + o), "r"(n) : "memory");
    }
}

__global__ void prefetch_lines(const char *p, const long bytes) {
    const long stride = (long) gridDim.x * blockDim.x * 128;
    for (long o = ((long) blockIdx.x * blockDim.x + threadIdx.x) * 128; o < bytes; o += stride)
        asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p + o) : "memory");
}

int main() {
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long mb = 1000000;
    const long gemv_bytes[4] = {78 * mb, 33 * mb + 400000, 189 * mb + 400000, 94 * mb + 700000};
    // Each small kernel's length, and the activation each GEMV reads (floats).
    const int small_n[4] = {5120, 6144, 5120, 34816};
    const int gemv_rows[4] = {14336, 5120, 34816, 5120};
    const int gemv_act[4] = {1440, 1728, 1440, 4896};  // its q8_1 activation's bytes / 4
    long total = 0;
    for (long b : gemv_bytes) total += b;
    char *w;
    CHECK(cudaMalloc(&w, total));
    CHECK(cudaMemset(w, 0, total));
    const long scrub_bytes = 256 * mb;
    char *scrub;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemset(scrub, 0, scrub_bytes));
    // x0: the layer's input (cold); act: each small kernel's output; out: each GEMV's output.
    float *x0, *act, *out;
    CHECK(cudaMalloc(&x0, 40000 * 4));
    CHECK(cudaMalloc(&act, 40000 * 4));
    CHECK(cudaMalloc(&out, 40000 * 4));
    CHECK(cudaMemset(x0, 0, 40000 * 4));
    CHECK(cudaMemset(act, 0, 40000 * 4));
    CHECK(cudaMemset(out, 0, 40000 * 4));
    const int sgrid = 4 * sms;
    cudaStream_t s0, s1;
    CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    cudaEvent_t fork[4], join;
    for (auto &ev : fork) CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    // mode 0 plain, 1 bulk, 2 lines, 3 one stream over everything
    auto build = [&](int mode, long x_bytes, cudaGraphExec_t *exec) -> int {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
        if (mode == 3) {
            stream_k<<<sgrid, 512, 0, s0>>>((const float4 *) w, total / 16, (const float4 *) act, 0, out, 0);
        } else {
            long off = 0;
            for (int k = 0; k < 4; ++k) {
                if (mode != 0) {
                    CHECK(cudaEventRecord(fork[k], s0));
                    CHECK(cudaStreamWaitEvent(s1, fork[k], 0));
                    const long n = std::min(x_bytes, gemv_bytes[k]);
                    if (mode == 1) prefetch_bulk<<<sms, 32, 0, s1>>>(w + off, n);
                    else prefetch_lines<<<sms, 256, 0, s1>>>(w + off, n);
                }
                small_k<<<(small_n[k] / 4 + 255) / 256, 256, 0, s0>>>((const float4 *) (k == 0 ? x0 : out),
                                                                      (float4 *) act, small_n[k] / 4);
                stream_k<<<sgrid, 512, 0, s0>>>((const float4 *) (w + off), gemv_bytes[k] / 16,
                                                (const float4 *) act, gemv_act[k] / 4, out, gemv_rows[k]);
                off += gemv_bytes[k];
            }
            if (mode != 0) {
                CHECK(cudaEventRecord(join, s1));
                CHECK(cudaStreamWaitEvent(s0, join, 0));
            }
        }
        CHECK(cudaStreamEndCapture(s0, &g));
        CHECK(cudaGraphInstantiate(exec, g, 0));
        CHECK(cudaGraphUpload(*exec, s0));
        return 0;
    };

    struct Arm { const char *name; int mode; long x; cudaGraphExec_t exec; };
    std::vector<Arm> arms = {{"plain", 0, 0}, {"stream", 3, 0}};
    for (long x : {0, 2, 4, 8, 16}) arms.push_back({"bulk", 1, x * mb});
    for (long x : {4, 8}) arms.push_back({"lines", 2, x * mb});
    for (auto &a : arms)
        if (build(a.mode, a.x, &a.exec)) return 1;

    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    const int samples = 15, rounds = 3;
    printf("dense step stand-in, planar Q8_0 m = 1 bytes (%.1f MB), L2 scrubbed before each replay, "
           "median of %d, us\n", total / 1e6, samples);
    for (int r = 0; r < rounds; ++r) {
        for (auto &a : arms) {
            std::vector<float> t;
            for (int s = 0; s < samples + 2; ++s) {
                stream_k<<<sgrid, 512, 0, s0>>>((const float4 *) scrub, scrub_bytes / 16, (const float4 *) act, 0,
                                                out, 0);
                CHECK(cudaEventRecord(t0, s0));
                CHECK(cudaGraphLaunch(a.exec, s0));
                CHECK(cudaEventRecord(t1, s0));
                CHECK(cudaEventSynchronize(t1));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, t0, t1));
                if (s >= 2) t.push_back(ms * 1000.0f);
            }
            std::sort(t.begin(), t.end());
            printf("round %d  %-6s %2ld MB  median %8.2f  min %8.2f  max %8.2f\n", r, a.name, a.x / mb,
                   t[samples / 2], t[0], t[samples - 1]);
        }
    }
    CHECK(cudaDeviceSynchronize());
    return 0;
}
