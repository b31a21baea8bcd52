// Do Hopper's warpgroup tensor cores (wgmma) and the warp-level ones (mma.sync) give the same bits
// for the same chain of products? Asked for tf32 (wgmma m64n8k8 against mma.sync m16n8k8, the
// attention's instruction) and for f16 with f32 accumulation (m64n8k16 against m16n8k16, the e4m3
// GEMVs' instruction).
//
// Each block holds one trial: A (64 x K), B (K x 8) and an initial accumulator C (64 x 8), and
// computes D = C + A B as a chain of K/KS tensor-core steps, k-step by k-step in the same order,
// once with mma.sync (four warps, 16 rows each) and once with wgmma (one warpgroup, A from
// registers in the same fragments, B from shared memory). The program counts the outputs whose
// bits differ, per value class, and checks both against f64 so a layout mistake cannot pass.
//
// Build (sm_90a): nvcc -O3 -gencode arch=compute_90a,code=sm_90a wgmma-bits.cu -o wgmma-bits
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>

#include "peak-timing.cuh"
#include "mma-ops.cuh"
#include "wgmma-desc.cuh"

constexpr int M = 64, N = 8;

// One operand type: its k-step KS, the bits the tensor cores read of a float (`operand`, on the
// host), the fragment word of two adjacent k of one row or column (`pack`), the two instructions,
// and where B's element (k, n) sits in shared memory, in 4-byte words and halves (K-major core
// matrices of 8 rows x 16 bytes, K-adjacent ones 128 bytes apart).
struct Tf32 {
    static constexpr int KS = 8;
    static constexpr const char * NAME = "tf32";
    static float operand(float x) {
        uint32_t u; memcpy(&u, &x, 4); u &= 0xffffe000u; memcpy(&x, &u, 4); return x;
    }
    // a k-step's fragment registers hold k = t and t + 4 (one value each)
    static __device__ uint32_t frag(const float * p, int k0) { return __float_as_uint(p[k0]); }
    static __device__ int k_of(int t, int half) { return t + 4 * half; }
    static __device__ void mma_sync(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        mma_tf32_1688(d, a, b0, b1);
    }
    static __device__ void wgmma(float (&d)[4], const uint32_t (&a)[4], uint64_t b) { wgmma_tf32_6488(d, a, b); }
    static __device__ void store_b(void * bs, int k, int n, float x) {
        static_cast<float *>(bs)[(k / 4) * 32 + n * 4 + k % 4] = x;
    }
};

// x rounded to the nearest f16 (ties to even; subnormals kept), as a float. The values drawn stay
// well inside f16's range.
static float f16_round(float x) {
    if (x == 0.0f) return x;
    int e;
    frexpf(x, &e);                              // |x| in [2^(e-1), 2^e)
    const int lsb = e - 11 > -24 ? e - 11 : -24;  // 11 significant bits, or f16's subnormal step
    return ldexpf(nearbyintf(ldexpf(x, -lsb)), lsb);
}

struct F16 {
    static constexpr int KS = 16;
    static constexpr const char * NAME = "f16";
    static float operand(float x) { return f16_round(x); }
    // a k-step's fragment registers hold k = 2t, 2t + 1 and 2t + 8, 2t + 9 (two halves each)
    static __device__ uint32_t frag(const float * p, int k0) {
        uint32_t u;   // p[k0] in the low half
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(p[k0 + 1]), "f"(p[k0]));
        return u;
    }
    static __device__ int k_of(int t, int half) { return 2 * t + 8 * half; }
    static __device__ void mma_sync(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        mma_f16_16816(d, a, b0, b1);
    }
    static __device__ void wgmma(float (&d)[4], const uint32_t (&a)[4], uint64_t b) { wgmma_f16_64816(d, a, b); }
    static __device__ void store_b(void * bs, int k, int n, float x) {
        uint16_t h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        static_cast<uint16_t *>(bs)[(k / 8) * 64 + n * 8 + k % 8] = h;
    }
};

