// Included by mla_flash.cu: attn_flash on Hopper's warpgroup tensor cores.

// ---------------------------------------------------------------------------------------------
// mla_attn_flash_wgmma: mla_attn_gathered_flash's chunk sums, bit for bit, from wgmma (sm_90a),
// stored as the combine folds them in pairs. A block takes a pair of chunks of one token for NHB
// heads: a producer warpgroup fills a ring of WGMMA_STAGES stages (the split queries' 32-column
// slabs by bulk copy, the chunks' rows by cp.async), and consumer warpgroup w computes chunk
// 2 pair + w from it, with the products' roles swapped (S^T = K Q^T, O^T = V^T E^T: the rows as
// wgmma's register operand) and every operation of attn_flash in attn_flash's order; then
// warpgroup 0 hands each output tile times its chunk's weight to warpgroup 1, which adds its own
// and stores the pair (flash_pair_weights, as mla_attn_flash_combine folds attn_flash's chunks);
// kernels-gpu/src/mla/flash/wgmma.rs states that order. mla_attn_flash_wgmma_queries splits the
// queries first (any arch).

#define WGMMA_KV_RANK 512                        // the latent rank the entries are built for
#define WGMMA_SLAB 32                            // columns of a query slab: one stage's k-extent
#define WGMMA_STAGES 4                           // stages of the ring
#define WGMMA_CONSUMERS 256                      // the consumer warpgroups, a chunk each
#define WGMMA_BLOCK (WGMMA_CONSUMERS + 128)      // and one producer warpgroup
#define WGMMA_QUERIES_BLOCK 256                  // the query split's block, four columns of a head a thread
#define WGMMA_PRODUCER_WARPS 4
#define WGMMA_RS_STRIDE (WGMMA_SLAB + 4)         // floats of a staged row slab (4 banks apart a row)
#define WGMMA_RO_STRIDE (64 + 4)                 // floats of a staged 64-column row tile (4 banks apart a row)
#define WGMMA_SC_STRIDE (FLASH_CHUNK + 4)        // floats of a head's scores
#define WGMMA_NUM_STEP (256 + 16)                // bytes of a numerator k-step, 4 banks apart a step
#define WGMMA_NUM_GROUP (FLASH_CHUNK/8*WGMMA_NUM_STEP)  // bytes of 8 heads' numerators
#define WGMMA_OUT_TILES (WGMMA_KV_RANK/64)       // 64-column tiles of the weighted sum
#define WGMMA_OUT_STEPS 4                        // k-steps of an output item: two items a tile

// Where element (n, k) of an n-row block of k_cols columns sits in wgmma's K-major core matrices
// without swizzle (8 x 4 elements each, K-adjacent ones contiguous).
static __device__ __forceinline__ unsigned int core_offset(const unsigned int n, const unsigned int k, const unsigned int k_cols) {
    return n/8*(k_cols/4*32) + k/4*32 + n%8*4 + k%4;
}

// Where numerator (head n, slot k) sits, in floats: core matrices as core_offset's, the k-steps
// WGMMA_NUM_STEP bytes apart (so that a warp's 8-byte numerator stores fill each bank twice) and
// 8-head groups WGMMA_NUM_GROUP.
static __device__ __forceinline__ unsigned int num_offset(const unsigned int n, const unsigned int k) {
    return n/8*(WGMMA_NUM_GROUP/4) + k/8*(WGMMA_NUM_STEP/4) + core_offset(n % 8, k % 8, 8);
}

// grid: ceil(t*nh*row/4/WGMMA_QUERIES_BLOCK) blocks, block: WGMMA_QUERIES_BLOCK, row = kv_rank +
// d_rope (a multiple of WGMMA_SLAB), heads (16, 32 or 64) dividing nh. The threads follow qs's
// float4s: i = ((token*groups + group)*slabs + slab)*8*heads + core_offset(head, col, WGMMA_SLAB)/4.
// Thread i loads its head's four columns (q_lat, then q_pe; 4-byte aligned) and stores their tf32
// heads and tails (attn_flash's split) as a float4 each in qs[token][group][slab], the slab's heads
// then its tails: one bulk copy a stage.
extern "C" __global__ void mla_attn_flash_wgmma_queries(const float * __restrict__ q_lat, const float * __restrict__ q_pe,
                                                        float * __restrict__ qs, const int nh, const int kv_rank,
                                                        const int d_rope, const int t, const int heads) {
    chain_entry();
    const unsigned int row = kv_rank + d_rope, half = 8*heads;    // float4s of a slab's heads
    const unsigned long long i = (unsigned long long) blockIdx.x*WGMMA_QUERIES_BLOCK + threadIdx.x;
    if (i >= (unsigned long long) t*(unsigned int) nh*(row/4)) {
        return;
    }
    const unsigned long long s = i/half;                          // (token, group, slab)
    const unsigned int in_slab = i % half, slab = s % (row/WGMMA_SLAB);
    const size_t th = (size_t) (s/(row/WGMMA_SLAB))*heads + in_slab/64*8 + in_slab % 8;
    const unsigned int col = slab*WGMMA_SLAB + in_slab/8 % 8*4;
    uint4 head, tail;
    unsigned int * hp = &head.x, * tp = &tail.x;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const unsigned int c = col + e;
        const float x = c < (unsigned int) kv_rank ? q_lat[th*kv_rank + c] : q_pe[th*d_rope + (c - kv_rank)];
        tf32_split(x, hp[e], tp[e]);
    }
    uint4 * block = (uint4 *) qs + s*2*half;
    block[in_slab] = head;
    block[in_slab + half] = tail;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

