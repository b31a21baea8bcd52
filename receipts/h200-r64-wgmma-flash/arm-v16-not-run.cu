// The whole attention arm, timed the same way for two main kernels: the committed
// mla_attn_gathered_flash entries (reference/mla_flash.cu, 16, 32 and 64 heads a block) and the
// v16 prototype (its partials per pair of chunks, so the combine is told n_slots / 2), each followed by the committed mla_attn_flash_combine launched as a programmatic
// dependent (as the project chains them). Seed geometry, kv 2048, uniform data, L2 scrubbed
// before each launch pair; events around the pair, median of 21.
#define V11_NO_MAIN
#include "v16.cu"    // v16-not-run.cu in the receipt
#include "mla_flash.cu"

static void combine(const float * o_part, const float * ml, float * out, int t, int n_slots) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(t*NH*((D/4 + 63)/64));
    cfg.blockDim = dim3(256);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, mla_attn_flash_combine, (const float4 *) o_part, ml, (float4 *) out, NH, D, t, n_slots));
}

static int committed_smem(int pass_heads) {
    const int s = 512 + 4, work = 64*s, queries = pass_heads*s, partials = 8*pass_heads*72;
    return 4*(work + std::max(queries, partials) + pass_heads*68);
}

int main() {
    const int n_slots = 2048, pool_rows = 65536, chunks = n_slots/CHUNK, tmax = 8;
    const float scale = 1.0f/sqrtf(192.0f);
    std::vector<float> hq((size_t) tmax*NH*D), hpool((size_t) pool_rows*D);
    std::vector<int> hidx((size_t) tmax*n_slots);
    srand(1);
    for (auto & x : hq) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hpool) x = (rand()/(float) RAND_MAX*2 - 1);
    for (auto & x : hidx) x = rand() % pool_rows;
    Bufs b;
    float * scrub, * out_a, * out_b;
    CHECK(cudaMalloc(&b.q, hq.size()*4));
    CHECK(cudaMalloc(&b.qs, hq.size()*8));
    CHECK(cudaMalloc(&b.pool, hpool.size()*4));
    CHECK(cudaMalloc(&b.idx, hidx.size()*4));
    CHECK(cudaMalloc(&b.o, (size_t) tmax*chunks*NH*D*4));
    CHECK(cudaMalloc(&b.ml, (size_t) tmax*chunks*NH*2*4));
    CHECK(cudaMalloc(&out_a, (size_t) tmax*NH*D*4));
    CHECK(cudaMalloc(&out_b, (size_t) tmax*NH*D*4));
    const size_t scrub_bytes = 256u << 20;
    CHECK(cudaMalloc(&scrub, scrub_bytes));
    CHECK(cudaMemcpy(b.q, hq.data(), hq.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.pool, hpool.data(), hpool.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.idx, hidx.data(), hidx.size()*4, cudaMemcpyHostToDevice));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(16)));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash_h32, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(32)));
    CHECK(cudaFuncSetAttribute(mla_attn_gathered_flash_h64, cudaFuncAttributeMaxDynamicSharedMemorySize, committed_smem(32)));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const auto time = [&](auto body) {
        std::vector<float> ms;
        for (int r = 0; r < 21; ++r) {
            CHECK(cudaMemsetAsync(scrub, r, scrub_bytes));
            cudaEventRecord(e0);
            body();
            cudaEventRecord(e1);
            CHECK(cudaEventSynchronize(e1));
            float x;
            cudaEventElapsedTime(&x, e0, e1);
            ms.push_back(x);
        }
        CHECK(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        return ms[10]*1e3;
    };
    const auto committed = [&](int heads, int t) {
        const int tiles = heads/16;
        const dim3 grid(t*chunks*(NH/heads));
        const float4 * ql = (const float4 *) b.q, * cache = (const float4 *) b.pool;
        if (tiles == 1) mla_attn_gathered_flash<<<grid, 512, committed_smem(16)>>>(ql, ql, cache, b.idx, b.o, b.ml, NH, D, 0, t, n_slots, scale, pool_rows);
        if (tiles == 2) mla_attn_gathered_flash_h32<<<grid, 512, committed_smem(32)>>>(ql, ql, cache, b.idx, b.o, b.ml, NH, D, 0, t, n_slots, scale, pool_rows);
        if (tiles == 4) mla_attn_gathered_flash_h64<<<grid, 512, committed_smem(32)>>>(ql, ql, cache, b.idx, b.o, b.ml, NH, D, 0, t, n_slots, scale, pool_rows);
    };
    // The outputs of both arms at t_q 8 (each arm's own partials, the same combine).
    committed(64, tmax);
    combine(b.o, b.ml, out_a, tmax, n_slots);
    launch<64, 4, 0, 2, 2, 4, 4>(b, tmax, n_slots, pool_rows, scale, true);
    combine(b.o, b.ml, out_b, tmax, n_slots/2);
    CHECK(cudaDeviceSynchronize());
    {
        std::vector<float> a((size_t) tmax*NH*D), c((size_t) tmax*NH*D);
        CHECK(cudaMemcpy(a.data(), out_a, a.size()*4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(c.data(), out_b, c.size()*4, cudaMemcpyDeviceToHost));
        double worst = 0, big = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            const double dd = fabs((double) a[i] - c[i]);
            worst = std::isnan(dd) ? INFINITY : std::max(worst, dd);
            big = std::max(big, fabs((double) a[i]));
        }
        printf("t_q 8 outputs, v16 (64 heads) against the committed arm: max |diff| %.3e (max |out| %.3e)\n", worst, big);
    }
    for (int t : {1, 2, 4, 8}) {
        printf("t_q %d:", t);
        for (int heads : {16, 32, 64}) {
            const double us = time([&] { committed(heads, t); combine(b.o, b.ml, out_a, t, n_slots); });
            printf(" committed h%d %.2f us;", heads, us);
        }
        const auto proto = [&](auto launcher, const char * name) {
            launcher(true);    // the queries' split, before the scrub
            printf(" %s %.2f us;", name, time([&] { launcher(false); combine(b.o, b.ml, out_b, t, n_slots/2); }));
        };
        proto([&](bool split) { launch<16, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, split); }, "v16 h16");
        proto([&](bool split) { launch<32, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, split); }, "v16 h32");
        proto([&](bool split) { launch<64, 4, 0, 2, 2, 4, 4>(b, t, n_slots, pool_rows, scale, split); }, "v16 h64");
        printf(" combine alone %.2f us, of pairs %.2f us\n", time([&] { combine(b.o, b.ml, out_b, t, n_slots); }), time([&] { combine(b.o, b.ml, out_b, t, n_slots/2); }));
    }
    return 0;
}
