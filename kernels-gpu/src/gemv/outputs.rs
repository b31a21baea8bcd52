//! Where a plain GEMV's output rows go: one `[m][out_f]` matrix, or up to three parts of it in
//! buffers of their own, so that one launch over the concatenated rows of several projections
//! (q, k and v) leaves each projection's outputs as its own `[m][rows]` matrix.

/// The output `y` of a launch: parts `0..3` hold the rows from `first[p]` to `first[p + 1]`
/// (`first = [0, part1, part2, out_f]`), each as an `[m][rows]` matrix at `y[m * first[p]..]`,
/// back to back; with `part1 = part2 = out_f` that is the one `[m][out_f]` matrix, and at one row
/// it is the same for any parts.
#[derive(Clone, Copy)]
pub(super) struct Outputs {
    y: *mut f32,
    part1: u32,
    part2: u32,
    out_f: u32,
    m: u32,
}

impl Outputs {
    /// The parts of `y` at `m` activation rows (the rows the launch writes).
    pub(super) const fn parts(y: *mut f32, part1: i32, part2: i32, out_f: u32, m: u32) -> Self {
        Outputs {
            y,
            part1: part1 as u32,
            part2: part2 as u32,
            out_f,
            m,
        }
    }

    /// The start of `y` (a GLU's rows are one matrix, indexed by its store).
    pub(super) const fn base(self) -> *mut f32 {
        self.y
    }

    /// The address of output row `r` of activation row `i`: in the part that holds `r`, its row
    /// `i` and column `r - first`, each offset formed in 64 bits.
    #[inline(always)]
    pub(super) fn at(self, i: u32, r: u32) -> *mut f32 {
        let (first, end) = if r >= self.part2 {
            (self.part2, self.out_f)
        } else if r >= self.part1 {
            (self.part1, self.part2)
        } else {
            (0, self.part1)
        };
        let at = self.m as usize * first as usize
            + i as usize * (end - first) as usize
            + (r - first) as usize;
        self.y.wrapping_add(at)
    }
}