static __device__ __forceinline__ unsigned int shared_addr(const void * p) {
    return (unsigned int) __cvta_generic_to_shared(p);
}

// ---- mbarriers and the copies that complete on them ----

static __device__ __forceinline__ void mbarrier_init(const unsigned int bar, const unsigned int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

// The initialisations are visible to the asynchronous copies that complete on the barriers.
static __device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

static __device__ __forceinline__ void mbarrier_arrive(const unsigned int bar) {
    asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" :: "r"(bar) : "memory");
}

// One arrival, and `bytes` more that the phase waits for from bulk copies.
static __device__ __forceinline__ void mbarrier_arrive_expect_tx(const unsigned int bar, const unsigned int bytes) {
    asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}"
                 :: "r"(bar), "r"(bytes) : "memory");
}

// Until the phase of parity `parity` has completed (the labels are local to the braces).
static __device__ __forceinline__ void mbarrier_wait_parity(const unsigned int bar, const unsigned int parity) {
    asm volatile("{\n\t.reg .pred p;\n\tWAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

// An arrival once this thread's cp.async copies so far have landed (counted in the barrier's count).
static __device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(const unsigned int bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
}

// `bytes` contiguous bytes by the copy engine, counted on `bar`.
static __device__ __forceinline__ void bulk_copy_to_shared(const unsigned int dst, const void * src, const unsigned int bytes,
                                                           const unsigned int bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar) : "memory");
}

// This thread's shared-memory writes are visible to the asynchronous proxy (wgmma's descriptors).
static __device__ __forceinline__ void fence_proxy_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// A barrier of `threads` threads (a warpgroup's or the producer's), not the block's.
static __device__ __forceinline__ void named_barrier_sync(const unsigned int id, const unsigned int threads) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// The producer gives back its registers; the consumers take them.
template <int N>
static __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
}

template <int N>
static __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
}

// ---- wgmma ----

// K-major tf32 data without swizzle at shared address `start`: K-adjacent core matrices 128 bytes
// apart, the next 8 rows `stride` bytes on.
static __device__ __forceinline__ unsigned long long wgmma_desc_k_major(const unsigned int start, const unsigned int stride) {
    return (unsigned long long) ((start >> 4) & 0x3fff) | (unsigned long long) ((128 >> 4) & 0x3fff) << 16
           | (unsigned long long) ((stride >> 4) & 0x3fff) << 32;
}

static __device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

static __device__ __forceinline__ void wgmma_commit_group() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int PENDING>
static __device__ __forceinline__ void wgmma_wait_group() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(PENDING) : "memory");
}

// d += a b on the warpgroup's 64 x N accumulator (N/2 floats a thread), a the 64 x 8 tf32 fragment
// in registers (warp w rows 16w.., as mma.sync's A), b 8 x N by descriptor; one overload an N.
#define WGMMA_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                    "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

