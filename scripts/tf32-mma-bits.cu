// Do Hopper's warpgroup tensor cores (wgmma m64n8k8 tf32) and the warp-level ones (mma.sync
// m16n8k8 tf32) give the same bits for the same chain of products?
//
// Each block holds one trial: A (64 x K), B (K x 8) and an initial accumulator C (64 x 8), and
// computes D = C + A B as a chain of K/8 tensor-core steps, k-step by k-step in the same order,
// once with mma.sync (four warps, 16 rows each) and once with wgmma (one warpgroup, A from
// registers in the same fragments, B from shared memory). The program counts the outputs whose
// bits differ, per value class, and checks both against f64 so a layout mistake cannot pass.
//
// Build (sm_90a): nvcc -O3 -gencode arch=compute_90a,code=sm_90a tf32-mma-bits.cu -o tf32-mma-bits
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>

#include "peak-timing.cuh"
#include "wgmma-desc.cuh"

constexpr int M = 64, N = 8;

__device__ __forceinline__ void mma_sync(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void wgmma(float (&d)[4], const uint32_t (&a)[4], uint64_t b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// The thread's A fragment of k-step s: rows 16 w + g (+ 8), columns 8 s + t (+ 4).
__device__ __forceinline__ void a_frag(uint32_t (&a)[4], const float * A, int K, int s) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const float * r0 = A + (16 * w + g) * K + 8 * s + t, * r1 = r0 + 8 * K;
    a[0] = __float_as_uint(r0[0]); a[1] = __float_as_uint(r1[0]);
    a[2] = __float_as_uint(r0[4]); a[3] = __float_as_uint(r1[4]);
}

// The accumulator fragment: rows 16 w + g (+ 8), columns 2 t, 2 t + 1 (the same in both shapes).
__device__ __forceinline__ float & c_at(float * C, int i) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    return C[(16 * w + g + 8 * (i / 2)) * N + 2 * t + i % 2];
}

__global__ void __launch_bounds__(128) by_mma_sync(const float * A, const float * B, const float * C,
                                                   float * D, int K) {
    A += (size_t) blockIdx.x * M * K; B += (size_t) blockIdx.x * K * N;
    C += (size_t) blockIdx.x * M * N; D += (size_t) blockIdx.x * M * N;
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    float d[4];
    for (int i = 0; i < 4; ++i) d[i] = c_at(const_cast<float *>(C), i);
    for (int s = 0; s < K / 8; ++s) {
        uint32_t a[4];
        a_frag(a, A, K, s);
        mma_sync(d, a, __float_as_uint(B[(8 * s + t) * N + g]), __float_as_uint(B[(8 * s + t + 4) * N + g]));
    }
    for (int i = 0; i < 4; ++i) c_at(D, i) = d[i];
}

