// Reference CUDA C++ for the MLA family's flash attention over a gathered latent cache:
// mla_attn_gathered_flash (one block per token, chunk of slots and group of heads, on the tensor
// cores) and mla_attn_flash_combine (the chunks of each token and head, added in order). Same
// symbols and argument lists as kernels-gpu/src/mla/flash.rs, and per output the same operations
// in the same order.
//
// Every product goes through mma.sync m16n8k8 with tf32 operands in three terms (3xTF32): each
// f32 operand x is split into a tf32 head h = cvt.rna(x) and a tf32 tail cvt.rna(x - h), and
// acc += a*b is acc = mma(head_a, tail_b, acc), then mma(tail_a, head_b, acc), then
// mma(head_a, head_b, acc): the dropped tail*tail term and the tails' own rounding leave about
// 2^-21 of each product, f32-grade, at the tensor cores' rate.
//
// What a value's bits depend on: the chunks (FLASH_CHUNK slots each, from slot 0) and the k-step
// quarters of the scores are functions of n_slots and kv_rank + d_rope alone, and each output of
// an mma depends on its own row and column only. So a token's outputs are the same bits whatever
// t, the grid or the head group that computed them.

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

#define FLASH_HEADS 16                           // heads of a block: the rows of one m16 tile
#define FLASH_WARPS 4
#define FLASH_BLOCK (FLASH_WARPS*WARP_SIZE)
#define FLASH_CHUNK 64                           // slots of a chunk
#define FLASH_TILES (FLASH_CHUNK/8)              // n8 tiles of the scores, k8 steps of the sum
#define FLASH_PASS_TILES 16                      // n8 output tiles a warp holds per pass
#define FLASH_S_STRIDE (FLASH_CHUNK + 8)         // floats per head row of a warp's score partial
#define FLASH_P_STRIDE (FLASH_CHUNK + 4)         // floats per head row of the numerators
#define FLASH_COMBINE_BLOCK 128

// Floats per staged row (cache row or query): the row, zeros to a multiple of 8, and 4 more so
// that the 8 rows a fragment load touches start in different banks.
static __device__ __forceinline__ int flash_stride(const int d) {
    return (d + 7)/8*8 + 4;
}

// cp.async of 16 bytes that copies `bytes` (16 or 0) of them and zero-fills the rest.
static __device__ __forceinline__ void cp_async_cg_16_zfill(const unsigned int dst, const void * src, const int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" : : "r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes));
}

static __device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;");
}

static __device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}

// x as a tf32 head and the tf32 rounding of what the head leaves out.
static __device__ __forceinline__ void tf32_split(const float x, unsigned int & head, unsigned int & tail) {
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(head) : "f"(x));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(tail) : "f"(x - __uint_as_float(head)));
}

static __device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a*b in three tf32 terms: head*tail, tail*head, then head*head.
static __device__ __forceinline__ void mma_3xtf32(float (&d)[4], const unsigned int (&ah)[4], const unsigned int (&at)[4],
                                                  const unsigned int (&bh)[2], const unsigned int (&bt)[2]) {
    mma_tf32(d, ah, bt);
    mma_tf32(d, at, bh);
    mma_tf32(d, ah, bh);
}

// The A fragment of the 16 x 8 tile at `p` (row stride `stride` floats) as the lane
// (g = lane/4, c = lane%4) holds it: rows g and g+8, columns c and c+4, split.
static __device__ __forceinline__ void load_a(const float * p, const int stride, unsigned int (&h)[4], unsigned int (&t)[4]) {
    const int lane = threadIdx.x % WARP_SIZE;
    const float * q = p + lane/4*stride + lane%4;
    tf32_split(q[0], h[0], t[0]);
    tf32_split(q[8*stride], h[1], t[1]);
    tf32_split(q[4], h[2], t[2]);
    tf32_split(q[8*stride + 4], h[3], t[3]);
}

// The B fragment (k = c, c+4; n = g) of the 8 x 8 tile at `p`, for B stored n-major (row n holds
// B[:, n], the cache rows of the scores) or k-major (row k holds B[k, :], the rows of the sum).
template <bool n_major>
static __device__ __forceinline__ void load_b(const float * p, const int stride, unsigned int (&h)[2], unsigned int (&t)[2]) {
    const int lane = threadIdx.x % WARP_SIZE;
    const int g = lane/4, c = lane%4;
    const float * q = n_major ? p + g*stride + c : p + c*stride + g;
    tf32_split(q[0], h[0], t[0]);
    tf32_split(n_major ? q[4] : q[4*stride], h[1], t[1]);
}