static __device__ __forceinline__ void wgmma_tf32(float (&d)[8], const unsigned int (&a)[4], const unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, 1, 1;"
                 : WGMMA_D8(0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

static __device__ __forceinline__ void wgmma_tf32(float (&d)[16], const unsigned int (&a)[4], const unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "{%16, %17, %18, %19}, %20, 1, 1, 1;"
                 : WGMMA_D8(0), WGMMA_D8(8) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

static __device__ __forceinline__ void wgmma_tf32(float (&d)[32], const unsigned int (&a)[4], const unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, 1, 1, 1;"
                 : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

#undef WGMMA_D8

// One 3xTF32 k-step of d += a b, b's head and tail by descriptors bh and bt: tail(a) x head(b),
// head(a) x tail(b), then head x head, attn_flash's order (mma_3xtf32 with the roles swapped).
template <int N>
static __device__ __forceinline__ void wgmma_3xtf32(float (&d)[N], const unsigned int (&hi)[4], const unsigned int (&lo)[4],
                                                    const unsigned long long bh, const unsigned long long bt) {
    wgmma_tf32(d, lo, bh);
    wgmma_tf32(d, hi, bt);
    wgmma_tf32(d, hi, bh);
}

// Zeros the compiler cannot fold into the wgmma that reads them (folded, ptxas serialises wgmma).
template <int NF>
static __device__ __forceinline__ void opaque_zero(float (&a)[NF]) {
#pragma unroll
    for (int i = 0; i < NF; ++i) {
        a[i] = 0.0f;
        asm volatile("" : "+f"(a[i]));
    }
}

// Holds the sums where they are, so that a part's additions are done before the next wgmma is
// issued (moved past it, they make ptxas serialise every wgmma).
template <int NF>
static __device__ __forceinline__ void pin(float (&a)[NF]) {
#pragma unroll
    for (int i = 0; i < NF; ++i) {
        asm volatile("" : "+f"(a[i]));
    }
}

// tf32_split with the tail's subtraction rounded on its own: x is expf's result still in
// registers, whose last multiply ptxas could otherwise fuse into the subtraction.
static __device__ __forceinline__ void tf32_split_unfused(const float x, unsigned int & head, unsigned int & tail) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    tail = __float_as_uint(__fsub_rn(x, __uint_as_float(head)));
}

// ---- the block ----

// Shared memory of a block of NHB heads, in bytes: the ring's stages (a query slab's heads and
// tails and both chunks' row slabs, or both chunks' row tiles), each warpgroup's numerators (heads,
// then tails; first its scores), the row table, each warpgroup's statistics (m, l a head) and
// weights, the pair's exchange (a 64-column tile of sums), the stages' full and empty barriers and
// the exchange's two. The launcher's shared_bytes(NHB) is BYTES.
template <int NHB>
struct flash_wgmma_layout {
    enum : int {
        QUERIES = 2*NHB*WGMMA_SLAB*4,
        ROW_SLABS = FLASH_CHUNK*WGMMA_RS_STRIDE*4,
        ROW_TILES = FLASH_CHUNK*WGMMA_RO_STRIDE*4,
        STAGE = QUERIES + 2*ROW_SLABS > 2*ROW_TILES ? QUERIES + 2*ROW_SLABS : 2*ROW_TILES,
        NUMERATORS = WGMMA_STAGES*STAGE,
        NUMERATOR_BYTES = 2*NHB/8*WGMMA_NUM_GROUP,
        ROWS = NUMERATORS + 2*NUMERATOR_BYTES,
        STATS = ROWS + 2*FLASH_CHUNK*4,
        WEIGHTS = STATS + 2*NHB*2*4,
        EXCHANGE = WEIGHTS + 2*NHB*4,
        BARRIERS = EXCHANGE + 64*NHB*4,
        BYTES = BARRIERS + 8*(2*WGMMA_STAGES + 2),
    };
    static_assert(NHB*WGMMA_SC_STRIDE*4 <= NUMERATOR_BYTES, "the scores fit the numerators' place");
};

// Rows of ROW floats: 32-column slabs; the k-steps in FLASH_K_PARTS parts of PER; score items of
// KS k-steps (a part a whole number of items, an item within a slab), SPI a slab, IPP a part.
template <int ROW>
struct flash_wgmma_geometry {
    enum : int {
        SLABS = ROW/WGMMA_SLAB,
        PER = (ROW/8 + FLASH_K_PARTS - 1)/FLASH_K_PARTS,
        KS = PER % 2 == 1 ? 1 : 2,
        SPI = WGMMA_SLAB/8/KS,
        ITEMS = SLABS*SPI,
        IPP = PER/KS,
    };
    static_assert(ROW % WGMMA_SLAB == 0 && PER*FLASH_K_PARTS == ROW/8, "rows of whole slabs and parts");
};

// A consumer thread's place: the stages' barriers, its fragment coordinates, its warpgroup's
// numerators (heads, then tails; first its scores).
template <int NHB>
struct flash_wgmma_consumer {
    unsigned char * smem;
    unsigned int full, empty;        // shared addresses of the stages' barriers
    int wg, w, g, c;                 // warpgroup, warp in it, lane / 4, lane % 4

    __device__ __forceinline__ float * num() const {
        return (float *) (smem + flash_wgmma_layout<NHB>::NUMERATORS + wg*flash_wgmma_layout<NHB>::NUMERATOR_BYTES);
    }

    __device__ __forceinline__ float * num_tail() const {
        return num() + NHB/8*WGMMA_NUM_GROUP/4;
    }
};

// Score item n's row fragments (rows 16w + g and + 8, columns c and c + 4 of each k-step), split;
// the item's slab waited for at its first item.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_score_load(const flash_wgmma_consumer<NHB> & cx, const int n,
                                                        unsigned int (&hi)[flash_wgmma_geometry<ROW>::KS][4],
                                                        unsigned int (&lo)[flash_wgmma_geometry<ROW>::KS][4]) {
    using G = flash_wgmma_geometry<ROW>;
    using L = flash_wgmma_layout<NHB>;
    const int j = n/G::SPI, half = n % G::SPI, s = j % WGMMA_STAGES;
    if (half == 0) {
        mbarrier_wait_parity(cx.full + 8*s, (j/WGMMA_STAGES) & 1);
    }
    const float * r0 = (const float *) (cx.smem + s*L::STAGE + L::QUERIES + cx.wg*L::ROW_SLABS)
                       + (16*cx.w + cx.g)*WGMMA_RS_STRIDE + cx.c;
#pragma unroll
    for (int i = 0; i < G::KS; ++i) {
        const int col = 8*(G::KS*half + i);
        const float x[4] = {r0[col], r0[8*WGMMA_RS_STRIDE + col], r0[col + 4], r0[8*WGMMA_RS_STRIDE + col + 4]};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            tf32_split(x[e], hi[i][e], lo[i][e]);
        }
    }
}

// Score item n into acc: per k-step head(q) x tail(row), tail(q) x head(row), head x head.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_score_issue(const flash_wgmma_consumer<NHB> & cx, const int n, float (&acc)[NHB/2],
                                                         const unsigned int (&hi)[flash_wgmma_geometry<ROW>::KS][4],
                                                         const unsigned int (&lo)[flash_wgmma_geometry<ROW>::KS][4]) {
    using G = flash_wgmma_geometry<ROW>;
    using L = flash_wgmma_layout<NHB>;
    const int j = n/G::SPI, half = n % G::SPI;
    const unsigned int head = shared_addr(cx.smem + (j % WGMMA_STAGES)*L::STAGE), tail = head + NHB*WGMMA_SLAB*4;
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < G::KS; ++i) {
        const int k = G::KS*half + i;
        const unsigned int stride = WGMMA_SLAB/4*128;
        const unsigned long long bh = wgmma_desc_k_major(head + k*256, stride);
        const unsigned long long bt = wgmma_desc_k_major(tail + k*256, stride);
        wgmma_3xtf32(acc, hi[i], lo[i], bh, bt);
    }
    wgmma_commit_group();
}

