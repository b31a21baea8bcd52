//! The host side of the GEMV weight formats, and the CPU decodes an f64 oracle needs.

use half::f16;
use kernels_gpu::abi::F16;
use kernels_gpu::gemv::{self as k, grid_index, BlockQ8_0, E4M3_F16, Q8_0_BLOCK_BYTES, QK};

/// Raw Q8_0 bytes (as a GGUF tensor holds them) as blocks.
///
/// # Panics
/// If `bytes` is not a whole number of 34-byte blocks.
pub fn q8_0_blocks(bytes: &[u8]) -> Vec<BlockQ8_0> {
    let block = Q8_0_BLOCK_BYTES as usize;
    assert!(
        bytes.len().is_multiple_of(block),
        "{} bytes are not whole 34-byte Q8_0 blocks",
        bytes.len()
    );
    bytes
        .chunks_exact(block)
        .map(|b| BlockQ8_0 {
            d: F16(u16::from_le_bytes([b[0], b[1]])),
            qs: std::array::from_fn(|k| b[2 + k] as i8),
        })
        .collect()
}

/// Blocks as the raw bytes the raw Q8_0 kernels read.
pub fn q8_0_bytes(blocks: &[BlockQ8_0]) -> Vec<u8> {
    blocks
        .iter()
        .flat_map(|b| {
            b.d.0
                .to_le_bytes()
                .into_iter()
                .chain(b.qs.iter().map(|&q| q as u8))
        })
        .collect()
}

/// The planar repack of Q8_0 blocks ([`kernels_gpu::gemv::q8_0_to_planar`]), as the planar
/// kernels' buffers: quants and f16 scales.
pub fn q8_0_to_planar(blocks: &[BlockQ8_0]) -> (Vec<i8>, Vec<f16>) {
    let mut qs = vec![0; blocks.len() * QK as usize];
    let mut d = vec![F16(0); blocks.len()];
    k::q8_0_to_planar(blocks, &mut qs, &mut d);
    (qs, d.into_iter().map(|h| f16::from_bits(h.0)).collect())
}

/// The value of an e4m3 byte as both builds decode it ([`E4M3_F16`]); NaN for 0x7F and 0xFF.
pub fn e4m3_f64(byte: u8) -> f64 {
    f16::from_bits(E4M3_F16[byte as usize].0).to_f64()
}

/// One activation row of a q8_1 activation (`qs[in_f]`, `d[in_f / 32]`) as f64.
pub fn q8_1_row_f64(qs: &[i8], d: &[f32]) -> Vec<f64> {
    qs.iter()
        .enumerate()
        .map(|(c, &q)| f64::from(d[c / QK as usize]) * f64::from(q))
        .collect()
}

/// One raw Q8_0 weight row (its `in_f / 32` blocks) as f64: `d * q`.
pub fn q8_0_row_f64(row: &[BlockQ8_0]) -> Vec<f64> {
    row.iter()
        .flat_map(|b| {
            let d = f16::from_bits(b.d.0).to_f64();
            b.qs.iter().map(move |&q| d * f64::from(q))
        })
        .collect()
}

/// One planar Q8_0 weight row (`qs[in_f]`, `d[in_f / 32]`) as f64: `d * q`.
pub fn q8_0_planar_row_f64(qs: &[i8], d: &[f16]) -> Vec<f64> {
    qs.iter()
        .enumerate()
        .map(|(c, &q)| d[c / QK as usize].to_f64() * f64::from(q))
        .collect()
}

/// One per-tensor e4m3 weight row as f64, the tensor's scale applied.
pub fn e4m3_row_f64(row: &[u8], scale: f32) -> Vec<f64> {
    row.iter()
        .map(|&b| e4m3_f64(b) * f64::from(scale))
        .collect()
}

/// Weight row `r` of a block-128 e4m3 matrix with `row.len()` columns as f64, each weight times
/// its tile's scale in `grid`.
pub fn e4m3_b128_row_f64(row: &[u8], grid: &[f32], r: usize) -> Vec<f64> {
    let in_f = row.len() as u32;
    row.iter()
        .enumerate()
        .map(|(c, &b)| {
            let g = grid[grid_index(r as u32, c as u32, in_f) as usize];
            e4m3_f64(b) * f64::from(g)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bytes_round_trip_through_blocks() {
        let bytes: Vec<u8> = (0..34 * 3).map(|i| (i * 37 + 11) as u8).collect();
        let blocks = q8_0_blocks(&bytes);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[1].d, F16(u16::from_le_bytes([bytes[34], bytes[35]])));
        assert_eq!(blocks[2].qs[31], bytes[34 * 3 - 1] as i8);
        assert_eq!(q8_0_bytes(&blocks), bytes);
    }

    #[test]
    fn planar_repack_keeps_every_value() {
        let blocks: Vec<BlockQ8_0> = (0..6)
            .map(|n| BlockQ8_0 {
                d: F16(0x3C00 + n as u16),
                qs: std::array::from_fn(|k| (n * 32 + k) as i8),
            })
            .collect();
        let (qs, d) = q8_0_to_planar(&blocks);
        // 3 rows of 2 blocks (in_f = 64): the planar row decodes to the raw row.
        for r in 0..3 {
            let raw = q8_0_row_f64(&blocks[2 * r..2 * r + 2]);
            let planar = q8_0_planar_row_f64(&qs[64 * r..64 * (r + 1)], &d[2 * r..2 * r + 2]);
            assert_eq!(raw, planar);
        }
        assert_eq!(d[5].to_bits(), 0x3C05);
        assert_eq!(qs[5 * 32 + 7], (5 * 32 + 7) as i8);
    }

    #[test]
    fn oracle_rows_apply_their_scales() {
        assert_eq!(e4m3_f64(0x38), 1.0);
        assert_eq!(e4m3_f64(0xB8), -1.0);
        assert!(e4m3_f64(0x7F).is_nan() && e4m3_f64(0xFF).is_nan());
        assert_eq!(e4m3_row_f64(&[0x38, 0x40], 0.5), [0.5, 1.0]);
        assert_eq!(q8_1_row_f64(&[3, -2], &[0.25]), [0.75, -0.5]);
        // A 2 x 160 grid of tiles: row 130 is in tile row 1; column 150 in tile column 1.
        let in_f = 160;
        let grid = [1.0, 2.0, 3.0, 4.0];
        let row = vec![0x38u8; in_f];
        let decoded = e4m3_b128_row_f64(&row, &grid, 130);
        assert_eq!(
            (decoded[0], decoded[127], decoded[128], decoded[159]),
            (3.0, 3.0, 4.0, 4.0)
        );
        let decoded = e4m3_b128_row_f64(&row, &grid, 127);
        assert_eq!((decoded[0], decoded[150]), (1.0, 2.0));
    }
}
