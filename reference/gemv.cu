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

#include "chain.cuh"
#include "swiglu1.cuh"

// A probe's hook at the Q8_0 kernels' events (0 entry; 1 trip t of the tile at row landed; 2 its
// arithmetic done; 3 the tile stored; 4 exit): nothing, unless a file that includes this one defines
// it first (scripts/gemv-phases.cu stamps the time).
#ifndef GEMV_STAMP
#define GEMV_STAMP(event, row, t)
#endif

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

#if __CUDA_ARCH__ < 890
// cuda_fp8.hpp's decode for the targets without cvt.rn.f16x2.e4m3x2, the same bits written as the
// Rust build's (device/src/e4m3.rs): both bytes spread into the halves, their fields up 7 bits
// times 2^8 as f16 (exact), the signs, and the NaN codes (fields 0x3F80) to 0x7FFF.
static __device__ __forceinline__ unsigned int e4m3x2_to_f16x2(const unsigned short pair) {
    unsigned int h;
    asm("{\n\t"
        ".reg .b32 x, f, n, s;\n\t"
        "cvt.u32.u16 x, %1;\n\t"
        "prmt.b32 x, x, 0, 0x4140;\n\t"
        "and.b32 f, x, 0x007F007F;\n\t"
        "shl.b32 f, f, 7;\n\t"
        "add.u32 n, f, 0x00800080;\n\t"
        "and.b32 n, n, 0x40004000;\n\t"
        "shr.u32 n, n, 14;\n\t"
        "mul.lo.u32 n, n, 0xFFFF;\n\t"
        "mov.b32 s, 0x5C005C00;\n\t"
        "mul.rn.f16x2 f, f, s;\n\t"
        "and.b32 s, x, 0x00800080;\n\t"
        "shl.b32 s, s, 8;\n\t"
        "or.b32 f, f, s;\n\t"
        "and.b32 s, n, 0x7FFF7FFF;\n\t"
        "not.b32 n, n;\n\t"
        "and.b32 f, f, n;\n\t"
        "or.b32 %0, f, s;\n\t"
        "}" : "=r"(h) : "h"(pair));
    return h;
}
#endif

// __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3) on both byte pairs of a word: .x gets bytes 0-1 and
// .y bytes 2-3, the lower byte in the lower half; both NaN codes give the f16 NaN 0x7FFF.
static __device__ __forceinline__ uint2 e4m3x4_to_f16x4(const int w) {
    uint2 h;
#if __CUDA_ARCH__ >= 890
    asm("{\n\t"
        ".reg .b16 lo, hi;\n\t"
        "mov.b32 {lo, hi}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, lo;\n\t"
        "cvt.rn.f16x2.e4m3x2 %1, hi;\n\t"
        "}" : "=r"(h.x), "=r"(h.y) : "r"(w));
#else
    h.x = e4m3x2_to_f16x2((unsigned short) w);
    h.y = e4m3x2_to_f16x2((unsigned short) ((unsigned int) w >> 16));
#endif
    return h;
}

// ggml-cuda's cp_async_cg_16 (sm_80+: 16 bytes global -> shared, not through registers or L1) if
// copy, as one predicated instruction (no branch around the asm).
static __device__ __forceinline__ void cp_async_cg_16_if(const bool copy, const unsigned int dst, const void * src) {
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.u32 p, %0, 0;\n\t"
                 "@p cp.async.cg.shared.global [%1], [%2], 16;\n\t"
                 "}" : : "r"((unsigned int) copy), "r"(dst), "l"(__cvta_generic_to_global(src)));
}

// cp_async_cg_16_if through L1: for data every block of an SM copies alike (the staged activation).
static __device__ __forceinline__ void cp_async_ca_16_if(const bool copy, const unsigned int dst, const void * src) {
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.u32 p, %0, 0;\n\t"
                 "@p cp.async.ca.shared.global [%1], [%2], 16;\n\t"
                 "}" : : "r"((unsigned int) copy), "r"(dst), "l"(__cvta_generic_to_global(src)));
}

