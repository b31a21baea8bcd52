// Two questions for an e4m3 GEMV at one activation row on the f16 tensor cores that loads its
// fragments straight from global memory (no shared-memory stage):
//
// 1. Bits. Does mma.sync m16n8k16 (f16 operands, f32 accumulation) give the same bits when the
//    16 k positions of a step are permuted, the same permutation in A and B? If so, a lane may
//    hold any 4 of a row's 16 values of a step (4 contiguous bytes) without changing the sums.
//    Checked on the GEMV's operands (A: every finite e4m3 code decoded to f16; B: integers in
//    [-127, 127]; C: the previous step's sum, or f32 values of any exponent), for permutations
//    within each half of k, across the halves, and over all 16.
//
// 2. Speed. q_proj (12288 rows of 5120 e4m3 bytes, 62.9 MB), L2 scrubbed before each launch:
//    - a read stream of the weight bytes (the ceiling);
//    - a CUDA-core kernel that loads 16 bytes a lane straight into registers, a row a warp (the
//      shape of the CUDA-core e4m3 kernels the tensor-core ones replaced);
//    - a tensor-core kernel with the project's block-diagonal pairs (a tile of two rows; A rows
//      are (tile row, block), B columns (activation row, block), the diagonal kept), each lane's
//      4-byte pieces of A and B loaded straight from global memory, several spans in flight.
//    The two GEMVs are checked against a host f64 product (a speed prototype, not the project's
//    bits: their sums' order is not the project kernels').
//
// Build (sm_90): nvcc -O3 -gencode arch=compute_90,code=sm_90 e4m3-m1-direct.cu -o e4m3-m1-direct
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>
#include <algorithm>

#include "mma-ops.cuh"       // mma_f16_16816, e4m3_to_float
#include "peak-timing.cuh"  // CHECK, read_stream, scrub_l2

// ---------------------------------------------------------------------------------------------
// 1. Bits under a permutation of k.

// f16 values are kept as their bits: every operand here (e4m3 values, integers up to 127) is
// exact in f16, so the host makes the bits without rounding.
typedef uint16_t f16;

__host__ __device__ __forceinline__ uint32_t pack(const f16 lo, const f16 hi) {
    return (uint32_t) lo | ((uint32_t) hi << 16);
}

static f16 f16_of(const float x) {  // exact for the values used
    if (x == 0.0f) return std::signbit(x) ? 0x8000 : 0;
    uint32_t b;
    memcpy(&b, &x, 4);
    const uint32_t s = (b >> 16) & 0x8000;
    const int e = (int) ((b >> 23) & 0xff) - 127;
    const uint32_t m = b & 0x7fffff;
    if (e >= -14) return (f16) (s | ((e + 15) << 10) | (m >> 13));
    return (f16) (s | (((m | 0x800000) >> (-14 - e)) >> 13));  // subnormal f16
}

static float float_of(const f16 h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    const float x = e == 0 ? std::ldexp((float) m, -24) : std::ldexp(1.0f + m/1024.0f, e - 15);
    return s ? -x : x;
}

// One warp a trial: A 16x16 (row-major), B 16x8 (k-major: B[k*8 + n]), C 16x8; D = C + A B.
__global__ void mma_trials(const f16 * a, const f16 * b, const float * c, float * d) {
    const int t = blockIdx.x, lane = threadIdx.x, g = lane / 4, q = lane % 4;
    const f16 * A = a + t*256;
    const f16 * B = b + t*128;
    uint32_t fa[4] = {pack(A[g*16 + 2*q], A[g*16 + 2*q + 1]), pack(A[(g + 8)*16 + 2*q], A[(g + 8)*16 + 2*q + 1]),
                      pack(A[g*16 + 2*q + 8], A[g*16 + 2*q + 9]), pack(A[(g + 8)*16 + 2*q + 8], A[(g + 8)*16 + 2*q + 9])};
    uint32_t fb[2] = {pack(B[(2*q)*8 + g], B[(2*q + 1)*8 + g]), pack(B[(2*q + 8)*8 + g], B[(2*q + 9)*8 + g])};
    float acc[4] = {c[t*128 + g*8 + 2*q], c[t*128 + g*8 + 2*q + 1], c[t*128 + (g + 8)*8 + 2*q], c[t*128 + (g + 8)*8 + 2*q + 1]};
    mma_f16_16816(acc, fa, fb[0], fb[1]);
    d[t*128 + g*8 + 2*q] = acc[0];
    d[t*128 + g*8 + 2*q + 1] = acc[1];
    d[t*128 + (g + 8)*8 + 2*q] = acc[2];
    d[t*128 + (g + 8)*8 + 2*q + 1] = acc[3];
}

