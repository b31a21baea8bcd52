// Could one persistent kernel for the dense layer reach the step's floor where a graph of its
// kernels cannot, or a chain whose GEMVs start their weight stream before they wait?
//
// The dense layer's step of step-standin.cuh (each GEMV a read stream of its weight bytes, each
// small kernel an elementwise pass of its length), the L2 scrubbed before each replay, timed as:
//   - chain: the eight kernels in one CUDA graph (the decode-step gate's plain arms);
//   - stream: one read stream over the four matrices (the step's bytes as one kernel);
//   - layer A: one kernel whose blocks stay resident and run the eight phases in turn, a grid
//     barrier after each phase that the next depends on. Before the barriers that precede a
//     stream, each block copies the first A trips of its share of that matrix into shared memory
//     (cp.async): the weights depend on nothing earlier, so the weight stream need not stop while
//     the small phase and the barriers run (A = 0: no copies ahead);
//   - pdl A: the chain's eight kernels, each a programmatic dependent of the one before
//     (griddepcontrol): every kernel lets the next launch at its entry, and a GEMV copies the
//     first A trips of its share of the weights into shared memory before it waits for the
//     kernel before it (A = 0: it waits at entry, as the project's kernels do). Its blocks are
//     placed as the GEMV two launches back drains, so those copies overlap that GEMV's tail and
//     the small kernel between them.
//   - gemvs, gemvs pdl A: the four GEMVs alone, chained plainly or as programmatic dependents
//     copying A trips ahead: the step with every small kernel folded into a GEMV, the least a
//     chain of the layer's kernels must take.
// Each arm is then put against the step's floor, its bytes over a 2 GiB read stream's rate in
// the same run (the decode-step gate's ceiling), which is what the step's targets are stated on.
// The layer kernel's grid is what the occupancy calculator says fits at once, so every block is
// resident and no barrier can wait on a block without an SM.
//
// Build (sm_90): nvcc -O3 -gencode arch=compute_90,code=sm_90 persistent-step.cu -o persistent-step
#include <cstdint>
#include <cstring>

#include "step-standin.cuh"

using namespace standin;

// The buffers and each phase's sizes (as kernel parameters: the stand-in's constants are the
// host's), and the barrier's counters.
struct Layer {
    Buffers b;
    long n4[4];
    int small4[4], rows[4], act4[4];
    unsigned *bar;  // [0] arrivals, [1] departures
};

// Every block of the grid past the same point: thread 0 of each block adds one to the arrivals
// (after the block's writes, by the fence) and waits for `phase` grids' worth of them. Warp 0
// copies nothing ahead, so its fence waits on nothing in flight.
__device__ __forceinline__ void grid_sync(unsigned *bar, const unsigned phase) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(bar, 1u);
        const unsigned target = phase * gridDim.x;
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
        } while (v < target);
        __threadfence();
    }
    __syncthreads();
}

