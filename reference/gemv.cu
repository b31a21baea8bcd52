// Reference CUDA C++ for the gemv family: y[i][r] = sum_c W[r][c] * x[i][c] for m rows of a q8_1
// activation (qs[m][in_f] int8, d[m][in_f/32] float) and weights in four formats. Same symbols and
// argument lists as kernels-gpu/src/gemv.rs, ggml-cuda style (templates on the format and m, one
// extern "C" wrapper per entry), compiled by NVRTC with its default numerics.
//
// Mapping: a warp owns rows_per_warp consecutive weight rows (the raw Q8_0 and e4m3 warps take such
// row groups in turn over whatever grid the launcher gives); lane l takes the 32-value blocks
// b = l + 32*j of its rows in ascending j, blocks_per_trip of them loaded before any is used (the
// last, ragged trip of a row block by block), and a xor butterfly sums the lanes. Per (weight row,
// activation row) and block:
//   Q8_0 (raw and planar):  acc += dw*dx*(float) sumi           (sumi: dp4a, exact)
//   e4m3:                   s = sum of w[k]*x[k], k = 0..31 in order; acc += s*dx
//   e4m3 block-128:         the same s; acc += s*(dx*g)
// then y = warp sum, times the tensor's scale for per-tensor e4m3. Nothing depends on m, so every
// row of an m-row launch equals the m = 1 launch on that row.
//
// NVRTC has no cuda_fp16.h / cuda_fp8.h without include paths, so the f16 and e4m3 conversions are
// written as the PTX those headers lower to.

#define WARP_SIZE 32
#define QK 32                   // values per block: Q8_0 weights, q8_1 activation, a lane's unit
#define Q8_0_BLOCK_BYTES 34     // f16 d + 32 int8
#define TILE 128                // e4m3 block-128 scale tiles are TILE x TILE
#define WARPS_PER_BLOCK 4
#define Q8_0_STAGE_BLOCKS 2     // blocks per lane in a raw Q8_0 shared-memory stage
#define Q8_0_STAGE_BYTES (WARP_SIZE*Q8_0_STAGE_BLOCKS*Q8_0_BLOCK_BYTES)
#define Q8_0_STAGE_COPIES ((Q8_0_STAGE_BYTES/16 + WARP_SIZE - 1)/WARP_SIZE)   // 16-byte copies a lane makes per stage, at most

struct block_q8_0 {
    unsigned short d;           // f16 bits
    signed char qs[QK];
};
static_assert(sizeof(block_q8_0) == Q8_0_BLOCK_BYTES, "wrong q8_0 block size/padding");

enum gemv_format { GEMV_Q8_0, GEMV_Q8_0_PLANAR, GEMV_E4M3, GEMV_E4M3_B128 };

// rows_per_warp is the launch geometry, as kernels_gpu::gemv::rows_per_warp gives it to the
// launcher: at m = 1 an e4m3 warp takes two rows so each decoded activation block serves both.
// blocks_per_trip is this build's own (the Rust e4m3 kernels stage one block a trip instead).
static constexpr __device__ int rows_per_warp(const gemv_format f, const int m) {
    return (f == GEMV_E4M3 || f == GEMV_E4M3_B128) && m == 1 ? 2 : 1;
}

static constexpr __device__ int blocks_per_trip(const gemv_format f, const int m) {
    return f == GEMV_Q8_0 ? Q8_0_STAGE_BLOCKS : m > 2 ? 1 : f == GEMV_Q8_0_PLANAR ? 4 : 2;
}

static __device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = WARP_SIZE/2; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(0xffffffff, x, offset, WARP_SIZE);
    }
    return x;
}

// __half2float
static __device__ __forceinline__ float f16_to_f32(const unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3) on both byte pairs of a word: .x gets bytes 0-1 and
// .y bytes 2-3, the lower byte in the lower half; both NaN codes give the f16 NaN 0x7FFF.
static __device__ __forceinline__ uint2 e4m3x4_to_f16x4(const int w) {
    uint2 h;
    asm("{\n\t"
        ".reg .b16 lo, hi;\n\t"
        "mov.b32 {lo, hi}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, lo;\n\t"
        "cvt.rn.f16x2.e4m3x2 %1, hi;\n\t"
        "}" : "=r"(h.x), "=r"(h.y) : "r"(w));
    return h;
}

