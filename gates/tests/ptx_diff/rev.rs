//! `ptx-diff --rev`: a revision built in a worktree and compared with itself, and bad revisions
//! refused.

use super::*;

#[test]
fn a_revision_diffs_clean_against_itself_and_a_bad_one_is_refused() {
    let test = "a_revision_diffs_clean_against_itself_and_a_bad_one_is_refused";
    let in_git = Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !in_git {
        common::skip(test, "not run from a git checkout");
        return;
    }
    let t = scratch("rev");
    assert_clean_error(
        &gates(&t, &["ptx-diff", "--rev", "no-such-rev"]),
        "`no-such-rev` is not a commit of",
    );
    assert_clean_error(
        &gates(&t, &["ptx-diff", "--rev", "HEAD.."]),
        "is not a revision range",
    );
    // HEAD is built once (in a worktree, kept under ptx-revs/) and found again for B.
    let run = gates(&t, &["ptx-diff", "--rev", "HEAD..HEAD", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = json(&run);
    assert!(
        v["A"]["label"]
            .as_str()
            .unwrap()
            .starts_with("revision HEAD ("),
        "{}",
        v["A"]
    );
    assert_eq!(v["summary"]["changed"], 0);
    assert_eq!(
        run.stderr.matches("building the PTX of").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(
        t.join("ptx-revs")
            .read_dir()
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("kernels.ptx").is_file())
            .count(),
        1
    );
}