// Output item n's value fragments (columns 16w + 2g and + 1; slots 8kk + 2c and + 1), split; the
// stage released once a tile's last item is in registers.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_out_load(const flash_wgmma_consumer<NHB> & cx, const int n,
                                                      unsigned int (&hi)[WGMMA_OUT_STEPS][4],
                                                      unsigned int (&lo)[WGMMA_OUT_STEPS][4]) {
    using L = flash_wgmma_layout<NHB>;
    constexpr int PER_TILE = 8/WGMMA_OUT_STEPS;
    const int tile = n/PER_TILE, quarter = n % PER_TILE;
    const int it = flash_wgmma_geometry<ROW>::SLABS + tile, s = it % WGMMA_STAGES;
    if (quarter == 0) {
        mbarrier_wait_parity(cx.full + 8*s, (it/WGMMA_STAGES) & 1);
    }
    const float * v = (const float *) (cx.smem + s*L::STAGE + cx.wg*L::ROW_TILES)
                      + 2*cx.c*WGMMA_RO_STRIDE + 16*cx.w + 2*cx.g;
#pragma unroll
    for (int i = 0; i < WGMMA_OUT_STEPS; ++i) {
        const int kk = WGMMA_OUT_STEPS*quarter + i;
        const float2 u0 = *(const float2 *) (v + 8*kk*WGMMA_RO_STRIDE);
        const float2 u1 = *(const float2 *) (v + (8*kk + 1)*WGMMA_RO_STRIDE);
        const float x[4] = {u0.x, u0.y, u1.x, u1.y};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            tf32_split(x[e], hi[i][e], lo[i][e]);
        }
    }
    if (quarter == PER_TILE - 1) {
        mbarrier_arrive(cx.empty + 8*s);
    }
}

// Output item n into d: per k-step head(e) x tail(v), tail(e) x head(v), head x head.
template <int NHB>
static __device__ __forceinline__ void wgmma_out_issue(const flash_wgmma_consumer<NHB> & cx, float (&d)[NHB/2], const int n,
                                                       const unsigned int (&hi)[WGMMA_OUT_STEPS][4],
                                                       const unsigned int (&lo)[WGMMA_OUT_STEPS][4]) {
    const unsigned int num = shared_addr(cx.num()), num_tail = shared_addr(cx.num_tail());
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < WGMMA_OUT_STEPS; ++i) {
        const int kk = WGMMA_OUT_STEPS*(n % (8/WGMMA_OUT_STEPS)) + i;
        const unsigned long long bp = wgmma_desc_k_major(num + kk*WGMMA_NUM_STEP, WGMMA_NUM_GROUP);
        const unsigned long long bt = wgmma_desc_k_major(num_tail + kk*WGMMA_NUM_STEP, WGMMA_NUM_GROUP);
        wgmma_3xtf32(d, hi[i], lo[i], bp, bt);
    }
    wgmma_commit_group();
}

