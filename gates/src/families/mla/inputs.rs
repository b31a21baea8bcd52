//! The inputs of a cell in each value class, and the copies the token-by-token arm launches on.

use super::*;

pub(super) fn uniform(seed: u64, part: u64, n: usize) -> Vec<f32> {
    rng::vec_f32(rng::case_seed(seed, &[part]), n, 1.0)
}

/// Each token's inputs copied into buffers of their own, with an output and a workspace each.
pub(super) fn token_sets(gpu: &Gpu, c: Cell, i: &Inputs) -> Result<Vec<TokenSet>, Error> {
    let (nh, kr, dr, ns) = (c.nh, c.kv_rank, c.d_rope, c.n_slots);
    let (lat, pe, idx) = (&i.q_lat, &i.q_pe, &i.idx);
    (0..c.t_q)
        .map(|t| {
            let q_pe = if dr == 0 {
                gpu.upload(&[0.0f32; 4])?
            } else {
                gpu.upload(&pe[t * nh * dr..][..nh * dr])?
            };
            Ok(TokenSet {
                q_lat: gpu.upload(&lat[t * nh * kr..][..nh * kr])?,
                q_pe,
                idx: SlotIndices::new(gpu, &idx[t * ns..][..ns], 1, ns, c.kv)?,
                out: gpu.alloc_poisoned(nh * kr, POISON_F32)?,
                ws: FlashWorkspace::new(gpu, &c.attn(), 1, ns)?,
            })
        })
        .collect()
}

/// The edge class's attention inputs: per token, slots that gather row 0, row `pool - 1` and one
/// row many times over (duplicates), four rows of zeros (padding), and one slot whose row is
/// head 0's query scaled up, so that it dominates head 0's softmax.
pub(super) fn edge_attention(c: Cell, q_lat: &[f32], cache: &mut [f32], idx: &mut [i32]) {
    let (row, ns, last) = (c.row(), c.n_slots, c.kv as i32 - 1);
    for t in 0..c.t_q {
        let slots = &mut idx[t * ns..][..ns];
        let repeated = slots[ns / 2];
        for (i, v) in slots.iter_mut().enumerate() {
            match i % 8 {
                0 => *v = 0,
                1 => *v = last,
                2 | 5 => *v = repeated,
                _ => {}
            }
        }
        for &r in slots.iter().skip(3).step_by(ns.div_ceil(4).max(1)).take(4) {
            cache[r as usize * row..][..row].fill(0.0);
        }
        let dominant = slots[ns - 1] as usize;
        let q = &q_lat[t * c.nh * c.kv_rank..][..c.kv_rank];
        for (v, &x) in cache[dominant * row..][..c.kv_rank].iter_mut().zip(q) {
            *v = 8.0 * x;
        }
    }
}

/// A cell's inputs in `class`, from `seed`.
pub(super) fn make(c: Cell, class: ValueClass, seed: u64) -> Inputs {
    let (t, nh) = (c.t_q, c.nh);
    let mut q_lat = uniform(seed, 5, t * nh * c.kv_rank);
    let mut cache = uniform(seed, 7, c.kv * c.row());
    let mut pick = rng::SplitMix64::new(rng::case_seed(seed, &[8]));
    let idx: Vec<i32> = (0..t * c.n_slots)
        .map(|_| (pick.next_u64() % c.kv as u64) as i32)
        .collect();
    let mut idx = idx;
    if class == ValueClass::Edge {
        edge_attention(c, &q_lat, &mut cache, &mut idx);
    }
    if class == ValueClass::Outliers {
        q_lat.iter_mut().for_each(|v| *v *= 300.0);
        for ti in 0..t {
            for _ in 0..8 {
                let slot = pick.next_u64() as usize % c.n_slots;
                let r = idx[ti * c.n_slots + slot] as usize;
                cache[r * c.row()..(r + 1) * c.row()]
                    .iter_mut()
                    .for_each(|v| *v *= 10.0);
            }
        }
    }
    Inputs {
        q_nope: uniform(seed, 1, t * nh * c.d_nope),
        w_kb: uniform(seed, 2, nh * c.kv_rank * c.d_nope),
        o_lat: uniform(seed, 3, t * nh * c.kv_rank),
        w_vb: uniform(seed, 4, nh * c.d_v * c.kv_rank),
        q_lat,
        q_pe: uniform(seed, 6, t * nh * c.d_rope),
        cache,
        idx,
        refs: Default::default(),
    }
}
