//! GPU tests: every family's edge shapes through every check of its gate (Rust == .cu,
//! equivalence groups, oracle, all written) in every value class, each family's launcher
//! refusals on a real device, a launcher on a stream of the caller's making, launchers on
//! views of one allocation, the sm_80 module beside the device's own (`gpu/arch.rs`), and
//! chains of launchers as programmatic dependent launches beside plain ones (`gpu/chain.rs`), and
//! the GEMV's GLU entries against the plain GEMVs and swiglu (`gpu/glu.rs`), every m from 1 to 8
//! and the outputs in parts against the rows launched alone and whole, and the deep pipeline
//! against the usual one (`gpu/rows.rs`), swiglu_q8_1
//! against swiglu and quantize_q8_1 (`gpu/swiglu_q8.rs`), and the Hopper attention entries against
//! attn_flash (`gpu/hopper.rs`).
//! `FERROCUDA_MODULE_ARCH=sm_80` runs all of it on the sm_80 module.
//!
//! With no GPU they are skipped and counted as skipped; with `FERROCUDA_REQUIRE_GPU=1` a missing
//! GPU fails the run. Run on a GPU host as a copied test binary (see README).

#[path = "gpu/arch.rs"]
mod arch;
#[path = "gpu/chain.rs"]
mod chain;
#[path = "gpu/glu.rs"]
mod glu;
#[path = "gpu/hopper.rs"]
mod hopper;
#[path = "gpu/rows.rs"]
mod rows;
#[path = "gpu/swiglu_q8.rs"]
mod swiglu_q8;

use gates::families;
use gates::harness::gpu_test::{self, OwnTest};
use host::{Error, Gpu, Module};
use std::process::ExitCode;

/// The tests of the launch machinery itself, beside the families' own.
const OWN_TESTS: [OwnTest; 12] = [
    (
        "launchers on a caller's stream give the bits they give on the Gpu's own",
        on_a_callers_stream,
    ),
    (
        "launchers on views of one allocation give the bits of whole buffers, and refuse misaligned views",
        on_views_of_one_allocation,
    ),
    (
        "a graph capture on a context with cudarc's event tracking on is refused before it starts",
        capture_with_event_tracking,
    ),
    (
        "a launch's output is ordered for another stream where cudarc tracks buffers by events",
        outputs_ordered_for_other_streams,
    ),
    (
        "the sm_80 module gives the device's own module's bits (every kernel of every family)",
        arch::the_oldest_module_gives_the_devices_bits,
    ),
    (
        "chains of launchers as programmatic dependents, on the stream and in a graph, give the plain launches' bits",
        chain::programmatic_chains_give_the_plain_bits,
    ),
    (
        "the GLU entries give the plain GEMVs' and swiglu's bits in both builds, ragged shapes and NaN codes included",
        glu::glu_gives_the_plain_gemvs_and_swiglu,
    ),
    (
        "every m from 1 to 8, every GEMV format, plain and GLU, both builds: each row's bits are the row's alone, and only the m rows are written",
        rows::every_m_gives_each_rows_own_bits,
    ),
    (
        "the Q8_0 eight-row GEMVs' deep pipeline (grids of a block an SM) gives the usual pipeline's bits, both layouts, both builds",
        rows::deep_pipeline_gives_the_usual_bits,
    ),
    (
        "one GEMV launch into three parts (q, k and v), every m and format, both builds: each part holds the whole launch's rows of it, and nothing past the parts is written",
        rows::parts_hold_each_projections_rows,
    ),
    (
        "swiglu_q8_1 gives swiglu's and quantize_q8_1's bits in both builds, strided rows and edge values included",
        swiglu_q8::swiglu_q8_gives_the_chains_bits,
    ),
    (
        "the Hopper attention entries give attn_flash's bits in both builds on sm_90a, and are refused on other modules",
        hopper::hopper_entries_give_attn_flash_bits,
    ),
];

fn main() -> ExitCode {
    gpu_test::main(families::ALL, &OWN_TESTS)
}