static int permutation_test() {
    const int trials = 1 << 16;
    std::mt19937_64 rng(7);
    std::vector<f16> A(trials*256), B(trials*128);
    std::vector<float> C(trials*128);
    std::vector<uint8_t> codes;
    for (int v = 0; v < 256; ++v) {
        if ((v & 0x7f) != 0x7f) codes.push_back((uint8_t) v);
    }
    for (int t = 0; t < trials; ++t) {
        const int cls = t % 3;  // C: zero, the size of one step's sum, any exponent
        for (int i = 0; i < 256; ++i) A[t*256 + i] = f16_of(e4m3_to_float(codes[rng() % codes.size()]));
        for (int i = 0; i < 128; ++i) B[t*128 + i] = f16_of((float) ((int) (rng() % 255) - 127));
        for (int i = 0; i < 128; ++i) {
            const float u = (float) ((rng() >> 11) * 0x1.0p-53) - 0.5f;
            C[t*128 + i] = cls == 0 ? 0.0f : cls == 1 ? u * 4096.0f : std::ldexp(u, (int) (rng() % 60) - 30);
        }
    }
    // The permutations of k: within each half, across the halves, all 16.
    int perms[3][16];
    for (int k = 0; k < 16; ++k) { perms[0][k] = k; perms[1][k] = (k + 8) % 16; perms[2][k] = k; }
    std::shuffle(perms[0], perms[0] + 8, rng);
    std::shuffle(perms[0] + 8, perms[0] + 16, rng);
    std::shuffle(perms[2], perms[2] + 16, rng);
    const char * names[3] = {"within each half of k", "the halves swapped", "all 16 positions"};
    f16 *da, *db;
    float *dc, *dd;
    CHECK(cudaMalloc(&da, A.size()*2));
    CHECK(cudaMalloc(&db, B.size()*2));
    CHECK(cudaMalloc(&dc, C.size()*4));
    CHECK(cudaMalloc(&dd, C.size()*4));
    CHECK(cudaMemcpy(dc, C.data(), C.size()*4, cudaMemcpyHostToDevice));
    auto run = [&](const std::vector<f16> & a, const std::vector<f16> & b, std::vector<float> & out) -> int {
        CHECK(cudaMemcpy(da, a.data(), a.size()*2, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(db, b.data(), b.size()*2, cudaMemcpyHostToDevice));
        mma_trials<<<trials, 32>>>(da, db, dc, dd);
        CHECK(cudaGetLastError());
        out.resize(C.size());
        CHECK(cudaMemcpy(out.data(), dd, out.size()*4, cudaMemcpyDeviceToHost));
        return 0;
    };
    std::vector<float> base;
    if (run(A, B, base)) return 1;
    // The natural order against f64: the operands' layout is right.
    double worst = 0;
    for (int t = 0; t < trials; ++t) {
        for (int i = 0; i < 16; ++i) {
            for (int n = 0; n < 8; ++n) {
                double s = C[t*128 + i*8 + n], mag = std::fabs(s);
                for (int k = 0; k < 16; ++k) {
                    const double p = (double) float_of(A[t*256 + i*16 + k]) * (double) float_of(B[t*128 + k*8 + n]);
                    s += p;
                    mag += std::fabs(p);
                }
                worst = std::max(worst, std::fabs(base[t*128 + i*8 + n] - s) / (mag > 0 ? mag : 1));
            }
        }
    }
    printf("bits: %d trials of 16x8 outputs, C zero / one step's size / any exponent; natural order "
           "against f64: worst |d - ref| / sum|terms| %.2e\n", trials, worst);
    for (int p = 0; p < 3; ++p) {
        std::vector<f16> pa(A.size()), pb(B.size());
        for (int t = 0; t < trials; ++t) {
            for (int k = 0; k < 16; ++k) {
                for (int i = 0; i < 16; ++i) pa[t*256 + i*16 + k] = A[t*256 + i*16 + perms[p][k]];
                for (int n = 0; n < 8; ++n) pb[t*128 + k*8 + n] = B[t*128 + perms[p][k]*8 + n];
            }
        }
        std::vector<float> got;
        if (run(pa, pb, got)) return 1;
        long diff[3] = {0, 0, 0};
        for (size_t i = 0; i < got.size(); ++i) {
            uint32_t x, y;
            memcpy(&x, &got[i], 4);
            memcpy(&y, &base[i], 4);
            diff[(i / 128) % 3] += x != y;
        }
        printf("bits: k permuted %-22s outputs differing from the natural order: %ld / %ld / %ld of %d each\n",
               names[p], diff[0], diff[1], diff[2], trials / 3 * 128);
    }
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// 2. Speed at q_proj.

constexpr int IN_F = 5120, OUT_F = 12288, NB = IN_F / 32;

__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(const uint32_t two_bytes) {
    uint32_t r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"((unsigned short) two_bytes));
    return r;
}

__device__ __forceinline__ float e4m3f(const uint32_t byte) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short) (e4m3x2_to_f16x2(byte & 0xff) & 0xffff)));
    return f;
}