// ggml-cuda's cp_async_cg_16 (sm_80+): 16 bytes global -> shared, not through registers or L1.
static __device__ __forceinline__ void cp_async_cg_16(const unsigned int dst, const void * src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(dst), "l"(__cvta_generic_to_global(src)));
}

// cp_async_cg_16 if copy, as one predicated instruction (no branch around the asm).
static __device__ __forceinline__ void cp_async_cg_16_if(const bool copy, const unsigned int dst, const void * src) {
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.u32 p, %0, 0;\n\t"
                 "@p cp.async.cg.shared.global [%1], [%2], 16;\n\t"
                 "}" : : "r"((unsigned int) copy), "r"(dst), "l"(__cvta_generic_to_global(src)));
}

static __device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;");
}

template <int pending>
static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" : : "n"(pending));
}

// A block of 32 quants as 8 words (4 int8 each) and its scale: a q8_1 activation block, or a Q8_0
// weight block.
struct q8_block {
    int q[8];
    float d;
};

static __device__ __forceinline__ void load32(int (&q)[8], const void * p) {
    const int4 * p4 = (const int4 *) p;
    const int4 lo = p4[0];
    const int4 hi = p4[1];
    q[0] = lo.x; q[1] = lo.y; q[2] = lo.z; q[3] = lo.w;
    q[4] = hi.x; q[5] = hi.y; q[6] = hi.z; q[7] = hi.w;
}

// A warp's rows and its lane's blocks; the last warp's surplus rows repeat the last row and store
// nothing.
struct warp_rows {
    int lane, row0, out_f, nb;

    __device__ int row(const int k) const { return min(row0 + k, out_f - 1); }
    template <int U> __device__ int trips() const { return (nb + WARP_SIZE*U - 1) / (WARP_SIZE*U); }
    template <int U> __device__ int block(const int t, const int u) const { return lane + WARP_SIZE*(t*U + u); }
    __device__ bool live(const int b) const { return b < nb; }

    // Every trip of the row: the full ones (every block of every lane in the row: all loads first,
    // then the arithmetic), then the ragged one if there is one (block by block).
    template <int U, typename body_t>
    __device__ void run(body_t & body) const {
        const int full = nb / (WARP_SIZE*U);
        for (int t = 0; t < full; ++t) {
            body.template trip<true>(t);
        }
        if (full < trips<U>()) {
            body.template trip<false>(full);
        }
    }
};

// This warp's index in the launch: its first row group, and its place in a grid-stride loop.
static __device__ __forceinline__ int warp_index() {
    return blockIdx.x*WARPS_PER_BLOCK + threadIdx.x/WARP_SIZE;
}

// Row group g (rows g*R ..) of the matrix; false if it has no row.
template <int R>
static __device__ __forceinline__ bool warp_rows_at(warp_rows & wr, const int g, const int in_f, const int out_f) {
    wr.lane  = threadIdx.x % WARP_SIZE;
    wr.row0  = g*R;
    wr.out_f = out_f;
    wr.nb    = in_f/QK;
    return wr.row0 < out_f;
}

// This warp's row group in a launch of one group per warp.
template <int R>
static __device__ __forceinline__ bool warp_rows_init(warp_rows & wr, const int in_f, const int out_f) {
    return warp_rows_at<R>(wr, warp_index(), in_f, out_f);
}

template <int M>
static __device__ __forceinline__ void load_activation(q8_block (&x)[M], const int b,
                                                       const signed char * __restrict__ xq,
                                                       const float * __restrict__ xd, const int in_f) {
#pragma unroll
    for (int i = 0; i < M; ++i) {
        load32(x[i].q, xq + (size_t) i*in_f + b*QK);
        x[i].d = xd[(size_t) i*(in_f/QK) + b];
    }
}