// A 4-byte copy, for data only 4-byte aligned (a float of a row of floats).
static __device__ __forceinline__ void cp_async_ca_4_if(const bool copy, const unsigned int dst, const void * src) {
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.u32 p, %0, 0;\n\t"
                 "@p cp.async.ca.shared.global [%1], [%2], 4;\n\t"
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

// A warp's row (clamped into the matrix) and its lane's blocks.
struct warp_rows {
    int lane, row0, out_f, nb;

    __device__ int row() const { return min(row0, out_f - 1); }
    template <int TRIP_BLOCKS> __device__ int trips() const { return (nb + WARP_SIZE*TRIP_BLOCKS - 1) / (WARP_SIZE*TRIP_BLOCKS); }
    template <int TRIP_BLOCKS> __device__ int block(const int t, const int u) const { return lane + WARP_SIZE*(t*TRIP_BLOCKS + u); }
    __device__ bool live(const int b) const { return b < nb; }

    // Every trip of the row: the full ones (every block of every lane in the row: all loads first,
    // then the arithmetic), then the ragged one if there is one (block by block).
    template <int TRIP_BLOCKS, typename body_t>
    __device__ void run(body_t & body) const {
        const int full = nb / (WARP_SIZE*TRIP_BLOCKS);
        for (int t = 0; t < full; ++t) {
            body.template trip<true>(t);
        }
        if (full < trips<TRIP_BLOCKS>()) {
            body.template trip<false>(full);
        }
    }
};

// This warp's index in the launch: its first row group, and its place in a grid-stride loop.
static __device__ __forceinline__ int warp_index() {
    return blockIdx.x*WARPS_PER_BLOCK + threadIdx.x/WARP_SIZE;
}

// Row g of the matrix; false if there is none.
static __device__ __forceinline__ bool warp_rows_at(warp_rows & wr, const int g, const int in_f, const int out_f) {
    wr.lane  = threadIdx.x % WARP_SIZE;
    wr.row0  = g;
    wr.out_f = out_f;
    wr.nb    = in_f/QK;
    return wr.row0 < out_f;
}

// This warp's row in a launch of one row per warp.
static __device__ __forceinline__ bool warp_rows_init(warp_rows & wr, const int in_f, const int out_f) {
    return warp_rows_at(wr, warp_index(), in_f, out_f);
}

template <int ACT_ROWS>
static __device__ __forceinline__ void load_activation(q8_block (&x)[ACT_ROWS], const int b,
                                                       const signed char * __restrict__ xq,
                                                       const float * __restrict__ xd, const int in_f) {
    // through L1 (ld.global.ca), not the read-only path: a programmatic dependent reads the
    // activation while the kernel that wrote it may still be running, until its chain_wait(), and
    // ptxas may move a read-only load above that wait
#pragma unroll
    for (int i = 0; i < ACT_ROWS; ++i) {
        const int4 * p4 = (const int4 *) (xq + (size_t) i*in_f + b*QK);
        const int4 lo = __ldca(p4), hi = __ldca(p4 + 1);
        x[i].q[0] = lo.x; x[i].q[1] = lo.y; x[i].q[2] = lo.z; x[i].q[3] = lo.w;
        x[i].q[4] = hi.x; x[i].q[5] = hi.y; x[i].q[6] = hi.z; x[i].q[7] = hi.w;
        x[i].d = __ldca(xd + (size_t) i*(in_f/QK) + b);
    }
}

// Where a plain entry's output rows go (gemv::outputs): up to three [m][rows] parts of y, back to
// back, holding the rows 0..part1, part1..part2 and part2..out_f; one [m][out_f] matrix where
// part1 = part2 = out_f (a GLU's, whose stores index y themselves).
struct gemv_out {
    float * __restrict__ y;
    unsigned int part1, part2, out_f, m;

    __device__ float & operator()(const unsigned int i, const unsigned int r) const {
        const unsigned int first = r >= part2 ? part2 : r >= part1 ? part1 : 0;
        const unsigned int end   = r >= part2 ? out_f : r >= part1 ? part2 : part1;
        return y[(size_t) m*first + (size_t) i*(end - first) + (r - first)];
    }
};

template <int ACT_ROWS, typename finish_t>
static __device__ __forceinline__ void store_rows(const gemv_out y, const warp_rows & wr,
                                                  const float (&acc)[ACT_ROWS], const finish_t finish) {
#pragma unroll
    for (int i = 0; i < ACT_ROWS; ++i) {
        const float sum = warp_reduce_sum(acc[i]);
        if (wr.lane == 0 && wr.row0 < wr.out_f) {
            y(i, wr.row0) = finish(sum);
        }
    }
}

// A place in a tensor-core pipeline: a tile (its first row) and a trip over it. Tiles are taken
// a grid stride apart, each trip after trip.
struct trip_cursor {
    unsigned int row;
    int t;
    __device__ trip_cursor next(const int trips, const unsigned int stride) const {
        return t + 1 == trips ? trip_cursor{row + stride, 0} : trip_cursor{row, t + 1};
    }
};

// The activation rows an entry stamped for ACT_ROWS reads and writes (gemv::live_rows): m from four
// rows on (ACT_ROWS/2 < m <= ACT_ROWS; the rows past it read row m - 1 and are never stored), exactly
// ACT_ROWS below, as a constant.
template <int ACT_ROWS>
static __device__ __forceinline__ unsigned int live_rows(const int m) {
    return ACT_ROWS > 2 ? (unsigned int) m : ACT_ROWS;
}

#include "gemv/q8_0.cuh"
#include "gemv/q8_0_mma.cuh"
#include "gemv/e4m3_mma.cuh"

// ---------------------------------------------------------------------------------------------
// Entries: block WARPS_PER_BLOCK*32; grid ceil(out_f / WARPS_PER_BLOCK) (a row a warp) for planar
// Q8_0 at m = 1; any grid of at most that many blocks for the others (ceil(out_f / MMA_ROWS) for the
// Q8_0 kernels at m >= 4, on the tensor cores, with sizeof(mma_shared<m>) bytes of dynamic shared memory).

// A plain entry's outputs (gemv_out) at its live rows.
#define GEMV_OUT(ACT_ROWS) gemv_out{y, (unsigned int) part1, (unsigned int) part2, (unsigned int) out_f, live_rows<ACT_ROWS>(m)}
// A GLU's outputs: one [m][out_f] matrix.
#define GEMV_GLU_OUT(ACT_ROWS) gemv_out{y, (unsigned int) out_f, (unsigned int) out_f, (unsigned int) out_f, live_rows<ACT_ROWS>(m)}

#define DECL_GEMV_Q8_0(ACT_ROWS)                                                                       \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, ACT_ROWS > 2 ? MMA_MIN_BLOCKS : 1)       \
    gemv_q8_0_m##ACT_ROWS(const block_q8_0 * __restrict__ w,                                           \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f, const int m,                      \
            const int part1, const int part2) {                                                        \
        chain_trigger();                                                                               \
        if constexpr (ACT_ROWS > 2) {                                                                  \
            gemv_q8_0_mma_raw<ACT_ROWS, false>(w, w, xq, xd, GEMV_OUT(ACT_ROWS), in_f, out_f,          \
                                               live_rows<ACT_ROWS>(m));                                \
        } else {                                                                                       \
            gemv_q8_0<ACT_ROWS, blocks_per_trip(GEMV_Q8_0, ACT_ROWS)>(w, xq, xd, GEMV_OUT(ACT_ROWS),   \
                                                                      in_f, out_f);                    \
        }                                                                                              \
    }

