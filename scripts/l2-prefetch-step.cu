// Does prefetching the head of the next weight matrix into L2, on a graph branch that runs beside
// the small kernel between two GEMVs, take time off a decode step?
//
// The dense layer's step of step-standin.cuh (each GEMV a read stream of its weight bytes, each
// small kernel an elementwise pass of its length), one CUDA graph, the L2 scrubbed before each
// replay. Arms:
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

#include "step-standin.cuh"

using namespace standin;

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
    Buffers b;
    if (alloc(&b)) return 1;
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
            stream_k<<<sgrid, STREAM_BLOCK, 0, s0>>>((const float4 *) b.w, b.total / 16, b.act, 0, b.out, 0);
        } else {
            for (int k = 0; k < 4; ++k) {
                if (mode != 0) {
                    CHECK(cudaEventRecord(fork[k], s0));
                    CHECK(cudaStreamWaitEvent(s1, fork[k], 0));
                    const long n = std::min(x_bytes, GEMV_BYTES[k]);
                    if (mode == 1) prefetch_bulk<<<sms, 32, 0, s1>>>(b.w + b.off[k], n);
                    else prefetch_lines<<<sms, 256, 0, s1>>>(b.w + b.off[k], n);
                }
                launch_small(b, k, s0);
                launch_gemv(b, k, sgrid, s0);
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

    // Each arm's mode beside the name and size that time_arms prints.
    std::vector<Arm> arms = {{"plain", 0}, {"stream", 0}};
    std::vector<int> modes = {0, 3};
    for (long x : {0, 2, 4, 8, 16}) arms.push_back({"bulk", x}), modes.push_back(1);
    for (long x : {4, 8}) arms.push_back({"lines", x}), modes.push_back(2);
    for (size_t i = 0; i < arms.size(); ++i)
        if (build(modes[i], arms[i].x * MB, &arms[i].exec)) return 1;
    if (time_arms(arms, s0, b, sgrid, "MB")) return 1;
    CHECK(cudaDeviceSynchronize());
    return 0;
}
