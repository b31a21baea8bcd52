//! `flash_bits.cu`'s main kernel in Rust (the seed's geometry, 16, 32 or 64 heads a block), on
//! the project's device wrappers where they exist and on the Hopper instructions below where they
//! do not (`wgmma`, mbarriers, bulk copies, `setmaxnreg`, named barriers), to see the Rust
//! toolchain express the kernel for sm_90a and ptxas assemble it. Not built into the project; the
//! operations and their order are the .cu's, line by line (see it for the why of each).
#![no_std]
#![feature(abi_ptx, asm_experimental_arch)]

use core::arch::asm;
use ferrocuda_device::{
    block_idx_x, cp_async_16_zfill, expf, max, max_threads, shfl_xor, symbol_address, tf32_split,
    thread_idx_x, unroll, F32x4, Shared,
};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    ferrocuda_device::trap()
}

#[cfg(not(feature = "v32"))]
const NH: u32 = 64;
#[cfg(not(feature = "v32"))]
const D: u32 = 512;
#[cfg(feature = "v32")]
const NH: u32 = 128;
#[cfg(feature = "v32")]
const D: u32 = 512 + 64;
const KV: u32 = 512;
const CHUNK: u32 = 64;
const SL: u32 = 32;
const NSL: u32 = D / SL;
const NT: u32 = KV / 64;
const ITEMS: u32 = NSL + NT;
const K_PARTS: u32 = 8;
const KSTEPS: u32 = D / 8;
const PER: u32 = KSTEPS.div_ceil(K_PARTS);
const CONSUMERS: u32 = 256;
const THREADS: u32 = CONSUMERS + 128;
const PW: u32 = 4;
const RS_STR: u32 = SL + 4;
const RO_STR: u32 = 64 + 8;
const SC_STR: u32 = CHUNK + 4;
const KS: usize = if PER % 2 == 1 { 1 } else { 2 };
const SPI: u32 = SL / 8 / KS as u32;
const NS: u32 = NSL * SPI;
const IPP: u32 = PER / KS as u32;
const OK: usize = 4;
const TPI: u32 = 8 / OK as u32;
const NO: u32 = NT * TPI;
const ST: u32 = 4;

/// The shared-memory layout of a block of `nhb` heads, in bytes.
struct Layout {
    qbytes: u32,
    rsbytes: u32,
    robytes: u32,
    stage: u32,
    p_off: u32,
    p_bytes: u32,
    rtab_off: u32,
    mbar_off: u32,
}

const fn layout(nhb: u32) -> Layout {
    let qbytes = 2 * nhb * SL * 4;
    let (rsbytes, robytes) = (CHUNK * RS_STR * 4, CHUNK * RO_STR * 4);
    let stage = if qbytes + 2 * rsbytes > 2 * robytes {
        qbytes + 2 * rsbytes
    } else {
        2 * robytes
    };
    let p_off = ST * stage;
    let p_bytes = 2 * nhb * CHUNK * 4;
    let rtab_off = p_off + 2 * p_bytes;
    Layout {
        qbytes,
        rsbytes,
        robytes,
        stage,
        p_off,
        p_bytes,
        rtab_off,
        mbar_off: rtab_off + 2 * CHUNK * 4,
    }
}

/// Dynamic shared memory of a block of `nhb` heads.
pub const fn shared_bytes(nhb: u32) -> u32 {
    layout(nhb).mbar_off + 8 * 2 * ST
}

const fn core_off(n: u32, k: u32, kcols: u32) -> u32 {
    (n / 8) * (kcols / 4 * 32) + (k / 4) * 32 + (n % 8) * 4 + (k % 4)
}

/// No swizzle, K-major: K-adjacent core matrices 128 bytes apart, 8-row groups `sbo` apart.
fn desc(addr: u32, sbo: u32) -> u64 {
    (((addr >> 4) & 0x3fff) as u64) | ((128u64 >> 4) << 16) | ((((sbo >> 4) & 0x3fff) as u64) << 32)
}

// ---- Hopper's instructions (the .cu's inline PTX, one wrapper each) ----