template <int M, int R, typename finish_t>
static __device__ __forceinline__ void store_rows(float * __restrict__ y, const warp_rows & wr,
                                                  const float (&acc)[R][M], const finish_t finish) {
#pragma unroll
    for (int k = 0; k < R; ++k) {
#pragma unroll
        for (int i = 0; i < M; ++i) {
            const float sum = warp_reduce_sum(acc[k][i]);
            if (wr.lane == 0 && wr.row0 + k < wr.out_f) {
                y[(size_t) i*wr.out_f + wr.row0 + k] = finish(sum);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q8_0

static __device__ __forceinline__ float vec_dot_q8_0_q8_1(const q8_block & w, const q8_block & x, float acc) {
    int sumi = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        sumi = __dp4a(w.q[k], x.q[k], sumi);
    }
    return acc + w.d*x.d*((float) sumi);
}

// Raw ggml rows staged through two shared-memory buffers per warp (trip t+1 is copied while trip t
// is computed): 16-byte cp.async when rows start 16-byte aligned (in_f % 256 == 0), else 2-byte
// copies into the same layout. The alignment is a template parameter rather than a branch in every
// stage, so that the aligned trip loop is straight-line code (at most Q8_0_STAGE_COPIES predicated
// copies a lane) and the 2-byte loop lives only in the unaligned body.
template <bool aligned>
struct q8_0_staged {
    static constexpr bool staged = true;
    const unsigned char * row;
    int row_bytes;
    unsigned char * stages;     // this warp's two stages
    int lane;

    __device__ unsigned char * buffer(const int t) const { return stages + (t % 2)*Q8_0_STAGE_BYTES; }

    __device__ void stage(const int t) const {
        const int start = t*Q8_0_STAGE_BYTES;
        const int len = min(row_bytes - start, Q8_0_STAGE_BYTES);
        const unsigned char * src = row + start;
        unsigned char * dst = buffer(t);
        if (aligned) {
            const unsigned int dst_s = (unsigned int) __cvta_generic_to_shared(dst);
#pragma unroll
            for (int n = 0; n < Q8_0_STAGE_COPIES; ++n) {
                const int p = lane + WARP_SIZE*n;
                cp_async_cg_16_if(p < len/16, dst_s + 16*p, src + 16*p);
            }
        } else {
            for (int p = lane; p < len/2; p += WARP_SIZE) {
                ((unsigned short *) dst)[p] = ((const unsigned short *) src)[p];
            }
        }
        cp_async_commit();
    }

    // Block n of a stage: the quants sit 2-byte aligned at 34*n + 2; read nine aligned words and
    // funnel-shift by 0 or 16 bits (with 0 the ninth word is unused: re-read the eighth instead of
    // touching the next block).
    __device__ q8_block read(const unsigned char * buf, const int n) const {
        const unsigned char * at = buf + n*Q8_0_BLOCK_BYTES;
        const unsigned int quants = (unsigned int) __cvta_generic_to_shared(at) + 2;
        const unsigned int shift = (quants & 3)*8;
        const int * words = (const int *) (at + 2 - (quants & 3));
        int w[9];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            w[k] = words[k];
        }
        w[8] = words[7 + shift/16];
        q8_block blk;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            blk.q[k] = __funnelshift_rc(w[k], w[k + 1], shift);
        }
        blk.d = f16_to_f32(*(const unsigned short *) at);
        return blk;
    }

    template <int U>
    __device__ void begin(const warp_rows & wr, const int t) const {
        if (t + 1 < wr.trips<U>()) {
            stage(t + 1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncwarp();
    }

    template <int U>
    __device__ q8_block block(const warp_rows & wr, const int t, const int u) const {
        return read(buffer(t), wr.block<U>(t, u) - t*WARP_SIZE*U);
    }

    __device__ void end() const { __syncwarp(); }
};

// Planar rows: quants (16-byte aligned) and f16 scales straight to registers.
struct q8_0_planar {
    static constexpr bool staged = false;
    const signed char * q;
    const unsigned short * d;

    template <int U>
    __device__ void begin(const warp_rows &, const int) const {}

    template <int U>
    __device__ q8_block block(const warp_rows & wr, const int t, const int u) const {
        const int b = wr.block<U>(t, u);
        q8_block w;
        load32(w.q, q + b*QK);
        w.d = f16_to_f32(d[b]);
        return w;
    }

    __device__ void end() const {}
};

struct finish_identity {
    __device__ float operator()(const float sum) const { return sum; }
};

// The Q8_0 body over one warp's row, from either layout.
template <int M, int U, typename rows_t>
struct gemv_q8 {
    warp_rows wr;
    rows_t rows;
    const signed char * __restrict__ xq;
    const float * __restrict__ xd;
    int in_f;
    float acc[1][M];

    // A full trip's activation blocks. Staged rows at m <= 2 load them during the trip before
    // (ahead): a staged trip waits for its weights, ptxas sinks activation loads of the same trip
    // below that wait, but it cannot move a load into the next trip. At m >= 4 the carried blocks
    // would cost 72+ registers.
    struct trip_x {
        q8_block b[U][M];
    };
    static constexpr bool ahead_loads = rows_t::staged && M <= 2;
    trip_x ahead;

    // Trip t's blocks, each block index clamped to the row so that a trip loaded ahead past the
    // last full one reads valid (unused) blocks.
    __device__ trip_x load_trip(const int t) const {
        trip_x x;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int b = wr.block<U>(t, u);
            load_activation(x.b[u], ahead_loads ? min(b, wr.nb - 1) : b, xq, xd, in_f);
        }
        return x;
    }

    __device__ void add(const q8_block & w, const q8_block (&x)[M]) {
#pragma unroll
        for (int i = 0; i < M; ++i) {
            acc[0][i] = vec_dot_q8_0_q8_1(w, x[i], acc[0][i]);
        }
    }

    template <bool full>
    __device__ void trip(const int t) {
        if (full) {
            // the activation's loads go out before the wait for the weights, to overlap it: in
            // this trip, or at the end of the one before
            const trip_x x = ahead_loads ? ahead : load_trip(t);
            rows.template begin<U>(wr, t);
            q8_block w[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                w[u] = rows.template block<U>(wr, t, u);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                add(w[u], x.b[u]);
            }
            if (ahead_loads) {
                ahead = load_trip(t + 1);
            }
        } else {
            rows.template begin<U>(wr, t);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int b = wr.block<U>(t, u);
                if (wr.live(b)) {
                    q8_block x[M];
                    load_activation(x, b, xq, xd, in_f);
                    add(rows.template block<U>(wr, t, u), x);
                }
            }
        }
        rows.end();
    }

    __device__ void run(float * __restrict__ y) {
#pragma unroll
        for (int i = 0; i < M; ++i) {
            acc[0][i] = 0.0f;
        }
        if (ahead_loads) {
            ahead = load_trip(0);
        }
        wr.run<U>(*this);
        store_rows<M, 1>(y, wr, acc, finish_identity());
    }
};

// The raw body over one warp's row, staged with or without 16-byte copies.
template <bool aligned, int M, int U>
static __device__ __forceinline__ void run_staged(const warp_rows & wr, const unsigned char * row, const int row_bytes,
                                                  unsigned char * warp_stages, const signed char * __restrict__ xq,
                                                  const float * __restrict__ xd, float * __restrict__ y, const int in_f) {
    q8_0_staged<aligned> rows;
    rows.row       = row;
    rows.row_bytes = row_bytes;
    rows.stages    = warp_stages;
    rows.lane      = wr.lane;
    rows.stage(0);
    gemv_q8<M, U, q8_0_staged<aligned> > body = {wr, rows, xq, xd, in_f};
    body.run(y);
}

// Warps take row groups in turn, as the e4m3 kernels do (see gemv_e4m3).
template <int M, int U>
static __device__ __forceinline__ void gemv_q8_0(const block_q8_0 * __restrict__ w, const signed char * __restrict__ xq,
                                                 const float * __restrict__ xd, float * __restrict__ y,
                                                 const int in_f, const int out_f) {
    __shared__ __align__(16) unsigned char stages[WARPS_PER_BLOCK][2][Q8_0_STAGE_BYTES];
    const int row_bytes = in_f/QK*Q8_0_BLOCK_BYTES;
    unsigned char * warp_stages = stages[threadIdx.x/WARP_SIZE][0];
    const bool aligned = (((size_t) w | row_bytes) % 16) == 0;
    const int warps = gridDim.x*WARPS_PER_BLOCK;
    for (int g = warp_index(); g < out_f; g += warps) {
        warp_rows wr;
        warp_rows_at<1>(wr, g, in_f, out_f);
        const unsigned char * row = (const unsigned char *) w + (size_t) wr.row(0)*row_bytes;
        if (aligned) {
            run_staged<true, M, U>(wr, row, row_bytes, warp_stages, xq, xd, y, in_f);
        } else {
            run_staged<false, M, U>(wr, row, row_bytes, warp_stages, xq, xd, y, in_f);
        }
    }
}

template <int M, int U>
static __device__ __forceinline__ void gemv_q8_0_planar(const signed char * __restrict__ wq, const unsigned short * __restrict__ wd,
                                                        const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                        float * __restrict__ y, const int in_f, const int out_f) {
    warp_rows wr;
    if (!warp_rows_init<1>(wr, in_f, out_f)) {
        return;
    }
    const size_t row = wr.row(0);
    const q8_0_planar rows = {wq + row*in_f, wd + row*(in_f/QK)};
    gemv_q8<M, U, q8_0_planar> body = {wr, rows, xq, xd, in_f};
    body.run(y);
}

// ---------------------------------------------------------------------------------------------
// e4m3

// The four e4m3 weights of a word as exact floats, in memory order.
static __device__ __forceinline__ void e4m3x4_to_f32x4(float (&v)[4], const int w) {
    const uint2 h = e4m3x4_to_f16x4(w);
    v[0] = f16_to_f32(h.x & 0xFFFF);
    v[1] = f16_to_f32(h.x >> 16);
    v[2] = f16_to_f32(h.y & 0xFFFF);
    v[3] = f16_to_f32(h.y >> 16);
}

// The four int8 of a word as exact floats without the quarter-rate I2F: flipping each byte's top
// bit gives v + 128 in [0, 255], which byte_perm writes into the mantissa of 2^23; subtracting
// 2^23 + 128 leaves v.
static __device__ __forceinline__ void i8x4_to_f32x4(float (&v)[4], const int q) {
    const int biased = q ^ 0x80808080;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        v[c] = __int_as_float(__byte_perm(biased, 0x4B000000, 0x7540 | c)) - 8388736.0f;
    }
}

