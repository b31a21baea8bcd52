// Whether a memory-bound kernel that issues tensor-core instructions runs at a lower SM clock than
// the same kernel without them.
//
// One read stream (scrub_l2's loop: 16 bytes a thread a step, grid-stride, 4 blocks of 512 threads
// an SM), in variants that add per 16-byte load: nothing; one or four f16 `mma.sync.m16n8k16`
// (f32 accumulation, as the e4m3 GEMVs issue) on the loaded words; one int8 `mma.sync.m16n8k32` (as
// the Q8_0 tensor-core GEMVs); one of another shape or type (f16 m16n8k8, f16 accumulation, e4m3,
// tf32); one warpgroup `wgmma` m64n8k16 f16 (A from the loaded words in registers, B from shared
// memory, waited for before the next load); or sixteen f32 FMAs (arithmetic on the CUDA cores, as a
// control).
// The operands depend on the loads, and the results reach a conditional store, so nothing is
// hoisted or dropped. Thread 0 of every block reads %clock64 and %globaltimer at its start and end;
// the SM clock of a launch is the blocks' mean of cycles over nanoseconds.
//
// Two sizes, each rounded down to whole grid strides: 32 MB (about o_proj's weights), each launch
// after an L2 scrub (four times the L2), and 1 GiB, back to back. Per size, three rounds; in each,
// every variant is launched 30 times to bring the clocks up and then timed over 20 launches by
// events. Prints per variant and size the median launch time, GB/s and the median SM clock over
// the rounds' launches.
//
// Then a chain of CHAIN launches of one grid stride each (about 4 MB), every launch on its own
// slice (together past the L2), captured in a CUDA graph and replayed: all without `mma`, all with
// one `mma` a load, the two alternating, and in two halves (one switch). If changing between the
// two clocks costs time at a kernel boundary, the alternating chain takes more than the mean of
// the two plain ones. Prints each pattern's median chain time over three rounds of 30 replays,
// and the SM clock of its launches with and without `mma` in the last replay.
//
// Build (sm_90a, for wgmma): nvcc -O3 -gencode arch=compute_90a,code=sm_90a mma-clock.cu -o mma-clock
#include <algorithm>
#include <cstdint>
#include <vector>

#include "peak-timing.cuh"  // CHECK, globaltimer, scrub_l2
#include "mma-ops.cuh"       // mma_f16_16816, mma_tf32_1688, wgmma_f16_64816
#include "wgmma-desc.cuh"   // desc

// The instruction kinds a variant may add (KIND): the e4m3 GEMVs' f16 mma (m16n8k16, f32
// accumulation), the Q8_0 GEMVs' int8 one, then other shapes and types of the same unit, and the
// warpgroup instruction.
enum { NONE, F16, S8, F16_K8, F16_ACC16, E4M3, TF32, WGMMA_F16 };

// `b` is the wgmma's B operand in shared memory (16 x 8 f16: two K-adjacent core matrices).
template <int KIND>
static __device__ __forceinline__ void mma(float (&d)[4], uint32_t & h, const uint4 a, const uint32_t b0, const uint32_t b1,
                                           const uint64_t b) {
    if constexpr (KIND == WGMMA_F16) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        wgmma_f16_64816(d, {a.x, a.y, a.z, a.w}, b);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    } else if constexpr (KIND == F16) {
        mma_f16_16816(d, {a.x, a.y, a.z, a.w}, b0, b1);
    } else if constexpr (KIND == S8) {
        int s[4] = {0, 0, 0, 0};
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+r"(s[0]), "+r"(s[1]), "+r"(s[2]), "+r"(s[3]) : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
        h ^= s[0] ^ s[1] ^ s[2] ^ s[3];
    } else if constexpr (KIND == F16_K8) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a.x), "r"(a.y), "r"(b0));
    } else if constexpr (KIND == F16_ACC16) {
        uint32_t c[2] = {0u, 0u};    // from zero each time: f16 sums carried on would overflow
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
            : "+r"(c[0]), "+r"(c[1]) : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
        h ^= c[0] ^ c[1];
    } else if constexpr (KIND == E4M3) {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
    } else if constexpr (KIND == TF32) {
        mma_tf32_1688(d, {a.x, a.y, a.z, a.w}, b0, b1);
    }
}

