// Reference CUDA C++ for the gemv family: y[i][r] = sum_c W[r][c] * x[i][c] for m rows of a q8_1
// activation (qs[m][in_f] int8, d[m][in_f/32] float) and weights in four formats. Same symbols and
// argument lists as kernels-gpu/src/gemv.rs, ggml-cuda style (templates on the format and m, one
// extern "C" wrapper per entry), compiled by NVRTC with its default numerics.
//
// Q8_0 mapping: a warp owns one weight row (the raw Q8_0 warps take rows in turn over whatever grid
// the launcher gives); lane l takes the 32-value blocks b = l + 32*j of its row in ascending j,
// blocks_per_trip of them loaded before any is used (the last, ragged trip of a row block by block),
// and a xor butterfly sums the lanes; per (weight row, activation row) and block,
// acc += dw*dx*(float) sumi (sumi: dp4a, exact). From m = 4 the tensor cores give the same bits.
// The e4m3 formats run on the f16 tensor cores at every m (their section says how). Nothing depends
// on m, so every row of an m-row launch equals the m = 1 launch on that row.
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

enum gemv_format { GEMV_Q8_0, GEMV_Q8_0_PLANAR };    // the CUDA-core formats

// Blocks per lane a CUDA-core Q8_0 trip loads before using any.
static constexpr __device__ int blocks_per_trip(const gemv_format f, const int m) {
    return f == GEMV_Q8_0 ? Q8_0_STAGE_BLOCKS : m > 2 ? 1 : 4;
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
// Q8_0 at m >= 4 on the int8 tensor cores, with the CUDA-core kernels' bits (the same bits: at m <= 2
// the CUDA-core kernels are the faster).
//
// A block of four warps takes tiles of MMA_ROWS weight rows in turn (the last tile's surplus rows
// repeat the last row and store nothing), MMA_TRIP blocks a row at a time, its trips staged in
// shared memory MMA_STAGES deep in one pipeline across its tiles. Warp w takes blocks n = w + 4*s of
// every trip, one mma.m16n8k32 (s8) a block: the tile's rows as a, the activation rows as b (columns
// m..7 never stored); lane (g, c) feeds bytes 8c..8c+8 of block n of weight rows g and g+8 and of
// activation row g (one k order for both) and gets the exact block sums of weight rows g, g+8
// against activation rows 2c, 2c+1. Block b = 32*t + n is butterfly lane n's in the CUDA-core
// kernel, so acc[s] holds lane w + 4*s's accumulators and takes the same acc += dw*dx*(float) sumi;
// the butterfly's offsets 16, 8, 4 pair s^4, s^2, s^1 (summed in the thread) and 2, 1 pair warps
// w^2, w^1 (summed through shared memory).

#define MMA_ROWS 16             // weight rows of a tile: the mma's m
#define MMA_TRIP 32             // blocks of a tile row per trip
#define MMA_STAGES 3
#define MMA_SLOTS (MMA_TRIP/WARPS_PER_BLOCK)
#define MMA_THREADS (WARPS_PER_BLOCK*WARP_SIZE)
#define MMA_RAW_ROW 1120        // a raw row's 1088 trip bytes, padded to spread the fragment reads over the banks
#define MMA_QUANT_ROW 1056      // a planar row's 1024 quants, padded
#define MMA_SCALE_ROW 80        // a planar row's 64 scale bytes, padded; after all rows' quants
#define MMA_STAGE_BYTES (MMA_ROWS*(MMA_QUANT_ROW + MMA_SCALE_ROW))     // the larger layout
#define MMA_MAIN 1024           // a row's trip is copied as 1024 bytes, then 64 more
#define MMA_TAIL 64

static __device__ __forceinline__ void mma_s8(int (&d)[4], const int (&a)[4], const int (&b)[2]) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Row k of the tile at row0, clamped to the matrix's last.
struct mma_rows {
    int out_f;
    __device__ size_t row(const unsigned int row0, const int k) const { return min(row0 + k, (unsigned int) out_f - 1); }
};

// len bytes (a multiple of 16, at most bytes) of each tile row, src + r*src_row -> dst + r*dst_row,
// by 16-byte cp.async: MMA_MAIN bytes a row take eight copies a thread, MMA_TAIL one copy for each of
// the first 64 threads.
template <int bytes>
static __device__ __forceinline__ void mma_copy(const mma_rows rows, const unsigned int row0, const unsigned char * src,
                                                const size_t src_row, const unsigned int dst, const int dst_row, const int len) {
    constexpr int per_row = bytes/16, rows_per_pass = MMA_THREADS/per_row;
    const int at = 16*(threadIdx.x % per_row);
#pragma unroll
    for (int r = threadIdx.x/per_row; r < MMA_ROWS; r += rows_per_pass) {
        cp_async_cg_16_if(at < len, dst + r*dst_row + at, src + rows.row(row0, r)*src_row + at);
    }
}

// Raw ggml rows: 16-byte cp.async when rows start 16-byte aligned, else 2-byte copies.
template <bool aligned>
struct mma_tile_q8_0 {
    const unsigned char * w;
    int row_bytes;
    mma_rows rows;

    __device__ void stage(const unsigned int row0, const int t, unsigned char * buf) const {
        const int start = t*MMA_TRIP*Q8_0_BLOCK_BYTES;
        const int len = min(row_bytes - start, MMA_TRIP*Q8_0_BLOCK_BYTES);
        if (aligned) {
            const unsigned int dst = (unsigned int) __cvta_generic_to_shared(buf);
            mma_copy<MMA_MAIN>(rows, row0, w + start, row_bytes, dst, MMA_RAW_ROW, min(len, MMA_MAIN));
            mma_copy<MMA_TAIL>(rows, row0, w + start + MMA_MAIN, row_bytes, dst + MMA_MAIN, MMA_RAW_ROW, max(len - MMA_MAIN, 0));
        } else {
            for (int r = 0; r < MMA_ROWS; ++r) {
                const unsigned short * src = (const unsigned short *) (w + rows.row(row0, r)*row_bytes + start);
                for (int at = threadIdx.x; 2*at < len; at += MMA_THREADS) {
                    ((unsigned short *) (buf + r*MMA_RAW_ROW))[at] = src[at];
                }
            }
        }
    }

    // The quants sit 2-byte aligned at 34*n + 2: three aligned words, two funnel shifts by 0 or 16.
    __device__ void quants(int (&q)[2], const unsigned char * buf, const int g, const int n, const int c) const {
        const unsigned char * at = buf + g*MMA_RAW_ROW + n*Q8_0_BLOCK_BYTES + 2 + 8*c;
        const unsigned int misalign = (unsigned int) __cvta_generic_to_shared(at) & 3;
        const int * words = (const int *) (at - misalign);
        const int w0 = words[0], w1 = words[1], w2 = words[2];
        q[0] = __funnelshift_rc(w0, w1, 8*misalign);
        q[1] = __funnelshift_rc(w1, w2, 8*misalign);
    }

    __device__ float scale(const unsigned char * buf, const int k, const int n) const {
        return f16_to_f32(*(const unsigned short *) (buf + k*MMA_RAW_ROW + n*Q8_0_BLOCK_BYTES));
    }
};

// Planar rows: quants by 16-byte cp.async; scales so too when their rows start 16-byte aligned
// (in_f % 256 == 0), else by 2-byte copies.
template <bool aligned>
struct mma_tile_q8_0_planar {
    const signed char * wq;
    const unsigned short * wd;
    int in_f;
    mma_rows rows;

    __device__ void stage(const unsigned int row0, const int t, unsigned char * buf) const {
        const int nb = in_f/QK, start = t*MMA_TRIP*QK;
        const int len = min(in_f - start, MMA_TRIP*QK);
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(buf);
        mma_copy<MMA_MAIN>(rows, row0, (const unsigned char *) (wq + start), in_f, dst, MMA_QUANT_ROW, len);
        const unsigned short * scales = wd + start/QK;
        if (aligned) {
            mma_copy<MMA_TAIL>(rows, row0, (const unsigned char *) scales, 2*nb, dst + MMA_ROWS*MMA_QUANT_ROW,
                               MMA_SCALE_ROW, 2*len/QK);
        } else {
#pragma unroll
            for (int p = threadIdx.x; p < MMA_ROWS*MMA_TRIP; p += MMA_THREADS) {
                const int r = p / MMA_TRIP, b = p % MMA_TRIP;
                if (b < len/QK) {
                    ((unsigned short *) (buf + MMA_ROWS*MMA_QUANT_ROW + r*MMA_SCALE_ROW))[b] = scales[rows.row(row0, r)*nb + b];
                }
            }
        }
    }

    __device__ void quants(int (&q)[2], const unsigned char * buf, const int g, const int n, const int c) const {
        const int2 v = *(const int2 *) (buf + g*MMA_QUANT_ROW + n*QK + 8*c);
        q[0] = v.x;
        q[1] = v.y;
    }

    __device__ float scale(const unsigned char * buf, const int k, const int n) const {
        return f16_to_f32(((const unsigned short *) (buf + MMA_ROWS*MMA_QUANT_ROW + k*MMA_SCALE_ROW))[n]);
    }
};

// The stages and the warps' partial sums, in the launch's dynamic shared memory.
struct mma_shared {
    unsigned char stages[MMA_STAGES][MMA_STAGE_BYTES];
    float parts[WARPS_PER_BLOCK][8][MMA_ROWS];
};

// A thread's activation of one trip: bytes 8c..8c+8 of row g and the scales of rows 2c, 2c+1 for
// each of its blocks, block indices clamped to the row so that the ragged trip reads valid, unused
// blocks.
struct mma_trip_x {
    int2 q[MMA_SLOTS];
    float d[MMA_SLOTS][2];
};

template <int M>
static __device__ __forceinline__ mma_trip_x mma_load_x(const signed char * x_row, const float * d0, const float * d1,
                                                         const int t, const int warp, const int c, const int nb) {
    mma_trip_x x;
#pragma unroll
    for (int s = 0; s < MMA_SLOTS; ++s) {
        const int b = min(MMA_TRIP*t + warp + WARPS_PER_BLOCK*s, nb - 1);
        x.q[s] = *(const int2 *) (x_row + b*QK + 8*c);
        x.d[s][0] = d0[b];
        x.d[s][1] = d1[b];
    }
    return x;
}

// A block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... in turn, their trips in one pipeline
// of stages (the next tile's first trips are copied during a tile's last).
template <int M, typename tile_t>
static __device__ __forceinline__ void gemv_q8_0_mma(const tile_t tile, const signed char * __restrict__ xq,
                                                     const float * __restrict__ xd, float * __restrict__ y,
                                                     const int in_f, const int out_f) {
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    mma_shared & sh = *(mma_shared *) dynamic_smem;
    const int warp = threadIdx.x/WARP_SIZE, lane = threadIdx.x%WARP_SIZE;
    const int g = lane/4, c = lane%4;
    const int nb = in_f/QK, trips = (nb + MMA_TRIP - 1)/MMA_TRIP, full = nb/MMA_TRIP;
    const unsigned int stride = gridDim.x*MMA_ROWS, rows = out_f;    // unsigned: row + stride may pass 2^31
    // activation rows past the M read the last: their sums are never stored
    const signed char * x_row = xq + (size_t) min(g, M - 1)*in_f;
    const float * d0 = xd + (size_t) min(2*c, M - 1)*nb;
    const float * d1 = xd + (size_t) min(2*c + 1, M - 1)*nb;

    unsigned int ahead_row = blockIdx.x*MMA_ROWS;    // the next trip to copy
    int ahead_t = 0;
#pragma unroll
    for (int slot = 0; slot < MMA_STAGES - 1; ++slot) {
        if (ahead_row < rows) {
            tile.stage(ahead_row, ahead_t, sh.stages[slot]);
        }
        cp_async_commit();
        if (++ahead_t == trips) {
            ahead_t = 0;
            ahead_row += stride;
        }
    }

    float acc[MMA_SLOTS][4] = {};
    mma_trip_x x = mma_load_x<M>(x_row, d0, d1, 0, warp, c, nb);
    int slot = 0;
    unsigned int row0 = blockIdx.x*MMA_ROWS;
    for (int t = 0; row0 < rows; ) {
        // this trip has landed for this thread; after the barrier for all, and the stage computed
        // last is free for the trip ahead
        cp_async_wait<MMA_STAGES - 2>();
        __syncthreads();
        if (ahead_row < rows) {
            tile.stage(ahead_row, ahead_t, sh.stages[(slot + MMA_STAGES - 1) % MMA_STAGES]);
        }
        cp_async_commit();
        if (++ahead_t == trips) {
            ahead_t = 0;
            ahead_row += stride;
        }
        const bool last = t + 1 == trips;
        const unsigned int next_row = last ? row0 + stride : row0;
        const int next_t = last ? 0 : t + 1;
        // the next trip's activation goes out before this trip's arithmetic
        const mma_trip_x x_next = next_row < rows ? mma_load_x<M>(x_row, d0, d1, next_t, warp, c, nb) : x;

        const unsigned char * buf = sh.stages[slot];
#pragma unroll
        for (int s = 0; s < MMA_SLOTS; ++s) {
            const int n = warp + WARPS_PER_BLOCK*s;
            if (t < full || MMA_TRIP*t + n < nb) {
                int lo[2], hi[2];
                tile.quants(lo, buf, g, n, c);
                tile.quants(hi, buf, g + 8, n, c);
                const int a[4] = {lo[0], hi[0], lo[1], hi[1]};
                const int b[2] = {x.q[s].x, x.q[s].y};
                int sums[4] = {0, 0, 0, 0};
                mma_s8(sums, a, b);
                const float dw[2] = {tile.scale(buf, g, n), tile.scale(buf, g + 8, n)};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    acc[s][j] += dw[j/2]*x.d[s][j%2]*((float) sums[j]);
                }
            }
        }

        if (last) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                sh.parts[warp][2*c + j%2][g + 8*(j/2)] = ((acc[0][j] + acc[4][j]) + (acc[2][j] + acc[6][j]))
                                                       + ((acc[1][j] + acc[5][j]) + (acc[3][j] + acc[7][j]));
#pragma unroll
                for (int s = 0; s < MMA_SLOTS; ++s) {
                    acc[s][j] = 0.0f;
                }
            }
            __syncthreads();
            if (threadIdx.x < M*MMA_ROWS) {
                const int i = threadIdx.x/MMA_ROWS, k = threadIdx.x%MMA_ROWS;
                const float sum = (sh.parts[0][i][k] + sh.parts[2][i][k]) + (sh.parts[1][i][k] + sh.parts[3][i][k]);
                if (row0 + k < rows) {
                    y[(size_t) i*out_f + row0 + k] = sum;
                }
            }
        }
        row0 = next_row;
        t = next_t;
        x = x_next;
        slot = (slot + 1) % MMA_STAGES;
    }
}

