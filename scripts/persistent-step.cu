// Could one persistent kernel for the dense layer reach the step's floor where a graph of its
// kernels cannot?
//
// The dense layer's step of step-standin.cuh (each GEMV a read stream of its weight bytes, each
// small kernel an elementwise pass of its length), the L2 scrubbed before each replay, timed as:
//   - chain: the eight kernels in one CUDA graph (the decode-step gate's plain arms);
//   - stream: one read stream over the four matrices (the step's bytes as one kernel);
//   - layer A: one kernel whose blocks stay resident and run the eight phases in turn, a grid
//     barrier after each phase that the next depends on. Before the barriers that precede a
//     stream, each block copies the first A trips of its share of that matrix into shared memory
//     (cp.async): the weights depend on nothing earlier, so the weight stream need not stop while
//     the small phase and the barriers run (A = 0: no copies ahead).
// The layer kernel's grid is what the occupancy calculator says fits at once, so every block is
// resident and no barrier can wait on a block without an SM.
//
// Build (sm_90): nvcc -O3 -gencode arch=compute_90,code=sm_90 persistent-step.cu -o persistent-step
#include <cstdint>

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

template <int AHEAD>
__global__ void __launch_bounds__(STREAM_BLOCK, 4) layer_k(const Layer L) {
    extern __shared__ float4 ring[];
    const Buffers &b = L.b;
    const long stride = (long) gridDim.x * STREAM_BLOCK;
    const long first = (long) blockIdx.x * STREAM_BLOCK + threadIdx.x;
    const bool copies = AHEAD > 0 && threadIdx.x >= 32;
    // The first AHEAD trips of this thread's share of matrix k, into its ring slots.
    auto ahead = [&](const int k) {
        if (!copies) return;
        const char *x = b.w + b.off[k];
        const long n4 = L.n4[k];
#pragma unroll
        for (int j = 0; j < AHEAD; ++j) {
            const long i = first + j * stride;
            if (i < n4) {
                const unsigned dst = (unsigned) __cvta_generic_to_shared(ring + j * STREAM_BLOCK + threadIdx.x);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(x + i * 16) : "memory");
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    unsigned phase = 0;
    ahead(0);
    for (int k = 0; k < 4; ++k) {
        small_part(k == 0 ? b.x0 : (const float4 *) b.out, b.act, L.small4[k], first, stride);
        grid_sync(L.bar, ++phase);
        const float4 *x = (const float4 *) (b.w + b.off[k]);
        const long n4 = L.n4[k];
        float acc = read_act(b.act, L.act4[k]);
        if (copies) {
            asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
            for (int j = 0; j < AHEAD; ++j)
                if (first + j * stride < n4) {
                    const float4 p = ring[j * STREAM_BLOCK + threadIdx.x];
                    acc += p.x + p.y + p.z + p.w;
                }
        }
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

    std::vector<Arm> arms = {{"chain", 0}, {"stream", 0}, {"layer", 0}, {"layer", 2}, {"layer", 4}, {"layer", 6}};
    for (size_t i = 0; i < arms.size(); ++i) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
        if (i == 0) {
            for (int k = 0; k < 4; ++k) {
                small_k<<<(SMALL_N[k] / 4 + 255) / 256, 256, 0, s0>>>(k == 0 ? b.x0 : (const float4 *) b.out, b.act,
                                                                      SMALL_N[k] / 4);
                stream_k<<<sgrid, STREAM_BLOCK, 0, s0>>>((const float4 *) (b.w + b.off[k]), GEMV_BYTES[k] / 16,
                                                         b.act, GEMV_ACT[k] / 4, b.out, GEMV_ROWS[k]);
            }
        } else if (i == 1) {
            stream_k<<<sgrid, STREAM_BLOCK, 0, s0>>>((const float4 *) b.w, b.total / 16, b.act, 0, b.out, 0);
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
    CHECK(cudaDeviceSynchronize());
    unsigned bar[2];
    CHECK(cudaMemcpy(bar, L.bar, 8, cudaMemcpyDeviceToHost));
    printf("barrier counters after the last launch: %u %u (0 0 expected)\n", bar[0], bar[1]);
    return 0;
}
