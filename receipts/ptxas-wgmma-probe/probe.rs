#![no_std]
#![feature(abi_ptx, asm_experimental_arch)]
use core::arch::asm;
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! { loop {} }
#[no_mangle]
pub unsafe extern "ptx-kernel" fn probe(out: *mut f32, desc: u64) {
    let mut d = [0f32; 16];
    let a: [u32; 4] = [1, 2, 3, 4];
    asm!("wgmma.fence.sync.aligned;");
    asm!("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {{{0},{1},{2},{3},{4},{5},{6},{7},{8},{9},{10},{11},{12},{13},{14},{15}}}, {{{16},{17},{18},{19}}}, {20}, 1, 1, 1;",
        inout(reg32) d[0], inout(reg32) d[1], inout(reg32) d[2], inout(reg32) d[3],
        inout(reg32) d[4], inout(reg32) d[5], inout(reg32) d[6], inout(reg32) d[7],
        inout(reg32) d[8], inout(reg32) d[9], inout(reg32) d[10], inout(reg32) d[11],
        inout(reg32) d[12], inout(reg32) d[13], inout(reg32) d[14], inout(reg32) d[15],
        in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3], in(reg64) desc);
    asm!("wgmma.commit_group.sync.aligned;");
    asm!("wgmma.wait_group.sync.aligned 0;");
    let mut s = 0.0;
    for x in d { s += x; }
    *out = s;
}
