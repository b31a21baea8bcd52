//! Shared-memory barriers that count arrivals and bytes (`mbarrier`, sm_90), and the copies that
//! complete on them: what lets a producer warpgroup fill a ring of stages while consumers work
//! on the others, each stage guarded by a "full" and an "empty" barrier whose phase parity the
//! waiters name.

use crate::Shared;

/// `mbarrier.init.shared::cta.b64 [bar], count`: a barrier whose phase completes after `count`
/// arrivals (and every byte announced to it).
///
/// # Safety
/// `bar` is an 8-byte-aligned shared address inside memory the launch has; no thread uses the
/// barrier before a [`fence_mbarrier_init`] and a block barrier after this.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: Shared<u64>, count: u32) {
    core::arch::asm!(
        "mbarrier.init.shared::cta.b64 [{a}], {c};",
        a = in(reg32) bar.addr(),
        c = in(reg32) count,
        options(nostack),
    );
}

/// `fence.mbarrier_init.release.cluster`: the initialisations before it are visible to the
/// asynchronous copies that complete on those barriers.
///
/// # Safety
/// None beyond the barriers' own.
#[inline(always)]
pub unsafe fn fence_mbarrier_init() {
    core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack));
}

/// `mbarrier.arrive.shared::cta.b64`: one arrival on `bar` (its state token discarded).
///
/// # Safety
/// `bar` is an initialised barrier whose current phase still expects this arrival.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: Shared<u64>) {
    core::arch::asm!(
        "{{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{a}]; }}",
        a = in(reg32) bar.addr(),
        options(nostack),
    );
}

/// `mbarrier.arrive.shared::cta.b64 [bar], count`: `count` arrivals at once, for a phase that
/// one group of threads ends where another ends it in other phases.
///
/// # Safety
/// As [`mbarrier_arrive`], for `count` arrivals.
#[inline(always)]
pub unsafe fn mbarrier_arrive_count(bar: Shared<u64>, count: u32) {
    core::arch::asm!(
        "{{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{a}], {c}; }}",
        a = in(reg32) bar.addr(),
        c = in(reg32) count,
        options(nostack),
    );
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 [bar], bytes`: one arrival, and `bytes` more that
/// the phase waits for from bulk copies ([`bulk_copy_to_shared`]).
///
/// # Safety
/// As [`mbarrier_arrive`]; the copies completing on `bar` in this phase bring exactly `bytes`.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: Shared<u64>, bytes: u32) {
    core::arch::asm!(
        "{{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [{a}], {n}; }}",
        a = in(reg32) bar.addr(),
        n = in(reg32) bytes,
        options(nostack),
    );
}

/// `mbarrier.try_wait.parity.shared::cta.b64` until it succeeds: waits for the phase of parity
/// `parity` of `bar` to complete, after which what its copies and arrivals wrote is visible.
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
pub unsafe fn mbarrier_wait_parity(bar: Shared<u64>, parity: u32) {
    loop {
        let done: u32;
        core::arch::asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {par}; selp.u32 {d}, 1, 0, p; }}",
            a = in(reg32) bar.addr(),
            par = in(reg32) parity,
            d = out(reg32) done,
            options(nostack),
        );
        if done != 0 {
            break;
        }
    }
}

/// `cp.async.mbarrier.arrive.noinc.shared::cta.b64 [bar]`: an arrival on `bar` once this
/// thread's `cp.async` copies issued so far have landed (counted in the barrier's `count`).
///
/// # Safety
/// As [`mbarrier_arrive`].
#[inline(always)]
pub unsafe fn cp_async_mbarrier_arrive_noinc(bar: Shared<u64>) {
    core::arch::asm!(
        "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{a}];",
        a = in(reg32) bar.addr(),
        options(nostack),
    );
}

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar]`:
/// the copy engine moves `bytes` contiguous bytes from global to shared memory and counts them on
/// `bar`.
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, `bytes` a multiple of 16; `src` has `bytes` readable
/// bytes the grid never writes, `dst` as many inside memory the launch has that nothing touches
/// until `bar`'s phase completes; an arrival on `bar` announced them
/// ([`mbarrier_arrive_expect_tx`]).
#[inline(always)]
pub unsafe fn bulk_copy_to_shared<T>(dst: Shared<T>, src: *const u8, bytes: u32, bar: Shared<u64>) {
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [g], {n}, [{m}]; }}",
        dst = in(reg32) dst.addr(),
        src = in(reg64) src,
        n = in(reg32) bytes,
        m = in(reg32) bar.addr(),
        options(nostack),
    );
}

/// `fence.proxy.async.shared::cta`: this thread's shared-memory writes before it are visible to
/// the asynchronous proxy (a later `wgmma` reading them by descriptor).
///
/// # Safety
/// None.
#[inline(always)]
pub unsafe fn fence_proxy_async_shared() {
    core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack));
}