// N instructions of KIND a load, FMAS f32 FMAs a load. n4 is a multiple of the launch's threads, so
// every lane of a warp takes the same steps (mma.sync is warp-wide).
template <int KIND, int N, int FMAS>
__global__ void __launch_bounds__(512) stream(const uint4 * __restrict__ x, const long n4, float * sink,
                                              unsigned long long * clocks) {
    __shared__ __align__(128) uint32_t bs[64];
    uint64_t b = 0;
    if constexpr (KIND == WGMMA_F16) {
        if (threadIdx.x < 64) {
            bs[threadIdx.x] = 0x3c003c00u;    // f16 1.0
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        b = desc(bs, 128, 256);
    }
    const unsigned long long c0 = clock64(), t0 = globaltimer();
    uint32_t acc = 0, h = 0;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f}, f = 0.0f;
    for (long i = blockIdx.x*(long) blockDim.x + threadIdx.x; i < n4; i += (long) gridDim.x*blockDim.x) {
        const uint4 v = __ldg(x + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
#pragma unroll
        for (int k = 0; k < N; ++k) {
            mma<KIND>(d, h, v, v.x + k, v.y, b);
        }
#pragma unroll
        for (int k = 0; k < FMAS; ++k) {
            f = fmaf(__uint_as_float((v.x & 0x3fffffffu) + k), f, 1.0f);
        }
    }
    const unsigned long long c1 = clock64(), t1 = globaltimer();
    if (threadIdx.x == 0) {
        clocks[2*blockIdx.x] = c1 - c0;
        clocks[2*blockIdx.x + 1] = t1 - t0;
    }
    if (acc == 0x12345678u || d[0] + d[1] + d[2] + d[3] == 1234.5f || f == 1234.5f || h == 0x12345678u) {
        sink[0] = 1.0f;
    }
}

#define CHAIN 16

struct Variant {
    const char * name;
    void (*kernel)(const uint4 *, long, float *, unsigned long long *);
};

int main() {
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int l2 = 0;
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, l2 >> 20);
    const Variant variants[] = {
        {"read", stream<NONE, 0, 0>},
        {"read + 1 f16 mma", stream<F16, 1, 0>},
        {"read + 4 f16 mma", stream<F16, 4, 0>},
        {"read + 1 int8 mma", stream<S8, 1, 0>},
        {"read + 1 f16 k8", stream<F16_K8, 1, 0>},
        {"read + 1 f16 acc16", stream<F16_ACC16, 1, 0>},
        {"read + 1 e4m3 mma", stream<E4M3, 1, 0>},
        {"read + 1 tf32 mma", stream<TF32, 1, 0>},
        {"read + 1 f16 wgmma", stream<WGMMA_F16, 1, 0>},
        {"read + 16 fma", stream<NONE, 0, 16>},
    };
    constexpr int V = sizeof(variants)/sizeof(variants[0]);
    const int blocks = 4*sms, threads = 512;
    const size_t big = 1ull << 30, scrub_bytes = std::max<size_t>(4ull*l2, 256ull << 20);
    unsigned char * buf;
    unsigned char * scrub;
    float * sink;
    unsigned long long * clocks;
    CHECK(cudaMalloc(&buf, big));
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMalloc(&sink, sizeof(float)));
    CHECK(cudaMalloc(&clocks, CHAIN*2*sizeof(unsigned long long)*blocks));
    CHECK(cudaMemset(buf, 0x3c, big));    // f16 0x3c3c (about 1.06), int8 60, f32 about 0.011
    CHECK(cudaMemset(scrub, 0x3c, scrub_bytes));
    std::vector<unsigned long long> host(2*blocks);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const size_t step = 16ull*blocks*threads;
    const size_t sizes[2] = {(32ull << 20)/step*step, big/step*step};
    for (int z = 0; z < 2; ++z) {
        const size_t bytes = sizes[z];
        const bool cold = z == 0;
        std::vector<float> us[V], mhz[V];
        for (int round = 0; round < 3; ++round) {
            for (int v = 0; v < V; ++v) {
                const auto launch = [&] {
                    variants[v].kernel<<<blocks, threads>>>((const uint4 *) buf, (long) (bytes/16), sink, clocks);
                };
                for (int w = 0; w < 30; ++w) {
                    launch();
                }
                for (int r = 0; r < 20; ++r) {
                    if (cold) {
                        scrub_l2(scrub, scrub_bytes, sink);
                    }
                    CHECK(cudaEventRecord(start));
                    launch();
                    CHECK(cudaEventRecord(stop));
                    CHECK(cudaEventSynchronize(stop));
                    CHECK(cudaGetLastError());
                    float ms;
                    CHECK(cudaEventElapsedTime(&ms, start, stop));
                    CHECK(cudaMemcpy(host.data(), clocks, host.size()*sizeof(host[0]), cudaMemcpyDeviceToHost));
                    double cycles = 0.0, ns = 0.0;
                    for (int b = 0; b < blocks; ++b) {
                        cycles += (double) host[2*b];
                        ns += (double) host[2*b + 1];
                    }
                    us[v].push_back(1000.0f*ms);
                    mhz[v].push_back((float) (1000.0*cycles/ns));
                }
            }
        }
        printf("\n%zu MB, %s\n", bytes >> 20, cold ? "each launch after an L2 scrub" : "back to back");
        printf("%-20s %10s %10s %10s\n", "variant", "us", "GB/s", "SM MHz");
        for (int v = 0; v < V; ++v) {
            std::sort(us[v].begin(), us[v].end());
            std::sort(mhz[v].begin(), mhz[v].end());
            const float t = us[v][us[v].size()/2];
            printf("%-20s %10.2f %10.0f %10.0f   (us %.2f to %.2f, MHz %.0f to %.0f)\n", variants[v].name, t,
                   bytes/(t*1000.0f), mhz[v][mhz[v].size()/2], us[v].front(), us[v].back(), mhz[v].front(), mhz[v].back());
        }
    }
    // The chain: launch j reads slice j; pattern p gives each launch its variant (0 read, 1 mma).
    const char * patterns[4] = {"read only", "mma only", "alternating", "two halves"};
    const auto with_mma = [](const int p, const int j) {
        return p == 1 || (p == 2 && j % 2 == 1) || (p == 3 && j >= CHAIN/2);
    };
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t exec[4];
    for (int p = 0; p < 4; ++p) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int j = 0; j < CHAIN; ++j) {
            const auto k = with_mma(p, j) ? variants[1].kernel : variants[0].kernel;
            k<<<blocks, threads, 0, s>>>((const uint4 *) (buf + j*step), (long) (step/16), sink, clocks + 2*blocks*j);
        }
        CHECK(cudaStreamEndCapture(s, &g));
        CHECK(cudaGraphInstantiate(&exec[p], g, 0));
    }
    std::vector<float> chain_us[4];
    std::vector<unsigned long long> all(CHAIN*2*blocks);
    float mhz_of[4][2] = {};
    for (int round = 0; round < 3; ++round) {
        for (int p = 0; p < 4; ++p) {
            for (int r = 0; r < 40; ++r) {
                CHECK(cudaEventRecord(start, s));
                CHECK(cudaGraphLaunch(exec[p], s));
                CHECK(cudaEventRecord(stop, s));
                CHECK(cudaEventSynchronize(stop));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, start, stop));
                if (r >= 10) {
                    chain_us[p].push_back(1000.0f*ms);
                }
            }
            CHECK(cudaMemcpy(all.data(), clocks, all.size()*sizeof(all[0]), cudaMemcpyDeviceToHost));
            double cycles[2] = {0.0, 0.0}, ns[2] = {0.0, 0.0};
            for (int j = 0; j < CHAIN; ++j) {
                for (int b = 0; b < blocks; ++b) {
                    cycles[with_mma(p, j)] += (double) all[2*blocks*j + 2*b];
                    ns[with_mma(p, j)] += (double) all[2*blocks*j + 2*b + 1];
                }
            }
            for (int m = 0; m < 2; ++m) {
                mhz_of[p][m] = ns[m] > 0.0 ? (float) (1000.0*cycles[m]/ns[m]) : 0.0f;
            }
        }
    }
    printf("\na chain of %d launches of %zu KB each, one graph, back to back\n", CHAIN, step >> 10);
    printf("%-12s %10s %12s %14s %14s\n", "pattern", "chain us", "us a launch", "MHz without", "MHz with mma");
    for (int p = 0; p < 4; ++p) {
        std::sort(chain_us[p].begin(), chain_us[p].end());
        const float t = chain_us[p][chain_us[p].size()/2];
        printf("%-12s %10.2f %12.3f %14.0f %14.0f   (chain us %.2f to %.2f)\n", patterns[p], t, t/CHAIN,
               mhz_of[p][0], mhz_of[p][1], chain_us[p].front(), chain_us[p].back());
    }
    return 0;
}