macro_rules! wgmma_tf32 {
    ($name:ident, $n:literal, $regs:literal, [$first:literal $(, $rest:literal)*]) => {
        /// `wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, a, b, 1, 1, 1`: `d += a b`,
        /// `a` the warpgroup's 64 x 8 fragment in registers, `b` 8 x N by descriptor.
        #[inline(always)]
        unsafe fn $name(d: &mut [f32; $regs], a: &[u32; 4], b: u64) {
            asm!(
                concat!(
                    "wgmma.mma_async.sync.aligned.m64n", $n, "k8.f32.tf32.tf32 {{",
                    "{", $first, "}", $(",{", $rest, "}",)*
                    "}}, {{{a0},{a1},{a2},{a3}}}, {b}, 1, 1, 1;"
                ),
                inout(reg32) d[$first], $(inout(reg32) d[$rest],)*
                a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                b = in(reg64) b,
                options(nostack),
            );
        }
    };
}
wgmma_tf32!(wgmma16, 16, 8, [0, 1, 2, 3, 4, 5, 6, 7]);
wgmma_tf32!(
    wgmma32,
    32,
    16,
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);
wgmma_tf32!(
    wgmma64,
    64,
    32,
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31
    ]
);

/// `body` once for each literal, `$i` a constant of its value in each copy: an unrolling whose
/// copies see their index as a constant (so that the accumulator and fragment set each copy
/// names are chosen at compile time), where a closure called in a loop may stay a call.
macro_rules! unrolled {
    ($i:ident in [$($n:literal),*] => $body:block) => {
        $({
            #[allow(non_upper_case_globals)]
            const $i: u32 = $n;
            $body
        })*
    };
}

/// The accumulator of a 64 x `NHB` tile: `NHB / 2` floats a thread.
trait Tile: Copy {
    const ZERO: Self;
    unsafe fn mma(&mut self, a: &[u32; 4], b: u64);
    fn at(&self, i: usize) -> f32;
    fn at_mut(&mut self, i: usize) -> &mut f32;
}

macro_rules! tile {
    ($n:literal, $mma:ident) => {
        impl Tile for [f32; $n] {
            const ZERO: Self = [0.0; $n];
            #[inline(always)]
            unsafe fn mma(&mut self, a: &[u32; 4], b: u64) {
                $mma(self, a, b)
            }
            #[inline(always)]
            fn at(&self, i: usize) -> f32 {
                self[i]
            }
            #[inline(always)]
            fn at_mut(&mut self, i: usize) -> &mut f32 {
                &mut self[i]
            }
        }
    };
}
tile!(8, wgmma16);
tile!(16, wgmma32);
tile!(32, wgmma64);

/// The sums as they are here: an asm that takes and gives each one, ordered with the other asm,
/// so that their additions (which read a part's accumulator) are done before the next `wgmma` is
/// issued; left to move, they can land where ptxas serialises every `wgmma` (C7514).
#[inline(always)]
fn pin<const NF: usize>(v: &mut [f32; NF]) {
    // SAFETY: an empty asm; it only orders the values' computation.
    unroll::<NF>(|k| unsafe { asm!("/* {v} */", v = inout(reg32) v[k], options(nomem, nostack)) });
}

/// Zeros the optimiser cannot fold into the instructions that read them. (The asm is `pure`, so
/// LLVM may merge them into one register, whose copies then sit after `wgmma.fence`, where ptxas
/// moves them before the warpgroup's arrive; without `pure`, ptxas serialised every wgmma.)
#[inline(always)]
fn zero<T: Tile, const NF: usize>(t: &mut T) {
    unroll::<NF>(|i| {
        let mut z = 0.0f32;
        // SAFETY: an empty asm that only hides the value from the optimiser.
        unsafe { asm!("/* {z} */", z = inout(reg32) z, options(nomem, nostack, pure)) };
        *t.at_mut(i) = z;
    });
}