// Output tile `tile` of the pair folded (d holds heads 8jn + 2c + b at columns 16w + 2g and + 1,
// elements 4jn + b and 4jn + 2 + b): warpgroup 0 puts its sums times its weights into the
// exchange, each thread's float4s where the same thread of warpgroup 1 holds the same outputs;
// warpgroup 1 adds its own times its weights (one fma each), or takes them as they are where the
// pair has no second chunk, and stores the pair's sums to ot. The exchange's two mbarriers (after the
// stages') hand it over: one phase a tile.
template <int NHB>
static __device__ __forceinline__ void wgmma_fold_store(const flash_wgmma_consumer<NHB> & cx, float * ot, const float (&d)[NHB/2],
                                                        const int tile, const bool second) {
    using L = flash_wgmma_layout<NHB>;
    const int tw = threadIdx.x % 128;
    const unsigned int xfull = cx.full + 8*2*WGMMA_STAGES, xfree = xfull + 8;
    float4 * x = (float4 *) (cx.smem + L::EXCHANGE) + tw;
    const float * weights = (const float *) (cx.smem + L::WEIGHTS) + cx.wg*NHB + 2*cx.c;
    if (cx.wg == 0) {
        if (tile > 0) {
            mbarrier_wait_parity(xfree, (tile - 1) & 1);
        }
#pragma unroll
        for (int jn = 0; jn < NHB/8; ++jn) {
            const float wa = weights[8*jn], wb = weights[8*jn + 1];
            x[128*jn] = make_float4(__fmul_rn(d[4*jn], wa), __fmul_rn(d[4*jn + 1], wb), __fmul_rn(d[4*jn + 2], wa),
                                    __fmul_rn(d[4*jn + 3], wb));
        }
        mbarrier_arrive(xfull);
        return;
    }
    mbarrier_wait_parity(xfull, tile & 1);
    float * at = ot + 2*cx.c*WGMMA_KV_RANK + tile*64 + 16*cx.w + 2*cx.g;
#pragma unroll
    for (int jn = 0; jn < NHB/8; ++jn) {
        float4 v = x[128*jn];
        if (second) {
            const float wa = weights[8*jn], wb = weights[8*jn + 1];
            v = make_float4(__fmaf_rn(wa, d[4*jn], v.x), __fmaf_rn(wb, d[4*jn + 1], v.y), __fmaf_rn(wa, d[4*jn + 2], v.z),
                            __fmaf_rn(wb, d[4*jn + 3], v.w));
        }
        *(float2 *) (at + 8*jn*WGMMA_KV_RANK) = make_float2(v.x, v.z);
        *(float2 *) (at + (8*jn + 1)*WGMMA_KV_RANK) = make_float2(v.y, v.w);
    }
    if (tile + 1 < WGMMA_OUT_TILES) {
        mbarrier_arrive(xfree);
    }
}

// The producer warpgroup: the pair's row table (each slot's index clamped into the pool, -1 past
// n_slots: a row of zeros), then every stage of the ring in turn; lane l copies part l % 8 (and
// + 8 in the tiles) of rows l/8 + 4i of both chunks.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_produce(unsigned char * smem, const unsigned int full, const unsigned int empty,
                                                     const float * queries, const float * cache, const int * __restrict__ idx,
                                                     const int n_slots, const int pool, const int first_slot) {
    using G = flash_wgmma_geometry<ROW>;
    using L = flash_wgmma_layout<NHB>;
    setmaxnreg_dec<40>();
    const int tid = threadIdx.x - WGMMA_CONSUMERS;
    const int lane = tid % WARP_SIZE, pw = tid/WARP_SIZE;
    int * table = (int *) (smem + L::ROWS);
    // One slot a thread (the pair's 128 slots, the warpgroup's 128 threads): not unrolled.
#pragma unroll 1
    for (int i = tid; i < 2*FLASH_CHUNK; i += WARP_SIZE*WGMMA_PRODUCER_WARPS) {
        const int slot = first_slot + i;
        table[i] = slot < n_slots ? min(max(__ldg(idx + slot), 0), pool - 1) : -1;
    }
    named_barrier_sync(4, WARP_SIZE*WGMMA_PRODUCER_WARPS);
    const float * base = cache + 4*(lane % 8);
    int rows[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        rows[i] = lane/8 + 4*(4*pw + i);
    }
    for (int it = 0; it < G::SLABS + WGMMA_OUT_TILES; ++it) {
        const int s = it % WGMMA_STAGES;
        if (it >= WGMMA_STAGES) {
            mbarrier_wait_parity(empty + 8*s, (it/WGMMA_STAGES - 1) & 1);
        }
        unsigned char * stage = smem + s*L::STAGE;
        const bool slab = it < G::SLABS;
        if (lane == 0 && pw == 0) {
            if (slab) {
                mbarrier_arrive_expect_tx(full + 8*s, L::QUERIES);
                bulk_copy_to_shared(shared_addr(stage), queries + it*L::QUERIES/4, L::QUERIES, full + 8*s);
            } else {
                mbarrier_arrive(full + 8*s);
            }
        }
        // A slab: 32 columns of each row after the queries; a tile: 64 columns, two copies a lane.
        const int dst0 = slab ? L::QUERIES : 0, stride = slab ? WGMMA_RS_STRIDE : WGMMA_RO_STRIDE;
        const int col = slab ? it*WGMMA_SLAB : (it - G::SLABS)*64;
        const int chunk_bytes = slab ? L::ROW_SLABS : L::ROW_TILES;
#pragma unroll
        for (int ch = 0; ch < 2; ++ch) {
            const unsigned int dst = shared_addr(stage + dst0 + ch*chunk_bytes + 16*(lane % 8));
            int r[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                r[i] = table[ch*FLASH_CHUNK + rows[i]];
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float * src = base + (size_t) max(r[i], 0)*ROW + col;
                const unsigned int row = dst + rows[i]*stride*4;
                cp_async_ca_16_zfill(row, src, r[i] >= 0 ? 16 : 0);
                if (!slab) {
                    cp_async_ca_16_zfill(row + 128, src + 32, r[i] >= 0 ? 16 : 0);
                }
            }
        }
        cp_async_mbarrier_arrive_noinc(full + 8*s);
    }
}

