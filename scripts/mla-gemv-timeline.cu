// Where absorb_q's and decompress_v's time goes at t_q 1 and 8: a timeline of every warp.
//
// The reference kernels' body (reference/mla.cu, included) run again with a %globaltimer stamp per
// warp at its entry, when the block barrier after the activations' staging lets it go, after each
// trip's fold, and at its exit. Seed geometry (64 heads, kv_rank 512, d_nope and d_v 256), split 8,
// L2 scrubbed before every launch as the gate does. Prints, per kernel and t_q: the event-timed
// launch of the unstamped entry and of the stamped copy (the stamps' cost), the span from the first
// entry to the last exit, and for each event the 10th, 50th and 90th percentile and the last of the
// warps' stamps, in us from the first entry; and whether the stamped copy wrote the entry's bits.
//
// Build (sm_90): nvcc -O3 -arch=sm_90 mla-gemv-timeline.cu -o mla-gemv-timeline
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../reference/mla.cu"
#include "peak-timing.cuh"  // CHECK, globaltimer, scrub_l2

#define TRIPS_MAX 8
#define STAMPS (3 + TRIPS_MAX)  // entry, barrier, a fold per trip, exit

// gemv_fold_trip of reference/mla.cu, each chunk guarded unless FULL: the Rust build folds a trip
// that lies inside the row without the guards, the .cu guards every chunk.
template <int T, bool FULL>
static __device__ __forceinline__ void fold(float (&acc)[GEMV_ROWS][T], const float4 (&wv)[GEMV_TRIP][GEMV_ROWS],
                                            const float4 * xs, const int c0, const int k4) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
        for (int u = 0; u < GEMV_TRIP; ++u) {
            const int c = c0 + WARP_SIZE*u;
            if (FULL || c < k4) {
                const float4 xv = xs[t*k4 + c];
#pragma unroll
                for (int i = 0; i < GEMV_ROWS; ++i) {
                    acc[i][t] = dot4(wv[u][i], xv, acc[i][t]);
                }
            }
        }
    }
}

// gemv_heads<SPLIT, T> of reference/mla.cu with lane 0 of each warp stamping its events, every trip
// folded by fold<T, FULL>.
template <int SPLIT, int T, bool FULL>
__global__ void __launch_bounds__(GEMV_BLOCK, GEMV_SPLIT_MIN_BLOCKS)
stamped(const float4 * __restrict__ x, const float4 * __restrict__ w, float * __restrict__ y,
        const int nh, const int k4, const int r, unsigned long long * __restrict__ stamps) {
    extern __shared__ float4 xs[];
    unsigned long long * st = stamps + (blockIdx.x*(GEMV_BLOCK/WARP_SIZE) + threadIdx.x/WARP_SIZE)*STAMPS;
    const bool lead = threadIdx.x % WARP_SIZE == 0;
    if (lead) st[0] = globaltimer();
    const int head = blockIdx.x / SPLIT;
    int begin, end;
    split_range(r, SPLIT, blockIdx.x % SPLIT, begin, end);
    w += head*r*k4;
    const int lane = threadIdx.x % WARP_SIZE;
    int first = begin + threadIdx.x/WARP_SIZE*GEMV_ROWS;
    float4 wv[GEMV_TRIP][GEMV_ROWS];
    gemv_load_trip(wv, w, first, end, lane, k4);
#pragma unroll
    for (int t = 0; t < T; ++t) {
        for (int c = threadIdx.x; c < k4; c += blockDim.x) {
            cp_async_16(xs + t*k4 + c, x + (t*nh + head)*k4 + c);
        }
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    if (lead) st[1] = globaltimer();
    constexpr int STEP = GEMV_BLOCK/WARP_SIZE*GEMV_ROWS;
    int base = 0;
    int trip = 0;
    float acc[GEMV_ROWS][T] = {};
    while (first < end) {
        const bool last = base + WARP_SIZE*GEMV_TRIP >= k4;
        const int next = last ? first + STEP : first;
        const int next_base = last ? 0 : base + WARP_SIZE*GEMV_TRIP;
        float4 wn[GEMV_TRIP][GEMV_ROWS];
        gemv_load_trip(wn, w, next, end, next_base + lane, k4);
        fold<T, FULL>(acc, wv, xs, base + lane, k4);
        if (last) {
            constexpr int SUMS = pow2_at_least(GEMV_ROWS*T);
            constexpr int LANES = WARP_SIZE/SUMS;
            float v[32] = {};
#pragma unroll
            for (int i = 0; i < GEMV_ROWS; ++i) {
#pragma unroll
                for (int t = 0; t < T; ++t) {
                    v[i*T + t] = acc[i][t];
                    acc[i][t] = 0.0f;
                }
            }
            const float sum = warp_reduce_scatter<SUMS>(v);
            const int j = lane / LANES;
            if (lane % LANES == 0 && j < GEMV_ROWS*T && first + j/T < end) {
                y[(j%T*nh + head)*r + first + j/T] = sum;
            }
        }
        if (lead && trip < TRIPS_MAX) st[2 + trip] = globaltimer();
        ++trip;
#pragma unroll
        for (int u = 0; u < GEMV_TRIP; ++u) {
#pragma unroll
            for (int i = 0; i < GEMV_ROWS; ++i) {
                wv[u][i] = wn[u][i];
            }
        }
        first = next;
        base = next_base;
    }
    if (lead) st[2 + TRIPS_MAX] = globaltimer();
}

// Launches the unstamped entry on (x, w, y, t, nh, k, r).
typedef void (*entry_fn)(const float4 *, const float4 *, float *, int, int, int, int);
typedef void (*stamped_fn)(const float4 *, const float4 *, float *, int, int, int, unsigned long long *);

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size()/2];
}

