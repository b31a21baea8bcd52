// tf32 tensor-core products at f32 grade (3xTF32), shared by the MLA family's references (the
// host's build inlines this file where a .cu includes it). Each f32 operand x is split into a
// tf32 head h (rounded to nearest, ties away, by an integer add and mask) and the exact rest
// x - h as the tail, whose low 13 bits the tensor cores ignore; acc += a*b is
// acc = mma(head_a, tail_b, acc), then mma(tail_a, head_b, acc), then mma(head_a, head_b, acc):
// about 2^-20 of each product is lost.

// Four 8 x 8 b16 matrices, lanes 8i..8i+7 naming the rows of matrix i: as 8 x 4 matrices of
// 32-bit words, a whole tf32 fragment in one shared-memory load.
static __device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const float * p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((unsigned int) __cvta_generic_to_shared(p)));
}

// x as a tf32 head (CUTLASS's round_half_ulp_truncate) and the exact rest as the tail.
static __device__ __forceinline__ void tf32_split(const float x, unsigned int & head, unsigned int & tail) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    tail = __float_as_uint(x - __uint_as_float(head));
}

// x as a tf32 head and tail by truncation: the head is x itself (the tensor cores ignore its low 13
// bits), the tail the exact rest x - (x & 0xffffe000).
static __device__ __forceinline__ float tf32_tail(const float x) {
    return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

static __device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d[j] += a*b[j] for N tiles of a row of tiles, each in three tf32 terms into its own accumulator:
// head*tail, tail*head, then head*head, issued term by term across the tiles so that consecutive
// mma never depend on each other.
template <int N>
static __device__ __forceinline__ void mma_3xtf32(float (&d)[N][4], const unsigned int (&ah)[4], const unsigned int (&at)[4],
                                                  const unsigned int (&bh)[N][2], const unsigned int (&bt)[N][2]) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah, bt[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], at, bh[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah, bh[j]);
    }
}

// d[j] += a[j]*b[j] for N independent products, each in mma_3xtf32's three terms into its own
// accumulator, issued term by term across the products.
template <int N>
static __device__ __forceinline__ void mma_3xtf32_each(float (&d)[N][4], const unsigned int (&ah)[N][4], const unsigned int (&at)[N][4],
                                                       const unsigned int (&bh)[N][2], const unsigned int (&bt)[N][2]) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah[j], bt[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], at[j], bh[j]);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        mma_tf32(d[j], ah[j], bh[j]);
    }
}