// Scores S^T = K Q^T in FLASH_K_PARTS parts, each a chain from +0, added in order to a sum from -0
// (-0 + p0 is p0): two accumulators alternate by part (even parts acc_e, odd acc_o), two fragment
// sets by item, and item n + 1 is issued before item n is waited for.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_scores(const flash_wgmma_consumer<NHB> & cx, float (&sum)[NHB/2]) {
    using G = flash_wgmma_geometry<ROW>;
    constexpr int NF = NHB/2;
    float acc_e[NF], acc_o[NF];
    opaque_zero(acc_e);
    opaque_zero(acc_o);
#pragma unroll
    for (int k = 0; k < NF; ++k) {
        sum[k] = -0.0f;
    }
    unsigned int xh[G::KS][4], xl[G::KS][4], yh[G::KS][4], yl[G::KS][4];
    wgmma_score_load<ROW, NHB>(cx, 0, xh, xl);
    wgmma_score_issue<ROW, NHB>(cx, 0, acc_e, xh, xl);
#pragma unroll 1
    for (int p2 = 0; p2 < FLASH_K_PARTS/2; ++p2) {
#pragma unroll
        for (int i = 0; i < 2*G::IPP; ++i) {
            const int n = 2*G::IPP*p2 + i;
            if (n + 1 < G::ITEMS) {
                float (&next)[NF] = (i + 1)/G::IPP % 2 == 1 ? acc_o : acc_e;
                if (i % 2 == 0) {
                    wgmma_score_load<ROW, NHB>(cx, n + 1, yh, yl);
                    wgmma_score_issue<ROW, NHB>(cx, n + 1, next, yh, yl);
                } else {
                    wgmma_score_load<ROW, NHB>(cx, n + 1, xh, xl);
                    wgmma_score_issue<ROW, NHB>(cx, n + 1, next, xh, xl);
                }
                wgmma_wait_group<1>();
            } else {
                wgmma_wait_group<0>();
            }
            if (n % G::SPI == G::SPI - 1) {
                mbarrier_arrive(cx.empty + 8*(n/G::SPI % WGMMA_STAGES));    // the slab's last item is done
            }
            if (i % G::IPP == G::IPP - 1) {    // item n ends its part: added, then cleared
                float (&done)[NF] = i/G::IPP % 2 == 1 ? acc_o : acc_e;
#pragma unroll
                for (int k = 0; k < NF; ++k) {
                    sum[k] += done[k];
                }
                pin(sum);
                opaque_zero(done);
            }
        }
    }
}

// The chunk's softmax in attn_flash's mapping, through shared memory: the scores to the numerators'
// place (head-major), thread 16 hg + q over slots 4q..4q + 3 of heads hg, hg + 8, ..., then the
// numerators back, split, in attn_flash's pairs (slots 4q and 4q + 2, then 4q + 1 and 4q + 3) as the
// weighted sum's B; m and l to the warpgroup's statistics.
template <int NHB>
static __device__ __forceinline__ void wgmma_softmax(const flash_wgmma_consumer<NHB> & cx, const float (&sum)[NHB/2], const int s0,
                                                     const int n_slots, const float scale) {
    float * p = cx.num();
#pragma unroll
    for (int jn = 0; jn < NHB/8; ++jn) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            p[(8*jn + 2*cx.c + e % 2)*WGMMA_SC_STRIDE + 16*cx.w + cx.g + 8*(e/2)] = sum[4*jn + e];
        }
    }
    named_barrier_sync(2 + cx.wg, 128);
    const int tw = threadIdx.x % 128, hg = tw/16, q = tw % 16;
    float sv[NHB/8][4];
