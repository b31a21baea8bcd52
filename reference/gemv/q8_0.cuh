// Included by gemv.cu: the Q8_0 formats on the CUDA cores.

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
                ((unsigned short *) dst)[p] = __ldg((const unsigned short *) src + p);    // weights: read-only
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

    template <int TRIP_BLOCKS>
    __device__ void begin(const warp_rows & wr, const int t) const {
        if (t + 1 < wr.trips<TRIP_BLOCKS>()) {
            stage(t + 1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncwarp();
    }

    template <int TRIP_BLOCKS>
    __device__ q8_block block(const warp_rows & wr, const int t, const int u) const {
        return read(buffer(t), wr.block<TRIP_BLOCKS>(t, u) - t*WARP_SIZE*TRIP_BLOCKS);
    }

    __device__ void end() const { __syncwarp(); }
};

// Planar rows: quants (16-byte aligned) and f16 scales straight to registers.
struct q8_0_planar {
    static constexpr bool staged = false;
    const signed char * q;
    const unsigned short * d;

    template <int TRIP_BLOCKS>
    __device__ void begin(const warp_rows &, const int) const {}

    template <int TRIP_BLOCKS>
    __device__ q8_block block(const warp_rows & wr, const int t, const int u) const {
        const int b = wr.block<TRIP_BLOCKS>(t, u);
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
template <int ACT_ROWS, int TRIP_BLOCKS, typename rows_t>
struct gemv_q8 {
    warp_rows wr;
    rows_t rows;
    const signed char * __restrict__ xq;
    const float * __restrict__ xd;
    int in_f;
    float acc[ACT_ROWS];

    // A full trip's activation blocks. Staged rows at m <= 2 load them during the trip before
    // (ahead): a staged trip waits for its weights, ptxas sinks activation loads of the same trip
    // below that wait, but it cannot move a load into the next trip. At m >= 4 the carried blocks
    // would hold a trip's activation for every row in registers, more than the loads leave.
    struct trip_x {
        q8_block b[TRIP_BLOCKS][ACT_ROWS];
    };
    static constexpr bool ahead_loads = rows_t::staged && ACT_ROWS <= 2;
    trip_x ahead;

    // Trip t's blocks, each block index clamped to the row so that a trip loaded ahead past the
    // last full one reads valid (unused) blocks.
    __device__ trip_x load_trip(const int t) const {
        trip_x x;
#pragma unroll
        for (int u = 0; u < TRIP_BLOCKS; ++u) {
            const int b = wr.block<TRIP_BLOCKS>(t, u);
            load_activation(x.b[u], ahead_loads ? min(b, wr.nb - 1) : b, xq, xd, in_f);
        }
        return x;
    }

    __device__ void add(const q8_block & w, const q8_block (&x)[ACT_ROWS]) {
#pragma unroll
        for (int i = 0; i < ACT_ROWS; ++i) {
            acc[i] = vec_dot_q8_0_q8_1(w, x[i], acc[i]);
        }
    }

    template <bool full>
    __device__ void trip(const int t) {
        if (full) {
            // the activation's loads go out before the wait for the weights, to overlap it: in
            // this trip, or at the end of the one before
            const trip_x x = ahead_loads ? ahead : load_trip(t);
            rows.template begin<TRIP_BLOCKS>(wr, t);
            q8_block w[TRIP_BLOCKS];
#pragma unroll
            for (int u = 0; u < TRIP_BLOCKS; ++u) {
                w[u] = rows.template block<TRIP_BLOCKS>(wr, t, u);
            }
#pragma unroll
            for (int u = 0; u < TRIP_BLOCKS; ++u) {
                add(w[u], x.b[u]);
            }
            if (ahead_loads) {
                ahead = load_trip(t + 1);
            }
        } else {
            rows.template begin<TRIP_BLOCKS>(wr, t);
#pragma unroll
            for (int u = 0; u < TRIP_BLOCKS; ++u) {
                const int b = wr.block<TRIP_BLOCKS>(t, u);
                if (wr.live(b)) {
                    if (ahead_loads) {
                        add(rows.template block<TRIP_BLOCKS>(wr, t, u), ahead.b[u]);
                    } else {
                        q8_block x[ACT_ROWS];
                        load_activation(x, b, xq, xd, in_f);
                        add(rows.template block<TRIP_BLOCKS>(wr, t, u), x);
                    }
                }
            }
        }
        rows.end();
    }

    __device__ void run(const gemv_out y) {
#pragma unroll
        for (int i = 0; i < ACT_ROWS; ++i) {
            acc[i] = 0.0f;
        }
        if (ahead_loads) {
            ahead = load_trip(0);
        }
        wr.run<TRIP_BLOCKS>(*this);
        store_rows<ACT_ROWS>(y, wr, acc, finish_identity());
    }
};

// The raw body over one warp's row, staged with or without 16-byte copies; the warp's first row
// (first) waits for the kernel before once its first trip's weights are on their way.
template <bool aligned, int ACT_ROWS, int TRIP_BLOCKS>
static __device__ __forceinline__ void run_staged(const warp_rows & wr, const unsigned char * row, const int row_bytes,
                                                  unsigned char * warp_stages, const signed char * __restrict__ xq,
                                                  const float * __restrict__ xd, const gemv_out y, const int in_f,
                                                  const bool first) {
    q8_0_staged<aligned> rows;
    rows.row       = row;
    rows.row_bytes = row_bytes;
    rows.stages    = warp_stages;
    rows.lane      = wr.lane;
    rows.stage(0);
    if (first) {
        chain_wait();
    }
    gemv_q8<ACT_ROWS, TRIP_BLOCKS, q8_0_staged<aligned> > body = {wr, rows, xq, xd, in_f};
    body.run(y);
}

// Warps take row groups in turn, as the e4m3 kernels do (see gemv_e4m3).
template <int ACT_ROWS, int TRIP_BLOCKS>
static __device__ __forceinline__ void gemv_q8_0(const block_q8_0 * __restrict__ w, const signed char * __restrict__ xq,
                                                 const float * __restrict__ xd, const gemv_out y,
                                                 const int in_f, const int out_f) {
    GEMV_STAMP(0, 0, 0);
    __shared__ __align__(16) unsigned char stages[WARPS_PER_BLOCK][2][Q8_0_STAGE_BYTES];
    const int row_bytes = in_f/QK*Q8_0_BLOCK_BYTES;
    unsigned char * warp_stages = stages[threadIdx.x/WARP_SIZE][0];
    const bool aligned = (((size_t) w | row_bytes) % 16) == 0;
    const int warps = gridDim.x*WARPS_PER_BLOCK;
    for (int g = warp_index(); g < out_f; g += warps) {
        warp_rows wr;
        warp_rows_at(wr, g, in_f, out_f);
        const unsigned char * row = (const unsigned char *) w + (size_t) wr.row()*row_bytes;
        if (aligned) {
            run_staged<true, ACT_ROWS, TRIP_BLOCKS>(wr, row, row_bytes, warp_stages, xq, xd, y, in_f, g == warp_index());
        } else {
            run_staged<false, ACT_ROWS, TRIP_BLOCKS>(wr, row, row_bytes, warp_stages, xq, xd, y, in_f, g == warp_index());
        }
    }
    GEMV_STAMP(4, 0, 0);
}

// Blocks an SM the planar entries declare up to two rows (gemv::PLANAR_MIN_BLOCKS): enough
// registers for a small grid's loads in flight, not so many that a large grid loses blocks an SM.
#define PLANAR_MIN_BLOCKS 6

template <int ACT_ROWS, int TRIP_BLOCKS>
static __device__ __forceinline__ void gemv_q8_0_planar(const signed char * __restrict__ wq, const unsigned short * __restrict__ wd,
                                                        const signed char * __restrict__ xq, const float * __restrict__ xd,
                                                        const gemv_out y, const int in_f, const int out_f) {
    warp_rows wr;
    if (!warp_rows_init(wr, in_f, out_f)) {
        return;
    }
    chain_wait();    // its weights go straight to registers, with nothing to copy before the wait
    const size_t row = wr.row();
    const q8_0_planar rows = {wq + row*in_f, wd + row*(in_f/QK)};
    gemv_q8<ACT_ROWS, TRIP_BLOCKS, q8_0_planar> body = {wr, rows, xq, xd, in_f};
    body.run(y);
}
