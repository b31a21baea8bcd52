// Included by gemv.cu: the e4m3 formats on the f16 tensor cores.

// ---------------------------------------------------------------------------------------------
// e4m3 at every m on the f16 tensor cores (the same arithmetic at every m, so a row's bits do not
// depend on m).
//
// Each warp (m <= 2) or the block's four warps (m >= 4) take tiles of SETS sets of 2*ACT_ROWS
// weight rows in turn (a tile's rows divide TILE, so they share their tile scales), MMA_TRIP blocks
// a row at a time, its trips staged FP8_STAGES deep in one pipeline across its tiles, as the Q8_0
// kernels above. Of every trip's 32 blocks, spans of eight: warp w of a block takes span w, a warp
// alone all four in turn. Span v is blocks n = 8*v + s, in ACT_ROWS pairs of mma.m16n8k16, G =
// 8/ACT_ROWS blocks a pair: row a of the pair's A is (tile row a/G, block a%G), column j of its B
// (activation row j/G, block j%G), and only the products of a row and a column of one block are
// kept; a second set's pairs take the rows 2*ACT_ROWS on against the same B. Lane (g, c) feeds
// bytes 8c..8c+8 of its block: bytes 8c..8c+4 to the first mma, 8c+4..8c+8 to the second, bytes 0
// and 1 of a word as k = 2c, 2c+1 and bytes 2 and 3 as k = 2c+8, 2c+9 (one k order for both
// operands). Per (weight row, activation row) and block b: s = mma(a2, b2, mma(a1, b1, 0)), acc[b %
// 32] += s*factor (dx, or dx*g) in ascending b; then the 32 classes added as a xor butterfly over
// 32 lanes would, times the tensor's scale.

#define FP8_ROW MMA_QUANT_ROW   // a stage row: the trip's 1024 bytes, padded as the planar rows
#define FP8_STAGES 2            // one trip computed while the next is in flight

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

// How the matrix is scaled: stage() copies trip t's tile scales into the stage (thread tid's share)
// and staged() gives block n's of them, factor() what a block's sum is multiplied by (dx, or dx*g),
// of() the factor of the tile's rows of half h (a GLU's gate rows 0..m, up rows m..2m), operator() a
// row's y from its sum.

#define FP8_TRIP_TILES (MMA_TRIP*QK/TILE)   // tile scales of a grid row that a trip's blocks take

// One scale for the tensor (a GLU's gate and up one each), applied to the row's sum.
struct scale_per_tensor {
    float s[2];
    typedef float factor_t;
    static constexpr bool block128 = false;
    __device__ void stage(float *, const unsigned int, const int, const int) const {}
    static __device__ float staged(const float *, const int) { return 1.0f; }
    static __device__ float factor(const float dx, const float) { return dx; }
    static __device__ float of(const float f, const int) { return f; }
    __device__ float operator()(const float sum, const int h) const { return sum*(h ? s[1] : s[0]); }
};

// One scale per TILE x TILE tile (row-major grid [ceil(out_f/TILE)][ceil(in_f/TILE)]), folded into
// each block's factor.
struct scale_tiles {
    const float * __restrict__ grid;
    int in_f;
    typedef float factor_t;
    static constexpr bool block128 = true;
    __device__ void stage(float * g, const unsigned int row, const int t, const int tid) const {
        const int cols = (in_f + TILE - 1)/TILE, c = t*FP8_TRIP_TILES + tid;
        if (tid < FP8_TRIP_TILES) {
            cp_async_ca_4_if(c < cols, (unsigned int) __cvta_generic_to_shared(&g[tid]), grid + row/TILE*cols + c);
        }
    }
    static __device__ float staged(const float * g, const int n) { return g[n*QK/TILE]; }
    static __device__ float factor(const float dx, const float g) { return dx*g; }
    static __device__ float of(const float f, const int) { return f; }
    __device__ float operator()(const float sum, const int) const { return sum; }
};

