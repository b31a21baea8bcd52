// Can a wgmma kernel that swaps the operands' roles give an mma.sync kernel's bits?
//
// attn_flash computes S = Q K^T and O = E V with mma.sync m16n8k8 tf32 (M = heads); a Hopper
// kernel would compute S^T = K Q^T and O^T = V^T E^T with wgmma (M = 64 slots or columns, the
// rows in registers). wgmma-bits.cu showed that the two instructions give the same bits for
// the same fragments; this asks the questions that swapping the roles adds. Each block holds one
// trial, X (64 x K), Y (K x 64) and C (64 x 64), and chains D = C + X Y over the K / 8 k-steps in
// order, seven ways:
//   V0  mma.sync, A = X, B = Y (the reference)
//   V1  mma.sync, A = Y^T, B = X^T: D^T, the roles swapped
//   V2  wgmma m64n64k8, A = Y^T from registers, B = X^T from shared memory: D^T
//   V3  wgmma m64n64k8, A = X from registers, B = Y from shared memory: D
//   V4  mma.sync as V0, each k-step's k indices fed in the order 0, 2, 4, 6, 1, 3, 5, 7 (is the
//       instruction's sum of its eight products independent of their order?)
//   V5  wgmma as V3 but from no accumulator (scale-d = 0 on the first k-step) where C is +0:
//       the same as a chain from +0? (signed zeros)
//   V6  V2 issued as flash_bits issues its chains: CHAIN k-steps a commit group back to back into
//       the accumulator, the next group issued before the previous one is waited for (V2 to V5
//       wait for each k-step; does a chain kept in flight round the same?). At K 8, one k-step,
//       V2 itself.
// and counts the outputs whose bits differ from V0's per value class. Each variant is also held
// to f64, so that a layout mistake shows as an error, not as a difference of bits.
//
// Build (sm_90a): nvcc -O3 -gencode arch=compute_90a,code=sm_90a tf32-mma-orient.cu -o tf32-mma-orient
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>

#include "peak-timing.cuh"
#include "wgmma-desc.cuh"

constexpr int M = 64, N = 64, NT = N / 8, VARIANTS = 7, CHAIN = 4;

__device__ __forceinline__ void mma_sync(float * d, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// m64n64k8 tf32, A from registers; `accumulate` 0 makes this step D = A B (scale-d = 0).
__device__ __forceinline__ void wgmma(float (&d)[4 * NT], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                 "{%32,%33,%34,%35}, %36, p, 1, 1;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
                   "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                   "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
}

// Column k8 + j of a k-step as fed to the instruction: in order, or V4's order.
__device__ __forceinline__ int kpos(int s, int j, bool permuted) {
    return 8 * s + (permuted ? (j < 4 ? 2 * j : 2 * (j - 4) + 1) : j);
}

// The thread's A fragment of k-step s from a row-major 64 x K matrix: rows 16 w + g (+ 8),
// instruction columns t (+ 4).
__device__ __forceinline__ void a_frag(uint32_t (&a)[4], const float * A, int K, int s, bool permuted) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const float * r0 = A + (16 * w + g) * K, * r1 = r0 + 8 * K;
    const int k0 = kpos(s, t, permuted), k1 = kpos(s, t + 4, permuted);
    a[0] = __float_as_uint(r0[k0]); a[1] = __float_as_uint(r1[k0]);
    a[2] = __float_as_uint(r0[k1]); a[3] = __float_as_uint(r1[k1]);
}

// The accumulator element i of n-tile j (the same layout in both instructions): rows 16 w + g
// (+ 8), columns 8 j + 2 t (+ 1), of a row-major 64 x 64 matrix.
__device__ __forceinline__ float & c_at(float * C, int j, int i) {
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    return C[(16 * w + g + 8 * (i / 2)) * N + 8 * j + 2 * t + i % 2];
}

// The thread's accumulators from C (or +0 where `from_c` is 0), and back into D.
__device__ __forceinline__ void load_acc(float (&d)[4 * NT], const float * C, int from_c) {
    for (int j = 0; j < NT; ++j)
        for (int i = 0; i < 4; ++i) d[4 * j + i] = from_c ? c_at(const_cast<float *>(C), j, i) : 0.f;
}
__device__ __forceinline__ void store_acc(const float (&d)[4 * NT], float * D) {
    for (int j = 0; j < NT; ++j)
        for (int i = 0; i < 4; ++i) c_at(D, j, i) = d[4 * j + i];
}