/// swiglu on a stream of the caller's making ([`Gpu::on_stream`], its own module loaded there):
/// captured there, it has not run before the graph is replayed (a launch queued on another
/// stream would run at once and write its output), and then gives the bits the same launch gives
/// on the test's `Gpu`.
fn on_a_callers_stream(gpu: &Gpu, module: &Module) -> Result<(), String> {
    let n = 1000;
    let g: Vec<f32> = (0..n).map(|i| (i as f32 - 500.0) / 37.0).collect();
    let u: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 / 1000.0).collect();
    let err = |e: Error| e.to_string();
    let own = {
        let (g, u) = (gpu.upload(&g).map_err(err)?, gpu.upload(&u).map_err(err)?);
        let mut y = gpu.alloc_poisoned::<f32>(n, 0xff).map_err(err)?;
        host::swiglu::swiglu(module, gpu, &g, &u, &mut y).map_err(err)?;
        gpu.download(&y).map_err(err)?
    };
    let stream = gpu
        .context()
        .new_stream()
        .map_err(|e| format!("creating a stream: {e}"))?;
    let caller = Gpu::on_stream(stream).map_err(err)?;
    let theirs_module = Module::rust(&caller).map_err(err)?;
    let (g, u) = (
        caller.upload(&g).map_err(err)?,
        caller.upload(&u).map_err(err)?,
    );
    let mut y = caller.alloc_poisoned::<f32>(n, 0xff).map_err(err)?;
    let graph = caller
        .capture(|| host::swiglu::swiglu(&theirs_module, &caller, &g, &u, &mut y))
        .map_err(err)?;
    if caller
        .download(&y)
        .map_err(err)?
        .iter()
        .any(|v| v.to_bits() != u32::MAX)
    {
        return Err("the launch ran outside the caller's stream".into());
    }
    caller.replay(&graph).map_err(err)?;
    let theirs = caller.download(&y).map_err(err)?;
    if own
        .iter()
        .map(|v| v.to_bits())
        .eq(theirs.iter().map(|v| v.to_bits()))
    {
        Ok(())
    } else {
        Err("the outputs differ".into())
    }
}

/// An e4m3 GEMV whose weights, activation and output are views at aligned offsets into larger
/// allocations (as an engine keeps its weights) gives the bits of the same launch on whole
/// buffers; a view that misaligns what a kernel reads 16 bytes at a time is refused before the
/// launch, naming the argument: the weights and the activation's quants (the launcher's own
/// check) and a `float4` buffer of swiglu (the launch's check of every element type).
fn on_views_of_one_allocation(gpu: &Gpu, module: &Module) -> Result<(), String> {
    use host::gemv::{gemv_e4m3, Activation, Shape};
    let shape = Shape {
        m: 1,
        in_f: 256,
        out_f: 64,
    };
    let w: Vec<u8> = (0..shape.in_f * shape.out_f)
        .map(|i| (i * 37 % 251) as u8 & 0x7e)
        .collect();
    let qs: Vec<i8> = (0..shape.in_f)
        .map(|i| (i as i32 * 7 % 255 - 127) as i8)
        .collect();
    let d: Vec<f32> = (0..shape.in_f / 32)
        .map(|b| 0.01 + b as f32 / 64.0)
        .collect();
    let err = |e: Error| e.to_string();
    let whole = {
        let (w, qs, d) = (
            gpu.upload(&w).map_err(err)?,
            gpu.upload(&qs).map_err(err)?,
            gpu.upload(&d).map_err(err)?,
        );
        let mut y = gpu.alloc_poisoned::<f32>(shape.out_f, 0xff).map_err(err)?;
        let x = Activation { qs: &qs, d: &d };
        gemv_e4m3(module, gpu, &w, 0.5, x, &mut y, shape).map_err(err)?;
        gpu.download(&y).map_err(err)?
    };
    let (w_at, qs_at, d_at, y_at) = (256, 48, 3, 8);
    let w_arena = placed(gpu, w_at, &w).map_err(err)?;
    let qs_arena = placed(gpu, qs_at, &qs).map_err(err)?;
    let d_arena = placed(gpu, d_at, &d).map_err(err)?;
    let mut y_arena = gpu
        .alloc_poisoned::<f32>(y_at + shape.out_f + 16, 0xff)
        .map_err(err)?;
    {
        let w_view = w_arena.slice(w_at..w_at + w.len());
        let qs_view = qs_arena.slice(qs_at..qs_at + qs.len());
        let d_view = d_arena.slice(d_at..d_at + d.len());
        let mut y_view = y_arena.slice_mut(y_at..y_at + shape.out_f);
        let x = Activation {
            qs: &qs_view,
            d: &d_view,
        };
        gemv_e4m3(module, gpu, &w_view, 0.5, x, &mut y_view, shape).map_err(err)?;
    }
    let got = gpu.download(&y_arena).map_err(err)?;
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if bits(&got[y_at..y_at + shape.out_f]) != bits(&whole) {
        return Err("the outputs on views differ from those on whole buffers".into());
    }
    if got[..y_at]
        .iter()
        .chain(&got[y_at + shape.out_f..])
        .any(|v| v.to_bits() != u32::MAX)
    {
        return Err("the launch on a view wrote outside it".into());
    }
    let refused = |what: &str, want: &str, r: Result<(), Error>| match r {
        Err(Error::Arg(a)) if a.arg == want => Ok(()),
        other => Err(format!(
            "{what}: expected a refusal naming `{want}`, got {other:?}"
        )),
    };
    {
        let mut y_view = y_arena.slice_mut(y_at..y_at + shape.out_f);
        let w_view = w_arena.slice(w_at - 8..w_at - 8 + w.len());
        let x = Activation {
            qs: &qs_arena.slice(qs_at..qs_at + qs.len()),
            d: &d_arena.slice(d_at..d_at + d.len()),
        };
        refused(
            "weights 8 bytes off",
            "w",
            gemv_e4m3(module, gpu, &w_view, 0.5, x, &mut y_view, shape),
        )?;
        let x = Activation {
            qs: &qs_arena.slice(qs_at + 4..qs_at + 4 + qs.len()),
            d: &d_arena.slice(d_at..d_at + d.len()),
        };
        refused(
            "quants 4 bytes off",
            "xq",
            gemv_e4m3(
                module,
                gpu,
                &w_arena.slice(w_at..w_at + w.len()),
                0.5,
                x,
                &mut y_view,
                shape,
            ),
        )?;
    }
    let g = gpu.upload(&[1.0f32; 68]).map_err(err)?;
    let mut y = gpu.alloc_poisoned::<f32>(64, 0xff).map_err(err)?;
    refused(
        "swiglu's g one float off",
        "g",
        host::swiglu::swiglu(module, gpu, &g.slice(1..65), &g.slice(0..64), &mut y),
    )?;
    Ok(())
}

