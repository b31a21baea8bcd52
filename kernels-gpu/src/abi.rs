//! Types that cross the host/device boundary: the vector types (`ferrocuda-device`'s, which the
//! device reads and writes with one instruction each), and the launch ABI every kernel crate
//! shares (`ferrocuda-abi`'s: the parameter markers of a launch, the kernel and group traits, the
//! kernel tables).

pub use ferrocuda_abi::{concat, flatten, Entry, Group, In, Kernel, KernelSpec, Out};
pub use ferrocuda_device::{F32x4, I8x4, F16};
