// Included by gemv.cu: the Q8_0 formats on the int8 tensor cores.

// ---------------------------------------------------------------------------------------------
// Q8_0 at m >= 4 on the int8 tensor cores, with the CUDA-core kernels' bits (the same bits: at m <= 2
// the CUDA-core kernels are the faster).
//
// A block of four warps takes tiles of MMA_ROWS weight rows in turn (the last tile's surplus rows
// repeat the last row and store nothing), MMA_TRIP blocks a row at a time, its trips staged in
// shared memory mma_stages(m) deep in one pipeline across its tiles. Warp w takes blocks n = w + 4*s of
// every trip, one mma.m16n8k32 (s8) a block: the tile's rows as a, the activation rows as b (columns
// m..7 never stored); lane (g, c) feeds bytes 8c..8c+8 of block n of weight rows g and g+8 and of
// activation row g (one k order for both) and gets the exact block sums of weight rows g, g+8
// against activation rows 2c, 2c+1. Block b = 32*t + n is butterfly lane n's in the CUDA-core
// kernel, so acc[s] holds lane w + 4*s's accumulators and takes the same acc += dw*dx*(float) sumi;
// the butterfly's offsets 16, 8, 4 pair s^4, s^2, s^1 (summed in the thread) and 2, 1 pair warps
// w^2, w^1 (summed through shared memory).

#define MMA_ROWS 16             // weight rows of a tile: the mma's m
#define MMA_TRIP 32             // blocks of a tile row per trip
#define MMA_SLOTS (MMA_TRIP/WARPS_PER_BLOCK)
#define MMA_THREADS (WARPS_PER_BLOCK*WARP_SIZE)
#define MMA_RAW_ROW 1120        // a raw row's 1088 trip bytes, padded to spread the fragment reads over the banks
#define MMA_QUANT_ROW 1056      // a planar row's 1024 quants, padded
#define MMA_SCALE_ROW 80        // a planar row's 64 scale bytes, padded; after all rows' quants
#define MMA_STAGE_BYTES (MMA_ROWS*(MMA_QUANT_ROW + MMA_SCALE_ROW))     // the larger layout
#define MMA_MAIN 1024           // a row's trip is copied as 1024 bytes, then 64 more
#define MMA_TAIL 64
#define MMA_X_QUANT_ROW 1056    // an activation row's 1024 trip quants in a stage, padded like MMA_QUANT_ROW
#define MMA_X_SCALE_ROW 144     // its 32 block scales, padded; after all rows' quants
#define MMA_MIN_BLOCKS 3        // blocks an SM declared: as many as the stages leave room for at every m

static __device__ __forceinline__ void mma_s8(int (&d)[4], const int (&a)[4], const int (&b)[2]) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The launch's rows: one matrix's out_f, or (half > 0) a GLU's gate and up matrices of out_f/2 rows
// each, counted as one of out_f rows: the tile at row0 holds gate rows row0/2 .. row0/2 + half, then
// the up rows of the same indices, so that the thread adding a gate row's sum adds its up row's too.
struct mma_rows {
    unsigned int out_f;
    int half;
    // Where tile row k of the tile at row0 starts (clamped to the last row), in a plane whose
    // matrices start at gate and up with rows stride bytes apart.
    __device__ const unsigned char * at(const unsigned char * gate, const unsigned char * up, const size_t stride,
                                        const unsigned int row0, const int k) const {
        if (half == 0) {
            return gate + min(row0 + k, out_f - 1)*stride;
        }
        const bool is_up = k >= half;
        return (is_up ? up : gate) + min(row0/2 + (is_up ? k - half : k), out_f/2 - 1)*stride;
    }
};

