//! One CUDA device: its context, one stream, and what the gates need to know about it.

use crate::error::{Context, Error};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{
    result, CudaContext, CudaGraph, CudaSlice, CudaStream, DevicePtrMut, DeviceRepr,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a gate prints and sizes its buffers by, read off the device.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    /// The SM clock the driver reports as the device's (kHz), where it reports one.
    pub sm_clock_khz: Option<i32>,
    pub l2_bytes: usize,
    pub total_mem: usize,
    /// The dynamic shared memory one block may be given (the opt-in maximum), which differs by
    /// architecture: the launches check it ([`Error::SharedMemory`](crate::Error::SharedMemory)).
    pub max_shared_per_block: u32,
    /// The driver's CUDA version, e.g. 13000 for 13.0.
    pub driver_version: i32,
}

impl DeviceInfo {
    /// What the driver reports of `ctx`'s device.
    fn of(ctx: &CudaContext) -> Result<Self, Error> {
        let mut driver_version = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .during(|| "reading the driver version".into())?;
        Ok(DeviceInfo {
            ordinal: ctx.ordinal(),
            name: ctx.name().during(|| "reading the device name".into())?,
            compute_capability: (
                attr(ctx, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(ctx, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(ctx, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            sm_clock_khz: attr(ctx, Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).ok(),
            l2_bytes: attr(ctx, Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            total_mem: ctx.total_mem().during(|| "reading device memory".into())?,
            max_shared_per_block: attr(
                ctx,
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as u32,
            driver_version,
        })
    }
}

/// A device with one stream on which every launch and copy is ordered.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    /// [`Gpu::set_programmatic`]'s switch.
    programmatic: AtomicBool,
}

fn attr(ctx: &CudaContext, a: Attr) -> Result<i32, Error> {
    ctx.attribute(a)
        .during(|| format!("reading device attribute {a:?}"))
}

impl Gpu {
    /// Opens device `ordinal`. Fails with [`Error::NoDriver`] where libcuda is absent, rather
    /// than panicking inside the dynamic loader.
    pub fn new(ordinal: usize) -> Result<Self, Error> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let count = CudaContext::device_count().during(|| "initialising the driver".into())?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoDevice {
                ordinal,
                count: count.max(0) as usize,
            });
        }
        let ctx = CudaContext::new(ordinal).during(|| format!("opening device {ordinal}"))?;
        // One stream and no cross-stream sharing: cudarc's per-buffer events would only add
        // event records between timed launches.
        // SAFETY: every buffer of this context is used on `stream` alone.
        unsafe { ctx.disable_event_tracking() };
        // A stream of its own: the legacy default stream cannot be captured into a graph.
        let stream = ctx.new_stream().during(|| "creating a stream".into())?;
        let info = DeviceInfo::of(&ctx)?;
        Ok(Gpu::of(ctx, stream, info))
    }

    /// A `Gpu` on the caller's stream and its context (an engine's): every launcher given it
    /// queues on that stream, in order with the caller's own work there. The context's event
    /// tracking stays as the caller set it: cudarc's default orders buffers shared between
    /// streams, and a graph capture ([`Gpu::capture`]) wants it off, as [`Gpu::new`] has it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = cudarc::driver::CudaContext::new(0)?; // the engine's context
    /// let stream = ctx.new_stream()?; // and its stream
    /// let gpu = host::Gpu::on_stream(stream.clone())?;
    /// let module = host::Module::rust(&gpu)?; // load the kernels once per context
    /// let x = gpu.upload(&vec![1.0f32; 4096])?;
    /// let (mut y, w) = (gpu.alloc_poisoned::<f32>(4096, 0)?, gpu.upload(&vec![1.0f32; 4096])?);
    /// host::swiglu::swiglu(&module, &gpu, &x, &w, &mut y)?; // queued on `stream`
    /// stream.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Self, Error> {
        let ctx = stream.context().clone();
        let info = DeviceInfo::of(&ctx)?;
        Ok(Gpu::of(ctx, stream, info))
    }

    fn of(ctx: Arc<CudaContext>, stream: Arc<CudaStream>, info: DeviceInfo) -> Self {
        Gpu {
            ctx,
            stream,
            info,
            programmatic: AtomicBool::new(false),
        }
    }

    /// While on, every launcher of ferrocuda's own kernels (norm_q8, gemv, mla, swiglu; not
    /// `read_stream`, and never another crate's kernels launched through [`Module::launch`] or
    /// [`Module::launch_entry`]) launches its kernel as a programmatic dependent of the stream's
    /// previous kernel, so that its launch and block placement overlap that kernel's tail; in a
    /// graph capture ([`Gpu::capture`]) the driver records the programmatic edges. Every such
    /// kernel waits for its predecessor grid before it reads anything that grid may write, so the
    /// bits do not change; the GEMVs start copying their weights before that wait, so the kernel
    /// launched just before a GEMV must not write that GEMV's weights. The GEMV launchers then also pad a resident grid's shared memory so that no
    /// SM takes more than an even share of it while the previous kernel drains. A module built
    /// below sm_90 launches plainly whatever the switch. Off by default: whether the overlap
    /// pays depends on the chain; in a decode step it gains in some formats and batch sizes and
    /// loses in others (`docs/perf-notes.md`: the GEMV family and the decode step).
    ///
    /// [`Module::launch`]: crate::Module::launch
    /// [`Module::launch_entry`]: crate::Module::launch_entry
    pub fn set_programmatic(&self, on: bool) {
        self.programmatic.store(on, Ordering::Relaxed);
    }

    /// Whether [`Gpu::set_programmatic`] is on.
    pub fn programmatic(&self) -> bool {
        self.programmatic.load(Ordering::Relaxed)
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, Error> {
        self.stream
            .clone_htod(host)
            .during(|| format!("copying {} elements to the device", host.len()))
    }

    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        dev: &CudaSlice<T>,
    ) -> Result<Vec<T>, Error> {
        self.stream
            .clone_dtoh(dev)
            .during(|| format!("copying {} elements to the host", dev.len()))
    }

    /// A buffer of `len` elements with every byte set to `poison`, so that an element a kernel
    /// fails to write shows up instead of passing as a plausible zero.
    pub fn alloc_poisoned<T: DeviceRepr>(
        &self,
        len: usize,
        poison: u8,
    ) -> Result<CudaSlice<T>, Error> {
        // SAFETY: the buffer is filled below before anything can read it.
        let mut buf = unsafe { self.stream.alloc::<T>(len) }
            .during(|| format!("allocating {len} elements"))?;
        self.poison(&mut buf, poison)?;
        Ok(buf)
    }

    /// Sets every byte of `buf` to `poison` (ordered on the stream like a launch).
    pub fn poison<T>(&self, buf: &mut CudaSlice<T>, poison: u8) -> Result<(), Error> {
        let bytes = buf.len() * std::mem::size_of::<T>();
        let (ptr, _sync) = buf.device_ptr_mut(&self.stream);
        // SAFETY: `ptr` addresses `bytes` bytes owned by `buf`, live until the stream runs it.
        unsafe { result::memset_d8_async(ptr, poison, bytes, self.stream.cu_stream()) }
            .during(|| format!("poisoning {bytes} bytes"))
    }

    /// Records what `enqueue` puts on the stream as a graph instead of running it, so that the
    /// launches can be replayed back to back without the host's launch cost between them.
    ///
    /// Refused ([`Error::CaptureWithEventTracking`]) on a context whose buffers cudarc orders
    /// between streams by events (its default once a second stream exists).
    pub fn capture(&self, enqueue: impl FnOnce() -> Result<(), Error>) -> Result<CudaGraph, Error> {
        if self.ctx.is_managing_stream_synchronization() {
            return Err(Error::CaptureWithEventTracking);
        }
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .during(|| "starting a graph capture".into())?;
        let enqueued = enqueue();
        let graph = self
            .stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .during(|| "ending a graph capture".into());
        enqueued?;
        let graph = graph?.ok_or_else(|| Error::Driver {
            during: "ending a graph capture".into(),
            source: cudarc::driver::DriverError(
                sys::cudaError_enum::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            ),
        })?;
        graph.upload().during(|| "uploading a graph".into())?;
        Ok(graph)
    }

    /// Enqueues one replay of a captured graph.
    pub fn replay(&self, graph: &CudaGraph) -> Result<(), Error> {
        graph.launch().during(|| "launching a graph".into())
    }

    /// Device milliseconds that `run` takes on the stream, between two events.
    pub fn time_ms(&self, run: impl FnOnce() -> Result<(), Error>) -> Result<f32, Error> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(flags)
            .during(|| "recording an event".into())?;
        run()?;
        let end = self
            .stream
            .record_event(flags)
            .during(|| "recording an event".into())?;
        end.synchronize().during(|| "waiting for an event".into())?;
        start
            .elapsed_ms(&end)
            .during(|| "reading elapsed time".into())
    }

    pub fn synchronize(&self) -> Result<(), Error> {
        self.stream
            .synchronize()
            .during(|| "waiting for the stream".into())
    }
}