#define DECL_GEMV_Q8_0_PLANAR(ACT_ROWS)                                                                \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, ACT_ROWS > 2 ? MMA_MIN_BLOCKS : PLANAR_MIN_BLOCKS) \
    gemv_q8_0_planar_m##ACT_ROWS(const signed char * __restrict__ wq,                                  \
            const unsigned short * __restrict__ wd, const signed char * __restrict__ xq,               \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f,    \
            const int m, const int part1, const int part2) {                                           \
        chain_trigger();                                                                               \
        if constexpr (ACT_ROWS > 2) {                                                                  \
            gemv_q8_0_mma_planar<ACT_ROWS, false>(wq, wd, wq, wd, xq, xd, GEMV_OUT(ACT_ROWS), in_f,    \
                                                  out_f, live_rows<ACT_ROWS>(m));                      \
        } else {                                                                                       \
            gemv_q8_0_planar<ACT_ROWS, blocks_per_trip(GEMV_Q8_0_PLANAR, ACT_ROWS)>(wq, wd, xq, xd,    \
                                                                    GEMV_OUT(ACT_ROWS), in_f, out_f);  \
        }                                                                                              \
    }

#define DECL_GEMV_E4M3(ACT_ROWS)                                                                       \
    extern "C" __global__ void gemv_e4m3_m##ACT_ROWS(const unsigned char * __restrict__ w,             \
            const float scale, const signed char * __restrict__ xq, const float * __restrict__ xd,     \
            float * __restrict__ y, const int in_f, const int out_f, const int m,                      \
            const int part1, const int part2) {                                                        \
        chain_trigger();                                                                               \
        gemv_e4m3_mma<ACT_ROWS, false>(w, w, scale_per_tensor{{scale, scale}}, xq, xd,                 \
                                       GEMV_OUT(ACT_ROWS), in_f, out_f, live_rows<ACT_ROWS>(m));       \
    }

// BOUNDS: the two-set entry's launch bounds (fp8_sets), none for the others.
#define DECL_GEMV_E4M3_B128(ACT_ROWS, BOUNDS)                                                          \
    extern "C" __global__ void BOUNDS gemv_e4m3_b128_m##ACT_ROWS(const unsigned char * __restrict__ w, \
            const float * __restrict__ grid, const signed char * __restrict__ xq,                      \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f,    \
            const int m, const int part1, const int part2) {                                           \
        chain_trigger();                                                                               \
        gemv_e4m3_mma<ACT_ROWS, false>(w, w, scale_tiles{grid, in_f}, xq, xd, GEMV_OUT(ACT_ROWS),      \
                                       in_f, out_f, live_rows<ACT_ROWS>(m));                           \
    }

