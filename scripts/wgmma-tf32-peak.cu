// Hopper's warpgroup tensor-core rate for tf32 (`wgmma.mma_async` m64nNk8, f32 accumulation),
// beside `mma.sync` m16n8k8 (scripts/mma-tf32-peak.cu): the ceiling a 3xTF32 attention on sm_90a
// would have. Both operands from shared memory (SS) at N = 64, 128 and 256, and A from registers
// (RS) at N = 128.
//
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a scripts/wgmma-tf32-peak.cu -o wgmma-tf32-peak
//   ./wgmma-tf32-peak
//
// Every warpgroup of a full grid issues chains of wgmma into its accumulators (no memory traffic
// but the operands' shared memory reads); the rate is FLOPs (2 x 64 x N x 8 a wgmma) over the
// kernel's time, best of five launches.
#include <cstdint>

#include "peak-timing.cuh"
#include "wgmma-desc.cuh"

constexpr int ITERS = 1024;
constexpr int KSTEPS = 8;

template <int N> struct acc { float d[N/2]; };

template <int N> __device__ void wgmma_ss(acc<N> & c, uint64_t da, uint64_t db);

#define D8(i) "+f"(c.d[i]), "+f"(c.d[i+1]), "+f"(c.d[i+2]), "+f"(c.d[i+3]), "+f"(c.d[i+4]), "+f"(c.d[i+5]), "+f"(c.d[i+6]), "+f"(c.d[i+7])

template <> __device__ void wgmma_ss<64>(acc<64> & c, uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1;"
        : D8(0), D8(8), D8(16), D8(24) : "l"(da), "l"(db));
}

template <> __device__ void wgmma_ss<128>(acc<128> & c, uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1;"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56) : "l"(da), "l"(db));
}

__device__ void wgmma_rs128(acc<128> & c, const uint32_t (&a)[4], uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
        "{%64,%65,%66,%67}, %68, 1, 1, 1;"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <> __device__ void wgmma_ss<256>(acc<256> & c, uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
        "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
        "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
        "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
        "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, "
        "%128, %129, 1, 1, 1;"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56),
          D8(64), D8(72), D8(80), D8(88), D8(96), D8(104), D8(112), D8(120)
        : "l"(da), "l"(db));
}

__device__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ void wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// Shared memory per warpgroup: A 64 x (8 KSTEPS) tf32, B 256 x (8 KSTEPS) tf32.
constexpr int A_FLOATS = 64*8*KSTEPS, B_FLOATS = 256*8*KSTEPS;

// Two accumulators a warpgroup, one at N = 256 (two would not fit the register file).
constexpr int accumulators(int n) { return n == 256 ? 1 : 2; }

template <int N, bool RS, int ACCS = accumulators(N)>
__global__ void __launch_bounds__(256, 1) wgmma_chain(float * out) {
    extern __shared__ float smem[];
    const int wg = threadIdx.x/128;
    float * a = smem + wg*(A_FLOATS + B_FLOATS);
    float * b = a + A_FLOATS;
    for (int i = threadIdx.x % 128; i < A_FLOATS + B_FLOATS; i += 128) {
        a[i] = 1.0f + (i % 7)*0.125f;
    }
    __syncthreads();
    acc<N> c0 = {}, c1 = {};
    uint32_t ar[4];
    for (int i = 0; i < 4; ++i) ar[i] = __float_as_uint(1.0f + threadIdx.x*1e-3f + i);
    for (int it = 0; it < ITERS; ++it) {
        fence();
#pragma unroll
        for (int k = 0; k < KSTEPS; ++k) {
            // A K-step is two core matrices along K (8 tf32 = 32 bytes): the next K-step starts
            // 256 bytes on (two 128-byte core matrices).
            const uint64_t da = desc(a + k*64*8, 128, 256);
            const uint64_t db = desc(b + k*256*8, 128, 256);
            if constexpr (RS) {
                wgmma_rs128(c0, ar, db);
                wgmma_rs128(c1, ar, db);
            } else {
                wgmma_ss<N>(c0, da, db);
                if constexpr (ACCS == 2) wgmma_ss<N>(c1, da, db);
            }
        }
        commit();
        wait0();
    }
    float s = 0.0f;
    for (int j = 0; j < N/2; ++j) s += c0.d[j] + c1.d[j];
    out[blockIdx.x*blockDim.x + threadIdx.x] = s;
}

template <int N, bool RS>
static float launch_ms(int blocks, float * out) {
    auto kernel = wgmma_chain<N, RS>;
    const int shared = 2*(A_FLOATS + B_FLOATS)*4;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    return best_ms([&] { kernel<<<blocks, 256, shared>>>(out); });
}

template <int N, bool RS>
static int report(const cudaDeviceProp & p, float * out) {
    const int blocks = p.multiProcessorCount;
    const float ms = launch_ms<N, RS>(blocks, out);
    CHECK(cudaGetLastError());
    const double flop = blocks*2.0*ITERS*KSTEPS*accumulators(N)*(2.0*64*N*8);
    printf("wgmma m64n%dk8 tf32 %s: %.1f TFLOP/s (%.3f ms)\n", N, RS ? "RS" : "SS",
           flop/ms/1e9, ms);
    return 0;
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    float * out;
    CHECK(cudaMalloc(&out, sizeof(float)*p.multiProcessorCount*256));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    if (report<64, false>(p, out) || report<128, false>(p, out) || report<256, false>(p, out) ||
        report<128, true>(p, out)) {
        return 1;
    }
    return 0;
}