// A GLU's gate and up grids: a tile's halves take their rows' tile scales, of real row row/2.
struct scale_tiles_glu {
    const float * __restrict__ gate;
    const float * __restrict__ up;
    int in_f;
    typedef float2 factor_t;
    static constexpr bool block128 = true;
    // the gate grid's scales, then the up grid's
    __device__ void stage(float * g, const unsigned int row, const int t, const int tid) const {
        const int cols = (in_f + TILE - 1)/TILE, c = t*FP8_TRIP_TILES + tid % FP8_TRIP_TILES;
        if (tid < 2*FP8_TRIP_TILES) {
            cp_async_ca_4_if(c < cols, (unsigned int) __cvta_generic_to_shared(&g[tid]),
                             (tid < FP8_TRIP_TILES ? gate : up) + row/2/TILE*cols + c);
        }
    }
    static __device__ float2 staged(const float * g, const int n) {
        return make_float2(g[n*QK/TILE], g[FP8_TRIP_TILES + n*QK/TILE]);
    }
    static __device__ float2 factor(const float dx, const float2 g) { return make_float2(dx*g.x, dx*g.y); }
    static __device__ float of(const float2 f, const int h) { return h ? f.y : f.x; }
    __device__ float operator()(const float sum, const int) const { return sum; }
};

// A pair's activation for one lane, where it is not staged: bytes 8c..8c+8 of its column's block, and
// the block scales of the columns whose sums it keeps (zero where it keeps none).
struct fp8_pair_x {
    int2 q;
    float dx[2];
};

// Warps that share a tile: up to m = 2 each warp takes tiles of its own (its own stages, no block
// barrier), from m = 4 the block's four warps share one.
static constexpr __device__ int fp8_warps(const int m) {
    return m <= 2 ? 1 : WARPS_PER_BLOCK;
}

// Row sets of a plain kernel's tile: sets of 2*m rows whose pairs read one activation fragment and its
// factors; two for block-128 at m = 1, where a pair's activation, tile scale and factor are as much work
// as its weights' decode (a GLU takes one). FP8_SETS_MIN_BLOCKS: the blocks an SM the two-set entries
// declare, as many as the launcher's grid gives an SM, so that the whole grid stays resident.
static constexpr __device__ int fp8_sets(const bool block128, const int m) {
    return block128 && m == 1 ? 2 : 1;
}
#define FP8_SETS_MIN_BLOCKS 6

// At m = 8 a stage holds the trip's activation rows after the tile's (laid out as the Q8_0 kernels'
// stages), then its tile scales: a warp's global load of its activation bytes touches a line for each
// row, and each factor load as many; below, each lane loads its own a trip ahead into registers.
static constexpr __device__ bool fp8_x_staged(const int m) { return m >= 8; }

#define MMA_X_TILES 64    // the trip's tile scales in a stage: a GLU's 8 of each grid (per-tensor: unused)

template <int X_ROWS>
struct fp8_stage_x {
    unsigned char xq[X_ROWS][MMA_X_QUANT_ROW];
    float xd[X_ROWS][MMA_X_SCALE_ROW/4];
    float g[MMA_X_TILES/4];
};

// A launch's dynamic shared memory (the launcher's gemv::fp8_mma_shared_bytes): per group of warps,
// the stages of the tile's 2*m*sets rows (and of the activation rows where they are staged) and of the
// trip's tile scales, then the tile's sums of each of a trip's block classes for every (tile row,
// activation row).
static constexpr __device__ int fp8_shared_bytes(const int m, const int sets) {
    const int x = (fp8_x_staged(m) ? m*(MMA_X_QUANT_ROW + MMA_X_SCALE_ROW) : 0) + MMA_X_TILES;
    return WARPS_PER_BLOCK/fp8_warps(m)*(FP8_STAGES*(2*m*sets*FP8_ROW + x) + MMA_TRIP*2*m*sets*m*(int) sizeof(float));
}

