//! Aligned text tables for people, and the verdicts in their cells.

/// The table itself lives with the PTX tools, whose reports the tests of other crates print.
pub use ptx_tools::table::Table;

/// A target's verdict in a table cell: `yes`, `no`, or `-` where it could not be judged (a peer
/// that did not run, say).
pub fn yes_no(v: Option<bool>) -> String {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_read_yes_no_or_a_dash() {
        assert_eq!(
            [Some(true), Some(false), None].map(yes_no),
            ["yes", "no", "-"].map(String::from)
        );
    }
}