// The first AHEAD trips of this thread's grid-stride share of `x` (n4 float4s), into its ring
// slots by cp.async, as one group.
template <int AHEAD>
__device__ __forceinline__ void copy_ahead(const float4 *x, const long n4, const long first, const long stride,
                                           float4 *ring) {
#pragma unroll
    for (int j = 0; j < AHEAD; ++j) {
        const long i = first + j * stride;
        if (i < n4) {
            const unsigned dst = (unsigned) __cvta_generic_to_shared(ring + j * STREAM_BLOCK + threadIdx.x);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(x + i) : "memory");
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// The sum of the trips copy_ahead copied, once they have landed.
template <int AHEAD>
__device__ __forceinline__ float use_ahead(const long n4, const long first, const long stride, const float4 *ring) {
    asm volatile("cp.async.wait_all;" ::: "memory");
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < AHEAD; ++j)
        if (first + j * stride < n4) {
            const float4 p = ring[j * STREAM_BLOCK + threadIdx.x];
            acc += p.x + p.y + p.z + p.w;
        }
    return acc;
}

template <int AHEAD>
__global__ void __launch_bounds__(STREAM_BLOCK, 4) layer_k(const Layer L) {
    extern __shared__ float4 ring[];
    const Buffers &b = L.b;
    const long stride = (long) gridDim.x * STREAM_BLOCK;
    const long first = (long) blockIdx.x * STREAM_BLOCK + threadIdx.x;
    const bool copies = AHEAD > 0 && threadIdx.x >= 32;
    auto ahead = [&](const int k) {
        if (copies) copy_ahead<AHEAD>((const float4 *) (b.w + b.off[k]), L.n4[k], first, stride, ring);
    };
    unsigned phase = 0;
    ahead(0);
    for (int k = 0; k < 4; ++k) {
        small_part(k == 0 ? b.x0 : (const float4 *) b.out, b.act, L.small4[k], first, stride);
        grid_sync(L.bar, ++phase);
        const float4 *x = (const float4 *) (b.w + b.off[k]);
        const long n4 = L.n4[k];
        float acc = read_act(b.act, L.act4[k]);
        if (copies) acc += use_ahead<AHEAD>(n4, first, stride, ring);
        acc += stream_from(x, n4, first, stride, copies ? AHEAD : 0);
        for (long r = first; r < L.rows[k]; r += stride) b.out[r] = acc;
        if (k < 3) {
            ahead(k + 1);
            grid_sync(L.bar, ++phase);
        }
    }
    // Every block is past the last barrier: the last to leave sets both counters back for the
    // next launch.
    if (threadIdx.x == 0 && atomicAdd(L.bar + 1, 1u) == gridDim.x - 1) {
        L.bar[0] = 0;
        L.bar[1] = 0;
        __threadfence();
    }
}

// griddepcontrol (sm_90): the next grid may launch; then wait until the grid before has completed
// and its writes are visible. Without a programmatic launch both are no-ops.
__device__ __forceinline__ void let_next_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void wait_for_previous() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// stream_k as a programmatic dependent: the first AHEAD trips of its weights are copied before the
// wait (they depend on nothing earlier), the activation read after it (the copied trips are summed
// first, which keeps the kernel in 32 registers without a spill).
template <int AHEAD>
__global__ void __launch_bounds__(STREAM_BLOCK, 4) stream_pdl_k(const float4 *__restrict__ x, const long n4,
                                                             const float4 *__restrict__ a, const int a4,
                                                             float *__restrict__ out, const int rows) {
    extern __shared__ float4 ring[];
    const long stride = (long) gridDim.x * blockDim.x;
    const long first = (long) blockIdx.x * blockDim.x + threadIdx.x;
    let_next_launch();
    if (AHEAD > 0) copy_ahead<AHEAD>(x, n4, first, stride, ring);
    wait_for_previous();
    float acc = AHEAD > 0 ? use_ahead<AHEAD>(n4, first, stride, ring) : 0.0f;
    acc += read_act(a, a4) + stream_from(x, n4, first, stride, AHEAD);
    for (long r = first; r < rows; r += stride) out[r] = acc;
}

__global__ void small_pdl_k(const float4 *__restrict__ x, float4 *__restrict__ y, const int n4) {
    let_next_launch();
    wait_for_previous();
    small_part(x, y, n4, (long) blockIdx.x * blockDim.x + threadIdx.x, (long) gridDim.x * blockDim.x);
}

// `kernel` on `grid` x `block` with `smem` bytes on `s`: a programmatic dependent of the launch
// before it (in a capture, a programmatic edge of the graph), or a plain launch.
template <typename... P, typename... A>
static int launch(void (*kernel)(P...), const int grid, const int block, const size_t smem, cudaStream_t s,
                  const bool programmatic, A... args) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = programmatic ? 1 : 0;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
    return 0;
}

// The chain of pdl A captured into the stream (with the small kernels, or the GEMVs alone): the
// first launch plain, every launch after it programmatic.
template <int AHEAD>
static int launch_pdl_chain(const Buffers &b, const int sgrid, cudaStream_t s, const bool smalls) {
    const size_t smem = (size_t) AHEAD * STREAM_BLOCK * 16;
    if (smem > 0)
        CHECK(cudaFuncSetAttribute(stream_pdl_k<AHEAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem));
    for (int k = 0; k < 4; ++k) {
        const float4 *x = k == 0 ? b.x0 : (const float4 *) b.out;
        const int n4 = SMALL_N[k] / 4;
        if (smalls && launch(small_pdl_k, (n4 + 255) / 256, 256, 0, s, k > 0, x, b.act, n4)) return 1;
        if (launch(stream_pdl_k<AHEAD>, sgrid, STREAM_BLOCK, smem, s, smalls || k > 0,
                   (const float4 *) (b.w + b.off[k]), GEMV_BYTES[k] / 16, (const float4 *) b.act, GEMV_ACT[k] / 4,
                   b.out, GEMV_ROWS[k]))
            return 1;
    }
    return 0;
}

// The layer kernel of A trips ahead captured into the stream, on every block that fits at once.
template <int AHEAD>
static int launch_layer(const Layer &L, const int sms, cudaStream_t s) {
    const size_t smem = (size_t) AHEAD * STREAM_BLOCK * 16;
    CHECK(cudaFuncSetAttribute(layer_k<AHEAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, layer_k<AHEAD>, STREAM_BLOCK, smem));
    printf("layer %d ahead: %d blocks an SM, %zu B of shared memory a block, %.1f MB ahead\n", AHEAD, per_sm,
           smem, (double) smem * per_sm * sms / 1e6);
    layer_k<AHEAD><<<per_sm * sms, STREAM_BLOCK, smem, s>>>(L);
    return 0;
}