// out_f: the launch's rows. A GLU (w its gate matrix, w_up its up matrix) counts both as one matrix
// of out_f = 2n rows whose tile at row0 holds gate rows row0/2 .. row0/2 + ACT_ROWS and then the up
// rows of the same indices; lanes 2t and 2t+1 add a gate row's and its up row's classes, and the gate
// lane stores swiglu1 of the two.
template <int ACT_ROWS, bool GLU, typename scale_t>
static __device__ __forceinline__ void gemv_e4m3_mma(const unsigned char * __restrict__ w, const unsigned char * __restrict__ w_up,
                                                     const scale_t scale, const signed char * __restrict__ xq,
                                                     const float * __restrict__ xd, const gemv_out y,
                                                     const int in_f, const unsigned int out_f, const unsigned int live) {
    constexpr bool XSTAGED = fp8_x_staged(ACT_ROWS);
    typedef fp8_stage_x<XSTAGED ? ACT_ROWS : 1> stage_x;
    constexpr int SETS = GLU ? 1 : fp8_sets(scale_t::block128, ACT_ROWS), ROWS = 2*ACT_ROWS*SETS, G = 8/ACT_ROWS;
    constexpr int STAGE = ROWS*FP8_ROW + (XSTAGED ? (int) sizeof(stage_x) : MMA_X_TILES);
    constexpr int WARPS = fp8_warps(ACT_ROWS), GROUPS = WARPS_PER_BLOCK/WARPS, THREADS = WARPS*WARP_SIZE;
    constexpr int V = WARPS_PER_BLOCK/WARPS;     // spans of eight blocks a warp takes of every trip
    constexpr int PARTS = MMA_TRIP*ROWS*ACT_ROWS*sizeof(float);
    static_assert(GROUPS*(FP8_STAGES*STAGE + PARTS) == fp8_shared_bytes(ACT_ROWS, SETS), "the launch's bytes");
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    const int group = threadIdx.x/THREADS, tid = threadIdx.x % THREADS;
    unsigned char * smem = dynamic_smem + group*(FP8_STAGES*STAGE + PARTS);
    float (*parts)[ROWS][ACT_ROWS] = (float (*)[ROWS][ACT_ROWS]) (smem + FP8_STAGES*STAGE);   // [MMA_TRIP][ROWS][ACT_ROWS]
    const int warp = threadIdx.x/WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int span = V == 1 ? warp : 0;
    const int c = lane%4, slot = lane/4 % G, row = lane/4 / G;    // row: the lane's first A row (the second is ACT_ROWS on) and its B column's activation row
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
    // the activation rows the lane reads: from live (live_rows) on, row live - 1 (never stored)
    const int xrow = ACT_ROWS > 2 ? min(row, (int) live - 1) : row;
    int xcol[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        xcol[k] = ACT_ROWS > 2 ? min(col[k], (int) live - 1) : col[k];
    }
    const signed char * xq_row = xq + (size_t) xrow*in_f + 8*c;    // the lane's 8 bytes of its activation row's blocks
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
    const auto row_at = [&](const unsigned int first, const int r) {    // tile row r's start, clamped
        if (!GLU) {
            return w + (size_t) min(first + r, rows - 1)*in_f;
        }
        const bool is_up = r >= ACT_ROWS;
        return (is_up ? w_up : w) + (size_t) min(first/2 + (is_up ? r - ACT_ROWS : r), rows/2 - 1)*in_f;
    };

    // the stage's tile scales: after the activation where it is staged, else after the tile's rows
    const auto tiles = [&](const int buf) {
        unsigned char * at = smem + buf*STAGE + ROWS*FP8_ROW;
        return XSTAGED ? ((stage_x *) at)->g : (float *) at;
    };
    const auto stage_w = [&](const unsigned int first, const int t, const int buf) {
        constexpr int per_row = MMA_TRIP*QK/16;
        const int start = t*MMA_TRIP*QK, len = min(in_f - start, MMA_TRIP*QK);
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(smem + buf*STAGE);
#pragma unroll
        for (int p = tid; p < ROWS*per_row; p += THREADS) {
            const int r = p/per_row, at = 16*(p % per_row);
            cp_async_cg_16_if(at < len, dst + r*FP8_ROW + at, row_at(first, r) + start + at);
        }
    };
    const auto stage_act = [&](const unsigned int first, const int t, const int buf) {
        if constexpr (XSTAGED) {
            stage_x & sx = *(stage_x *) (smem + buf*STAGE + ROWS*FP8_ROW);
            mma_stage_x<ACT_ROWS>(sx, xq, xd, t, nb, live);
        }
        scale.stage(tiles(buf), first, t, tid);    // 4-byte copies through L1: after the wait, as the activation's
    };
    const auto stage = [&](const unsigned int first, const int t, const int buf) {
        stage_w(first, t, buf);
        stage_act(first, t, buf);
    };
    const auto load_x = [&](fp8_pair_x (&x)[V][ACT_ROWS], const int t) {
        if constexpr (XSTAGED) {
            return;
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < ACT_ROWS; ++p) {
                const int b = min(MMA_TRIP*t + block(v, p), nb - 1);
                x[v][p].q = __ldca((const int2 *) (xq_row + b*QK));    // see load_activation
                if (keeps) {
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        x[v][p].dx[k] = __ldca(xd + (size_t) xcol[k]*nb + b);
                    }
                }
            }
        }
    };

    // The first stages' weights, which no kernel before this one writes, go out before the wait
    // for it, their activation after; the first commit group holds every first stage's weights.
    trip_cursor ahead = {row0, 0};    // the next trip to copy
