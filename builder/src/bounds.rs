//! The launch bounds `device::launch_bounds::<N, B>()` asks for, written into the PTX as NVCC
//! writes `__launch_bounds__(N, B)`.

use crate::fail;

/// The comment `device::launch_bounds::<N, B>()` leaves in an entry's body: then `N B`.
const LAUNCH_BOUND_MARKER: &str = "// ferrocuda.maxntid ";

/// Gives every entry whose body holds a [`LAUNCH_BOUND_MARKER`] the `.maxntid N, 1, 1` and
/// `.minnctapersm B` directives, between the parameter list and the body, as NVCC writes
/// `__launch_bounds__(N, B)`.
pub(crate) fn launch_bounds(ptx: &str) -> String {
    let starts: Vec<usize> = ptx
        .match_indices(".visible .entry ")
        .map(|(i, _)| i)
        .collect();
    let mut out = String::with_capacity(ptx.len() + 64 * starts.len());
    out.push_str(&ptx[..starts.first().copied().unwrap_or(ptx.len())]);
    for (k, &start) in starts.iter().enumerate() {
        let entry = &ptx[start..starts.get(k + 1).copied().unwrap_or(ptx.len())];
        let bound = entry.find(LAUNCH_BOUND_MARKER).map(|i| {
            let line = entry[i + LAUNCH_BOUND_MARKER.len()..].lines().next();
            let mut numbers = line.unwrap_or_default().split_whitespace();
            let mut next = || match numbers.next().map(str::parse::<u32>) {
                Some(Ok(v)) => v,
                _ => fail("a launch-bound marker without its two numbers"),
            };
            (next(), next())
        });
        match (bound, entry.find("\n)\n{")) {
            (Some((n, b)), Some(close)) => {
                out.push_str(&entry[..close + 3]);
                out.push_str(&format!(".maxntid {n}, 1, 1\n.minnctapersm {b}\n"));
                out.push_str(&entry[close + 3..]);
            }
            (Some(_), None) => fail("an entry with a launch bound has no parameter list to follow"),
            (None, _) => out.push_str(entry),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::PTX;

    /// An entry whose body holds the marker gets NVCC's `__launch_bounds__(N, 1)` directives
    /// between its parameter list and its body; one without is left as it is.
    #[test]
    fn a_marked_entry_gets_its_launch_bound() {
        let out = launch_bounds(PTX);
        assert!(
            out.contains(")\n.maxntid 512, 1, 1\n.minnctapersm 4\n{\n\t// ferrocuda.maxntid 512 4"),
            "{out}"
        );
        assert_eq!(out.matches("\n.maxntid").count(), 1, "{out}");
        assert!(out.ends_with(".visible .entry b(\n\t.param .u64 p\n)\n{\n\tret;\n}\n"));
    }
}