#[inline(always)]
unsafe fn wg_fence() {
    asm!("wgmma.fence.sync.aligned;", options(nostack));
}
#[inline(always)]
unsafe fn wg_commit() {
    asm!("wgmma.commit_group.sync.aligned;", options(nostack));
}
#[inline(always)]
unsafe fn wg_wait<const N: u32>() {
    asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack));
}
#[inline(always)]
unsafe fn fence_async() {
    asm!("fence.proxy.async.shared::cta;", options(nostack));
}
/// `bar.sync 2 + wg, 128`: the warpgroup `wg`'s four warps meet.
#[inline(always)]
unsafe fn wg_sync(wg: u32) {
    asm!("bar.sync {id}, 128;", id = in(reg32) 2 + wg, options(nostack));
}
#[inline(always)]
unsafe fn mbar_init(a: u32, count: u32) {
    asm!("mbarrier.init.shared::cta.b64 [{a}], {c};", a = in(reg32) a, c = in(reg32) count, options(nostack));
}
#[inline(always)]
unsafe fn mbar_arrive(a: u32) {
    asm!("{{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{a}]; }}", a = in(reg32) a, options(nostack));
}
#[inline(always)]
unsafe fn mbar_expect(a: u32, bytes: u32) {
    asm!(
        "{{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [{a}], {n}; }}",
        a = in(reg32) a,
        n = in(reg32) bytes,
        options(nostack),
    );
}
#[inline(always)]
unsafe fn mbar_wait(a: u32, parity: u32) {
    loop {
        let done: u32;
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {par}; selp.u32 {d}, 1, 0, p; }}",
            a = in(reg32) a,
            par = in(reg32) parity,
            d = out(reg32) done,
            options(nostack),
        );
        if done != 0 {
            break;
        }
    }
}
#[inline(always)]
unsafe fn mbar_arrive_copies(a: u32) {
    asm!("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{a}];", a = in(reg32) a, options(nostack));
}
#[inline(always)]
unsafe fn bulk(dst: u32, src: *const f32, bytes: u32, mbar: u32) {
    asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [g], {n}, [{m}]; }}",
        dst = in(reg32) dst,
        src = in(reg64) src,
        n = in(reg32) bytes,
        m = in(reg32) mbar,
        options(nostack),
    );
}
#[inline(always)]
unsafe fn cp16z(dst: u32, src: *const f32, live: bool) {
    cp_async_16_zfill(live, Shared::<u8>::symbol(dst), src.cast());
}

// Shared-memory loads and stores by address, through the device crate's typed handles.
#[inline(always)]
fn at<T>(a: u32) -> Shared<T> {
    Shared::symbol(a)
}
#[inline(always)]
unsafe fn ld_f32(a: u32) -> f32 {
    at::<f32>(a).load()
}
#[inline(always)]
unsafe fn ld_v2(a: u32) -> [f32; 2] {
    at::<[u32; 2]>(a).load().map(f32::from_bits)
}
#[inline(always)]
unsafe fn ld_v4(a: u32) -> [f32; 4] {
    let v = at::<F32x4>(a).load();
    [v.x, v.y, v.z, v.w]
}
#[inline(always)]
unsafe fn st_f32(a: u32, v: f32) {
    at::<f32>(a).store(v)
}
#[inline(always)]
unsafe fn st_u32x2(a: u32, x: u32, y: u32) {
    at::<[f32; 2]>(a).store([f32::from_bits(x), f32::from_bits(y)])
}
#[inline(always)]
unsafe fn st_i32(a: u32, v: i32) {
    at::<u32>(a).store(v as u32)
}
#[inline(always)]
unsafe fn ld_i32(a: u32) -> i32 {
    at::<u32>(a).load() as i32
}

/// A consumer thread's place: the shared-memory layout's addresses and its fragment coordinates.
#[derive(Clone, Copy)]
struct Ctx {
    smem: u32,
    stage: u32,
    qbytes: u32,
    rsbytes: u32,
    robytes: u32,
    full: u32,
    empty: u32,
    nhb: u32,
    wg: u32,
    w: u32,
    g: u32,
    c: u32,
    p: u32,
    plo: u32,
}

/// Score item `n`'s row fragments (rows 16 w + g and + 8, columns c and c + 4 of each k-step),
/// split; the item's slab waited for at its first item.
#[inline(always)]
unsafe fn sload(cx: Ctx, n: u32, hi: &mut [[u32; 4]; KS], lo: &mut [[u32; 4]; KS]) {
    let (j, half) = (n / SPI, n % SPI);
    let s = j % ST;
    if half == 0 {
        mbar_wait(cx.full + 8 * s, (j / ST) & 1);
    }
    let r0 = cx.smem
        + s * cx.stage
        + cx.qbytes
        + cx.wg * cx.rsbytes
        + 4 * ((16 * cx.w + cx.g) * RS_STR + cx.c);
    unroll::<KS>(|i| {
        let col = 8 * (KS as u32 * half + i as u32);
        let x = [
            ld_f32(r0 + 4 * col),
            ld_f32(r0 + 4 * (8 * RS_STR + col)),
            ld_f32(r0 + 4 * (col + 4)),
            ld_f32(r0 + 4 * (8 * RS_STR + col + 4)),
        ];
        unroll::<4>(|e| (hi[i][e], lo[i][e]) = tf32_split(x[e]));
    });
}