template <int M>
static __device__ __forceinline__ void gemv_q8_0_mma_raw(const block_q8_0 * __restrict__ w, const signed char * __restrict__ xq,
                                                         const float * __restrict__ xd, float * __restrict__ y,
                                                         const int in_f, const int out_f) {
    const int row_bytes = in_f/QK*Q8_0_BLOCK_BYTES;
    const mma_rows rows = {out_f};
    if ((((size_t) w | row_bytes) % 16) == 0) {
        const mma_tile_q8_0<true> tile = {(const unsigned char *) w, row_bytes, rows};
        gemv_q8_0_mma<M>(tile, xq, xd, y, in_f, out_f);
    } else {
        const mma_tile_q8_0<false> tile = {(const unsigned char *) w, row_bytes, rows};
        gemv_q8_0_mma<M>(tile, xq, xd, y, in_f, out_f);
    }
}

template <int M>
static __device__ __forceinline__ void gemv_q8_0_mma_planar(const signed char * __restrict__ wq, const unsigned short * __restrict__ wd,
                                                            const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                            float * __restrict__ y, const int in_f, const int out_f) {
    const mma_rows rows = {out_f};
    if ((((size_t) wd | (2*in_f/QK)) % 16) == 0) {
        const mma_tile_q8_0_planar<true> tile = {wq, wd, in_f, rows};
        gemv_q8_0_mma<M>(tile, xq, xd, y, in_f, out_f);
    } else {
        const mma_tile_q8_0_planar<false> tile = {wq, wd, in_f, rows};
        gemv_q8_0_mma<M>(tile, xq, xd, y, in_f, out_f);
    }
}

