// Where a Q8_0 tensor-core GEMV launch's time goes on a grid of few tiles: a timeline of every block.
//
// The reference Q8_0 entries (reference/gemv.cu, included) with GEMV_STAMP defined: thread 0 of each
// block stamps %globaltimer at the body's entry, as each trip of its first tile has landed (after
// the wait and the block barrier), as that trip's arithmetic is done, as the tile's sums are stored,
// and at exit (the CUDA-core m = 1 kernel: entry and exit only, warp 0's). Each arm is launched 30
// times to bring the clocks up, then 20 times each, alternately with the stamps off (a null log: the
// event-timed launch the stamps are measured against) and on, every launch after an L2 scrub
// (scrub_l2, over four times the L2). Prints per arm: both event medians; each event's 10th, 50th
// and 90th percentile and maximum over blocks and launches, in us from the launch's first entry; the
// median gap between a block's consecutive landings (what a trip costs in the steady state) and
// from a landing to its arithmetic's end; and whether the stamped launch wrote the unstamped one's
// bits.
//
// Build (sm_90): nvcc -O3 -gencode arch=compute_90,code=sm_90 --expt-relaxed-constexpr gemv-phases.cu -o gemv-phases
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#define TRIPS_MAX 20
#define STAMPS (3 + 2*TRIPS_MAX)  // entry, a landing per trip, an arithmetic's end per trip, stored, exit

__device__ unsigned long long * gemv_stamps;

static __device__ __forceinline__ void gemv_stamp(int event, unsigned int row, int t);
#define GEMV_STAMP(event, row, t) gemv_stamp(event, row, t)

#include "../reference/gemv.cu"
#include "peak-timing.cuh"  // CHECK, globaltimer, scrub_l2

// Thread 0's events of its block's first tile (rows MMA_ROWS*blockIdx.x on), where the log is set.
static __device__ __forceinline__ void gemv_stamp(const int event, const unsigned int row, const int t) {
    unsigned long long * const log = gemv_stamps;
    if (log == nullptr || threadIdx.x != 0 || t >= TRIPS_MAX || ((event == 1 || event == 2 || event == 3) && row != MMA_ROWS*blockIdx.x)) {
        return;
    }
    const int k = event == 0 ? 0 : event == 1 ? 1 + t : event == 2 ? 1 + TRIPS_MAX + t : event == 3 ? 1 + 2*TRIPS_MAX : 2 + 2*TRIPS_MAX;
    log[(size_t) blockIdx.x*STAMPS + k] = globaltimer();
}

typedef void (*raw_fn)(const block_q8_0 *, const signed char *, const float *, float *, int, int, int, int, int);
typedef void (*planar_fn)(const signed char *, const unsigned short *, const signed char *, const float *, float *, int, int, int, int, int);

struct Arm {
    const char * name;
    bool planar;
    int m, in_f, out_f;
};

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size()/2];
}

template <int M>
static int smem_bytes(const bool deep) {
    if constexpr (M < 4) {
        return 0;
    } else {
        return deep ? mma_deep_shared_bytes<M>() : (int) sizeof(mma_shared<M>);
    }
}