// B (K x 64, element (k, n) at B[k * bs_k + n * bs_n]) into core matrices for wgmma: K-major,
// (n, k) at (n / 8) K / 4 * 32 + (k / 4) 32 + (n % 8) 4 + k % 4.
__device__ void stage_b(float * bs, const float * B, int K, int bs_k, int bs_n) {
    for (int i = threadIdx.x; i < K * N; i += blockDim.x) {
        const int k = i / N, n = i % N;
        bs[(n / 8) * (K / 4) * 32 + (k / 4) * 32 + (n % 8) * 4 + k % 4] = B[k * bs_k + n * bs_n];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}

// V0, V1, V4: `a` row-major 64 x K; B element (k, n) at b[k * b_k + n * b_n]; the chain from `C`.
__global__ void __launch_bounds__(128) by_mma_sync(const float * a, const float * b, int b_k, int b_n,
                                                   const float * C, float * D, int K, bool permuted) {
    const size_t tr = blockIdx.x;
    a += tr * M * K; b += tr * K * N; C += tr * M * N; D += tr * M * N;
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    float d[4 * NT];
    load_acc(d, C, 1);
    for (int s = 0; s < K / 8; ++s) {
        uint32_t af[4];
        a_frag(af, a, K, s, permuted);
        const int k0 = kpos(s, t, permuted), k1 = kpos(s, t + 4, permuted);
        for (int j = 0; j < NT; ++j)
            mma_sync(d + 4 * j, af, __float_as_uint(b[k0 * b_k + (8 * j + g) * b_n]),
                     __float_as_uint(b[k1 * b_k + (8 * j + g) * b_n]));
    }
    store_acc(d, D);
}

// V2, V3, V5: as by_mma_sync, on wgmma; `from_c` 0 starts the chain with scale-d = 0.
__global__ void __launch_bounds__(128) by_wgmma(const float * a, const float * b, int b_k, int b_n,
                                                const float * C, float * D, int K, int from_c) {
    extern __shared__ float bs[];
    const size_t tr = blockIdx.x;
    a += tr * M * K; b += tr * K * N; C += tr * M * N; D += tr * M * N;
    stage_b(bs, b, K, b_k, b_n);
    float d[4 * NT];
    load_acc(d, C, from_c);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < K / 8; ++s) {
        uint32_t af[4];
        a_frag(af, a, K, s, false);
        wgmma(d, af, desc(bs + 64 * s, 128, K / 4 * 128), s > 0 || from_c);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    store_acc(d, D);
}

// V6: CHAIN k-steps from s0 into d as one commit group, their fragments loaded first.
__device__ __forceinline__ void wgmma_group(float (&d)[4 * NT], uint32_t (&af)[CHAIN][4], const float * a,
                                            const float * bs, int K, int s0) {
#pragma unroll
    for (int i = 0; i < CHAIN; ++i) a_frag(af[i], a, K, s0 + i, false);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int i = 0; i < CHAIN; ++i) wgmma(d, af[i], desc(bs + 64 * (s0 + i), 128, K / 4 * 128), 1);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// V6: as by_wgmma from C, the k-steps in groups of CHAIN with two fragment sets, a group issued
// while the one before it runs (wait_group 1), as flash_bits does; K / 8 a multiple of 2 CHAIN.
__global__ void __launch_bounds__(128) by_wgmma_chained(const float * a, const float * b, int b_k, int b_n,
                                                        const float * C, float * D, int K) {
    extern __shared__ float bs[];
    const size_t tr = blockIdx.x;
    a += tr * M * K; b += tr * K * N; C += tr * M * N; D += tr * M * N;
    stage_b(bs, b, K, b_k, b_n);
    float d[4 * NT];
    load_acc(d, C, 1);
    uint32_t f0[CHAIN][4], f1[CHAIN][4];
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < K / 8; s += 2 * CHAIN) {
        wgmma_group(d, f0, a, bs, K, s);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");   // the f1 group before is done
        wgmma_group(d, f1, a, bs, K, s + CHAIN);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");   // the f0 group is done
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    store_acc(d, D);
}

static float tf32_trunc(float x) {   // the operand bits the tensor cores read
    uint32_t u; memcpy(&u, &x, 4); u &= 0xffffe000u; memcpy(&x, &u, 4); return x;
}

int main() {
    const char * classes[] = {"uniform [-1,1]", "exponents 2^-20..2^20", "cancelling pairs",
                              "large C, small products", "subnormal products, C +0", "low bits set",
                              "signed zeros, C +0"};
    const int n_classes = 7;
    const char * names[VARIANTS] = {"V0 mma.sync", "V1 mma.sync swapped", "V2 wgmma swapped",
                                    "V3 wgmma", "V4 mma.sync k permuted", "V5 wgmma scale-d 0",
                                    "V6 wgmma swapped chained"};
    const int ks[] = {8, 64, 576};
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-20, 20);
    long differ[VARIANTS] = {};
    bool layout_ok = true;
    for (int K : ks) {
        const int trials = K > 64 ? 128 : 1024;
        const size_t nx = (size_t) trials * M * K, ny = (size_t) trials * K * N, nc = (size_t) trials * M * N;
        std::vector<float> X(nx), Y(ny), Yt(ny), Xt(nx), C(nc), Ct(nc), D[VARIANTS];
        float *dX, *dY, *dYt, *dC, *dCt, *dD;
        CHECK(cudaMalloc(&dX, nx * 4)); CHECK(cudaMalloc(&dY, ny * 4)); CHECK(cudaMalloc(&dYt, ny * 4));
        CHECK(cudaMalloc(&dC, nc * 4)); CHECK(cudaMalloc(&dCt, nc * 4)); CHECK(cudaMalloc(&dD, nc * 4));
        CHECK(cudaFuncSetAttribute(by_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, K * N * 4));
        CHECK(cudaFuncSetAttribute(by_wgmma_chained, cudaFuncAttributeMaxDynamicSharedMemorySize, K * N * 4));
        for (int cls = 0; cls < n_classes; ++cls) {
            auto draw = [&](float & v) {
                float x = u(rng);
                if (cls == 1) x = ldexpf(x, e(rng));
                if (cls == 4) x = ldexpf(x, -66);
                v = cls == 5 ? x : tf32_trunc(x);
            };
            for (auto & v : X) draw(v);
            for (auto & v : Y) draw(v);
            if (cls == 6)   // X all zeros of both signs: every product is ±0
                for (auto & v : X) v = u(rng) < 0 ? -0.f : 0.f;
            if (cls == 2)   // each k-step's second half cancels its first half's products
                for (int tr = 0; tr < trials; ++tr)
                    for (int k = 0; k < K; ++k)
                        if (k % 8 >= 4) {
                            for (int r = 0; r < M; ++r) {
                                float * x = &X[((size_t) tr * M + r) * K];
                                x[k] = -x[k - 4];
                            }
                            float * y = &Y[(size_t) tr * K * N];
                            for (int n = 0; n < N; ++n)
                                y[k * N + n] = tf32_trunc(y[(k - 4) * N + n] * (1.f + ldexpf(u(rng), -8)));
                        }
            for (auto & v : C) v = cls == 3 ? ldexpf(u(rng), 12) : (cls == 4 || cls == 6 ? 0.f : u(rng));
            for (int tr = 0; tr < trials; ++tr) {
                const size_t ox = (size_t) tr * M * K, oc = (size_t) tr * M * N;
                for (int k = 0; k < K; ++k)
                    for (int n = 0; n < N; ++n) Yt[ox + (size_t) n * K + k] = Y[ox + (size_t) k * N + n];
                for (int r = 0; r < M; ++r)
                    for (int n = 0; n < N; ++n) Ct[oc + n * M + r] = C[oc + r * N + n];
            }
            CHECK(cudaMemcpy(dX, X.data(), nx * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dY, Y.data(), ny * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dYt, Yt.data(), ny * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dC, C.data(), nc * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dCt, Ct.data(), nc * 4, cudaMemcpyHostToDevice));
            for (int v = 0; v < VARIANTS; ++v) {
                CHECK(cudaMemset(dD, 0xff, nc * 4));
                // B = Y: (k, n) at Y[k N + n]; B = X^T: (k, n) at X[n K + k].
                switch (v) {
                case 0: by_mma_sync<<<trials, 128>>>(dX, dY, N, 1, dC, dD, K, false); break;
                case 1: by_mma_sync<<<trials, 128>>>(dYt, dX, 1, K, dCt, dD, K, false); break;
                case 2: by_wgmma<<<trials, 128, K * N * 4>>>(dYt, dX, 1, K, dCt, dD, K, 1); break;
                case 3: by_wgmma<<<trials, 128, K * N * 4>>>(dX, dY, N, 1, dC, dD, K, 1); break;
                case 4: by_mma_sync<<<trials, 128>>>(dX, dY, N, 1, dC, dD, K, true); break;
                case 5: by_wgmma<<<trials, 128, K * N * 4>>>(dX, dY, N, 1, dC, dD, K, 0); break;
                case 6:
                    if (K / 8 % (2 * CHAIN) == 0) by_wgmma_chained<<<trials, 128, K * N * 4>>>(dYt, dX, 1, K, dCt, dD, K);
                    else by_wgmma<<<trials, 128, K * N * 4>>>(dYt, dX, 1, K, dCt, dD, K, 1);
                    break;
                }
                CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
                D[v].resize(nc);
                CHECK(cudaMemcpy(D[v].data(), dD, nc * 4, cudaMemcpyDeviceToHost));
            }
            std::vector<double> ref(nc), mag(nc);   // f64 D and the sum of its terms' magnitudes
            for (int tr = 0; tr < trials; ++tr)
                for (int r = 0; r < M; ++r)
                    for (int n = 0; n < N; ++n) {
                        const size_t o = ((size_t) tr * M + r) * N + n;
                        double sum = C[o], m = fabs(C[o]);
                        for (int k = 0; k < K; ++k) {
                            const double p = (double) tf32_trunc(X[((size_t) tr * M + r) * K + k]) *
                                             tf32_trunc(Y[(size_t) tr * K * N + k * N + n]);
                            sum += p; m += fabs(p);
                        }
                        ref[o] = sum; mag[o] = m;
                    }
            const bool c_zero = cls == 4 || cls == 6;
            printf("K %3d  %-26s outputs %7zu\n", K, classes[cls], nc);
            for (int v = 0; v < VARIANTS; ++v) {
                if (v == 5 && !c_zero) continue;   // V5 has no C to add: only comparable where C is +0
                const bool swapped = v == 1 || v == 2 || v == 6;
                long diff = 0;
                double err = 0;
                for (int tr = 0; tr < trials; ++tr)
                    for (int r = 0; r < M; ++r)
                        for (int n = 0; n < N; ++n) {
                            const size_t o = ((size_t) tr * M + r) * N + n;
                            const float got = D[v][swapped ? (size_t) tr * M * N + n * M + r : o];
                            if (memcmp(&got, &D[0][o], 4)) ++diff;
                            // NaN (an output left at the poison) counts as infinitely far: fmax
                            // would drop it.
                            const double rel = mag[o] > 0 ? fabs(got - ref[o]) / mag[o] : (got != 0 ? INFINITY : 0);
                            err = std::isnan(rel) ? INFINITY : fmax(err, rel);
                        }
                if (err > 1e-3) layout_ok = false;
                if (v > 0) differ[v] += diff;
                printf("    %-24s bits differ from V0 %7ld   max |d - f64| / sum|terms| %.3g\n", names[v], diff, err);
            }
        }
        cudaFree(dX); cudaFree(dY); cudaFree(dYt); cudaFree(dC); cudaFree(dCt); cudaFree(dD);
    }
    printf("\n%s\n", layout_ok ? "every variant within 1e-3 of f64 on every output (the layouts are right)"
                               : "SOME VARIANT IS FAR FROM f64: a layout mistake, the differences below mean nothing");
    for (int v = 1; v < VARIANTS; ++v)
        printf("%-24s %s\n", names[v], differ[v] ? "DIFFERS from V0 on some output" : "== V0, bit for bit, on every output");
    return 0;
}