// ---------------------------------------------------------------------------------------------
// e4m3 at every m on the f16 tensor cores (the same arithmetic at every m, so a row's bits do not
// depend on m).
//
// Each warp (m <= 2) or the block's four warps (m >= 4) take tiles of 2*M weight rows in turn (2*M
// divides TILE, so a tile's rows share their tile scales), MMA_TRIP blocks a row at a time, its trips
// staged MMA_STAGES deep in one pipeline across its tiles, as the Q8_0 kernels above. Of every trip's
// 32 blocks, spans of eight: warp w of a block takes span w, a warp alone all four in turn. Span v is
// blocks n = 8*v + s, in M pairs of mma.m16n8k16, G = 8/M blocks a pair: row a of the pair's A is (tile row a/G,
// block a%G), column j of its B (activation row j/G, block j%G), and only the products of a row and
// a column of one block are kept. Lane (g, c) feeds bytes 8c..8c+8 of its block: bytes 8c..8c+4 to
// the first mma, 8c+4..8c+8 to the second, bytes 0 and 1 of a word as k = 2c, 2c+1 and bytes 2 and 3
// as k = 2c+8, 2c+9 (one k order for both operands). Per (weight row, activation row) and block b:
// s = mma(a2, b2, mma(a1, b1, 0)), acc[b % 32] += s*factor (dx, or dx*g) in ascending b; then the 32
// classes added as a xor butterfly over 32 lanes would, times the tensor's scale.