__device__ __forceinline__ f16 f16_of_int(const int v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"((float) v));
    return h;
}

// int8 pair (the low two bytes of v) to f16x2, exactly.
__device__ __forceinline__ uint32_t i8x2_to_f16x2(const uint32_t v) {
    return pack(f16_of_int((int8_t) (v & 0xff)), f16_of_int((int8_t) ((v >> 8) & 0xff)));
}

// CUDA-core: a row a warp, lane l the 16-byte chunks l, l + 32, ... of its row (a block is two
// chunks), four chunks in flight; each value times its activation value, one FMA chain a block
// half, times the activation scale.
__global__ void __launch_bounds__(128) gemv_cuda_core(const uint8_t * __restrict__ w, const int8_t * __restrict__ xq,
                                                      const float * __restrict__ xd, float * __restrict__ y) {
    const int row = blockIdx.x*4 + threadIdx.x/32, lane = threadIdx.x % 32;
    if (row >= OUT_F) return;
    const uint4 * wr = (const uint4 *) (w + (size_t) row*IN_F);
    const uint4 * xr = (const uint4 *) xq;
    float acc = 0.0f;
    constexpr int CHUNKS = IN_F / 16;
    for (int c0 = lane; c0 < CHUNKS; c0 += 32*4) {
        uint4 wv[4], xv[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int c = c0 + 32*u;
            if (c < CHUNKS) { wv[u] = __ldg(wr + c); xv[u] = __ldg(xr + c); }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int c = c0 + 32*u;
            if (c < CHUNKS) {
                const uint32_t ws[4] = {wv[u].x, wv[u].y, wv[u].z, wv[u].w};
                const uint32_t xs[4] = {xv[u].x, xv[u].y, xv[u].z, xv[u].w};
                float s = 0.0f;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
#pragma unroll
                    for (int b = 0; b < 4; ++b) {
                        s = fmaf(e4m3f(ws[j] >> (8*b)), (float) (int8_t) (xs[j] >> (8*b)), s);
                    }
                }
                acc = fmaf(s, __ldg(xd + c/2), acc);
            }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}

// Tensor cores, fragments straight from global memory: a tile of two rows a warp (tiles taken
// in turn by the grid's warps); a span is 8 blocks; a pair is two mma (the block's halves), its
// A rows g = (row 0, block g) and g + 8 = (row 1, block g), its B column n = (the activation,
// block n), k permuted within each half so that lane (g, q) holds bytes 4q..4q+3 of each half:
// four 4-byte loads of weights and two of the activation a lane a span. The diagonal D[g][g],
// D[g + 8][g] is the block's sum, held by lane (g, g / 2) as element g % 2.
template <int SPANS>
__global__ void __launch_bounds__(128) gemv_tc_direct(const uint8_t * __restrict__ w, const int8_t * __restrict__ xq,
                                                      const float * __restrict__ xd, float * __restrict__ y) {
    const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int warps = gridDim.x*4;
    const bool holder = q == g / 2;
    for (int tile = blockIdx.x*4 + threadIdx.x/32; tile < OUT_F/2; tile += warps) {
        const uint8_t * r0 = w + (size_t) (2*tile)*IN_F;
        const uint8_t * r1 = r0 + IN_F;
        float acc0 = 0.0f, acc1 = 0.0f;
        for (int s0 = 0; s0 < NB/8; s0 += SPANS) {
            uint32_t wa[SPANS][4], xa[SPANS][2];
#pragma unroll
            for (int u = 0; u < SPANS; ++u) {
                const int blk = (s0 + u)*8 + g;
                const int off = blk*32 + 4*q;
                wa[u][0] = __ldg((const uint32_t *) (r0 + off));
                wa[u][1] = __ldg((const uint32_t *) (r0 + off + 16));
                wa[u][2] = __ldg((const uint32_t *) (r1 + off));
                wa[u][3] = __ldg((const uint32_t *) (r1 + off + 16));
                xa[u][0] = __ldg((const uint32_t *) (xq + off));
                xa[u][1] = __ldg((const uint32_t *) (xq + off + 16));
            }
#pragma unroll
            for (int u = 0; u < SPANS; ++u) {
                float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint32_t a[4] = {e4m3x2_to_f16x2(wa[u][h]), e4m3x2_to_f16x2(wa[u][2 + h]),
                                           e4m3x2_to_f16x2(wa[u][h] >> 16), e4m3x2_to_f16x2(wa[u][2 + h] >> 16)};
                    const uint32_t b[2] = {i8x2_to_f16x2(xa[u][h]), i8x2_to_f16x2(xa[u][h] >> 16)};
                    mma_f16_16816(d, a, b[0], b[1]);
                }
                const float dx = __ldg(xd + (s0 + u)*8 + g);
                const float s_0 = (g & 1) ? d[1] : d[0];
                const float s_1 = (g & 1) ? d[3] : d[2];
                if (holder) {
                    acc0 = fmaf(s_0, dx, acc0);
                    acc1 = fmaf(s_1, dx, acc1);
                }
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            acc0 += __shfl_xor_sync(0xffffffff, acc0, o);
            acc1 += __shfl_xor_sync(0xffffffff, acc1, o);
        }
        if (lane == 0) { y[2*tile] = acc0; y[2*tile + 1] = acc1; }
    }
}

static int speed_test() {
    const size_t wbytes = (size_t) OUT_F*IN_F;
    std::vector<uint8_t> w(wbytes);
    std::vector<int8_t> xq(IN_F);
    std::vector<float> xd(NB);
    std::mt19937_64 rng(11);
    for (auto & v : w) { v = (uint8_t) rng(); if ((v & 0x7f) == 0x7f) v ^= 1; }
    for (auto & v : xq) v = (int8_t) ((int) (rng() % 255) - 127);
    for (auto & v : xd) v = 0.01f + (float) (rng() % 100) / 1000.0f;
    uint8_t * dw; int8_t * dx; float *dd, *dy, *sink; char * scrub;
    const size_t scrub_bytes = 256u << 20;
    CHECK(cudaMalloc(&dw, wbytes));
    CHECK(cudaMalloc(&dx, IN_F));
    CHECK(cudaMalloc(&dd, NB*4));
    CHECK(cudaMalloc(&dy, OUT_F*4));
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemset(scrub, 1, scrub_bytes));
    CHECK(cudaMemcpy(dw, w.data(), wbytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dx, xq.data(), IN_F, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dd, xd.data(), NB*4, cudaMemcpyHostToDevice));
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // The f64 product, each row's sum over blocks of dx times the block's integer-weighted sum.
    std::vector<double> want(OUT_F);
    std::vector<float> lut(256);
    for (int v = 0; v < 256; ++v) lut[v] = e4m3_to_float((uint8_t) v);
    for (int r = 0; r < OUT_F; ++r) {
        double s = 0;
        for (int b = 0; b < NB; ++b) {
            double t = 0;
            for (int k = 0; k < 32; ++k) t += (double) lut[w[(size_t) r*IN_F + b*32 + k]] * xq[b*32 + k];
            s += t * xd[b];
        }
        want[r] = s;
    }
    // A launch's median of five, each after a read of 256 MB that leaves none of its bytes in
    // L2 (a read, not a memset, so that no dirty line is written back during the launch), events
    // around the launch alone.
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    auto cold = [&](auto launch) {
        std::vector<float> ms;
        for (int r = 0; r < 6; ++r) {
            scrub_l2(scrub, scrub_bytes, sink);
            cudaEventRecord(start);
            launch();
            cudaEventRecord(stop);
            cudaEventSynchronize(stop);
            float t;
            cudaEventElapsedTime(&t, start, stop);
            if (r > 0) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[2];
    };
    auto report = [&](const char * name, float ms, bool check) -> int {
        double worst = 0;
        if (check) {
            std::vector<float> got(OUT_F);
            CHECK(cudaMemcpy(got.data(), dy, OUT_F*4, cudaMemcpyDeviceToHost));
            for (int r = 0; r < OUT_F; ++r) worst = std::max(worst, std::fabs(got[r] - want[r]) / (std::fabs(want[r]) + 1.0));
        }
        const double us = ms*1e3;
        printf("speed: %-40s %8.2f us  %7.1f GB/s%s", name, us, wbytes / us * 1e-3, check ? "" : "\n");
        if (check) printf("  worst |y - f64| / (|f64| + 1) %.1e\n", worst);
        return 0;
    };
    for (int round = 0; round < 3; ++round) {
        printf("round %d\n", round);
        report("read stream of the weights", cold([&] { read_stream<<<4*sms, 512>>>((const uint4 *) dw, wbytes/16, sink); }), false);
        CHECK(cudaMemset(dy, 0xff, OUT_F*4));
        report("CUDA cores, 16 B a lane, a row a warp", cold([&] { gemv_cuda_core<<<OUT_F/4, 128>>>(dw, dx, dd, dy); }), true);
        for (int bpsm : {4, 6, 8, 16}) {
            CHECK(cudaMemset(dy, 0xff, OUT_F*4));
            char name[64];
            snprintf(name, sizeof name, "tensor cores direct, 2 spans, %d blocks/SM", bpsm);
            const int grid = std::min(bpsm*sms, OUT_F/8);
            report(name, cold([&] { gemv_tc_direct<2><<<grid, 128>>>(dw, dx, dd, dy); }), true);
        }
        for (int bpsm : {6, 8}) {
            CHECK(cudaMemset(dy, 0xff, OUT_F*4));
            char name[64];
            snprintf(name, sizeof name, "tensor cores direct, 4 spans, %d blocks/SM", bpsm);
            const int grid = std::min(bpsm*sms, OUT_F/8);
            report(name, cold([&] { gemv_tc_direct<4><<<grid, 128>>>(dw, dx, dd, dy); }), true);
        }
        CHECK(cudaMemset(dy, 0xff, OUT_F*4));
        report("tensor cores direct, 1 span, a tile a warp", cold([&] { gemv_tc_direct<1><<<OUT_F/8, 128>>>(dw, dx, dd, dy); }), true);
        CHECK(cudaMemset(dy, 0xff, OUT_F*4));
        report("tensor cores direct, 2 spans, a tile a warp", cold([&] { gemv_tc_direct<2><<<OUT_F/8, 128>>>(dw, dx, dd, dy); }), true);
        CHECK(cudaMemset(dy, 0xff, OUT_F*4));
        report("tensor cores direct, 4 spans, a tile a warp", cold([&] { gemv_tc_direct<4><<<OUT_F/8, 128>>>(dw, dx, dd, dy); }), true);
    }
    return 0;
}

int main() {
    if (permutation_test()) return 1;
    return speed_test();
}
