//! A loaded set of kernels (one build), and the typed launch.

use crate::arch::module_arch;
use crate::balance::balancing_pad;
use crate::check;
use crate::error::{ArgError, Context, Error};
use crate::gpu::Gpu;
use crate::params::Params;
use cudarc::driver::sys::{self, CUfunction_attribute};
use cudarc::driver::{result, CudaFunction, CudaModule, LaunchConfig};
use cudarc::nvrtc::Ptx;
use ferrocuda::PtxModule;
use kernels_gpu::abi::{Entry, Kernel};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The kernel entries a PTX module declares (`.entry NAME(`), in order.
fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim().split_once(".entry ").map(|(_, rest)| rest))
        .map(|rest| {
            rest.split(['(', ' '])
                .next()
                .unwrap_or(rest)
                .trim()
                .to_string()
        })
        .collect()
}

/// The first entry that two of these PTX modules declare, if any.
fn duplicate_entry(ptx: &[String]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    ptx.iter()
        .flat_map(|src| entry_names(src))
        .find(|name| !seen.insert(name.clone()))
}

/// Dynamic shared memory any kernel may take without raising its limit.
const DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

/// Refuses a launch of `kernel` with `bytes` of dynamic shared memory per block on a device that
/// gives one block `limit` (named `device`): the launchers check the kernels' own limits, which
/// are sm_90's, and a GPU with less would fail the launch itself.
fn fits_device(
    kernel: &'static str,
    bytes: u32,
    (limit, device): &(u32, String),
) -> Result<(), Error> {
    if bytes > *limit {
        return Err(Error::SharedMemory {
            kernel,
            bytes,
            limit: *limit,
            device: device.clone(),
        });
    }
    Ok(())
}

/// Which implementation of the kernels a module holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Build {
    /// The Rust kernels, compiled to PTX at build time.
    Rust,
    /// The reference CUDA C++, compiled by NVRTC at run time.
    Cu,
}

impl Build {
    pub fn label(self) -> &'static str {
        match self {
            Build::Rust => "rust",
            Build::Cu => "cu",
        }
    }
}

/// A kernel crate as a [`Module`] loads it: the PTX modules that its build script embedded (with
/// `ferrocuda-builder`, one per SM target) and the reference .cu sources of the same kernels.
/// ferrocuda's own is [`FERROCUDA`]; a crate of kernels outside the project declares its own
/// from the `modules.rs` its build script wrote.
#[derive(Clone, Copy)]
pub struct KernelCrate {
    /// The crate's PTX module for each SM target it was built for.
    pub modules: &'static [PtxModule],
    /// The reference CUDA C++ of the same kernels (entries and parameter lists alike).
    pub reference: &'static [crate::reference::Source],
}