#define FP8_ROW MMA_QUANT_ROW   // a stage row: the trip's 1024 bytes, padded as the planar rows

// volatile: the compiler may not sink it into the branch that uses its result, which some lanes skip
// in a ragged trip (a .sync.aligned instruction must be executed by the whole warp).
static __device__ __forceinline__ void mma_f16(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// __hsub2(__byte_perm(q ^ 0x80808080, 0x64, ...), 1152): the four int8 of a word as two f16 pairs,
// .x bytes 0-1 and .y bytes 2-3 (v + 128 under the exponent of 1024, minus 1152; exact).
static __device__ __forceinline__ uint2 i8x4_to_f16x4(const int q) {
    const int biased = q ^ 0x80808080;
    const unsigned int lo = __byte_perm(biased, 0x64, 0x4140), hi = __byte_perm(biased, 0x64, 0x4342);
    uint2 h;
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(h.x) : "r"(lo), "r"(0x64806480));
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(h.y) : "r"(hi), "r"(0x64806480));
    return h;
}

// One scale for the tensor, applied to the row's sum.
struct scale_per_tensor {
    float s;
    __device__ float tile(const unsigned int, const int) const { return 1.0f; }
    static __device__ float factor(const float dx, const float) { return dx; }
    __device__ float operator()(const float sum) const { return sum*s; }
};