// The thread's A fragment of k-step s: rows 16 w + g (+ 8), the k of T::k_of.
template <class T>
__device__ __forceinline__ void a_frag(uint32_t (&a)[4], const float * A, int K, int s) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const float * r0 = A + (16 * w + g) * K + T::KS * s, * r1 = r0 + 8 * K;
    a[0] = T::frag(r0, T::k_of(t, 0)); a[1] = T::frag(r1, T::k_of(t, 0));
    a[2] = T::frag(r0, T::k_of(t, 1)); a[3] = T::frag(r1, T::k_of(t, 1));
}

// The thread's B fragment word of k-step s: column g, the k of T::k_of (B is K x N, row-major).
template <class T>
__device__ __forceinline__ uint32_t b_frag(const float * B, int s, int half) {
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4, k = T::KS * s + T::k_of(t, half);
    if constexpr (T::KS == 8) {
        return __float_as_uint(B[k * N + g]);
    } else {
        const float two[2] = {B[k * N + g], B[(k + 1) * N + g]};
        return T::frag(two, 0);
    }
}

// The accumulator fragment: rows 16 w + g (+ 8), columns 2 t, 2 t + 1 (the same in both shapes).
__device__ __forceinline__ float & c_at(float * C, int i) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    return C[(16 * w + g + 8 * (i / 2)) * N + 2 * t + i % 2];
}

template <class T>
__global__ void __launch_bounds__(128) by_mma_sync(const float * A, const float * B, const float * C,
                                                   float * D, int K) {
    A += (size_t) blockIdx.x * M * K; B += (size_t) blockIdx.x * K * N;
    C += (size_t) blockIdx.x * M * N; D += (size_t) blockIdx.x * M * N;
    float d[4];
    for (int i = 0; i < 4; ++i) d[i] = c_at(const_cast<float *>(C), i);
    for (int s = 0; s < K / T::KS; ++s) {
        uint32_t a[4];
        a_frag<T>(a, A, K, s);
        T::mma_sync(d, a, b_frag<T>(B, s, 0), b_frag<T>(B, s, 1));
    }
    for (int i = 0; i < 4; ++i) c_at(D, i) = d[i];
}