// The GLU entries: y[i][r] = swiglu1(gate row r's y, up row r's y) over out_f rows of each matrix,
// on the tensor cores at every m (out_f at most 2^30: the launch counts 2*out_f rows).

#define DECL_GEMV_Q8_0_GLU(ACT_ROWS)                                                                   \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, MMA_MIN_BLOCKS)                          \
    gemv_q8_0_glu_m##ACT_ROWS(const block_q8_0 * __restrict__ wg,                                      \
            const block_q8_0 * __restrict__ wu, const signed char * __restrict__ xq,                   \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f, const int m) {  \
        chain_trigger();                                                                               \
        gemv_q8_0_mma_raw<ACT_ROWS, true>(wg, wu, xq, xd, GEMV_GLU_OUT(ACT_ROWS), in_f, 2u*out_f,      \
                                          live_rows<ACT_ROWS>(m));                                     \
    }

#define DECL_GEMV_Q8_0_PLANAR_GLU(ACT_ROWS)                                                            \
    extern "C" __global__ void __launch_bounds__(MMA_THREADS, MMA_MIN_BLOCKS)                          \
    gemv_q8_0_planar_glu_m##ACT_ROWS(const signed char * __restrict__ wgq,                             \
            const unsigned short * __restrict__ wgd, const signed char * __restrict__ wuq,             \
            const unsigned short * __restrict__ wud, const signed char * __restrict__ xq,              \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f, const int m) {  \
        chain_trigger();                                                                               \
        gemv_q8_0_mma_planar<ACT_ROWS, true>(wgq, wgd, wuq, wud, xq, xd, GEMV_GLU_OUT(ACT_ROWS), in_f, \
                                             2u*out_f, live_rows<ACT_ROWS>(m));                        \
    }

#define DECL_GEMV_E4M3_GLU(ACT_ROWS)                                                                   \
    extern "C" __global__ void gemv_e4m3_glu_m##ACT_ROWS(const unsigned char * __restrict__ wg,        \
            const float gate_scale, const unsigned char * __restrict__ wu, const float up_scale,       \
            const signed char * __restrict__ xq, const float * __restrict__ xd,                        \
            float * __restrict__ y, const int in_f, const int out_f, const int m) {                                 \
        chain_trigger();                                                                               \
        gemv_e4m3_mma<ACT_ROWS, true>(wg, wu, scale_per_tensor{{gate_scale, up_scale}}, xq, xd,        \
                                      GEMV_GLU_OUT(ACT_ROWS), in_f, 2u*out_f, live_rows<ACT_ROWS>(m)); \
    }

#define DECL_GEMV_E4M3_B128_GLU(ACT_ROWS)                                                              \
    extern "C" __global__ void gemv_e4m3_b128_glu_m##ACT_ROWS(const unsigned char * __restrict__ wg,   \
            const float * __restrict__ gate_grid, const unsigned char * __restrict__ wu,               \
            const float * __restrict__ up_grid, const signed char * __restrict__ xq,                   \
            const float * __restrict__ xd, float * __restrict__ y, const int in_f, const int out_f, const int m) {  \
        chain_trigger();                                                                               \
        gemv_e4m3_mma<ACT_ROWS, true>(wg, wu, scale_tiles_glu{gate_grid, up_grid, in_f}, xq, xd,       \
                                      GEMV_GLU_OUT(ACT_ROWS), in_f, 2u*out_f, live_rows<ACT_ROWS>(m)); \
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

DECL_GEMV_E4M3_B128(1, __launch_bounds__(MMA_THREADS, FP8_SETS_MIN_BLOCKS))
DECL_GEMV_E4M3_B128(2, )
DECL_GEMV_E4M3_B128(4, )
DECL_GEMV_E4M3_B128(8, )

DECL_GEMV_Q8_0_GLU(1)
DECL_GEMV_Q8_0_GLU(2)
DECL_GEMV_Q8_0_GLU(4)
DECL_GEMV_Q8_0_GLU(8)

DECL_GEMV_Q8_0_PLANAR_GLU(1)
DECL_GEMV_Q8_0_PLANAR_GLU(2)
DECL_GEMV_Q8_0_PLANAR_GLU(4)
DECL_GEMV_Q8_0_PLANAR_GLU(8)

DECL_GEMV_E4M3_GLU(1)
DECL_GEMV_E4M3_GLU(2)
DECL_GEMV_E4M3_GLU(4)
DECL_GEMV_E4M3_GLU(8)

DECL_GEMV_E4M3_B128_GLU(1)
DECL_GEMV_E4M3_B128_GLU(2)
DECL_GEMV_E4M3_B128_GLU(4)
DECL_GEMV_E4M3_B128_GLU(8)