// One scale per TILE x TILE tile (row-major grid [ceil(out_f/TILE)][ceil(in_f/TILE)]), folded into
// each block's factor.
struct scale_tiles {
    const float * __restrict__ grid;
    int in_f;
    __device__ float tile(const unsigned int row, const int b) const {
        return grid[row/TILE*((in_f + TILE - 1)/TILE) + b*QK/TILE];
    }
    static __device__ float factor(const float dx, const float g) { return dx*g; }
    __device__ float operator()(const float sum) const { return sum; }
};

// A pair's activation for one lane: bytes 8c..8c+8 of its column's block, and the factors of the
// columns whose sums it keeps (zero where it keeps none).
struct fp8_pair_x {
    int2 q;
    float f[2];
};

// Warps that share a tile: up to m = 2 each warp takes tiles of its own (its own stages, no block
// barrier), from m = 4 the block's four warps share one.
static constexpr __device__ int fp8_warps(const int m) {
    return m <= 2 ? 1 : WARPS_PER_BLOCK;
}

template <int M, typename scale_t>
static __device__ __forceinline__ void gemv_e4m3_mma(const unsigned char * __restrict__ w, const scale_t scale,
                                                     const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                     float * __restrict__ y, const int in_f, const int out_f) {
    constexpr int ROWS = 2*M, G = 8/M, STAGE = ROWS*FP8_ROW;
    constexpr int WARPS = fp8_warps(M), GROUPS = WARPS_PER_BLOCK/WARPS, THREADS = WARPS*WARP_SIZE;
    constexpr int V = WARPS_PER_BLOCK/WARPS;     // spans of eight blocks a warp takes of every trip
    constexpr int PARTS = MMA_TRIP*ROWS*M*sizeof(float);
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    const int group = threadIdx.x/THREADS, tid = threadIdx.x % THREADS;
    unsigned char * smem = dynamic_smem + group*(MMA_STAGES*STAGE + PARTS);
    float (*parts)[ROWS][M] = (float (*)[ROWS][M]) (smem + MMA_STAGES*STAGE);   // [MMA_TRIP][ROWS][M]
    const int warp = threadIdx.x/WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int span = V == 1 ? warp : 0;
    const int c = lane%4, slot = lane/4 % G, row = lane/4 / G;    // row: the lane's first A row (the second is M on) and its B column's activation row
    // Of the sums of columns 2c, 2c+1 the lane receives it keeps its own block's: both at G = 1, at
    // most the one of parity g (column 2c + g%2) where G is even.
    constexpr int K = G == 1 ? 2 : 1;
    const int e0 = G == 1 ? 0 : lane/4 % 2;
    const bool keeps = G == 1 || (2*c + e0) % G == slot;
    int col[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        col[k] = (2*c + e0 + k)/G;
    }
    const int nb = in_f/QK, trips = (nb + MMA_TRIP - 1)/MMA_TRIP;
    const unsigned int stride = gridDim.x*GROUPS*ROWS, rows = out_f;    // unsigned: row + stride may pass 2^31
    unsigned int row0 = (blockIdx.x*GROUPS + group)*ROWS;
    if (row0 >= rows) {
        return;
    }
    const auto meet = [] {
        if (WARPS == 1) {
            __syncwarp();
        } else {
            __syncthreads();
        }
    };
    const auto block = [&](const int v, const int p) { return 8*(span + v) + G*p + slot; };

    const auto stage = [&](const unsigned int first, const int t, const int buf) {
        constexpr int per_row = MMA_TRIP*QK/16;
        const int start = t*MMA_TRIP*QK, len = min(in_f - start, MMA_TRIP*QK);
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(smem + buf*STAGE);
#pragma unroll
        for (int p = tid; p < ROWS*per_row; p += THREADS) {
            const int r = p/per_row, at = 16*(p % per_row);
            cp_async_cg_16_if(at < len, dst + r*FP8_ROW + at, w + (size_t) min(first + r, rows - 1)*in_f + start + at);
        }
    };
    const auto load_x = [&](fp8_pair_x (&x)[V][M], const unsigned int first, const int t) {
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < M; ++p) {
                const int b = min(MMA_TRIP*t + block(v, p), nb - 1);
                x[v][p].q = *(const int2 *) (xq + (size_t) row*in_f + b*QK + 8*c);
                if (keeps) {
                    const float g = scale.tile(first, b);
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        x[v][p].f[k] = scale_t::factor(xd[(size_t) col[k]*nb + b], g);
                    }
                }
            }
        }
    };

    unsigned int ahead_row = row0;    // the next trip to copy
    int ahead_t = 0;