/// Score item `n` into `acc`: per k-step head(q) x tail(row), tail(q) x head(row), head x head.
#[inline(always)]
unsafe fn sissue<T: Tile>(cx: Ctx, n: u32, acc: &mut T, hi: &[[u32; 4]; KS], lo: &[[u32; 4]; KS]) {
    let (j, half) = (n / SPI, n % SPI);
    let qb = cx.smem + (j % ST) * cx.stage;
    let qt = qb + cx.nhb * SL * 4;
    wg_fence();
    unroll::<KS>(|i| {
        let ks = KS as u32 * half + i as u32;
        let (bh, bt) = (
            desc(qb + ks * 256, SL / 4 * 128),
            desc(qt + ks * 256, SL / 4 * 128),
        );
        acc.mma(&lo[i], bh);
        acc.mma(&hi[i], bt);
        acc.mma(&hi[i], bh);
    });
    wg_commit();
}

/// Output item `n`'s value fragments (columns 16 w + 2 g and + 1; slots 8 kk + 2 c and + 1),
/// split; the stage released once a tile's last item is in registers.
#[inline(always)]
unsafe fn oload(cx: Ctx, n: u32, hi: &mut [[u32; 4]; OK], lo: &mut [[u32; 4]; OK]) {
    let (tile, qq) = (n / TPI, n % TPI);
    let it = NSL + tile;
    let s = it % ST;
    if qq == 0 {
        mbar_wait(cx.full + 8 * s, (it / ST) & 1);
    }
    let v = cx.smem
        + s * cx.stage
        + cx.wg * cx.robytes
        + 4 * (2 * cx.c * RO_STR + 16 * cx.w + 2 * cx.g);
    unroll::<OK>(|i| {
        let kk = OK as u32 * qq + i as u32;
        let u0 = ld_v2(v + 4 * (8 * kk * RO_STR));
        let u1 = ld_v2(v + 4 * ((8 * kk + 1) * RO_STR));
        let x = [u0[0], u0[1], u1[0], u1[1]];
        unroll::<4>(|e| (hi[i][e], lo[i][e]) = tf32_split(x[e]));
    });
    if qq == TPI - 1 {
        mbar_arrive(cx.empty + 8 * s);
    }
}

/// Output item `n` into `d`: per k-step head(e) x tail(v), tail(e) x head(v), head x head.
#[inline(always)]
unsafe fn oissue<T: Tile>(cx: Ctx, d: &mut T, n: u32, hi: &[[u32; 4]; OK], lo: &[[u32; 4]; OK]) {
    wg_fence();
    unroll::<OK>(|i| {
        let kk = OK as u32 * (n % TPI) + i as u32;
        let (bp, bt) = (
            desc(cx.p + kk * 256, CHUNK / 4 * 128),
            desc(cx.plo + kk * 256, CHUNK / 4 * 128),
        );
        d.mma(&lo[i], bp);
        d.mma(&hi[i], bt);
        d.mma(&hi[i], bp);
    });
    wg_commit();
}

/// Output tile `tile` of `d` to the chunk's partial sums `ot`: heads 8 jn + 2 c + b, columns
/// 16 w + 2 g and + 1.
#[inline(always)]
unsafe fn ostore<T: Tile, const NQ: usize>(cx: Ctx, ot: *mut f32, d: &T, tile: u32) {
    unroll::<NQ>(|jn| {
        unroll::<2>(|b| {
            let h = 8 * jn as u32 + 2 * cx.c + b as u32;
            let at = ot.add((h * KV + tile * 64 + 16 * cx.w + 2 * cx.g) as usize);
            ferrocuda_device::st_global_v2(at, d.at(4 * jn + b), d.at(4 * jn + 2 + b));
        })
    });
}