impl KernelCrate {
    /// The crate's module for `arch`, or an error naming the archs it has.
    pub fn module(&self, arch: &str) -> Result<&'static PtxModule, Error> {
        self.modules
            .iter()
            .find(|m| m.arch == arch)
            .ok_or_else(|| Error::ModuleArch {
                arch: arch.to_string(),
                why: format!(
                    "a kernel crate was built for {} only",
                    self.modules
                        .iter()
                        .map(|m| m.arch)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}

/// ferrocuda's kernels: `kernels-gpu` built by the root package, and `reference/`.
pub const FERROCUDA: KernelCrate = KernelCrate {
    modules: ferrocuda::MODULES,
    reference: crate::reference::SOURCES,
};

/// The kernels of one build, loaded on one device. The reference build is several PTX modules
/// (one per .cu file); a kernel is looked up by name across them.
pub struct Module {
    build: Build,
    /// The SM target the modules were built for: below sm_90, which has no programmatic
    /// launches, the kernels do not wait for their predecessor, so every launch is plain.
    arch: String,
    /// Each loaded PTX module and the kernel entries its text declares, so that a kernel is
    /// looked up in the module that has it (a failed lookup is an API error that
    /// compute-sanitizer reports).
    modules: Vec<(Arc<CudaModule>, Vec<String>)>,
    /// Entry points already looked up, so a launch costs no driver lookup after the first.
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    /// Occupancies already asked of the driver, by kernel, block size and dynamic shared
    /// memory, so that a launch asks once.
    occupancy: Mutex<HashMap<(&'static str, u32, u32), u32>>,
    /// Pads already found, so that a launch asks once.
    balance: Mutex<Pads>,
    /// The device's dynamic shared memory per block, and its name for the refusal.
    max_shared: (u32, String),
}

/// [`Module::entry_balancing_pad`]'s pads (`None`: out of reach) by kernel, block size, dynamic
/// shared memory and the blocks an SM may hold.
type Pads = HashMap<(&'static str, u32, u32, u32), Option<u32>>;

impl Module {
    /// The PTX modules `ptx` as one build; an entry that two of them declare is refused, naming it.
    pub fn load(gpu: &Gpu, build: Build, arch: &str, ptx: &[String]) -> Result<Self, Error> {
        if let Some(name) = duplicate_entry(ptx) {
            return Err(Error::DuplicateEntry {
                name,
                build: build.label(),
            });
        }
        let modules = ptx
            .iter()
            .map(|src| {
                let module = gpu
                    .context()
                    .load_module(Ptx::from_src(src.clone()))
                    .during(|| format!("loading the {} PTX module", build.label()))?;
                Ok((module, entry_names(src)))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Module {
            build,
            arch: arch.to_string(),
            modules,
            functions: Mutex::default(),
            occupancy: Mutex::default(),
            balance: Mutex::default(),
            max_shared: (gpu.info().max_shared_per_block, gpu.info().name.clone()),
        })
    }

    /// ferrocuda's Rust kernels embedded in this binary: the module [`module_arch`] picks.
    pub fn rust(gpu: &Gpu) -> Result<Self, Error> {
        Self::rust_of(gpu, &[FERROCUDA], module_arch(gpu)?)
    }

    /// ferrocuda's reference .cu kernels, compiled now by NVRTC for the arch [`module_arch`]
    /// picks, as the Rust build's.
    pub fn cu(gpu: &Gpu) -> Result<Self, Error> {
        Self::cu_of(gpu, &[FERROCUDA], module_arch(gpu)?)
    }

    /// The Rust build of these kernel crates, each one's module for `arch`. No two may declare
    /// the same entry: a launch looks a kernel up by name.
    pub fn rust_of(gpu: &Gpu, crates: &[KernelCrate], arch: &str) -> Result<Self, Error> {
        let ptx = crates
            .iter()
            .map(|c| Ok(c.module(arch)?.ptx.to_string()))
            .collect::<Result<Vec<String>, Error>>()?;
        Self::load(gpu, Build::Rust, arch, &ptx)
    }

    /// The reference build of these kernel crates: each crate's .cu sources compiled now by
    /// NVRTC for `arch`.
    pub fn cu_of(gpu: &Gpu, crates: &[KernelCrate], arch: &str) -> Result<Self, Error> {
        let mut ptx = Vec::new();
        for c in crates {
            for source in c.reference {
                ptx.push(crate::reference::compile(source.name, source.text, arch)?);
            }
        }
        Self::load(gpu, Build::Cu, arch, &ptx)
    }

    /// The SM target this build was compiled for.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn build(&self) -> Build {
        self.build
    }

    /// The entry point of kernel `K` in this build.
    pub fn function<K: Kernel>(&self) -> Result<CudaFunction, Error> {
        self.function_named(K::NAME)
    }

    fn function_named(&self, name: &'static str) -> Result<CudaFunction, Error> {
        let mut cache = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.get(name) {
            return Ok(f.clone());
        }
        let during = || {
            format!(
                "finding kernel `{name}` in the {} build",
                self.build.label()
            )
        };
        let module = self
            .modules
            .iter()
            .find(|(_, names)| names.iter().any(|n| n == name))
            .map(|(m, _)| m)
            .ok_or_else(|| Error::Driver {
                during: during(),
                source: cudarc::driver::DriverError(
                    cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NOT_FOUND,
                ),
            })?;
        let f = module.load_function(name).during(during)?;
        cache.insert(name, f.clone());
        Ok(f)
    }

    /// Blocks of kernel `K` at `cfg`'s block size and dynamic shared memory that one SM holds
    /// at once, as the driver's occupancy calculator gives it (asked once per kernel and
    /// geometry).
    pub fn blocks_per_sm<K: Kernel>(&self, cfg: LaunchConfig) -> Result<u32, Error> {
        self.entry_blocks_per_sm(K::ENTRY, cfg)
    }

    /// [`Module::blocks_per_sm`] of an entry a key picked from its [`Group`](kernels_gpu::abi::Group).
    pub fn entry_blocks_per_sm<P>(&self, entry: Entry<P>, cfg: LaunchConfig) -> Result<u32, Error> {
        let (x, y, z) = cfg.block_dim;
        let key = (entry.name, x * y * z, cfg.shared_mem_bytes);
        if let Some(&n) = self.occupancy_cache().get(&key) {
            return Ok(n);
        }
        let n = self
            .function_with_smem(entry.name, cfg.shared_mem_bytes)?
            .occupancy_max_active_blocks_per_multiprocessor(key.1, key.2 as usize, None)
            .during(|| format!("reading the occupancy of {}", entry.name))?;
        self.occupancy_cache().insert(key, n);
        Ok(n)
    }

    /// Kernel `name`, allowed `bytes` of dynamic shared memory where that is past the default
    /// 48 KiB: without the attribute a launch asking for more fails, and the occupancy
    /// calculator counts no block as fitting.
    fn function_with_smem(&self, name: &'static str, bytes: u32) -> Result<CudaFunction, Error> {
        fits_device(name, bytes, &self.max_shared)?;
        let func = self.function_named(name)?;
        if bytes > DEFAULT_DYNAMIC_SMEM {
            func.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .during(|| format!("allowing {name} {bytes} bytes of dynamic shared memory"))?;
        }
        Ok(func)
    }

    /// The least padding of `cfg`'s dynamic shared memory at which an SM holds at most `want`
    /// blocks of `entry` ([`balancing_pad`]), or `None` where no padding the device allows gets
    /// there; found once per kernel, geometry and `want`, so that a launch asks once.
    pub(crate) fn entry_balancing_pad<P>(
        &self,
        entry: Entry<P>,
        cfg: LaunchConfig,
        want: u32,
    ) -> Result<Option<u32>, Error> {
        let (x, y, z) = cfg.block_dim;
        let key = (entry.name, x * y * z, cfg.shared_mem_bytes, want);
        if let Some(&pad) = self.balance_cache().get(&key) {
            return Ok(pad);
        }
        let stat = self
            .function_named(entry.name)?
            .shared_size_bytes()
            .during(|| format!("reading the static shared memory of {}", entry.name))?;
        let max = (self.max_shared.0)
            .saturating_sub(stat.max(0) as u32)
            .saturating_sub(cfg.shared_mem_bytes);
        let pad = balancing_pad(want, max, |pad| {
            let padded = LaunchConfig {
                shared_mem_bytes: cfg.shared_mem_bytes + pad,
                ..cfg
            };
            self.entry_blocks_per_sm(entry, padded)
        })?;
        self.balance_cache().insert(key, pad);
        Ok(pad)
    }

    fn balance_cache(&self) -> std::sync::MutexGuard<'_, Pads> {
        self.balance.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn occupancy_cache(&self) -> std::sync::MutexGuard<'_, HashMap<(&'static str, u32, u32), u32>> {
        self.occupancy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Launches kernel `K` with arguments typed by its own signature.
    ///
    /// `rms_norm(x: *const F32x4, w: *const F32x4, z: *mut F32x4, ncols: i32, eps: f32)` takes
    /// two borrowed buffers, one mutably borrowed buffer, an `i32` and an `f32`:
    /// ```no_run
    /// # fn demo(gpu: &host::Gpu, m: &host::Module, cfg: host::LaunchConfig,
    /// #         x: &host::CudaSlice<f32>, w: &host::CudaSlice<f32>, z: &mut host::CudaSlice<f32>)
    /// #         -> Result<(), host::Error> {
    /// use kernels_gpu::norm_q8::rms_norm;
    /// unsafe { m.launch::<rms_norm>(gpu, cfg, (x, w, z, 4096, 1e-6)) }
    /// # }
    /// ```
    /// A missing argument does not compile:
    /// ```compile_fail
    /// # fn demo(gpu: &host::Gpu, m: &host::Module, cfg: host::LaunchConfig,
    /// #         x: &host::CudaSlice<f32>, w: &host::CudaSlice<f32>, z: &mut host::CudaSlice<f32>)
    /// #         -> Result<(), host::Error> {
    /// use kernels_gpu::norm_q8::rms_norm;
    /// unsafe { m.launch::<rms_norm>(gpu, cfg, (x, w, z, 4096)) }
    /// # }
    /// ```
    /// Nor does an output passed without a mutable borrow:
    /// ```compile_fail
    /// # fn demo(gpu: &host::Gpu, m: &host::Module, cfg: host::LaunchConfig,
    /// #         x: &host::CudaSlice<f32>, w: &host::CudaSlice<f32>, z: &mut host::CudaSlice<f32>)
    /// #         -> Result<(), host::Error> {
    /// use kernels_gpu::norm_q8::rms_norm;
    /// unsafe { m.launch::<rms_norm>(gpu, cfg, (x, w, &*z, 4096, 1e-6)) }
    /// # }
    /// ```
    /// Nor a scalar of the wrong type:
    /// ```compile_fail
    /// # fn demo(gpu: &host::Gpu, m: &host::Module, cfg: host::LaunchConfig,
    /// #         x: &host::CudaSlice<f32>, w: &host::CudaSlice<f32>, z: &mut host::CudaSlice<f32>)
    /// #         -> Result<(), host::Error> {
    /// use kernels_gpu::norm_q8::rms_norm;
    /// unsafe { m.launch::<rms_norm>(gpu, cfg, (x, w, z, 4096u32, 1e-6)) }
    /// # }
    /// ```
    ///
    /// `cfg.shared_mem_bytes` is the dynamic shared memory of the launch; above the 48 KiB that
    /// every kernel may take, the kernel's limit is raised to it first.
    ///
    /// # Safety
    /// The buffers must be as large as the kernel reads and writes for `cfg`, and `cfg` must be
    /// a geometry the kernel supports; the per-kernel launchers check both.
    pub unsafe fn launch<K: Kernel>(
        &self,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: <K::Params as Params>::Args<'_>,
    ) -> Result<(), Error>
    where
        K::Params: Params,
    {
        self.launch_as(K::ENTRY, gpu, cfg, args, &[], false)
    }

    /// [`Module::launch`] of an entry a key picked from its [`Group`](kernels_gpu::abi::Group):
    /// the arguments are typed by the parameter list every entry of the group shares.
    ///
    /// # Safety
    /// As [`Module::launch`].
    pub unsafe fn launch_entry<P: Params>(
        &self,
        entry: Entry<P>,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: P::Args<'_>,
    ) -> Result<(), Error> {
        self.launch_as(entry, gpu, cfg, args, &[], false)
    }

    /// [`Module::launch_entry`] of a kernel that reads some buffers in wider pieces than their
    /// element (bytes 16 at a time): each argument named in `wide` must also have an address that
    /// is a multiple of its width, or the launch is refused, naming it.
    ///
    /// # Safety
    /// As [`Module::launch`].
    pub unsafe fn launch_entry_reading<P: Params>(
        &self,
        entry: Entry<P>,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: P::Args<'_>,
        wide: &[(&'static str, usize)],
    ) -> Result<(), Error> {
        self.launch_as(entry, gpu, cfg, args, wide, false)
    }

    /// [`Module::launch`] as a programmatic dependent launch (CUDA's
    /// `cudaLaunchAttributeProgrammaticStreamSerialization`): the kernel may start while the
    /// stream's previous kernel drains, once that kernel's blocks have all triggered or exited,
    /// so its launch and first instructions overlap the previous kernel's tail. A module built
    /// below sm_90 launches it plainly: there the kernel does not wait, so it must not start early.
    ///
    /// # Safety
    /// As [`Module::launch`]; and the kernel waits for its predecessor (`griddepcontrol.wait`,
    /// `device::grid_dependency_wait`) before it reads anything that kernel writes.
    pub unsafe fn launch_dependent<K: Kernel>(
        &self,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: <K::Params as Params>::Args<'_>,
    ) -> Result<(), Error>
    where
        K::Params: Params,
    {
        self.launch_dependent_entry(K::ENTRY, gpu, cfg, args)
    }

    /// [`Module::launch_dependent`] of an entry a key picked from its
    /// [`Group`](kernels_gpu::abi::Group).
    ///
    /// # Safety
    /// As [`Module::launch_dependent`].
    pub unsafe fn launch_dependent_entry<P: Params>(
        &self,
        entry: Entry<P>,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: P::Args<'_>,
    ) -> Result<(), Error> {
        self.launch_as(entry, gpu, cfg, args, &[], true)
    }

    /// [`Module::launch_entry_reading`] of a kernel of ferrocuda's chained families
    /// (`kernels_gpu::CHAINED`), which wait for their predecessor at entry: as a programmatic
    /// dependent of the stream's previous kernel while [`Gpu::programmatic`] is on, plainly
    /// otherwise. Crate-private, so that another crate's kernels, which need not wait, are never
    /// launched early.
    ///
    /// # Safety
    /// As [`Module::launch`].
    pub(crate) unsafe fn launch_chained<P: Params>(
        &self,
        entry: Entry<P>,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: P::Args<'_>,
        wide: &[(&'static str, usize)],
    ) -> Result<(), Error> {
        debug_assert!(
            kernels_gpu::chained(entry.name),
            "{} is not a kernel of a chained family",
            entry.name
        );
        self.launch_as(entry, gpu, cfg, args, wide, gpu.programmatic())
    }

    /// The launch, plain or programmatic-dependent.
    unsafe fn launch_as<P: Params>(
        &self,
        entry: Entry<P>,
        gpu: &Gpu,
        cfg: LaunchConfig,
        mut args: P::Args<'_>,
        wide: &[(&'static str, usize)],
        dependent: bool,
    ) -> Result<(), Error> {
        let func = self.function_with_smem(entry.name, cfg.shared_mem_bytes)?;
        let stream = gpu.stream();
        let (mut slots, guards) = P::slots(&mut args, stream);
        aligned(entry.name, entry.args, &slots, P::ALIGNS, wide)?;
        let mut ptrs: Vec<*mut std::ffi::c_void> =
            slots.iter_mut().map(|s| s as *mut u64 as *mut _).collect();
        let programmatic = crate::arch::sm_number(&self.arch).is_some_and(|n| n >= 90);
        let launched = if dependent && programmatic {
            let mut attr = sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                pad: [0; 4],
                value: sys::CUlaunchAttributeValue {
                    programmaticStreamSerializationAllowed: 1,
                },
            };
            let config = sys::CUlaunchConfig {
                gridDimX: cfg.grid_dim.0,
                gridDimY: cfg.grid_dim.1,
                gridDimZ: cfg.grid_dim.2,
                blockDimX: cfg.block_dim.0,
                blockDimY: cfg.block_dim.1,
                blockDimZ: cfg.block_dim.2,
                sharedMemBytes: cfg.shared_mem_bytes,
                hStream: stream.cu_stream(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            sys::cuLaunchKernelEx(
                &config,
                func.cu_function(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
            .result()
        } else {
            result::launch_kernel(
                func.cu_function(),
                cfg.grid_dim,
                cfg.block_dim,
                cfg.shared_mem_bytes,
                stream.cu_stream(),
                &mut ptrs,
            )
        };
        // Where the context orders buffers between streams, the guards record this launch's
        // reads and writes now that it is queued, so that other streams wait for it.
        drop(guards);
        launched.during(|| format!("launching {} ({})", entry.name, self.build.label()))
    }
}

/// Every buffer argument's address is a multiple of its element's alignment, and of the width
/// `wide` gives it where the kernel reads it in wider pieces: a view may start anywhere in its
/// allocation, and a kernel's vector loads fault (or read the wrong bytes) where it does not.
fn aligned(
    kernel: &'static str,
    names: &'static [&'static str],
    slots: &[u64],
    aligns: &[usize],
    wide: &[(&'static str, usize)],
) -> Result<(), ArgError> {
    names
        .iter()
        .zip(slots)
        .zip(aligns)
        .try_for_each(|((&name, &addr), &align)| {
            let width = wide.iter().find(|(n, _)| *n == name).map_or(1, |&(_, w)| w);
            check::aligned(kernel, name, addr, align.max(width))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer's address must be a multiple of its element's alignment; the refusal names the
    /// first argument that is not, and scalars (alignment 1) never are.
    #[test]
    fn a_misaligned_buffer_is_refused_by_name() {
        let names = &["x", "y", "n"];
        assert!(aligned("k", names, &[0x1000, 0x2004, 7], &[16, 4, 1], &[]).is_ok());
        let err = aligned("k", names, &[0x1008, 0x2002, 7], &[16, 4, 1], &[]).unwrap_err();
        assert_eq!((err.kernel, err.arg), ("k", "x"));
        assert!(err.why.contains("0x1008 is not 16-byte aligned"), "{err}");
        let err = aligned("k", names, &[0x1000, 0x2002, 7], &[16, 4, 1], &[]).unwrap_err();
        assert_eq!(err.arg, "y");
        // A byte buffer read 16 bytes at a time: its width, not its element's, decides.
        let wide = [("y", 16)];
        assert!(aligned("k", names, &[0x1000, 0x2010, 7], &[16, 1, 1], &wide).is_ok());
        let err = aligned("k", names, &[0x1000, 0x2008, 7], &[16, 1, 1], &wide).unwrap_err();
        assert_eq!(err.arg, "y");
        assert!(err.why.contains("0x2008 is not 16-byte aligned"), "{err}");
    }

    #[test]
    fn entries_are_read_off_the_ptx_text() {
        let ptx = "// x\n.visible .entry rms_norm(\n\t.param .u64 a\n)\n.entry quantize_q8_1 (\n";
        assert_eq!(entry_names(ptx), vec!["rms_norm", "quantize_q8_1"]);
        assert!(entry_names(".func helper(\n").is_empty());
    }

    /// A kernel crate whose entry is also ferrocuda's would have its launches find whichever
    /// module comes first: the build is refused instead.
    #[test]
    fn an_entry_declared_by_two_modules_is_found() {
        let one = ".visible .entry swiglu(\n".to_string();
        let other = ".visible .entry axpby(\n".to_string();
        assert_eq!(duplicate_entry(&[one.clone(), other.clone()]), None);
        assert_eq!(
            duplicate_entry(&[one.clone(), other, one]),
            Some("swiglu".to_string())
        );
    }

    /// attn_flash's 16-head block at kv_rank 512 fits a device that gives a block the kernels'
    /// own limit and is refused, naming both sizes and the device, on one that gives less.
    #[test]
    fn a_launch_past_the_devices_shared_memory_is_refused_with_both_sizes() {
        let bytes = kernels_gpu::mla::flash::shared_bytes(512, 0, 1).unwrap();
        let h200 = (227 * 1024, "NVIDIA H200".to_string());
        assert!(fits_device("mla_attn_gathered_flash", bytes, &h200).is_ok());
        let rtx = (99 * 1024, "NVIDIA GeForce RTX 5090".to_string());
        let err = fits_device("mla_attn_gathered_flash", bytes, &rtx).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "mla_attn_gathered_flash: needs {bytes} bytes of dynamic shared memory per block, \
                 more than the 101376 that NVIDIA GeForce RTX 5090 gives one block"
            )
        );
        assert!(fits_device("swiglu", 0, &rtx).is_ok());
    }
}