// One scale for the tensor, applied to the row's sum.
struct scale_per_tensor {
    float s;
    struct row_t {};
    __device__ row_t row(const int) const { return row_t(); }
    static __device__ float block(const row_t, const int) { return 1.0f; }
    static __device__ float factor(const float dx, const float) { return dx; }
    __device__ float operator()(const float sum) const { return sum*s; }
};

// One scale per TILE x TILE tile (row-major grid [ceil(out_f/TILE)][ceil(in_f/TILE)]), folded into
// each block's factor.
struct scale_tiles {
    const float * __restrict__ grid;
    int in_f;
    typedef const float * row_t;                        // the row's row of tiles
    __device__ row_t row(const int r) const { return grid + r/TILE*((in_f + TILE - 1)/TILE); }
    static __device__ float block(const row_t row, const int b) { return row[b*QK/TILE]; }
    static __device__ float factor(const float dx, const float g) { return dx*g; }
    __device__ float operator()(const float sum) const { return sum; }
};

// The e4m3 body over one warp's R rows: in a full trip every load (weights, tile scales,
// activations) goes out before the arithmetic.
template <int M, int R, int U, typename scale_t>
struct gemv_fp8 {
    warp_rows wr;
    scale_t scale;
    const signed char * __restrict__ xq;
    const float * __restrict__ xd;
    int in_f;
    const unsigned char * rows[R];                      // the warp's weight rows
    typename scale_t::row_t scale_rows[R];              // and their scales
    float acc[R][M];