#pragma unroll
    for (int s = 0; s < FP8_STAGES - 1; ++s) {
        if (ahead.row < rows) {
            stage_w(ahead.row, ahead.t, s);
        }
        ahead = ahead.next(trips, stride);
    }
    chain_wait();
    ahead = {row0, 0};
#pragma unroll
    for (int s = 0; s < FP8_STAGES - 1; ++s) {
        if (ahead.row < rows) {
            stage_act(ahead.row, ahead.t, s);
        }
        cp_async_commit();
        ahead = ahead.next(trips, stride);
    }

    float acc[V][ACT_ROWS][SETS][2][K] = {};
    fp8_pair_x x[V][ACT_ROWS];
    load_x(x, 0);
    int buf = 0;
    for (trip_cursor cur = {row0, 0}; cur.row < rows; ) {
        cp_async_wait<FP8_STAGES - 2>();
        meet();
        if (ahead.row < rows) {
            stage(ahead.row, ahead.t, (buf + FP8_STAGES - 1) % FP8_STAGES);
        }
        cp_async_commit();
        ahead = ahead.next(trips, stride);
        const trip_cursor next = cur.next(trips, stride);
        const bool last = next.t == 0;
        fp8_pair_x x_next[V][ACT_ROWS];
        if (next.row < rows) {
            load_x(x_next, next.t);
        }

        const int blocks = nb - MMA_TRIP*cur.t;    // of the trip, in the row (not the live rows)
        const unsigned char * stage_buf = smem + buf*STAGE;
        const stage_x & sx = *(const stage_x *) (stage_buf + ROWS*FP8_ROW);
        const float * g = tiles(buf);
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < ACT_ROWS; ++p) {
                const int n = block(v, p);
                const unsigned char * at = stage_buf + min(n, blocks - 1)*QK + 8*c;
                const int2 xv = XSTAGED ? *(const int2 *) &sx.xq[row][min(n, blocks - 1)*QK + 8*c] : x[v][p].q;
                const uint2 xb[2] = {i8x4_to_f16x4(xv.x), i8x4_to_f16x4(xv.y)};
#pragma unroll
                for (int q = 0; q < SETS; ++q) {
                    const int r = row + 2*ACT_ROWS*q;
                    const int2 lo = *(const int2 *) (at + r*FP8_ROW), hi = *(const int2 *) (at + (r + ACT_ROWS)*FP8_ROW);
                    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint2 wl = e4m3x4_to_f16x4(half ? lo.y : lo.x), wh = e4m3x4_to_f16x4(half ? hi.y : hi.x);
                        const unsigned int a[4] = {wl.x, wh.x, wl.y, wh.y};
                        const unsigned int b[2] = {xb[half].x, xb[half].y};
                        mma_f16(d, a, b);
                    }
                    if (n < blocks && keeps) {
                        typename scale_t::factor_t f[K];
#pragma unroll
                        for (int k = 0; k < K; ++k) {
                            f[k] = scale_t::factor(XSTAGED ? sx.xd[col[k]][n] : x[v][p].dx[k], scale_t::staged(g, n));
                        }
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
#pragma unroll
                            for (int k = 0; k < K; ++k) {
                                const float sum = K == 2 ? d[2*h + k] : e0 ? d[2*h + 1] : d[2*h];    // d in registers
                                acc[v][p][q][h][k] += sum*scale_t::of(f[k], h);
                            }
                        }
                    }
                }
            }
        }

        if (last) {
#pragma unroll
            for (int v = 0; v < V; ++v) {
#pragma unroll
                for (int p = 0; p < ACT_ROWS; ++p) {
#pragma unroll
                    for (int q = 0; q < SETS; ++q) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
#pragma unroll
                            for (int k = 0; k < K; ++k) {
                                if (keeps) {
                                    parts[block(v, p)][row + (2*q + h)*ACT_ROWS][col[k]] = acc[v][p][q][h][k];
                                }
                                acc[v][p][q][h][k] = 0.0f;
                            }
                        }
                    }
                }
            }
            meet();
            // the 32 classes of tile row k against activation row i, halves of 16, 8, 4, 2, 1: a xor
            // butterfly's order, with constant trip counts
            const auto classes = [&](const int k, const int i) {
                float s[MMA_TRIP];
#pragma unroll
                for (int n = 0; n < MMA_TRIP; ++n) {
                    s[n] = parts[n][k][i];
                }
#pragma unroll
                for (int n = 0; n < 16; ++n) { s[n] += s[n + 16]; }
#pragma unroll
                for (int n = 0; n < 8; ++n) { s[n] += s[n + 8]; }
#pragma unroll
                for (int n = 0; n < 4; ++n) { s[n] += s[n + 4]; }
                s[0] += s[2];
                s[1] += s[3];
                return s[0] + s[1];
            };
            if (!GLU && tid < ROWS*ACT_ROWS) {
                const int k = tid/ACT_ROWS, i = tid % ACT_ROWS;
                if (cur.row + k < rows && (ACT_ROWS <= 2 || i < live)) {
                    y(i, cur.row + k) = scale(classes(k, i), 0);
                }
            } else if (GLU) {
                const int t = tid/2, h = tid % 2, k = t/ACT_ROWS, i = t % ACT_ROWS;
                const float sum = tid < ROWS*ACT_ROWS ? scale(classes(k + h*ACT_ROWS, i), h) : 0.0f;
                const float up = __shfl_xor_sync(0xffffffff, sum, 1);
                const unsigned int n = rows/2, row = cur.row/2 + k;
                if (h == 0 && tid < ROWS*ACT_ROWS && row < n && (ACT_ROWS <= 2 || i < live)) {
                    y.y[(size_t) i*n + row] = swiglu1(sum, up);
                }
            }
        }
        cur = next;
#pragma unroll
        for (int v = 0; v < V; ++v) {
#pragma unroll
            for (int p = 0; p < ACT_ROWS; ++p) {
                x[v][p] = x_next[v][p];
            }
        }
        buf = (buf + 1) % FP8_STAGES;
    }
}