#pragma unroll
    for (int r = 0; r < NHB/8; ++r) {
        const float4 a = *(const float4 *) (p + (8*r + hg)*WGMMA_SC_STRIDE + 4*q);
        sv[r][0] = a.x; sv[r][1] = a.y; sv[r][2] = a.z; sv[r][3] = a.w;
    }
    named_barrier_sync(2 + cx.wg, 128);    // every score is read before the numerators overwrite them
#pragma unroll
    for (int r = 0; r < NHB/8; ++r) {
        const int h = 8*r + hg;
        float m, e[4], l;
        flash_chunk_softmax(sv[r], scale, s0 + 4*q, n_slots, m, e, l);
        unsigned int hi[4], lo[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            tf32_split_unfused(e[i], hi[i], lo[i]);
        }
        // Slot 4q at k-position 8(q/2) + 2(q%2), 4q + 2 beside it, 4q + 1 and 4q + 3 four on; indexed
        // as pairs, so that each pair is one 8-byte store.
        const int pos = 8*(q/2) + 2*(q % 2);
        uint2 * head = (uint2 *) cx.num(), * tail = (uint2 *) cx.num_tail();
        head[num_offset(h, pos)/2] = make_uint2(hi[0], hi[2]);
        head[num_offset(h, pos + 4)/2] = make_uint2(hi[1], hi[3]);
        tail[num_offset(h, pos)/2] = make_uint2(lo[0], lo[2]);
        tail[num_offset(h, pos + 4)/2] = make_uint2(lo[1], lo[3]);
        if (q == 0) {
            float * stats = (float *) (cx.smem + flash_wgmma_layout<NHB>::STATS) + cx.wg*NHB*2;
            stats[2*h] = m;
            stats[2*h + 1] = l;
        }
    }
    fence_proxy_async_shared();
    named_barrier_sync(2 + cx.wg, 128);
}

// O^T = V^T E^T, a 64-column tile a pair of items, each tile a chain from +0 (two accumulators
// alternate by tile, two fragment sets by item), each tile folded with the other warpgroup's into
// the pair's sums ot.
template <int ROW, int NHB>
static __device__ __forceinline__ void wgmma_weighted_sum(const flash_wgmma_consumer<NHB> & cx, float * ot, const bool second) {
    constexpr int NF = NHB/2, PER_TILE = 8/WGMMA_OUT_STEPS, ITEMS = WGMMA_OUT_TILES*PER_TILE;
    float d0[NF], d1[NF];
    unsigned int ah[WGMMA_OUT_STEPS][4], al[WGMMA_OUT_STEPS][4], bh[WGMMA_OUT_STEPS][4], bl[WGMMA_OUT_STEPS][4];
#pragma unroll
    for (int n = 0; n < ITEMS; ++n) {
        if (n >= 2) {
            wgmma_wait_group<1>();    // item n - 2 is done: its fragment set is free
            if ((n - 2) % PER_TILE == PER_TILE - 1) {
                wgmma_fold_store<NHB>(cx, ot, (n - 2)/PER_TILE % 2 == 1 ? d1 : d0, (n - 2)/PER_TILE, second);
            }
        }
        float (&d)[NF] = n/PER_TILE % 2 == 1 ? d1 : d0;
        if (n % PER_TILE == 0) {
            opaque_zero(d);
        }
        if (n % 2 == 0) {
            wgmma_out_load<ROW, NHB>(cx, n, ah, al);
            wgmma_out_issue<NHB>(cx, d, n, ah, al);
        } else {
            wgmma_out_load<ROW, NHB>(cx, n, bh, bl);
            wgmma_out_issue<NHB>(cx, d, n, bh, bl);
        }
    }
    wgmma_wait_group<0>();
    wgmma_fold_store<NHB>(cx, ot, d1, WGMMA_OUT_TILES - 1, second);
}