/// The main kernel for `NHB` heads a block; `NF = NHB / 2` accumulator floats a thread, `NQ =
/// NHB / 8` head groups of 8 (a softmax thread's heads), `T` the tile type.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn flash_bits<const NHB: u32, const NF: usize, const NQ: usize, T: Tile>(
    qs: *const f32,
    pool: *const f32,
    idx: *const i32,
    o: *mut f32,
    ml: *mut f32,
    n_slots: i32,
    pool_rows: i32,
    scale: f32,
) {
    max_threads::<THREADS>();
    let l = layout(NHB);
    let groups = NH / NHB;
    let smem = symbol_address!(DYNAMIC_SHARED); // the launch's dynamic shared memory
    let n_slots_u = n_slots as u32;
    let chunks = n_slots_u.div_ceil(CHUNK);
    // SAFETY: the launch has n_slots >= 1, so a pair at least.
    let pairs = core::num::NonZeroU32::new_unchecked(chunks.div_ceil(2));
    let bid = block_idx_x();
    let (grp, pair, token) = (bid % groups, bid / groups % pairs, bid / groups / pairs);
    let tid = thread_idx_x();
    let full = smem + l.mbar_off;
    let empty = full + 8 * ST;
    if tid == 0 {
        for s in 0..ST {
            mbar_init(full + 8 * s, 32 * PW + 1);
            mbar_init(empty + 8 * s, CONSUMERS);
        }
        asm!("fence.mbarrier_init.release.cluster;", options(nostack));
    }
    ferrocuda_device::sync_threads();
    if tid >= CONSUMERS {
        asm!("setmaxnreg.dec.sync.aligned.u32 40;", options(nostack));
        let (lane, pw) = (tid % 32, (tid - CONSUMERS) / 32);
        let rtab = smem + l.rtab_off;
        let mut i = tid - CONSUMERS;
        while i < 2 * CHUNK {
            let slot = 2 * pair * CHUNK + i;
            let r = if slot < n_slots_u {
                (*idx.add(token as usize * n_slots_u as usize + slot as usize))
                    .max(0)
                    .min(pool_rows - 1)
            } else {
                -1
            };
            st_i32(rtab + 4 * i, r);
            i += 32 * PW;
        }
        asm!("bar.sync 4, {n};", n = const 32 * PW, options(nostack));
        let base = pool.add(4 * (lane % 8) as usize);
        let qsrc = qs.add((token * groups + grp) as usize * (NSL * l.qbytes / 4) as usize);
        for it in 0..ITEMS {
            let s = it % ST;
            if it >= ST {
                mbar_wait(empty + 8 * s, (it / ST - 1) & 1);
            }
            let stage = smem + s * l.stage;
            if it < NSL {
                if lane == 0 && pw == 0 {
                    mbar_expect(full + 8 * s, l.qbytes);
                    bulk(
                        stage,
                        qsrc.add((it * l.qbytes / 4) as usize),
                        l.qbytes,
                        full + 8 * s,
                    );
                }
                for ch in 0..2 {
                    let dst = stage + l.qbytes + ch * l.rsbytes + 16 * (lane % 8);
                    let rows: [u32; 4] =
                        core::array::from_fn(|i| lane / 8 + 4 * (16 / PW * pw + i as u32));
                    let r: [i32; 4] =
                        core::array::from_fn(|i| ld_i32(rtab + 4 * (ch * CHUNK + rows[i])));
                    unroll::<4>(|i| {
                        let src = base.add(r[i].max(0) as usize * D as usize + (it * SL) as usize);
                        cp16z(dst + rows[i] * RS_STR * 4, src, r[i] >= 0);
                    });
                }
            } else {
                let tile = it - NSL;
                if lane == 0 && pw == 0 {
                    mbar_arrive(full + 8 * s);
                }
                for ch in 0..2 {
                    let dst = stage + ch * l.robytes + 16 * (lane % 8);
                    let rows: [u32; 4] =
                        core::array::from_fn(|i| lane / 8 + 4 * (16 / PW * pw + i as u32));
                    let r: [i32; 4] =
                        core::array::from_fn(|i| ld_i32(rtab + 4 * (ch * CHUNK + rows[i])));
                    unroll::<4>(|i| {
                        let src =
                            base.add(r[i].max(0) as usize * D as usize + (tile * 64) as usize);
                        let row = dst + rows[i] * RO_STR * 4;
                        cp16z(row, src, r[i] >= 0);
                        cp16z(row + 128, src.add(32), r[i] >= 0);
                    });
                }
            }
            mbar_arrive_copies(full + 8 * s);
        }
        return;
    }
    asm!("setmaxnreg.inc.sync.aligned.u32 232;", options(nostack));
    let (wg, w, lane) = (tid / 128, tid / 32 % 4, tid % 32);
    let (g, c) = (lane / 4, lane % 4);
    let chunk = 2 * pair + wg;
    let stored = chunk < chunks;

    // Scores S^T = K Q^T, in K_PARTS parts of PER k-steps, each a chain from +0, added in order.
    let mut acc_e = T::ZERO;
    let mut acc_o = T::ZERO;
    zero::<T, NF>(&mut acc_e);
    zero::<T, NF>(&mut acc_o);
    let mut sum = [-0.0f32; NF];
    let mut xf = [[0u32; 4]; KS];
    let mut xl = [[0u32; 4]; KS];
    let mut yf = [[0u32; 4]; KS];
    let mut yl = [[0u32; 4]; KS];
    let cx = Ctx {
        smem,
        stage: l.stage,
        qbytes: l.qbytes,
        rsbytes: l.rsbytes,
        robytes: l.robytes,
        full,
        empty,
        nhb: NHB,
        wg,
        w,
        g,
        c,
        p: smem + l.p_off + wg * l.p_bytes,
        plo: smem + l.p_off + wg * l.p_bytes + NHB * CHUNK * 4,
    };
    sload(cx, 0, &mut xf, &mut xl);
    sissue(cx, 0, &mut acc_e, &xf, &xl);
    for p2 in 0..K_PARTS / 2 {
        const _: () = assert!(NO == 16, "the output's unrolled list");
        // One copy an item of a pair of parts: 2 IPP items (8 at the seed's geometry, 18 at
        // V3.2's).
        macro_rules! pair_of_parts {
            ($($i:literal),*) => {
                const _: () = assert!([$($i),*].len() as u32 == 2 * IPP, "the items of two parts");
                unrolled!(i in [$($i),*] => {
            let n = 2 * IPP * p2 + i;
            if n + 1 < NS {
                let next = if ((i + 1) / IPP) % 2 == 1 { &mut acc_o } else { &mut acc_e };
                if i % 2 == 0 {
                    sload(cx, n + 1, &mut yf, &mut yl);
                    sissue(cx, n + 1, next, &yf, &yl);
                } else {
                    sload(cx, n + 1, &mut xf, &mut xl);
                    sissue(cx, n + 1, next, &xf, &xl);
                }
                wg_wait::<1>();
            } else {
                wg_wait::<0>();
            }
            if n % SPI == SPI - 1 {
                mbar_arrive(empty + 8 * ((n / SPI) % ST));
            }
            if i % IPP == IPP - 1 {
                let done = if (i / IPP) % 2 == 1 { &mut acc_o } else { &mut acc_e };
                unroll::<NF>(|k| sum[k] += done.at(k));
                pin::<NF>(&mut sum);
                zero::<T, NF>(done);
            }
                });
            };
        }
        #[cfg(not(feature = "v32"))]
        pair_of_parts!(0, 1, 2, 3, 4, 5, 6, 7);
        #[cfg(feature = "v32")]
        pair_of_parts!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17);
    }

    // Softmax in attn_flash's mapping, through shared memory.
    let (p, plo) = (cx.p, cx.plo);
    unroll::<NQ>(|jn| {
        let jn = jn as u32;
        unroll::<4>(|e| {
            let e = e as u32;
            let h = 8 * jn + 2 * c + e % 2;
            st_f32(
                p + 4 * (h * SC_STR + 16 * w + g + 8 * (e / 2)),
                sum[(4 * jn + e) as usize],
            );
        });
    });
    wg_sync(wg);
    let (tw, s0) = (tid % 128, chunk * CHUNK);
    let (hg, q) = (tw / 16, tw % 16);
    let mut sv = [[0.0f32; 4]; NQ];
    unroll::<NQ>(|r| sv[r] = ld_v4(p + 4 * ((8 * r as u32 + hg) * SC_STR + 4 * q)));
    wg_sync(wg);
    unroll::<NQ>(|r| {
        let h = 8 * r as u32 + hg;
        let s = &mut sv[r];
        let mut m = f32::NEG_INFINITY;
        unroll::<4>(|i| {
            s[i] *= scale;
            if s0 + 4 * q + (i as u32) < n_slots_u {
                m = max(m, s[i]);
            }
        });
        for offset in [8, 4, 2, 1] {
            m = max(m, shfl_xor(u32::MAX, m, offset));
        }
        let mut e = [0.0f32; 4];
        let mut lsum = 0.0f32;
        unroll::<4>(|i| {
            e[i] = if s0 + 4 * q + (i as u32) < n_slots_u {
                expf(s[i] - m)
            } else {
                0.0
            };
            lsum += e[i];
        });
        for offset in [8, 4, 2, 1] {
            lsum += shfl_xor(u32::MAX, lsum, offset);
        }
        let split: [(u32, u32); 4] = core::array::from_fn(|i| tf32_split(e[i]));
        let pos = 8 * (q / 2) + 2 * (q % 2);
        st_u32x2(p + 4 * core_off(h, pos, CHUNK), split[0].0, split[2].0);
        st_u32x2(p + 4 * core_off(h, pos + 4, CHUNK), split[1].0, split[3].0);
        st_u32x2(plo + 4 * core_off(h, pos, CHUNK), split[0].1, split[2].1);
        st_u32x2(
            plo + 4 * core_off(h, pos + 4, CHUNK),
            split[1].1,
            split[3].1,
        );
        if q == 0 && stored {
            let out = ml.add(
                2 * ((token as usize * chunks as usize + chunk as usize) * NH as usize
                    + (grp * NHB + h) as usize),
            );
            *out = m;
            *out.add(1) = lsum;
        }
    });
    fence_async();
    wg_sync(wg);

    // O^T = V^T E^T, a 64-column tile a pair of items.
    let ot = o.add(
        ((token as usize * chunks as usize + chunk as usize) * NH as usize + (grp * NHB) as usize)
            * KV as usize,
    );
    let mut d0 = T::ZERO;
    let mut d1 = T::ZERO;
    let mut af = [[0u32; 4]; OK];
    let mut al = [[0u32; 4]; OK];
    let mut bf = [[0u32; 4]; OK];
    let mut bl = [[0u32; 4]; OK];
    unrolled!(n in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] => {
        if n >= 2 {
            wg_wait::<1>(); // item n - 2 is done: its fragment set is free
            if (n - 2) % TPI == TPI - 1 {
                if stored {
                    ostore::<T, NQ>(cx, ot, if ((n - 2) / TPI) % 2 == 1 { &d1 } else { &d0 }, (n - 2) / TPI);
                }
            }
        }
        let d = if (n / TPI) % 2 == 1 { &mut d1 } else { &mut d0 };
        if n % TPI == 0 {
            zero::<T, NF>(d);
        }
        if n % 2 == 0 {
            oload(cx, n, &mut af, &mut al);
            oissue(cx, d, n, &af, &al);
        } else {
            oload(cx, n, &mut bf, &mut bl);
            oissue(cx, d, n, &bf, &bl);
        }
    });
    wg_wait::<0>();
    if stored {
        ostore::<T, NQ>(cx, ot, &d1, NT - 1);
    }
}

macro_rules! entry {
    ($name:ident, $nhb:literal, $nf:literal, $nq:literal) => {
        /// The main kernel at this many heads a block (grid `t * ceil(n_slots / 128) * (64 /
        /// heads)`, block 384, dynamic shared memory [`shared_bytes`]).
        ///
        /// # Safety
        /// As `flash_bits.cu`'s kernel.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            qs: *const f32,
            pool: *const f32,
            idx: *const i32,
            o: *mut f32,
            ml: *mut f32,
            n_slots: i32,
            pool_rows: i32,
            scale: f32,
        ) {
            flash_bits::<$nhb, $nf, $nq, [f32; $nf]>(
                qs, pool, idx, o, ml, n_slots, pool_rows, scale,
            )
        }
    };
}
entry!(flash_bits_h16, 16, 8, 2);
entry!(flash_bits_h32, 32, 16, 4);
entry!(flash_bits_h64, 64, 32, 8);