template <int M>
static int run(const Arm & arm, const int sms, float * scrub, const size_t scrub_bytes) {
    const int nb = arm.in_f/QK, m = arm.m;
    const size_t rows = arm.out_f, ny = (size_t) m*rows;
    std::mt19937 gen(1234 + M);
    std::uniform_int_distribution<int> q(-127, 127), h(0x1800, 0x2000);
    std::uniform_real_distribution<float> d(0.01f, 0.1f);
    // raw: rows*nb blocks of an f16 scale and 32 quants; planar: rows*in_f quants, then rows*nb f16
    // scales (the same bytes)
    std::vector<unsigned char> hw(rows*nb*Q8_0_BLOCK_BYTES);
    for (size_t b = 0; b < rows*nb; ++b) {
        const unsigned short s = (unsigned short) h(gen);
        unsigned char * const scale = arm.planar ? &hw[rows*arm.in_f + 2*b] : &hw[b*Q8_0_BLOCK_BYTES];
        unsigned char * const quants = arm.planar ? &hw[b*QK] : scale + 2;
        memcpy(scale, &s, 2);
        for (int k = 0; k < QK; ++k) quants[k] = (unsigned char) q(gen);
    }
    std::vector<signed char> hxq((size_t) m*arm.in_f);
    std::vector<float> hxd((size_t) m*nb);
    for (auto & v : hxq) v = (signed char) q(gen);
    for (auto & v : hxd) v = d(gen);
    unsigned char * w;
    signed char * xq;
    float *xd, *y0, *y1;
    unsigned long long * st;
    CHECK(cudaMalloc(&w, hw.size()));
    CHECK(cudaMalloc(&xq, hxq.size()));
    CHECK(cudaMalloc(&xd, hxd.size()*4));
    CHECK(cudaMalloc(&y0, ny*4));
    CHECK(cudaMalloc(&y1, ny*4));
    CHECK(cudaMemcpy(w, hw.data(), hw.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(xq, hxq.data(), hxq.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(xd, hxd.data(), hxd.size()*4, cudaMemcpyHostToDevice));

    // The launcher's grid (gemv::launch_blocks): a tile a block up to what the SMs hold, else the
    // fewest blocks taking as many tiles each; at m = 1 the fewest warps taking as many rows each.
    const void * entry = arm.planar ? (const void *) (M == 4 ? gemv_q8_0_planar_m4 : gemv_q8_0_planar_m8)
                                    : (const void *) (M == 1 ? gemv_q8_0_m1 : M == 4 ? gemv_q8_0_m4 : gemv_q8_0_m8);
    const int tile_rows = M == 1 ? WARPS_PER_BLOCK : MMA_ROWS;
    const int tiles = (arm.out_f + tile_rows - 1)/tile_rows;
    const bool deep = M == 8 && tiles <= sms;
    const int smem = smem_bytes<M>(deep);
    CHECK(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, entry, MMA_THREADS, smem));
    const int resident = std::min(per_sm, 8)*sms;
    int grid = tiles;
    if (tiles > resident) {
        if (M == 1) {
            const int per_warp = (arm.out_f + resident*WARPS_PER_BLOCK - 1)/(resident*WARPS_PER_BLOCK);
            grid = ((arm.out_f + per_warp - 1)/per_warp + WARPS_PER_BLOCK - 1)/WARPS_PER_BLOCK;
        } else {
            const int per = (tiles + resident - 1)/resident;
            grid = (tiles + per - 1)/per;
        }
    }
    CHECK(cudaMalloc(&st, (size_t) grid*STAMPS*8));
    const auto launch = [&](float * y) {
        if (arm.planar) {
            ((planar_fn) entry)<<<grid, MMA_THREADS, smem>>>((const signed char *) w, (const unsigned short *) (w + rows*arm.in_f),
                                                              xq, xd, y, arm.in_f, arm.out_f, m, arm.out_f, arm.out_f);
        } else {
            ((raw_fn) entry)<<<grid, MMA_THREADS, smem>>>((const block_q8_0 *) w, xq, xd, y, arm.in_f, arm.out_f, m, arm.out_f, arm.out_f);
        }
    };
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t_plain, t_stamped;
    std::vector<unsigned long long> hs((size_t) grid*STAMPS);
    std::vector<std::vector<double>> ev(STAMPS);
    std::vector<double> gaps, arith;
    unsigned long long * const none = nullptr;
    CHECK(cudaMemcpyToSymbol(gemv_stamps, &none, sizeof(none)));
    for (int i = 0; i < 30; ++i) {
        scrub_l2(scrub, scrub_bytes, scrub);
        launch(y0);
    }
    // a launch on a scrubbed L2, in us by events
    const auto timed = [&](float * y) {
        float ms;
        scrub_l2(scrub, scrub_bytes, scrub);
        cudaEventRecord(a);
        launch(y);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms, a, b);
        return ms*1e3f;
    };
    for (int i = 0; i < 20; ++i) {
        CHECK(cudaMemcpyToSymbol(gemv_stamps, &none, sizeof(none)));
        t_plain.push_back(timed(y0));
        CHECK(cudaMemcpyToSymbol(gemv_stamps, &st, sizeof(st)));
        CHECK(cudaMemset(st, 0, (size_t) grid*STAMPS*8));
        t_stamped.push_back(timed(y1));
        CHECK(cudaMemcpy(hs.data(), st, hs.size()*8, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull;
        for (int k = 0; k < grid; ++k) t0 = std::min(t0, hs[(size_t) k*STAMPS]);
        for (int k = 0; k < grid; ++k) {
            const unsigned long long * s = &hs[(size_t) k*STAMPS];
            for (int e = 0; e < STAMPS; ++e) {
                if (s[e]) ev[e].push_back((s[e] - t0)*1e-3);
            }
            for (int t = 0; t < TRIPS_MAX; ++t) {
                if (t > 0 && s[1 + t] && s[t]) gaps.push_back((s[1 + t] - s[t])*1e-3);
                if (s[1 + t] && s[1 + TRIPS_MAX + t]) arith.push_back((s[1 + TRIPS_MAX + t] - s[1 + t])*1e-3);
            }
        }
    }
    CHECK(cudaGetLastError());
    std::vector<float> a0(ny), a1(ny);
    CHECK(cudaMemcpy(a0.data(), y0, ny*4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(a1.data(), y1, ny*4, cudaMemcpyDeviceToHost));
    const double mb = (double) hw.size()/1e6;
    printf("%s: %d -> %d, m = %d, %.1f MB of weights, %d blocks (%d an SM at most)%s, %d B shared\n"
           "  event median of 20: %.2f us unstamped (%.0f GB/s of weights), %.2f us stamped; stamped bits %s\n",
           arm.name, arm.in_f, arm.out_f, m, mb, grid, per_sm, deep ? ", deep stages" : "", smem,
           median(t_plain), mb*1e3/median(t_plain), median(t_stamped), memcmp(a0.data(), a1.data(), ny*4) ? "DIFFER" : "equal");
    const auto pct = [](std::vector<double> & v, const double q) {
        std::sort(v.begin(), v.end());
        return v[(size_t) (q*(v.size() - 1))];
    };
    const int trips = (nb + MMA_TRIP - 1)/MMA_TRIP;
    for (int e = 0; e < STAMPS; ++e) {
        auto & v = ev[e];
        if (v.empty()) continue;
        char name[32];
        if (e == 0) snprintf(name, sizeof(name), "entry");
        else if (e <= TRIPS_MAX) snprintf(name, sizeof(name), "landed %d", e - 1);
        else if (e <= 2*TRIPS_MAX) snprintf(name, sizeof(name), "done %d", e - 1 - TRIPS_MAX);
        else if (e == 1 + 2*TRIPS_MAX) snprintf(name, sizeof(name), "stored");
        else snprintf(name, sizeof(name), "exit");
        // every trip's landing would be a long table: the first two, the last, and their arithmetic
        const int t = e <= TRIPS_MAX ? e - 1 : e - 1 - TRIPS_MAX;
        if (e >= 1 && e <= 2*TRIPS_MAX && t >= 2 && t != trips - 1) continue;
        const double p10 = pct(v, 0.1), p50 = pct(v, 0.5), p90 = pct(v, 0.9), max = pct(v, 1.0);
        printf("  %-10s p10 %6.2f  p50 %6.2f  p90 %6.2f  max %6.2f us\n", name, p10, p50, p90, max);
    }
    if (!gaps.empty()) {
        printf("  a block's landing to its next: p10 %.2f  p50 %.2f  p90 %.2f us; a landing to its arithmetic's end: p50 %.2f  p90 %.2f us\n",
               pct(gaps, 0.1), pct(gaps, 0.5), pct(gaps, 0.9), pct(arith, 0.5), pct(arith, 0.9));
    }
    cudaFree(w); cudaFree(xq); cudaFree(xd); cudaFree(y0); cudaFree(y1); cudaFree(st);
    return 0;
}

int main() {
    int l2, sms;
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, L2 %d MiB\n", prop.name, sms, l2 >> 20);
    const size_t scrub_bytes = (size_t) 4*l2;
    float * scrub;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemset(scrub, 0, scrub_bytes));
    // o_proj (320 tiles, 6 trips), down (320 tiles, 17 trips), and o_proj's columns over a tile an SM
    const Arm arms[] = {
        {"raw m=1 o_proj", false, 1, 6144, 5120},
        {"raw m=4 o_proj", false, 4, 6144, 5120},
        {"raw m=8 o_proj", false, 8, 6144, 5120},
        {"planar m=8 o_proj", true, 8, 6144, 5120},
        {"raw m=1 down", false, 1, 17408, 5120},
        {"raw m=8 down", false, 8, 17408, 5120},
        {"raw m=8 a tile an SM", false, 8, 6144, 16*sms},
    };
    for (const Arm & arm : arms) {
        const int rc = arm.m == 1 ? run<1>(arm, sms, scrub, scrub_bytes)
                     : arm.m == 4 ? run<4>(arm, sms, scrub, scrub_bytes)
                                  : run<8>(arm, sms, scrub, scrub_bytes);
        if (rc) return rc;
    }
    return 0;
}
