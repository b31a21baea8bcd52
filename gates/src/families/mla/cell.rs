//! The (t_q, kv) cells of the gate and their geometries.

use super::*;

impl Cell {
    /// The seed's geometry at `(t_q, kv)`: 2048 gathered slots, or the whole pool below that.
    pub(super) fn seed(t_q: usize, kv: usize, d_rope: usize) -> Cell {
        Cell {
            t_q,
            kv,
            nh: NH,
            kv_rank: KV_RANK,
            d_nope: D_NOPE,
            d_v: D_V,
            d_rope,
            n_slots: N_SLOTS.min(kv),
        }
    }

    /// The cell of `geometry` at `(t_q, kv)`: the seed's with its rope width, or V3.2's.
    pub(super) fn of(geometry: &str, t_q: usize, kv: usize, d_rope: usize) -> Cell {
        match geometry {
            "v3.2" => {
                let (nh, d_nope, d_v, d_rope) = V32;
                Cell {
                    nh,
                    d_nope,
                    d_v,
                    d_rope,
                    ..Cell::seed(t_q, kv, 0)
                }
            }
            _ => Cell::seed(t_q, kv, d_rope),
        }
    }

    pub(super) fn absorb(self) -> AbsorbShape {
        AbsorbShape {
            t: self.t_q,
            nh: self.nh,
            d_nope: self.d_nope,
            kv_rank: self.kv_rank,
        }
    }

    pub(super) fn decompress(self) -> DecompressShape {
        DecompressShape {
            t: self.t_q,
            nh: self.nh,
            d_v: self.d_v,
            kv_rank: self.kv_rank,
        }
    }

    pub(super) fn attn(self) -> AttnShape {
        AttnShape {
            nh: self.nh,
            kv_rank: self.kv_rank,
            d_rope: self.d_rope,
        }
    }

    /// The attention chain peer's geometry at this cell.
    pub(super) fn chain(self) -> ChainShape {
        ChainShape {
            t: self.t_q,
            nh: self.nh,
            kv_rank: self.kv_rank,
            d_rope: self.d_rope,
            n_slots: self.n_slots,
            scale: SCALE,
        }
    }

    pub(super) fn row(self) -> usize {
        self.kv_rank + self.d_rope
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{} kv{}", self.t_q, self.kv)?;
        if self.nh != NH {
            write!(f, " nh{}", self.nh)?;
        }
        if self.n_slots != N_SLOTS.min(self.kv) {
            write!(f, " slots{}", self.n_slots)?;
        }
        if self.d_rope != 0 {
            write!(f, " rope{}", self.d_rope)?;
        }
        Ok(())
    }
}

/// `T_QxKV` (the seed's geometry at that cell), taken exactly when every launcher the gate runs
/// takes it: `kv` is the pool, at most `i32::MAX` rows of any length (both attentions address the
/// cache's rows in 64 bits).
pub(super) fn parse_cell(item: &str, geometry: &str, d_rope: usize) -> Result<Cell, String> {
    let (t_q, kv) = parse_pair(item, ("T_Q", "KV"))?;
    if !(1..=MAX_T_Q).contains(&t_q) {
        return Err(format!(
            "t_q {t_q} is not in 1..={MAX_T_Q} (the serving table's widths)"
        ));
    }
    let cell = Cell::of(geometry, t_q, kv, d_rope);
    host::check::positive_i32("mla", "kv", kv).map_err(shape_refusal)?;
    launches_take(cell).map_err(shape_refusal)?;
    Ok(cell)
}

/// Whether every launcher the gate runs takes `c`: the GEMVs and attn_gathered at every split,
/// and the flash entries whose rows fit a block.
fn launches_take(c: Cell) -> Result<(), host::ArgError> {
    let sizes = (c.t_q, c.n_slots, c.kv);
    for split in Split::ALL {
        let entry = |k| launch::entry(k, split);
        launch::gemv_config(entry(MlaKernel::AbsorbQ), &c.absorb().gemv(), split)?;
        launch::gemv_config(entry(MlaKernel::DecompressV), &c.decompress().gemv(), split)?;
        launch::attn_config(
            entry(MlaKernel::AttnGathered),
            &c.attn(),
            sizes,
            SCALE,
            split,
        )?;
    }
    for heads in super::flash_entries(c) {
        launch::flash_config(&c.attn(), sizes, SCALE, heads)?;
    }
    Ok(())
}
