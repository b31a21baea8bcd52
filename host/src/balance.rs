//! How much shared memory to pad a launch with so that an SM holds no more than a given number
//! of its blocks (the GEMV launcher's balanced grids under programmatic launches).

use crate::error::Error;

/// Within [`BALANCE_STEP`] bytes, the least padding (a multiple of 16, at most `max`) at which
/// `blocks_at(pad)`, the blocks an SM holds, is at most `want`; `None` where even `max` leaves
/// more. Bisection: the blocks an SM holds fall as a block's shared memory grows.
pub(crate) fn balancing_pad(
    want: u32,
    max: u32,
    mut blocks_at: impl FnMut(u32) -> Result<u32, Error>,
) -> Result<Option<u32>, Error> {
    let (mut lo, mut hi) = (0, max / 16 * 16);
    if blocks_at(lo)? <= want {
        return Ok(Some(0));
    }
    if blocks_at(hi)? > want {
        return Ok(None);
    }
    while hi - lo > BALANCE_STEP {
        let mid = (lo + hi) / 32 * 16;
        if blocks_at(mid)? > want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(hi))
}

/// [`balancing_pad`]'s tolerance in bytes: the pad it finds is at most this much past the least
/// that would do, nothing beside the hundreds of KiB an SM's blocks share.
const BALANCE_STEP: u32 = 256;

#[cfg(test)]
mod tests {
    use super::*;

    /// An SM of `smem` bytes holding blocks of `stat` bytes (its 1 KiB reserve counted) and their
    /// padding, at most `cap` of them: the occupancy `balancing_pad` bisects.
    fn blocks_held(smem: u32, stat: u32, cap: u32) -> impl Fn(u32) -> Result<u32, Error> {
        move |pad| Ok((smem / (stat + 1024 + pad)).min(cap))
    }

    #[test]
    fn the_balancing_pad_is_the_least_that_holds_an_sm_to_the_even_share() {
        let sm = 228 * 1024;
        for (stat, cap) in [(0, 16), (17408, 12), (35840, 6), (60000, 3)] {
            let held = blocks_held(sm, stat, cap);
            for want in 1..=cap {
                let pad = balancing_pad(want, 227 * 1024, &held).unwrap().unwrap();
                assert!(held(pad).unwrap() <= want, "{stat} {want}");
                assert_eq!(pad % 16, 0);
                if pad > 0 {
                    let less = pad.saturating_sub(BALANCE_STEP + 16);
                    assert!(
                        held(less).unwrap() > want,
                        "{stat} {want}: {pad} is not the least"
                    );
                }
            }
        }
    }

    #[test]
    fn no_pad_where_the_even_share_is_out_of_reach_or_already_held() {
        let held = blocks_held(228 * 1024, 200 * 1024, 1);
        assert_eq!(balancing_pad(1, 27 * 1024, &held).unwrap(), Some(0));
        let crowded = |_| Ok(4);
        assert_eq!(balancing_pad(2, 227 * 1024, crowded).unwrap(), None);
    }
}