// len bytes (a multiple of 16, at most bytes) of each tile row, from its start in the plane at src
// (src_up: the up matrix's, for a GLU) to dst + r*dst_row, by 16-byte cp.async: MMA_MAIN bytes a row
// take eight copies a thread, MMA_TAIL one copy for each of the first 64 threads. A fixed count of
// passes over the block's MMA_THREADS threads, so that only a pass that can run past the tile has a
// row guard (a guard a copy made each copy a branch of its own).
template <int bytes>
static __device__ __forceinline__ void mma_copy(const mma_rows rows, const unsigned int row0, const unsigned char * src,
                                                const unsigned char * src_up, const size_t src_row,
                                                const unsigned int dst, const int dst_row, const int len) {
    constexpr int per_row = bytes/16, rows_per_pass = MMA_THREADS/per_row;
    const int at = 16*(threadIdx.x % per_row);
#pragma unroll
    for (int pass = 0; pass < (MMA_ROWS + rows_per_pass - 1)/rows_per_pass; ++pass) {
        const int r = threadIdx.x/per_row + pass*rows_per_pass;
        if ((pass + 1)*rows_per_pass <= MMA_ROWS || r < MMA_ROWS) {
            cp_async_cg_16_if(at < len, dst + r*dst_row + at, rows.at(src, src_up, src_row, row0, r) + at);
        }
    }
}

// Raw ggml rows: 16-byte cp.async when rows start 16-byte aligned, else 2-byte copies.
template <bool aligned>
struct mma_tile_q8_0 {
    const unsigned char * w, * w_up;    // w_up: a GLU's up matrix (w for one matrix)
    int row_bytes;
    mma_rows rows;

    __device__ void stage(const unsigned int row0, const int t, unsigned char * buf) const {
        const int start = t*MMA_TRIP*Q8_0_BLOCK_BYTES;
        const int len = min(row_bytes - start, MMA_TRIP*Q8_0_BLOCK_BYTES);
        if (aligned) {
            const unsigned int dst = (unsigned int) __cvta_generic_to_shared(buf);
            mma_copy<MMA_MAIN>(rows, row0, w + start, w_up + start, row_bytes, dst, MMA_RAW_ROW, min(len, MMA_MAIN));
            mma_copy<MMA_TAIL>(rows, row0, w + start + MMA_MAIN, w_up + start + MMA_MAIN, row_bytes, dst + MMA_MAIN,
                               MMA_RAW_ROW, max(len - MMA_MAIN, 0));
        } else {
            for (int r = 0; r < MMA_ROWS; ++r) {
                const unsigned short * src = (const unsigned short *) (rows.at(w, w_up, row_bytes, row0, r) + start);
                for (int at = threadIdx.x; 2*at < len; at += MMA_THREADS) {
                    ((unsigned short *) (buf + r*MMA_RAW_ROW))[at] = __ldg(src + at);    // weights: read-only
                }
            }
        }
    }

    // The quants sit 2-byte aligned at 34*n + 2, p = (34*n + 2) % 8 bytes past an 8-byte boundary
    // (stage rows are 8-byte multiples): two 8-byte loads from that boundary, which a warp takes on
    // all 32 banks, then the 8 bytes at p. A warp's blocks n = w + 4*s share p.
    __device__ void quants(int (&q)[2], const unsigned char * buf, const int g, const int n, const int c) const {
        const int p = (n*Q8_0_BLOCK_BYTES + 2) % 8;
        const int2 * words = (const int2 *) (buf + g*MMA_RAW_ROW + n*Q8_0_BLOCK_BYTES + 2 + 8*c - p);
        const int2 lo = words[0], hi = words[1];
        const bool up = p >= 4;
        const int x = up ? lo.y : lo.x, y = up ? hi.x : lo.y, z = up ? hi.y : hi.x;
        q[0] = __funnelshift_rc(x, y, 8*(p % 4));
        q[1] = __funnelshift_rc(y, z, 8*(p % 4));
    }

    __device__ float scale(const unsigned char * buf, const int k, const int n) const {
        return f16_to_f32(*(const unsigned short *) (buf + k*MMA_RAW_ROW + n*Q8_0_BLOCK_BYTES));
    }
};

// Planar rows: quants by 16-byte cp.async; scales so too when their rows start 16-byte aligned
// (in_f % 256 == 0), else by 2-byte copies.
template <bool aligned>
struct mma_tile_q8_0_planar {
    const signed char * wq, * wq_up;        // *_up: a GLU's up matrix (the same planes for one matrix)
    const unsigned short * wd, * wd_up;
    int in_f;
    mma_rows rows;