// grid: t * ceil(chunks/2) * (nh/NHB) blocks (head group fastest, then the pair of chunks), block:
// WGMMA_BLOCK, dynamic shared memory: flash_wgmma_layout<NHB>::BYTES. qs holds the queries as
// mla_attn_flash_wgmma_queries splits them for NHB heads a block, cache [pool, ROW], idx [t,
// n_slots]; nh a multiple of NHB, n_slots >= 1, pool >= 1. o_part and ml: the sums and statistics of
// each pair of chunks, folded (mla_attn_flash_combine_pairs reads them).
template <int ROW, int NHB>
static __device__ __forceinline__ void attn_flash_wgmma(const float4 * __restrict__ qs, const float4 * __restrict__ cache,
                                                        const int * __restrict__ idx, float * __restrict__ o_part,
                                                        float * __restrict__ ml, const int nh, const int n_slots,
                                                        const float scale, const int pool) {
    using L = flash_wgmma_layout<NHB>;
    extern __shared__ __align__(16) unsigned char wgmma_shared[];
    // The combine launches as this grid's blocks exit, as attn_flash's.
    chain_wait();
    const int groups = nh/NHB;
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK, pairs = (chunks + 1)/2;
    const int group = blockIdx.x % groups, pair = blockIdx.x/groups % pairs, token = blockIdx.x/groups/pairs;
    const int tid = threadIdx.x;
    const unsigned int full = shared_addr(wgmma_shared + L::BARRIERS), empty = full + 8*WGMMA_STAGES;
    if (tid == 0) {
        for (int s = 0; s < WGMMA_STAGES; ++s) {
            mbarrier_init(full + 8*s, WARP_SIZE*WGMMA_PRODUCER_WARPS + 1);
            mbarrier_init(empty + 8*s, WGMMA_CONSUMERS);
        }
        mbarrier_init(empty + 8*WGMMA_STAGES, 128);        // the exchange's: warpgroup 0's tile is in it,
        mbarrier_init(empty + 8*WGMMA_STAGES + 8, 128);    // warpgroup 1 has read it
        fence_mbarrier_init();
    }
    __syncthreads();
    if (tid >= WGMMA_CONSUMERS) {
        const float * queries = (const float *) qs + ((size_t) token*groups + group)*(ROW/WGMMA_SLAB)*(L::QUERIES/4);
        wgmma_produce<ROW, NHB>(wgmma_shared, full, empty, queries, (const float *) cache, idx + (size_t) token*n_slots,
                                n_slots, pool, 2*pair*FLASH_CHUNK);
        return;
    }
    setmaxnreg_inc<232>();
    const int wg = tid/128, lane = tid % WARP_SIZE;
    const int chunk = 2*pair + wg;
    const bool second = 2*pair + 1 < chunks;    // the last pair of an odd count has one chunk
    const flash_wgmma_consumer<NHB> cx = {wgmma_shared, full, empty, wg, tid/32 % 4, lane/4, lane % 4};
    // The workspace's place, before the scores: one value live across them, not four.
    const size_t first = ((size_t) token*pairs + pair)*nh + group*NHB;
    float sum[NHB/2];
    wgmma_scores<ROW, NHB>(cx, sum);
    // A chunk past the last (the odd pair's second) is computed on rows of zeros and left out.
    wgmma_softmax<NHB>(cx, sum, chunk*FLASH_CHUNK, n_slots, scale);
    named_barrier_sync(5, WGMMA_CONSUMERS);    // both chunks' statistics are in
    const int tw = tid % 128;
    if (tw < NHB) {
        const float * stats = (const float *) (wgmma_shared + L::STATS);
        float mp, w0, w1;
        flash_pair_weights(stats[2*tw], stats[2*(NHB + tw)], second, mp, w0, w1);
        ((float *) (wgmma_shared + L::WEIGHTS))[wg*NHB + tw] = wg == 0 ? w0 : w1;
        if (wg == 0) {
            const float lp = __fmul_rn(stats[2*tw + 1], w0);
            ml[2*(first + tw)] = mp;
            ml[2*(first + tw) + 1] = second ? __fmaf_rn(w1, stats[2*(NHB + tw) + 1], lp) : lp;
        }
    }
    named_barrier_sync(2 + wg, 128);
    wgmma_weighted_sum<ROW, NHB>(cx, o_part + first*WGMMA_KV_RANK, second);
}

#define MLA_ATTN_FLASH_WGMMA(name, row, heads)                                                               \
    extern "C" __global__ void __launch_bounds__(WGMMA_BLOCK, 1) name(const float4 * __restrict__ qs,          \
                                    const float4 * __restrict__ cache, const int * __restrict__ idx,         \
                                    float * __restrict__ o_part, float * __restrict__ ml, const int nh,      \
                                    const int n_slots, const float scale, const int pool) {                  \
        attn_flash_wgmma<row, heads>(qs, cache, idx, o_part, ml, nh, n_slots, scale, pool);                  \
    }

// Rows of kv_rank floats, or of kv_rank + 64 (the rope columns); 16, 32 and 64 heads a block, the
// same bits as each other and as attn_flash.
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_h16, WGMMA_KV_RANK, 16)
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_h32, WGMMA_KV_RANK, 32)
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_h64, WGMMA_KV_RANK, 64)
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_rope_h16, WGMMA_KV_RANK + 64, 16)
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_rope_h32, WGMMA_KV_RANK + 64, 32)
MLA_ATTN_FLASH_WGMMA(mla_attn_flash_wgmma_rope_h64, WGMMA_KV_RANK + 64, 64)

#endif  // sm_90a