#pragma unroll
    for (int s = 0; s < MMA_STAGES - 1; ++s) {
        if (ahead_row < rows) {
            stage(ahead_row, ahead_t, s);
        }
        cp_async_commit();
        if (++ahead_t == trips) {
            ahead_t = 0;
            ahead_row += stride;
        }
    }

    float acc[V][M][2][K] = {};
    fp8_pair_x x[V][M];
    load_x(x, row0, 0);
    int buf = 0;
    for (int t = 0; row0 < rows; ) {
        cp_async_wait<MMA_STAGES - 2>();
        meet();
        if (ahead_row < rows) {
            stage(ahead_row, ahead_t, (buf + MMA_STAGES - 1) % MMA_STAGES);
        }
        cp_async_commit();
        if (++ahead_t == trips) {
            ahead_t = 0;
            ahead_row += stride;
        }
        const bool last = t + 1 == trips;
        const unsigned int next_row = last ? row0 + stride : row0;
        const int next_t = last ? 0 : t + 1;
        fp8_pair_x x_next[V][M];
        if (next_row < rows) {
            load_x(x_next, next_row, next_t);
        }

        const int live = nb - MMA_TRIP*t;
        const unsigned char * stage_buf = smem + buf*STAGE;
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < M; ++p) {
                const int n = block(v, p);
                const unsigned char * at = stage_buf + min(n, live - 1)*QK + 8*c;
                const int2 lo = *(const int2 *) (at + row*FP8_ROW), hi = *(const int2 *) (at + (row + M)*FP8_ROW);
                float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const uint2 wl = e4m3x4_to_f16x4(half ? lo.y : lo.x), wh = e4m3x4_to_f16x4(half ? hi.y : hi.x);
                    const uint2 xb = i8x4_to_f16x4(half ? x[v][p].q.y : x[v][p].q.x);
                    const unsigned int a[4] = {wl.x, wh.x, wl.y, wh.y};
                    const unsigned int b[2] = {xb.x, xb.y};
                    mma_f16(d, a, b);
                }
                if (n < live && keeps) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