__global__ void __launch_bounds__(128) by_wgmma(const float * A, const float * B, const float * C,
                                                float * D, int K) {
    extern __shared__ float bs[];   // B in core matrices: (n, k) at (k / 4) 32 + n 4 + k % 4
    A += (size_t) blockIdx.x * M * K; B += (size_t) blockIdx.x * K * N;
    C += (size_t) blockIdx.x * M * N; D += (size_t) blockIdx.x * M * N;
    for (int i = threadIdx.x; i < K * N; i += blockDim.x) {
        const int k = i / N, n = i % N;
        bs[(k / 4) * 32 + n * 4 + k % 4] = B[i];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[4];
    for (int i = 0; i < 4; ++i) d[i] = c_at(const_cast<float *>(C), i);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < K / 8; ++s) {
        uint32_t a[4];
        a_frag(a, A, K, s);
        wgmma(d, a, desc(bs + 64 * s, 128, K / 4 * 128));   // k-step s: 256 bytes on
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    for (int i = 0; i < 4; ++i) c_at(D, i) = d[i];
}

static float tf32_trunc(float x) {   // the operand bits the tensor cores read
    uint32_t u; memcpy(&u, &x, 4); u &= 0xffffe000u; memcpy(&x, &u, 4); return x;
}

int main() {
    int trials = 2048;
    const char * classes[] = {"uniform [-1,1]", "exponents 2^-20..2^20", "cancelling pairs",
                              "large C, small products", "subnormal products", "low bits set"};
    const int ks[] = {8, 64, 512};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-20, 20);
    int total_diff = 0;
    for (int kc = 0; kc < 3; ++kc) {
        const int K = ks[kc];
        trials = K == 512 ? 256 : 2048;
        const size_t na = (size_t) trials * M * K, nb = (size_t) trials * K * N, nc = (size_t) trials * M * N;
        std::vector<float> A(na), B(nb), C(nc), D1(nc), D2(nc);
        float *dA, *dB, *dC, *dD1, *dD2;
        CHECK(cudaMalloc(&dA, na * 4)); CHECK(cudaMalloc(&dB, nb * 4)); CHECK(cudaMalloc(&dC, nc * 4));
        CHECK(cudaMalloc(&dD1, nc * 4)); CHECK(cudaMalloc(&dD2, nc * 4));
        CHECK(cudaFuncSetAttribute(by_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, K * N * 4));
        for (int cls = 0; cls < 6; ++cls) {
            for (size_t i = 0; i < na; ++i) {
                float x = u(rng);
                if (cls == 1) x = ldexpf(x, e(rng));
                if (cls == 4) x = ldexpf(x, -66);
                A[i] = cls == 5 ? x : tf32_trunc(x);
            }
            for (size_t i = 0; i < nb; ++i) {
                float x = u(rng);
                if (cls == 1) x = ldexpf(x, e(rng));
                if (cls == 4) x = ldexpf(x, -66);
                B[i] = cls == 5 ? x : tf32_trunc(x);
            }
            if (cls == 2)   // each k-step's second half cancels its first half's products
                for (int tr = 0; tr < trials; ++tr)
                    for (int r = 0; r < M; ++r)
                        for (int k = 0; k < K; ++k)
                            if (k % 8 >= 4) {
                                float * a = &A[((size_t) tr * M + r) * K];
                                a[k] = -a[k - 4];
                                for (int n = 0; n < N; ++n) {
                                    float * b = &B[(size_t) tr * K * N];
                                    b[k * N + n] = tf32_trunc(b[(k - 4) * N + n] * (1.f + ldexpf(u(rng), -8)));
                                }
                            }
            for (size_t i = 0; i < nc; ++i) C[i] = cls == 3 ? ldexpf(u(rng), 12) : (cls == 4 ? 0.f : u(rng));
            CHECK(cudaMemcpy(dA, A.data(), na * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dB, B.data(), nb * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dC, C.data(), nc * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(dD1, 0xff, nc * 4)); CHECK(cudaMemset(dD2, 0xff, nc * 4));
            by_mma_sync<<<trials, 128>>>(dA, dB, dC, dD1, K);
            by_wgmma<<<trials, 128, K * N * 4>>>(dA, dB, dC, dD2, K);
            CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(D1.data(), dD1, nc * 4, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(D2.data(), dD2, nc * 4, cudaMemcpyDeviceToHost));
            int diff = 0; double worst = 0, scale_max = 0; double err1 = 0;
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
                            const double p = (double) tf32_trunc(A[((size_t) tr * M + r) * K + k]) *
                                             tf32_trunc(B[(size_t) tr * K * N + k * N + n]);
                            ref += p; mag += fabs(p);
                        }
                        scale_max = fmax(scale_max, mag);
                        if (mag > 0) err1 = fmax(err1, fabs(D1[o] - ref) / mag);
                    }
            total_diff += diff;
            printf("K %3d  %-26s outputs %7d  bits differ %7d  worst rel diff %.3g  "
                   "mma.sync max |d - f64| / sum|terms| %.3g\n",
                   K, classes[cls], trials * M * N, diff, worst, err1);
        }
        cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dD1); cudaFree(dD2);
    }
    printf("%s\n", total_diff ? "wgmma and mma.sync differ" : "wgmma == mma.sync, bit for bit, on every output");
    return 0;
}
