//! Thread-block clusters (sm_90): the cluster an entry's blocks run in, a block's rank in it, the
//! cluster-wide barrier, and reads of another block's shared memory (distributed shared memory).

use crate::{F32x4, Shared};

/// The entry that calls it runs its blocks in clusters of `N` consecutive blocks (CUDA
/// `__cluster_dims__(N, 1, 1)`), whose shared memory each of them can read; a launch's grid
/// must be a multiple of `N`. Like [`crate::max_threads`] it leaves a marker comment in the
/// PTX, which the build turns into `.explicitcluster` and `.reqnctapercluster N, 1, 1` on the
/// calling entry, as NVCC writes them.
#[inline(always)]
pub fn cluster_dims<const N: u32>() {
    // SAFETY: a comment; it emits no instruction.
    unsafe {
        core::arch::asm!("// ferrocuda.reqnctapercluster {n}", n = const N, options(nomem, nostack))
    };
}

/// `%cluster_ctarank` (CUDA `cluster.block_rank()`): this block's rank in its cluster.
#[inline(always)]
pub fn cluster_rank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack))
    };
    r
}

/// `barrier.cluster.arrive.aligned` (CUDA `cluster.barrier_arrive()`; release semantics, the
/// default, which PTX before 8.0 cannot spell out): this thread's writes to shared memory so far
/// are visible to every block of the cluster once it has waited
/// ([`cluster_wait`]) for this arrival.
///
/// # Safety
/// Every thread of every block of the cluster arrives once for each wait, all lanes of a warp
/// together.
#[inline(always)]
pub unsafe fn cluster_arrive() {
    core::arch::asm!("barrier.cluster.arrive.aligned;", options(nostack));
}

/// `barrier.cluster.wait.aligned` (CUDA `cluster.barrier_wait()`; acquire semantics, the
/// default): waits until every
/// thread of the cluster has arrived ([`cluster_arrive`]), and sees what they wrote before.
///
/// # Safety
/// As [`cluster_arrive`], after this thread's own arrival.
#[inline(always)]
pub unsafe fn cluster_wait() {
    core::arch::asm!("barrier.cluster.wait.aligned;", options(nostack));
}

/// An address in the shared memory of a block of this block's cluster: made only by
/// [`Shared::in_rank`].
pub struct Remote<T> {
    addr: u32,
    ty: core::marker::PhantomData<*const T>,
}

impl<T> Clone for Remote<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Remote<T> {}

impl<T> Shared<T> {
    /// `mapa.shared::cluster.u32` (CUDA `cluster.map_shared_rank(p, rank)`): the same place in
    /// the shared memory of block `rank` of the cluster.
    #[inline(always)]
    pub fn in_rank(self, rank: u32) -> Remote<T> {
        let addr: u32;
        // SAFETY: an address computation; nothing is accessed.
        unsafe {
            core::arch::asm!(
                "mapa.shared::cluster.u32 {d}, {a}, {r};",
                d = out(reg32) addr,
                a = in(reg32) self.addr(),
                r = in(reg32) rank,
                options(pure, nomem, nostack),
            )
        };
        Remote {
            addr,
            ty: core::marker::PhantomData,
        }
    }
}

impl Remote<F32x4> {
    /// `ld.shared::cluster.v4.f32`: a `float4` of another block's shared memory.
    ///
    /// # Safety
    /// 16-byte aligned, inside that block's shared memory, written before a cluster barrier this
    /// thread has waited on, and that block has not yet passed the cluster barrier after this
    /// read.
    #[inline(always)]
    pub unsafe fn load(self) -> F32x4 {
        let (x, y, z, w): (f32, f32, f32, f32);
        core::arch::asm!(
            "ld.shared::cluster.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];",
            a = in(reg32) self.addr,
            x = out(reg32) x,
            y = out(reg32) y,
            z = out(reg32) z,
            w = out(reg32) w,
            options(nostack, readonly),
        );
        F32x4 { x, y, z, w }
    }

    /// The `float4` `i` elements on.
    #[inline(always)]
    pub fn add(self, i: u32) -> Self {
        Remote {
            addr: self.addr + 16 * i,
            ty: core::marker::PhantomData,
        }
    }
}