    __device__ void stage(const unsigned int row0, const int t, unsigned char * buf) const {
        const int nb = in_f/QK, start = t*MMA_TRIP*QK;
        const int len = min(in_f - start, MMA_TRIP*QK);
        const unsigned int dst = (unsigned int) __cvta_generic_to_shared(buf);
        mma_copy<MMA_MAIN>(rows, row0, (const unsigned char *) (wq + start), (const unsigned char *) (wq_up + start), in_f,
                           dst, MMA_QUANT_ROW, len);
        const unsigned char * scales = (const unsigned char *) (wd + start/QK), * scales_up = (const unsigned char *) (wd_up + start/QK);
        if (aligned) {
            mma_copy<MMA_TAIL>(rows, row0, scales, scales_up, 2*nb, dst + MMA_ROWS*MMA_QUANT_ROW, MMA_SCALE_ROW, 2*len/QK);
        } else {
#pragma unroll
            for (int p = threadIdx.x; p < MMA_ROWS*MMA_TRIP; p += MMA_THREADS) {
                const int r = p / MMA_TRIP, b = p % MMA_TRIP;
                if (b < len/QK) {
                    ((unsigned short *) (buf + MMA_ROWS*MMA_QUANT_ROW + r*MMA_SCALE_ROW))[b] =
                        __ldg((const unsigned short *) rows.at(scales, scales_up, 2*nb, row0, r) + b);
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

// From four activation rows the trip's activation is staged (a warp reads a block's rows from shared
// memory together, where from global memory each row was a line of its own): at four rows in each
// stage after the tile's rows, at eight in a ring of its own, STAGES + 1 slots, copied a trip ahead
// of the weights in cp.async groups of its own (so that at eight rows, the larger copies, a trip's
// activation has a trip longer to land than its weights). With fewer rows each thread loads its own
// a trip ahead into registers. Two stages at m = 8, where a third would cost a block an SM of
// MMA_MIN_BLOCKS.
static constexpr __device__ bool mma_x_staged(const int m) { return m >= 4; }
static constexpr __device__ bool mma_x_ring(const int m) { return m >= 8; }
static constexpr __device__ int mma_stages(const int m) { return m >= 8 ? 2 : 3; }

// A plain eight-row launch whose blocks take one tile each and that passes the shared memory for
// them stages MMA_DEEP_STAGES trips, a trip's activation in the ring slot of its stage's index, in
// the stage's cp.async group (the usual pipeline copies it a trip ahead in groups of its own).
#define MMA_DEEP_STAGES 6

// the dynamic shared memory this launch passed
static __device__ __forceinline__ unsigned int dynamic_smem_size() {
    unsigned int n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

// X_ROWS activation rows' quants and their block scales, of one trip.
template <int X_ROWS>
struct mma_x_rows {
    unsigned char xq[X_ROWS][MMA_X_QUANT_ROW];
    float xd[X_ROWS][MMA_X_SCALE_ROW/4];
};

// A stage: the tile's rows, then X_ROWS activation rows' quants and their block scales.
template <int X_ROWS>
struct mma_stage {
    unsigned char w[MMA_STAGE_BYTES];
    unsigned char xq[X_ROWS][MMA_X_QUANT_ROW];
    float xd[X_ROWS][MMA_X_SCALE_ROW/4];
};

template <>
struct mma_stage<0> {
    unsigned char w[MMA_STAGE_BYTES];
};

// The stages (and the activation's ring) and the warps' partial sums, in the launch's dynamic shared
// memory.
template <int ACT_ROWS, bool RING = mma_x_ring(ACT_ROWS)>
struct mma_shared {
    mma_stage<mma_x_staged(ACT_ROWS) ? ACT_ROWS : 0> stages[mma_stages(ACT_ROWS)];
    float parts[WARPS_PER_BLOCK][8][MMA_ROWS];
};

template <int ACT_ROWS>
struct mma_shared<ACT_ROWS, true> {
    mma_stage<0> stages[mma_stages(ACT_ROWS)];
    mma_x_rows<ACT_ROWS> ring[mma_stages(ACT_ROWS) + 1];
    float parts[WARPS_PER_BLOCK][8][MMA_ROWS];
};

// A stage at m, and the deep pipeline's layout: MMA_DEEP_STAGES of them, a ring of one slot more
// where there is one, then the warps' partial sums.
template <int ACT_ROWS>
using mma_stage_at = mma_stage<mma_x_staged(ACT_ROWS) && !mma_x_ring(ACT_ROWS) ? ACT_ROWS : 0>;
template <int ACT_ROWS>
static constexpr __device__ int mma_deep_shared_bytes() {
    const int ring = mma_x_ring(ACT_ROWS) ? (int) sizeof(mma_x_rows<ACT_ROWS>) : 0;
    return MMA_DEEP_STAGES*(int) sizeof(mma_stage_at<ACT_ROWS>) + (MMA_DEEP_STAGES + 1)*ring
         + WARPS_PER_BLOCK*8*MMA_ROWS*(int) sizeof(float);
}

// Where a trip's staged activation is: its stage, or its ring slot.
template <int ACT_ROWS>
static __device__ __forceinline__ const auto & mma_staged_x(const mma_stage_at<ACT_ROWS> * stages, const mma_x_rows<ACT_ROWS> * ring,
                                                            const int slot, const int xslot) {
    if constexpr (mma_x_ring(ACT_ROWS)) {
        return ring[xslot];
    } else {
        return stages[slot];
    }
}

// f(p) for this thread's items p < n of the block's: fixed passes over the block's MMA_THREADS
// threads, so that only a pass that can run past n has a guard (as mma_copy's rows).
template <int n, typename F>
static __device__ __forceinline__ void mma_block_items(F f) {
#pragma unroll
    for (int pass = 0; pass < (n + MMA_THREADS - 1)/MMA_THREADS; ++pass) {
        const int p = threadIdx.x + pass*MMA_THREADS;
        if ((pass + 1)*MMA_THREADS <= n || p < n) {
            f(p);
        }
    }
}

// Trip t of the first ACT_ROWS activation rows into st (its xq and xd rows), this thread's share of
// the block's: quants by 16-byte copies, block scales by 4-byte ones (a row of scales is only 4-byte
// aligned); the ragged trip's missing blocks are not copied (the trip skips them), nor are rows from
// live on (live_rows): their columns hold whatever the stage held, and their sums are never stored.
template <int ACT_ROWS, typename stage_t>
static __device__ __forceinline__ void mma_stage_x(stage_t & st, const signed char * xq, const float * xd,
                                                   const int t, const int nb, const unsigned int live) {
    constexpr int QUANT_COPIES = MMA_TRIP*QK/16;
    const int first = MMA_TRIP*t, blocks = min(nb - first, MMA_TRIP);
    mma_block_items<ACT_ROWS*QUANT_COPIES>([&](const int p) {
        const int r = p / QUANT_COPIES, at = 16*(p % QUANT_COPIES);
        cp_async_ca_16_if(at < QK*blocks && p < live*QUANT_COPIES, (unsigned int) __cvta_generic_to_shared(&st.xq[r][at]),
                          xq + ((size_t) r*nb + first)*QK + at);
    });
    mma_block_items<ACT_ROWS*MMA_TRIP>([&](const int p) {
        const int r = p / MMA_TRIP, b = p % MMA_TRIP;
        cp_async_ca_4_if(b < blocks && p < live*MMA_TRIP, (unsigned int) __cvta_generic_to_shared(&st.xd[r][b]),
                         xd + (size_t) r*nb + first + b);
    });
}

// Trip at of the tile's rows, and of the activation where it is staged, into stage st.
template <int ACT_ROWS, typename tile_t, typename stage_t>
static __device__ __forceinline__ void mma_stage_trip(const tile_t & tile, stage_t & st, const trip_cursor at,
                                                      const signed char * xq, const float * xd, const int nb,
                                                      const unsigned int live) {
    tile.stage(at.row, at.t, st.w);
    if constexpr (mma_x_staged(ACT_ROWS) && !mma_x_ring(ACT_ROWS)) {
        mma_stage_x<ACT_ROWS>(st, xq, xd, at.t, nb, live);
    }
}

// A thread's activation of one trip, where it loads its own: bytes 8c..8c+8 of row g and the
// scales of rows 2c, 2c+1 for each of its blocks, block indices clamped to the row so that the
// ragged trip reads valid, unused blocks.
struct mma_trip_x {
    int2 q[MMA_SLOTS];
    float d[MMA_SLOTS][2];
};

static __device__ __forceinline__ mma_trip_x mma_load_x(const signed char * x_row, const float * d0, const float * d1,
                                                         const int t, const int warp, const int c, const int nb) {
    mma_trip_x x;
#pragma unroll
    for (int s = 0; s < MMA_SLOTS; ++s) {
        const int b = min(MMA_TRIP*t + warp + WARPS_PER_BLOCK*s, nb - 1);
        x.q[s] = __ldca((const int2 *) (x_row + b*QK + 8*c));    // through L1: see load_activation
        x.d[s][0] = __ldca(d0 + b);
        x.d[s][1] = __ldca(d1 + b);
    }
    return x;
}

// A block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... in turn, their trips in one pipeline
// of stages (the next tile's first trips are copied during a tile's last). out_f: the launch's rows
// (a GLU's gate and up rows counted as one matrix of 2n, mma_rows); a GLU's thread (i, k) stores
// y[i][row0/2 + k] = swiglu1(gate row's sum, up row's).
template <int ACT_ROWS, bool GLU, typename tile_t>
static __device__ __forceinline__ void gemv_q8_0_mma(const tile_t tile, const signed char * __restrict__ xq,
                                                     const float * __restrict__ xd, const gemv_out y,
                                                     const int in_f, const unsigned int out_f, const unsigned int live) {
    constexpr bool STAGED = mma_x_staged(ACT_ROWS), RING = mma_x_ring(ACT_ROWS);
    constexpr int STAGES = mma_stages(ACT_ROWS);
    static_assert(!RING || STAGES == 2, "the ring's groups are waited for as two stages'");
    typedef mma_stage_at<ACT_ROWS> stage_t;
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    static_assert(sizeof(mma_shared<ACT_ROWS>) == STAGES*sizeof(stage_t) + (RING ? (STAGES + 1)*sizeof(mma_x_rows<ACT_ROWS>) : 0)
                  + WARPS_PER_BLOCK*8*MMA_ROWS*sizeof(float), "the layout of mma_shared");
    GEMV_STAMP(0, 0, 0);
    const int warp = threadIdx.x/WARP_SIZE, lane = threadIdx.x%WARP_SIZE;
    const int g = lane/4, c = lane%4;
    const int nb = in_f/QK, trips = (nb + MMA_TRIP - 1)/MMA_TRIP, full = nb/MMA_TRIP;
    const unsigned int stride = gridDim.x*MMA_ROWS, rows = out_f;    // unsigned: row + stride may pass 2^31
    // one tile a block (the cursors then stay below 2*rows) and the shared memory for the deep stages
    const bool deep = !GLU && ACT_ROWS == 8 && stride >= rows && dynamic_smem_size() >= (unsigned int) mma_deep_shared_bytes<ACT_ROWS>();
    const int stages = deep ? MMA_DEEP_STAGES : STAGES;
    // the stages, the ring (RING) and the partial sums, each after the one before (mma_shared's
    // layout at STAGES stages)
    stage_t * const st = (stage_t *) dynamic_smem;
    mma_x_rows<ACT_ROWS> * const ring = (mma_x_rows<ACT_ROWS> *) (dynamic_smem + stages*sizeof(stage_t));
    float (* const parts)[8][MMA_ROWS] = (float (*)[8][MMA_ROWS]) (dynamic_smem + stages*sizeof(stage_t)
                                                                   + (RING ? (stages + 1)*sizeof(mma_x_rows<ACT_ROWS>) : 0));
    // activation rows past the ACT_ROWS read the last: their sums are never stored (nor are those
    // from live on, which the staging leaves uncopied)
    const int xr = min(g, ACT_ROWS - 1), dr0 = min(2*c, ACT_ROWS - 1), dr1 = min(2*c + 1, ACT_ROWS - 1);
    const signed char * x_row = xq + (size_t) xr*in_f;
    const float * d0 = xd + (size_t) dr0*nb, * d1 = xd + (size_t) dr1*nb;

    // The first stages' weights, which no kernel before this one writes, go out before the wait
    // for it, their activation after; the first commit group holds every first stage's weights.
    trip_cursor ahead = {blockIdx.x*MMA_ROWS, 0};    // the next trip to copy
    for (int slot = 0; slot < stages - 1; ++slot) {
        if (ahead.row < rows) {
            tile.stage(ahead.row, ahead.t, st[slot].w);
        }
        ahead = ahead.next(trips, stride);
    }
    chain_wait();
    ahead = {blockIdx.x*MMA_ROWS, 0};
    for (int slot = 0; slot < stages - 1; ++slot) {
        if (ahead.row < rows) {
            if constexpr (STAGED && !RING) {
                mma_stage_x<ACT_ROWS>(st[slot], xq, xd, ahead.t, nb, live);
            } else if constexpr (RING) {
                if (deep) {    // its stage's slot, in its group
                    mma_stage_x<ACT_ROWS>(ring[slot], xq, xd, ahead.t, nb, live);
                }
            }
        }
        cp_async_commit();
        ahead = ahead.next(trips, stride);
    }
    trip_cursor ahead_x = {blockIdx.x*MMA_ROWS, 0};    // the next trip's activation to copy (RING)
    if constexpr (RING) {
        if (!deep) {
#pragma unroll
            for (int xslot = 0; xslot < STAGES; ++xslot) {
                if (ahead_x.row < rows) {
                    mma_stage_x<ACT_ROWS>(ring[xslot], xq, xd, ahead_x.t, nb, live);
                }
                cp_async_commit();
                ahead_x = ahead_x.next(trips, stride);
            }
        }
    }

    float acc[MMA_SLOTS][4] = {};
    mma_trip_x x;
    if constexpr (!STAGED) {
        x = mma_load_x(x_row, d0, d1, 0, warp, c, nb);
    }
    int slot = 0, xslot = 0;
    for (trip_cursor cur = {blockIdx.x*MMA_ROWS, 0}; cur.row < rows; ) {
        // this trip has landed for this thread (with a ring, all but the newest group: the next
        // trip's activation); after the barrier for all, and the stage and slot computed last are
        // free for the trips ahead
        if (deep) {
            cp_async_wait<MMA_DEEP_STAGES - 2>();
        } else {
            cp_async_wait<RING ? 1 : STAGES - 2>();
        }
        __syncthreads();
        GEMV_STAMP(1, cur.row, cur.t);
        if (ahead.row < rows) {
            const int free = slot == 0 ? stages - 1 : slot - 1;
            mma_stage_trip<ACT_ROWS>(tile, st[free], ahead, xq, xd, nb, live);
            if constexpr (RING) {
                if (deep) {
                    mma_stage_x<ACT_ROWS>(ring[free], xq, xd, ahead.t, nb, live);
                }
            }
        }
        cp_async_commit();
        ahead = ahead.next(trips, stride);
        if constexpr (RING) {
            if (!deep) {    // a trip further ahead, in a group of its own
                if (ahead_x.row < rows) {
                    mma_stage_x<ACT_ROWS>(ring[(xslot + STAGES) % (STAGES + 1)], xq, xd, ahead_x.t, nb, live);
                }
                cp_async_commit();
                ahead_x = ahead_x.next(trips, stride);
            }
        }
        const trip_cursor next = cur.next(trips, stride);
        const bool last = next.t == 0;
        // where the activation is not staged, the next trip's goes out before this trip's arithmetic
        mma_trip_x x_next;
        if constexpr (!STAGED) {
            x_next = next.row < rows ? mma_load_x(x_row, d0, d1, next.t, warp, c, nb) : x;
        }

        const unsigned char * buf = st[slot].w;
#pragma unroll
        for (int s = 0; s < MMA_SLOTS; ++s) {
            const int n = warp + WARPS_PER_BLOCK*s;
            if (cur.t < full || MMA_TRIP*cur.t + n < nb) {
                int lo[2], hi[2];
                tile.quants(lo, buf, g, n, c);
                tile.quants(hi, buf, g + 8, n, c);
                const int a[4] = {lo[0], hi[0], lo[1], hi[1]};
                int2 xv;
                float dx[2];
                if constexpr (STAGED) {
                    const auto & sx = mma_staged_x<ACT_ROWS>(st, ring, slot, deep ? slot : xslot);
                    xv = *(const int2 *) &sx.xq[xr][QK*n + 8*c];
                    dx[0] = sx.xd[dr0][n];
                    dx[1] = sx.xd[dr1][n];
                } else {
                    xv = x.q[s];
                    dx[0] = x.d[s][0];
                    dx[1] = x.d[s][1];
                }
                const int b[2] = {xv.x, xv.y};
                int sums[4] = {0, 0, 0, 0};
                mma_s8(sums, a, b);
                const float dw[2] = {tile.scale(buf, g, n), tile.scale(buf, g + 8, n)};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    acc[s][j] += dw[j/2]*dx[j%2]*((float) sums[j]);
                }
            }
        }
        GEMV_STAMP(2, cur.row, cur.t);

        if (last) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                parts[warp][2*c + j%2][g + 8*(j/2)] = ((acc[0][j] + acc[4][j]) + (acc[2][j] + acc[6][j]))
                                                    + ((acc[1][j] + acc[5][j]) + (acc[3][j] + acc[7][j]));
#pragma unroll
                for (int s = 0; s < MMA_SLOTS; ++s) {
                    acc[s][j] = 0.0f;
                }
            }
            __syncthreads();
            const auto sum = [&](const int i, const int k) {
                return (parts[0][i][k] + parts[2][i][k]) + (parts[1][i][k] + parts[3][i][k]);
            };
            constexpr int HALF = MMA_ROWS/2;
            if (!GLU && threadIdx.x < ACT_ROWS*MMA_ROWS) {
                const int i = threadIdx.x/MMA_ROWS, k = threadIdx.x%MMA_ROWS;
                if (cur.row + k < rows && (ACT_ROWS <= 2 || i < live)) {
                    y(i, cur.row + k) = sum(i, k);
                }
            } else if (GLU && threadIdx.x < ACT_ROWS*HALF) {
                const int i = threadIdx.x/HALF, k = threadIdx.x%HALF;
                const unsigned int n = rows/2, row = cur.row/2 + k;
                if (row < n && (ACT_ROWS <= 2 || i < live)) {
                    y.y[(size_t) i*n + row] = swiglu1(sum(i, k), sum(i, k + HALF));
                }
            }
            GEMV_STAMP(3, cur.row, cur.t);
        }
        cur = next;
        if constexpr (!STAGED) {
            x = x_next;
        }
        slot = slot + 1 == stages ? 0 : slot + 1;
        xslot = (xslot + 1) % (STAGES + 1);
    }
    GEMV_STAMP(4, 0, 0);
}

// Raw rows of w (and, for a GLU, of w_up), out_f the launch's rows (mma_rows).
template <int ACT_ROWS, bool GLU>
static __device__ __forceinline__ void gemv_q8_0_mma_raw(const block_q8_0 * __restrict__ w, const block_q8_0 * __restrict__ w_up,
                                                         const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                         const gemv_out y, const int in_f, const unsigned int out_f,
                                                         const unsigned int live) {
    const int row_bytes = in_f/QK*Q8_0_BLOCK_BYTES;
    const mma_rows rows = {out_f, GLU ? MMA_ROWS/2 : 0};
    const unsigned char * g = (const unsigned char *) w, * u = (const unsigned char *) w_up;
    if ((((size_t) g | (size_t) u | row_bytes) % 16) == 0) {
        const mma_tile_q8_0<true> tile = {g, u, row_bytes, rows};
        gemv_q8_0_mma<ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, live);
    } else {
        const mma_tile_q8_0<false> tile = {g, u, row_bytes, rows};
        gemv_q8_0_mma<ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, live);
    }
}

// Planar rows (and, for a GLU, the up matrix's planes), out_f the launch's rows. A GLU's scale rows
// start 16-byte aligned (its launcher's contract).
template <int ACT_ROWS, bool GLU>
static __device__ __forceinline__ void gemv_q8_0_mma_planar(const signed char * __restrict__ wq, const unsigned short * __restrict__ wd,
                                                            const signed char * __restrict__ wq_up, const unsigned short * __restrict__ wd_up,
                                                            const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                            const gemv_out y, const int in_f, const unsigned int out_f,
                                                            const unsigned int live) {
    const mma_rows rows = {out_f, GLU ? MMA_ROWS/2 : 0};
    if ((((size_t) wd | (size_t) wd_up | (2*in_f/QK)) % 16) == 0) {
        const mma_tile_q8_0_planar<true> tile = {wq, wq_up, wd, wd_up, in_f, rows};
        gemv_q8_0_mma<ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, live);
    } else if (!GLU) {
        const mma_tile_q8_0_planar<false> tile = {wq, wq_up, wd, wd_up, in_f, rows};
        gemv_q8_0_mma<ACT_ROWS, GLU>(tile, xq, xd, y, in_f, out_f, live);
    }
}