    // One block's loads for the warp's rows: R rows' e4m3 words and tile scales, M activation blocks.
    struct loads {
        int w[R][8];
        float g[R];
        q8_block x[M];
    };

    __device__ void load(loads & l, const int b) const {
        load_activation(l.x, b, xq, xd, in_f);
#pragma unroll
        for (int k = 0; k < R; ++k) {
            load32(l.w[k], rows[k] + b*QK);
            l.g[k] = scale.block(scale_rows[k], b);
        }
    }

    // The block's contribution to every accumulator: the dot products s += w[c]*x[c] for c = 0..31
    // in order, then acc += s*factor. Word by word, the four values of each weight row and of each
    // activation row are decoded once and feed every product that needs them.
    __device__ void add(const loads & l) {
        float s[R][M] = {{0.0f}};
#pragma unroll
        for (int n = 0; n < 8; ++n) {
            float w[R][4];
#pragma unroll
            for (int k = 0; k < R; ++k) {
                e4m3x4_to_f32x4(w[k], l.w[k][n]);
            }
            float x[M][4];
#pragma unroll
            for (int i = 0; i < M; ++i) {
                i8x4_to_f32x4(x[i], l.x[i].q[n]);
            }
#pragma unroll
            for (int k = 0; k < R; ++k) {
#pragma unroll
                for (int i = 0; i < M; ++i) {
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        s[k][i] += w[k][c]*x[i][c];
                    }
                }
            }
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
#pragma unroll
            for (int i = 0; i < M; ++i) {
                acc[k][i] += s[k][i]*scale_t::factor(l.x[i].d, l.g[k]);
            }
        }
    }

    template <bool full>
    __device__ void trip(const int t) {
        if (full) {
            loads l[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                load(l[u], wr.block<U>(t, u));
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                add(l[u]);
            }
        } else {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int b = wr.block<U>(t, u);
                if (wr.live(b)) {
                    loads l;
                    load(l, b);
                    add(l);
                }
            }
        }
    }

    __device__ void run(float * __restrict__ y) {
#pragma unroll
        for (int k = 0; k < R; ++k) {
#pragma unroll
            for (int i = 0; i < M; ++i) {
                acc[k][i] = 0.0f;
            }
        }
        wr.run<U>(*this);
        store_rows<M, R>(y, wr, acc, scale);
    }
};