#pragma unroll
                        for (int k = 0; k < K; ++k) {
                            const float sum = K == 2 ? d[2*h + k] : e0 ? d[2*h + 1] : d[2*h];    // d in registers
                            acc[v][p][h][k] += sum*x[v][p].f[k];
                        }
                    }
                }
            }
        }

        if (last) {
#pragma unroll
            for (int v = 0; v < V; ++v) {
#pragma unroll
                for (int p = 0; p < M; ++p) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
#pragma unroll
                        for (int k = 0; k < K; ++k) {
                            if (keeps) {
                                parts[block(v, p)][row + h*M][col[k]] = acc[v][p][h][k];
                            }
                            acc[v][p][h][k] = 0.0f;
                        }
                    }
                }
            }
            meet();
            if (tid < ROWS*M) {
                const int k = tid/M, i = tid % M;
                float s[MMA_TRIP];
#pragma unroll
                for (int n = 0; n < MMA_TRIP; ++n) {
                    s[n] = parts[n][k][i];
                }
                // halves of 16, 8, 4, 2, 1: a xor butterfly's order, with constant trip counts
#pragma unroll
                for (int n = 0; n < 16; ++n) { s[n] += s[n + 16]; }
#pragma unroll
                for (int n = 0; n < 8; ++n) { s[n] += s[n + 8]; }
#pragma unroll
                for (int n = 0; n < 4; ++n) { s[n] += s[n + 4]; }
                s[0] += s[2];
                s[1] += s[3];
                s[0] += s[1];
                if (row0 + k < rows) {
                    y[(size_t) i*out_f + row0 + k] = scale(s[0]);
                }
            }
        }
        row0 = next_row;
        t = next_t;
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < M; ++p) {
                x[v][p] = x_next[v][p];
            }
        }
        buf = (buf + 1) % MMA_STAGES;
    }
}

// ---------------------------------------------------------------------------------------------
// Entries: block WARPS_PER_BLOCK*32; grid ceil(out_f / (WARPS_PER_BLOCK*rows_per_warp)) for planar
// Q8_0 at m = 1; any grid of at most that many blocks for the others (ceil(out_f / MMA_ROWS) for the
// Q8_0 kernels at m >= 4, on the tensor cores, with sizeof(mma_shared) bytes of dynamic shared memory).

#define DECL_GEMV_Q8_0(M)                                                                              \
    extern "C" __global__ void gemv_q8_0_m##M(const block_q8_0 * __restrict__ w,                       \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f) {                                 \
        if constexpr (M > 2) {                                                                         \
            gemv_q8_0_mma_raw<M>(w, xq, xd, y, in_f, out_f);                                           \
        } else {                                                                                       \
            gemv_q8_0<M, blocks_per_trip(GEMV_Q8_0, M)>(w, xq, xd, y, in_f, out_f);                    \
        }                                                                                              \
    }

#define DECL_GEMV_Q8_0_PLANAR(M)                                                                       \
    extern "C" __global__ void gemv_q8_0_planar_m##M(const signed char * __restrict__ wq,              \
            const unsigned short * __restrict__ wd, const signed char * __restrict__ xq,               \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f) {  \
        if constexpr (M > 2) {                                                                         \
            gemv_q8_0_mma_planar<M>(wq, wd, xq, xd, y, in_f, out_f);                                   \
        } else {                                                                                       \
            gemv_q8_0_planar<M, blocks_per_trip(GEMV_Q8_0_PLANAR, M)>(wq, wd, xq, xd, y, in_f, out_f); \
        }                                                                                              \
    }

#define DECL_GEMV_E4M3(M)                                                                              \
    extern "C" __global__ void gemv_e4m3_m##M(const unsigned char * __restrict__ w, const float scale, \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f) {                                 \
        gemv_e4m3_mma<M>(w, scale_per_tensor{scale}, xq, xd, y, in_f, out_f);                         \
    }

#define DECL_GEMV_E4M3_B128(M)                                                                         \
    extern "C" __global__ void gemv_e4m3_b128_m##M(const unsigned char * __restrict__ w,               \
            const float * __restrict__ grid, const signed char * __restrict__ xq,                      \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f) {  \
        gemv_e4m3_mma<M>(w, scale_tiles{grid, in_f}, xq, xd, y, in_f, out_f);                         \
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