// grid: t * ceil(n_slots/FLASH_CHUNK) * ceil(nh/FLASH_HEADS) blocks (head group fastest, so the
// blocks that read one chunk's rows run side by side), block: FLASH_BLOCK, dynamic shared memory:
// 4*(FLASH_CHUNK*stride + max(FLASH_HEADS*stride, FLASH_WARPS*FLASH_HEADS*FLASH_S_STRIDE) +
// FLASH_HEADS*FLASH_P_STRIDE) bytes, stride = flash_stride(kv_rank + d_rope).
// o_part [t, chunks, nh, kv_rank] gets each chunk's unnormalised sum, ml [t, chunks, nh, 2] its
// maximum score and its sum of numerators.
extern "C" __global__ void mla_attn_gathered_flash(const float4 * __restrict__ q_lat, const float4 * __restrict__ q_pe,
                                                   const float4 * __restrict__ cache, const int * __restrict__ idx,
                                                   float * __restrict__ o_part, float * __restrict__ ml,
                                                   const int nh, const int kv_rank, const int d_rope, const int t,
                                                   const int n_slots, const float scale, const int pool) {
    extern __shared__ float flash_shared[];
    const int d = kv_rank + d_rope;
    const int kv4 = kv_rank/4, r4 = d_rope/4, d4 = d/4;
    const int stride = flash_stride(d);
    const int ksteps = (d + 7)/8;
    const int groups = (nh + FLASH_HEADS - 1)/FLASH_HEADS;
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK;
    const int group = blockIdx.x % groups;
    const int chunk = blockIdx.x / groups % chunks;
    const int token = blockIdx.x / groups / chunks;
    if (token >= t) {
        return;
    }
    const int h0 = group*FLASH_HEADS;
    const int s0 = chunk*FLASH_CHUNK;
    const int warp = threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;

    float * rows = flash_shared;
    float * work = rows + FLASH_CHUNK*stride;
    float * num = work + max(FLASH_HEADS*stride, FLASH_WARPS*FLASH_HEADS*FLASH_S_STRIDE);

    // Stage the chunk's rows (zeros past n_slots and past each row) and the group's queries
    // (zeros for heads past nh), warp w the rows w, w + FLASH_WARPS, ...
    const int staged = 2*ksteps;
    for (int r = warp; r < FLASH_CHUNK; r += FLASH_WARPS) {
        const bool live = s0 + r < n_slots;
        const float4 * src = cache;
        if (live) {
            src += (size_t) min(max(idx[(size_t) token*n_slots + s0 + r], 0), pool - 1)*d4;
        }
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(rows + r*stride);
        for (int k = lane; k < staged; k += WARP_SIZE) {
            const bool copy = live && k < d4;
            cp_async_cg_16_zfill(dst + 16*k, copy ? src + k : cache, copy ? 16 : 0);
        }
    }
    for (int h = warp; h < FLASH_HEADS; h += FLASH_WARPS) {
        const bool live = h0 + h < nh;
        const size_t head = (size_t) token*nh + h0 + h;
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(work + h*stride);
        for (int k = lane; k < staged; k += WARP_SIZE) {
            const bool copy = live && k < d4;
            const float4 * src = k < kv4 ? q_lat + head*kv4 + k : q_pe + head*r4 + (k - kv4);
            cp_async_cg_16_zfill(dst + 16*k, copy ? src : q_lat, copy ? 16 : 0);
        }
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    // Scores: warp w the k-steps of quarter w for every slot tile, then the quarters in order.
    float acc[FLASH_TILES][4] = {};
    const int per = (ksteps + FLASH_WARPS - 1)/FLASH_WARPS;
    const int k_end = min(ksteps, (warp + 1)*per);
    for (int ks = warp*per; ks < k_end; ++ks) {
        unsigned int qh[4], qt[4];
        load_a(work + 8*ks, stride, qh, qt);
#pragma unroll
        for (int j = 0; j < FLASH_TILES; ++j) {
            unsigned int kh[2], kt[2];
            load_b<true>(rows + 8*j*stride + 8*ks, stride, kh, kt);
            mma_3xtf32(acc[j], qh, qt, kh, kt);
        }
    }
    __syncthreads();
    {
        float * part = work + warp*FLASH_HEADS*FLASH_S_STRIDE + lane/4*FLASH_S_STRIDE + 2*(lane%4);
#pragma unroll
        for (int j = 0; j < FLASH_TILES; ++j) {
            *(float2 *) (part + 8*j) = make_float2(acc[j][0], acc[j][1]);
            *(float2 *) (part + 8*FLASH_S_STRIDE + 8*j) = make_float2(acc[j][2], acc[j][3]);
        }
    }
    __syncthreads();

    // Softmax within the chunk: 8 lanes a head, each 8 consecutive slots; the numerators to num.
    {
        const int h = threadIdx.x / 8;
        const int q = threadIdx.x % 8;
        float s[8];
        float m = __int_as_float(0xff800000);  // -inf
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const float * at = work + h*FLASH_S_STRIDE + 8*q + i;
            const int w = FLASH_HEADS*FLASH_S_STRIDE;
            // Rounded as a product of its own: contracted into the exponent's subtraction, the
            // score of the max and of the numerator would differ.
            s[i] = __fmul_rn(scale, ((at[0] + at[w]) + at[2*w]) + at[3*w]);
            if (s0 + 8*q + i < n_slots) {
                m = fmaxf(m, s[i]);
            }
        }
#pragma unroll
        for (int offset = 4; offset > 0; offset >>= 1) {
            m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, offset, WARP_SIZE));
        }
        float e[8];
        float l = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            e[i] = s0 + 8*q + i < n_slots ? expf(s[i] - m) : 0.0f;
            l += e[i];
        }