template <class T>
__global__ void __launch_bounds__(128) by_wgmma(const float * A, const float * B, const float * C,
                                                float * D, int K) {
    extern __shared__ __align__(128) unsigned char bs[];   // B in core matrices (T::store_b)
    A += (size_t) blockIdx.x * M * K; B += (size_t) blockIdx.x * K * N;
    C += (size_t) blockIdx.x * M * N; D += (size_t) blockIdx.x * M * N;
    for (int i = threadIdx.x; i < K * N; i += blockDim.x) {
        T::store_b(bs, i / N, i % N, B[i]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[4];
    for (int i = 0; i < 4; ++i) d[i] = c_at(const_cast<float *>(C), i);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < K / T::KS; ++s) {
        uint32_t a[4];
        a_frag<T>(a, A, K, s);
        // k-step s: two K-adjacent core matrices, 256 bytes on; 8-row groups (none past the first) K/KS x 256 apart
        T::wgmma(d, a, desc(bs + 256 * s, 128, K / T::KS * 256));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    for (int i = 0; i < 4; ++i) c_at(D, i) = d[i];
}

template <class T>
static int run() {
    const char * classes[] = {"uniform [-1,1]", T::KS == 16 ? "exponents 2^-12..2^12" : "exponents 2^-20..2^20",
                              "cancelling pairs", "large C, small products",
                              T::KS == 16 ? "subnormal operands" : "subnormal products", "low bits set",
                              "e4m3 x int8, C = 0"};
    const int n_classes = T::KS == 16 ? 7 : 6;
    const int ks[] = {T::KS, 64, 512};
    const int exp_range = T::KS == 16 ? 12 : 20;    // f16: products and sums well inside its range
    const int subnormal = T::KS == 16 ? -18 : -66;  // operands below f16's or products below f32's normals
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-exp_range, exp_range), byte(0, 255), q(-127, 127);
    int total_diff = 0;
    for (int kc = 0; kc < 3; ++kc) {
        const int K = ks[kc];
        const int trials = K == 512 ? 256 : 2048;
        const size_t na = (size_t) trials * M * K, nb = (size_t) trials * K * N, nc = (size_t) trials * M * N;
        std::vector<float> A(na), B(nb), C(nc), D1(nc), D2(nc);
        float *dA, *dB, *dC, *dD1, *dD2;
        CHECK(cudaMalloc(&dA, na * 4)); CHECK(cudaMalloc(&dB, nb * 4)); CHECK(cudaMalloc(&dC, nc * 4));
        CHECK(cudaMalloc(&dD1, nc * 4)); CHECK(cudaMalloc(&dD2, nc * 4));
        CHECK(cudaFuncSetAttribute(by_wgmma<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, K * N * 4));
        for (int cls = 0; cls < n_classes; ++cls) {
            const auto draw = [&](bool is_a) {
                if (cls == 6) {   // the e4m3 GEMVs' operands: e4m3 weights, q8_1 activation bytes
                    if (!is_a) return (float) q(rng);
                    int v;
                    do { v = byte(rng); } while ((v & 0x7f) == 0x7f);
                    return e4m3_to_float((uint8_t) v);
                }
                float x = u(rng);
                if (cls == 1) x = ldexpf(x, e(rng));
                if (cls == 4) x = ldexpf(x, subnormal);
                return cls == 5 ? x : T::operand(x);
            };
            for (size_t i = 0; i < na; ++i) A[i] = draw(true);
            for (size_t i = 0; i < nb; ++i) B[i] = draw(false);
            if (cls == 2)   // each k-step's second half cancels its first half's products
                for (int tr = 0; tr < trials; ++tr)
                    for (int r = 0; r < M; ++r)
                        for (int k = 0; k < K; ++k)
                            if (k % T::KS >= T::KS / 2) {
                                float * a = &A[((size_t) tr * M + r) * K];
                                a[k] = -a[k - T::KS / 2];
                                for (int n = 0; n < N; ++n) {
                                    float * b = &B[(size_t) tr * K * N];
                                    b[k * N + n] = T::operand(b[(k - T::KS / 2) * N + n] * (1.f + ldexpf(u(rng), -8)));
                                }
                            }
            for (size_t i = 0; i < nc; ++i) C[i] = cls == 3 ? ldexpf(u(rng), 12) : (cls == 4 || cls == 6 ? 0.f : u(rng));
            CHECK(cudaMemcpy(dA, A.data(), na * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dB, B.data(), nb * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dC, C.data(), nc * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(dD1, 0xff, nc * 4)); CHECK(cudaMemset(dD2, 0xff, nc * 4));
            by_mma_sync<T><<<trials, 128>>>(dA, dB, dC, dD1, K);
            by_wgmma<T><<<trials, 128, K * N * 4>>>(dA, dB, dC, dD2, K);
            CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(D1.data(), dD1, nc * 4, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(D2.data(), dD2, nc * 4, cudaMemcpyDeviceToHost));
            int diff = 0, inexact = 0; double worst = 0, err1 = 0;
            for (int tr = 0; tr < trials; ++tr)
                for (int r = 0; r < M; ++r)
                    for (int n = 0; n < N; ++n) {
                        const size_t o = ((size_t) tr * M + r) * N + n;
                        if (memcmp(&D1[o], &D2[o], 4)) {
                            ++diff;
                            worst = fmax(worst, fabs((double) D1[o] - D2[o]) / fmax(fabs((double) D1[o]), 1e-300));
                        }
                        double ref = C[o], mag = fabs(C[o]);
                        for (int k = 0; k < K; ++k) {
                            const double p = (double) T::operand(A[((size_t) tr * M + r) * K + k]) *
                                             T::operand(B[(size_t) tr * K * N + k * N + n]);
                            ref += p; mag += fabs(p);
                        }
                        inexact += (double) D1[o] != ref;
                        if (mag > 0) err1 = fmax(err1, fabs(D1[o] - ref) / mag);
                    }
            total_diff += diff;
            printf("%-4s K %3d  %-26s outputs %7d  bits differ %7d  worst rel diff %.3g  "
                   "mma.sync max |d - f64| / sum|terms| %.3g  (not the f64 sum: %d)\n",
                   T::NAME, K, classes[cls], trials * M * N, diff, worst, err1, inexact);
        }
        cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dD1); cudaFree(dD2);
    }
    return total_diff;
}

int main() {
    const int diff = run<Tf32>() + run<F16>();
    printf("%s\n", diff ? "wgmma and mma.sync differ" : "wgmma == mma.sync, bit for bit, on every output");
    return 0;
}