// One kernel at one t_q: k = the row length, r = the rows a head.
static int run(const char * name, const char * fold, entry_fn entry, stamped_fn stamp, int t, int k, int r, float * scrub, size_t scrub_bytes) {
    const int nh = 64, split = 8, k4 = k/4;
    const size_t nw = (size_t) nh*r*k, nx = (size_t) t*nh*k, ny = (size_t) t*nh*r;
    std::vector<float> hw(nw), hx(nx);
    std::mt19937 gen(1234 + t);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto & v : hw) v = u(gen);
    for (auto & v : hx) v = u(gen);
    float *w, *x, *y0, *y1;
    unsigned long long * st;
    const int blocks = nh*split, warps = blocks*GEMV_BLOCK/WARP_SIZE;
    CHECK(cudaMalloc(&w, nw*4));
    CHECK(cudaMalloc(&x, nx*4));
    CHECK(cudaMalloc(&y0, ny*4));
    CHECK(cudaMalloc(&y1, ny*4));
    CHECK(cudaMalloc(&st, (size_t) warps*STAMPS*8));
    CHECK(cudaMemcpy(w, hw.data(), nw*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x, hx.data(), nx*4, cudaMemcpyHostToDevice));
    const int smem = t*k*4;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t_entry, t_stamped;
    std::vector<unsigned long long> hs((size_t) warps*STAMPS);
    std::vector<std::vector<double>> ev(STAMPS);
    std::vector<double> spans;
    for (int i = 0; i < 21; ++i) {
        float ms;
        scrub_l2(scrub, scrub_bytes, scrub);
        cudaEventRecord(a);
        entry((const float4 *) x, (const float4 *) w, y0, t, nh, k, r);
        cudaEventRecord(b);
        CHECK(cudaEventSynchronize(b));
        cudaEventElapsedTime(&ms, a, b);
        t_entry.push_back(ms*1e3f);
        CHECK(cudaMemsetAsync(st, 0, (size_t) warps*STAMPS*8));
        scrub_l2(scrub, scrub_bytes, scrub);
        cudaEventRecord(a);
        stamp<<<blocks, GEMV_BLOCK, smem>>>((const float4 *) x, (const float4 *) w, y1, nh, k4, r, st);
        cudaEventRecord(b);
        CHECK(cudaEventSynchronize(b));
        cudaEventElapsedTime(&ms, a, b);
        t_stamped.push_back(ms*1e3f);
        CHECK(cudaMemcpy(hs.data(), st, hs.size()*8, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, t1 = 0;
        for (int wi = 0; wi < warps; ++wi) {
            t0 = std::min(t0, hs[(size_t) wi*STAMPS]);
            t1 = std::max(t1, hs[(size_t) wi*STAMPS + STAMPS - 1]);
        }
        if (i == 0) continue;  // the first launch loads the module
        spans.push_back((t1 - t0)*1e-3);
        for (int wi = 0; wi < warps; ++wi) {
            for (int e = 0; e < STAMPS; ++e) {
                const unsigned long long s = hs[(size_t) wi*STAMPS + e];
                if (s) ev[e].push_back((s - t0)*1e-3);
            }
        }
    }
    CHECK(cudaGetLastError());
    std::vector<float> a0(ny), a1(ny);
    CHECK(cudaMemcpy(a0.data(), y0, ny*4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(a1.data(), y1, ny*4, cudaMemcpyDeviceToHost));
    std::sort(spans.begin(), spans.end());
    printf("%s t_q %d, stamped copy %s: entry %.2f us, stamped %.2f us (event medians of 20); first entry to last exit %.2f us (median); stamped bits %s\n",
           name, t, fold, median(t_entry), median(t_stamped), spans[spans.size()/2],
           memcmp(a0.data(), a1.data(), ny*4) ? "DIFFER" : "equal");
    const char * names[STAMPS] = {"entry", "barrier", "fold 0", "fold 1", "fold 2", "fold 3", "fold 4", "fold 5", "fold 6", "fold 7", "exit"};
    for (int e = 0; e < STAMPS; ++e) {
        auto & v = ev[e];
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());
        const auto at = [&](double q) { return v[(size_t) (q*(v.size() - 1))]; };
        printf("  %-8s p10 %6.2f  p50 %6.2f  p90 %6.2f  last %6.2f us\n", names[e], at(0.1), at(0.5), at(0.9), v.back());
    }
    cudaFree(w); cudaFree(x); cudaFree(y0); cudaFree(y1); cudaFree(st);
    return 0;
}

int main() {
    int l2;
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t scrub_bytes = (size_t) 4*l2;
    float * scrub;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemset(scrub, 0, scrub_bytes));
    const stamped_fn fns[2][2] = {{stamped<8, 1, false>, stamped<8, 1, true>}, {stamped<8, 8, false>, stamped<8, 8, true>}};
    for (auto & row : fns) {
        for (stamped_fn f : row) {
            CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
        }
    }
    CHECK(cudaFuncSetAttribute(mla_absorb_q_s8, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    CHECK(cudaFuncSetAttribute(mla_decompress_v_s8, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    // Entries take (x, w, y, t, nh, then absorb_q's d_nope, kv_rank or decompress_v's d_v, kv_rank).
    const entry_fn absorb = [](const float4 * x, const float4 * w, float * y, int t, int nh, int k, int r) {
        mla_absorb_q_s8<<<nh*8, GEMV_BLOCK, t*k*4>>>(x, w, y, t, nh, k, r); };
    const entry_fn decompress = [](const float4 * x, const float4 * w, float * y, int t, int nh, int k, int r) {
        mla_decompress_v_s8<<<nh*8, GEMV_BLOCK, t*k*4>>>(x, w, y, t, nh, r, k); };
    for (int ti = 0; ti < 2; ++ti) {
        const int t = ti == 0 ? 1 : 8;
        for (int full = 0; full < 2; ++full) {
            const char * fold = full ? "unguarded" : "guarded";
            if (run("absorb_q", fold, absorb, fns[ti][full], t, 256, 512, scrub, scrub_bytes)) return 1;
            if (run("decompress_v", fold, decompress, fns[ti][full], t, 512, 256, scrub, scrub_bytes)) return 1;
        }
    }
    return 0;
}