/// `data` `at` elements into an allocation with room after it too.
fn placed<T: host::DeviceRepr + Default + Copy>(
    gpu: &Gpu,
    at: usize,
    data: &[T],
) -> Result<host::CudaSlice<T>, Error> {
    let mut v = vec![T::default(); at + data.len() + 64];
    v[at..at + data.len()].copy_from_slice(data);
    gpu.upload(&v)
}

/// cudarc's default context orders buffers between streams by events once a second stream
/// exists; a launch captured there would wait on an event recorded outside the capture and
/// invalidate it, so `Gpu::capture` refuses it with an error that says what to do.
fn capture_with_event_tracking(_: &Gpu, _: &Module) -> Result<(), String> {
    let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("opening device 0: {e}"))?;
    let stream = ctx
        .new_stream()
        .map_err(|e| format!("creating a stream: {e}"))?;
    let gpu = Gpu::on_stream(stream).map_err(|e| e.to_string())?;
    match gpu.capture(|| Ok(())) {
        Err(Error::CaptureWithEventTracking) => Ok(()),
        Err(e) => Err(format!("expected the event-tracking refusal, got: {e}")),
        Ok(_) => Err("the capture was not refused".into()),
    }
}

/// On a context whose buffers cudarc orders between streams (event tracking on, two streams), a
/// launch records its write of its output once it is queued: a copy of that output queued on the
/// other stream waits for the kernel and reads its result, not the poison it overwrote (a GEMV
/// long enough that a copy that did not wait would overtake it).
fn outputs_ordered_for_other_streams(_: &Gpu, _: &Module) -> Result<(), String> {
    use host::gemv::{gemv_e4m3, Activation, Shape};
    let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("opening device 0: {e}"))?;
    let stream = |what| {
        ctx.new_stream()
            .map_err(|e| format!("creating {what}: {e}"))
    };
    let (ours, theirs) = (stream("a stream")?, stream("a second stream")?);
    let err = |e: Error| e.to_string();
    let gpu = Gpu::on_stream(ours).map_err(err)?;
    let module = Module::rust(&gpu).map_err(err)?;
    let shape = Shape {
        m: 1,
        in_f: 5120,
        out_f: 16384,
    };
    // e4m3 0x38 is 1.0, and the activation is 1.0 everywhere: every output is in_f.
    let w = gpu
        .upload(&vec![0x38u8; shape.in_f * shape.out_f])
        .map_err(err)?;
    let qs = gpu.upload(&vec![1i8; shape.in_f]).map_err(err)?;
    let d = gpu.upload(&vec![1.0f32; shape.in_f / 32]).map_err(err)?;
    let mut y = gpu.alloc_poisoned::<f32>(shape.out_f, 0xff).map_err(err)?;
    let x = Activation { qs: &qs, d: &d };
    gemv_e4m3(&module, &gpu, &w, 1.0, x, &mut y, shape).map_err(err)?;
    let seen = theirs
        .clone_dtoh(&y)
        .map_err(|e| format!("copying on the second stream: {e}"))?;
    match seen.iter().position(|&v| v != shape.in_f as f32) {
        None => Ok(()),
        Some(i) => Err(format!(
            "the second stream read y[{i}] = {} before the launch wrote {}",
            seen[i], shape.in_f
        )),
    }
}