#pragma unroll
        for (int offset = 4; offset > 0; offset >>= 1) {
            l += __shfl_xor_sync(FULL_MASK, l, offset, WARP_SIZE);
        }
        float4 * dst = (float4 *) (num + h*FLASH_P_STRIDE + 8*q);
        dst[0] = make_float4(e[0], e[1], e[2], e[3]);
        dst[1] = make_float4(e[4], e[5], e[6], e[7]);
        if (q == 0 && h0 + h < nh) {
            float * out = ml + 2*(((size_t) token*chunks + chunk)*nh + h0 + h);
            out[0] = m;
            out[1] = l;
        }
    }
    __syncthreads();

    // The chunk's sum of numerator x row: warp w the column tiles w*FLASH_PASS_TILES.. of each
    // pass, the slots' k-steps in order.
    const int ntiles = (kv_rank + 7)/8;
    const int g = lane/4, c = lane%4;
    for (int base = warp*FLASH_PASS_TILES; base < ntiles; base += FLASH_WARPS*FLASH_PASS_TILES) {
        float o[FLASH_PASS_TILES][4] = {};
#pragma unroll
        for (int ks = 0; ks < FLASH_TILES; ++ks) {
            unsigned int ph[4], pt[4];
            load_a(num + 8*ks, FLASH_P_STRIDE, ph, pt);
            // Tiles past the row repeat the last one and are not stored: no branch between the
            // tiles' mma chains.
#pragma unroll
            for (int j = 0; j < FLASH_PASS_TILES; ++j) {
                unsigned int vh[2], vt[2];
                load_b<false>(rows + 8*ks*stride + 8*min(base + j, ntiles - 1), stride, vh, vt);
                mma_3xtf32(o[j], ph, pt, vh, vt);
            }
        }
#pragma unroll
        for (int j = 0; j < FLASH_PASS_TILES; ++j) {
            const int col = 8*(base + j) + 2*c;
            if (base + j >= ntiles || col >= kv_rank) {
                continue;
            }
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int h = h0 + g + 8*half;
                if (h < nh) {
                    float * out = o_part + (((size_t) token*chunks + chunk)*nh + h)*kv_rank + col;
                    *(float2 *) out = make_float2(o[j][2*half], o[j][2*half + 1]);
                }
            }
        }
    }
}

// grid: t * nh * ceil(kv_rank/4/FLASH_COMBINE_BLOCK) blocks, block: FLASH_COMBINE_BLOCK, a thread
// per float4 of one token and head: M = max of the chunks' maxima, then over the chunks in order
// w = expf(m - M), l += w*l_chunk, a += w*o_chunk; out = a * (1/l).
extern "C" __global__ void mla_attn_flash_combine(const float4 * __restrict__ o_part, const float * __restrict__ ml,
                                                  float4 * __restrict__ out, const int nh, const int kv_rank,
                                                  const int t, const int n_slots) {
    const int kv4 = kv_rank/4;
    const int parts = (kv4 + FLASH_COMBINE_BLOCK - 1)/FLASH_COMBINE_BLOCK;
    const int th = blockIdx.x / parts;
    const int c = blockIdx.x % parts*FLASH_COMBINE_BLOCK + threadIdx.x;
    if (th >= t*nh || c >= kv4) {
        return;
    }
    const int token = th / nh;
    const int h = th % nh;
    const int chunks = (n_slots + FLASH_CHUNK - 1)/FLASH_CHUNK;
    const float * stats = ml + 2*((size_t) token*chunks*nh + h);
    const float4 * part = o_part + ((size_t) token*chunks*nh + h)*kv4 + c;
    // Chunks four at a time, their loads issued before any is used.
    float m = __int_as_float(0xff800000);  // -inf
    for (int k = 0; k < chunks; k += 4) {
        float ms[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            ms[u] = k + u < chunks ? stats[2*(size_t) (k + u)*nh] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            if (k + u < chunks) {
                m = fmaxf(m, ms[u]);
            }
        }
    }
    float l = 0.0f;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int k = 0; k < chunks; k += 4) {
        float ms[4], ls[4];
        float4 os[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            if (k + u < chunks) {
                ms[u] = stats[2*(size_t) (k + u)*nh];
                ls[u] = stats[2*(size_t) (k + u)*nh + 1];
                os[u] = part[(size_t) (k + u)*nh*kv4];
            }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            if (k + u < chunks) {
                const float w = expf(ms[u] - m);
                l += w*ls[u];
                a.x += w*os[u].x;
                a.y += w*os[u].y;
                a.z += w*os[u].z;
                a.w += w*os[u].w;
            }
        }
    }
    const float inv = 1.0f/l;
    out[(size_t) th*kv4 + c] = make_float4(a.x*inv, a.y*inv, a.z*inv, a.w*inv);
}