int main() {
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Layer L;
    if (alloc(&L.b)) return 1;
    for (int k = 0; k < 4; ++k) {
        L.n4[k] = GEMV_BYTES[k] / 16;
        L.small4[k] = SMALL_N[k] / 4;
        L.rows[k] = GEMV_ROWS[k];
        L.act4[k] = GEMV_ACT[k] / 4;
    }
    const Buffers &b = L.b;
    CHECK(cudaMalloc(&L.bar, 8));
    CHECK(cudaMemset(L.bar, 0, 8));
    const int sgrid = 4 * sms;
    cudaStream_t s0;
    CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));

    // The last arm is the decode-step gate's ceiling: ten read streams of 2 GiB in one graph.
    const long ceiling_bytes = 2L << 30;
    char *big;
    CHECK(cudaMalloc(&big, ceiling_bytes));
    CHECK(cudaMemset(big, 0, ceiling_bytes));
    std::vector<Arm> arms = {{"chain", 0},     {"stream", 0},    {"layer", 0},     {"layer", 2},
                             {"layer", 4},     {"layer", 6},     {"pdl", 0},       {"pdl", 2},
                             {"pdl", 4},       {"pdl", 6},       {"gemvs", 0},     {"gemvs pdl", 0},
                             {"gemvs pdl", 2}, {"gemvs pdl", 4}, {"ceiling", 10}};
    for (size_t i = 0; i < arms.size(); ++i) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
        const char *name = arms[i].name;
        if (!strcmp(name, "chain") || !strcmp(name, "gemvs")) {
            const bool smalls = !strcmp(name, "chain");
            for (int k = 0; k < 4; ++k) {
                if (smalls) launch_small(b, k, s0);
                launch_gemv(b, k, sgrid, s0);
            }
        } else if (!strcmp(name, "stream")) {
            stream_k<<<sgrid, STREAM_BLOCK, 0, s0>>>((const float4 *) b.w, b.total / 16, b.act, 0, b.out, 0);
        } else if (!strcmp(name, "ceiling")) {
            for (long k = 0; k < arms[i].x; ++k)
                stream_k<<<sgrid, STREAM_BLOCK, 0, s0>>>((const float4 *) big, ceiling_bytes / 16, b.act, 0, b.out, 0);
        } else if (strstr(name, "pdl")) {
            const bool smalls = name[0] == 'p';
            const int rc = arms[i].x == 0   ? launch_pdl_chain<0>(b, sgrid, s0, smalls)
                           : arms[i].x == 2 ? launch_pdl_chain<2>(b, sgrid, s0, smalls)
                           : arms[i].x == 4 ? launch_pdl_chain<4>(b, sgrid, s0, smalls)
                                            : launch_pdl_chain<6>(b, sgrid, s0, smalls);
            if (rc) return 1;
        } else {
            const int rc = arms[i].x == 0   ? launch_layer<0>(L, sms, s0)
                           : arms[i].x == 2 ? launch_layer<2>(L, sms, s0)
                           : arms[i].x == 4 ? launch_layer<4>(L, sms, s0)
                                            : launch_layer<6>(L, sms, s0);
            if (rc) return 1;
        }
        CHECK(cudaStreamEndCapture(s0, &g));
        CHECK(cudaGraphInstantiate(&arms[i].exec, g, 0));
        CHECK(cudaGraphUpload(arms[i].exec, s0));
    }
    if (time_arms(arms, s0, b, sgrid, "ahead")) return 1;
    // Each arm's median of its round medians; the ceiling's gives the step's floor.
    auto median = [](Arm &a) {
        std::sort(a.medians.begin(), a.medians.end());
        return a.medians[a.medians.size() / 2];
    };
    Arm &last = arms.back();
    const double ceiling = last.x * ceiling_bytes / (median(last) * 1e-6) / 1e9;
    const double floor_us = b.total / ceiling / 1e3;
    printf("ceiling (%ld read streams of 2 GiB) %.0f GB/s: the step's floor %.2f us; each arm's median of its "
           "round medians\n",
           last.x, ceiling, floor_us);
    for (size_t i = 0; i + 1 < arms.size(); ++i) {
        const float t = median(arms[i]);
        printf("%-9s %2ld ahead  %8.2f us  %.3f x floor\n", arms[i].name, arms[i].x, t, t / floor_us);
    }
    CHECK(cudaDeviceSynchronize());
    unsigned bar[2];
    CHECK(cudaMemcpy(bar, L.bar, 8, cudaMemcpyDeviceToHost));
    printf("barrier counters after the last launch: %u %u (0 0 expected)\n", bar[0], bar[1]);
    return 0;
}
