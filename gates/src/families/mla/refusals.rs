//! The launchers' refusals on a real device: a short buffer, a width beyond the table, indices
//! outside the pool, zero slots, a split that is not stamped; none may write.

use super::*;

/// What the launchers failed to refuse, one line each.
pub(super) fn problems(gpu: &Gpu, rust: &host::Module) -> Result<Vec<String>, Error> {
    let mut problems = Vec::new();
    let c = Cell::seed(1, 64, 0);
    let x = gpu.alloc_poisoned::<f32>(c.nh * c.d_nope, 0)?;
    let w = gpu.alloc_poisoned::<f32>(c.nh * c.kv_rank * c.d_nope, 0)?;
    let mut y = gpu.alloc_poisoned::<f32>(c.nh * c.kv_rank, POISON_F32)?;
    let mut short = c.absorb();
    short.t = 2;
    let too_wide = AbsorbShape { t: 9, ..c.absorb() };
    for (shape, arg) in [(short, "q_nope"), (too_wide, "t")] {
        let got = launch::absorb_q(rust, gpu, &x, &w, &mut y, shape, Split::S1);
        if !matches!(&got, Err(Error::Arg(e)) if e.arg == arg) {
            problems.push(format!(
                "absorb_q {shape:?} not refused as `{arg}`: {got:?}"
            ));
        }
    }
    let bad = [0, 1, 64];
    match SlotIndices::new(gpu, &bad, 1, 3, 64) {
        Err(Error::Arg(e)) if e.arg == "idx" => {}
        other => problems.push(format!(
            "index 64 of a pool of 64 not refused: {:?}",
            other.err()
        )),
    }
    match SlotIndices::new(gpu, &[], 1, 0, 64) {
        Err(Error::Arg(e)) if e.arg == "n_slots" => {}
        other => problems.push(format!("zero slots not refused: {:?}", other.err())),
    }
    if launch::split("mla_absorb_q", 3).is_ok() {
        problems.push("split 3 not refused".into());
    }
    gpu.synchronize()?;
    if gpu.download(&y)?.iter().any(|v| v.to_bits() != u32::MAX) {
        problems.push("a refused launch wrote to q_lat".into());
    }
    Ok(problems)
}