// Warps take row groups in turn (a grid-stride loop), so any grid covers the matrix: the launcher
// gives at most the blocks that are resident at once.
template <int M, int R, int U, typename scale_t>
static __device__ __forceinline__ void gemv_e4m3(const unsigned char * __restrict__ w, const scale_t scale,
                                                 const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                 float * __restrict__ y, const int in_f, const int out_f) {
    const int warps = gridDim.x*WARPS_PER_BLOCK;
    for (int g = warp_index(); g*R < out_f; g += warps) {
        warp_rows wr;
        warp_rows_at<R>(wr, g, in_f, out_f);
        gemv_fp8<M, R, U, scale_t> body = {wr, scale, xq, xd, in_f};
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const int row = wr.row(k);
            body.rows[k] = w + (size_t) row*in_f;
            body.scale_rows[k] = scale.row(row);
        }
        body.run(y);
    }
}

// ---------------------------------------------------------------------------------------------
// Entries: block WARPS_PER_BLOCK*32; grid ceil(out_f / (WARPS_PER_BLOCK*rows_per_warp)) for the planar
// Q8_0 kernels, any grid of at most that many blocks for the others.

#define DECL_GEMV_Q8_0(M)                                                                              \
    extern "C" __global__ void gemv_q8_0_m##M(const block_q8_0 * __restrict__ w,                       \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f) {                                 \
        gemv_q8_0<M, blocks_per_trip(GEMV_Q8_0, M)>(w, xq, xd, y, in_f, out_f);                        \
    }

#define DECL_GEMV_Q8_0_PLANAR(M)                                                                       \
    extern "C" __global__ void gemv_q8_0_planar_m##M(const signed char * __restrict__ wq,              \
            const unsigned short * __restrict__ wd, const signed char * __restrict__ xq,               \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f) {  \
        gemv_q8_0_planar<M, blocks_per_trip(GEMV_Q8_0_PLANAR, M)>(wq, wd, xq, xd, y, in_f, out_f);     \
    }

#define DECL_GEMV_E4M3(M)                                                                              \
    extern "C" __global__ void gemv_e4m3_m##M(const unsigned char * __restrict__ w, const float scale, \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f) {                                 \
        gemv_e4m3<M, rows_per_warp(GEMV_E4M3, M), blocks_per_trip(GEMV_E4M3, M)>(                      \
            w, scale_per_tensor{scale}, xq, xd, y, in_f, out_f);                                       \
    }

#define DECL_GEMV_E4M3_B128(M)                                                                         \
    extern "C" __global__ void gemv_e4m3_b128_m##M(const unsigned char * __restrict__ w,               \
            const float * __restrict__ grid, const signed char * __restrict__ xq,                      \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f) {  \
        gemv_e4m3<M, rows_per_warp(GEMV_E4M3_B128, M), blocks_per_trip(GEMV_E4M3_B128, M)>(            \
            w, scale_tiles{grid, in_f}, xq, xd, y, in_f, out_f);                                       \
    }

DECL_GEMV_Q8_0(1)
DECL_GEMV_Q8_0(2)
DECL_GEMV_Q8_0(4)
DECL_GEMV_Q8_0(8)

DECL_GEMV_Q8_0_PLANAR(1)
DECL_GEMV_Q8_0_PLANAR(2)
DECL_GEMV_Q8_0_PLANAR(4)
DECL_GEMV_Q8_0_PLANAR(8)

DECL_GEMV_E4M3(1)
DECL_GEMV_E4M3(2)
DECL_GEMV_E4M3(4)
DECL_GEMV_E4M3(8)

DECL_GEMV_E4M3_B128(1)
DECL_GEMV_E4M3_B128(2)
DECL_GEMV_E4M3_B128(4)
DECL_GEMV_E4M3_B128(8)
