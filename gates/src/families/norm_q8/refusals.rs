//! The launchers' refusals on a real device: a row length off the q8_1 block, a short output, no
//! rows; none may write.

use super::*;

/// What the launchers failed to refuse, one line each.
pub(super) fn problems(gpu: &Gpu, rust: &Module) -> Result<Vec<String>, Error> {
    let x = gpu.alloc_poisoned::<f32>(64, 0x3F)?;
    let w = gpu.alloc_poisoned::<f32>(64, 0x3F)?;
    let mut z = gpu.alloc_poisoned::<f32>(32, POISON_F32)?;
    let mut problems = Vec::new();
    // (rows, the argument the launcher must name)
    for (nrows, ncols, arg) in [(1, 48, "ncols"), (2, 32, "z"), (0, 32, "nrows")] {
        let rows = Rows { nrows, ncols };
        let got = launch::rms_norm(rust, gpu, &x, &w, &mut z, rows, EPS);
        if !matches!(&got, Err(Error::Arg(e)) if e.arg == arg) {
            problems.push(format!(
                "{nrows}x{ncols} into 32 floats not refused as `{arg}`: {got:?}"
            ));
        }
    }
    gpu.synchronize()?;
    if gpu.download(&z)?.iter().any(|v| v.to_bits() != u32::MAX) {
        problems.push("a refused launch wrote to z".into());
    }
    Ok(problems)
}
