//! The programs in `samples/` are what a newcomer reads and runs first, so CI runs
//! them: each one's output (with the arguments its header suggests) is pinned in a
//! snapshot, and a wrong invocation exits with the status it documents.

mod common;

use common::run_wo;

fn run(args: &[&str]) -> common::Outcome {
    run_wo(&common::root(), args)
}

#[test]
fn wordfreq() {
    let res = run(&[
        "run",
        "samples/wordfreq.wo",
        "--",
        "samples/data/lighthouse.txt",
        "10",
    ]);
    insta::assert_snapshot!(res.snapshot());
}

#[test]
fn wordfreq_usage_errors() {
    let res = run(&["run", "samples/wordfreq.wo"]);
    res.expect_status(64);
    assert!(res.stderr.starts_with("usage: "), "{}", res.stderr);
    let res = run(&["run", "samples/wordfreq.wo", "--", "samples/data/nope.txt"]);
    res.expect_status(66);
    assert!(res.stderr.contains("nope.txt"), "{}", res.stderr);
}

#[test]
fn primes() {
    let res = run(&["run", "samples/primes.wo", "--", "100000"]);
    insta::assert_snapshot!(res.snapshot());
}

#[test]
fn queens() {
    let res = run(&["run", "samples/queens.wo", "--", "8"]);
    insta::assert_snapshot!(res.snapshot());
}

#[test]
fn company() {
    let res = run(&["run", "samples/company.wo"]);
    res.expect_status(0);
    assert!(
        res.stderr.is_empty(),
        "in-memory tables print no notice: {}",
        res.stderr
    );
    insta::assert_snapshot!(res.snapshot());
}

/// Every sample at least compiles, including ones added later without a test above.
#[test]
fn every_sample_compiles() {
    let mut paths: Vec<String> = std::fs::read_dir(common::root().join("samples"))
        .expect("samples/ exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wo"))
        .map(|p| p.display().to_string())
        .collect();
    paths.sort();
    assert!(paths.len() >= 2, "at least two samples: {paths:?}");
    let mut args = vec!["check".to_string()];
    args.extend(paths);
    let res = run_wo(&common::root(), &args);
    res.expect_status(0);
}

/// `wc` reads standard input: the lighthouse text piped in (its counts are those of
/// `wc -lwm`: 20 lines, 242 words, 1253 characters), then the same with `--top 3`,
/// then CRLF input whose last line has no newline.
#[test]
fn wc_reads_standard_input() {
    let with_input = |args: &[&str], input: &str| {
        let mut cmd = common::wo();
        cmd.current_dir(common::root())
            .args(["run", "samples/wc.wo", "--"])
            .args(args)
            .stdin(std::fs::File::open(common::root().join(input)).expect("the input exists"));
        common::output(cmd)
    };
    let res = with_input(&[], "samples/data/lighthouse.txt");
    res.expect_status(0);
    assert_eq!(res.stdout, "      20     242    1253\n");
    let res = with_input(&["--top", "3"], "samples/data/lighthouse.txt");
    insta::assert_snapshot!(res.snapshot());
    let res = with_input(&[], "tests/stdin/lines_crlf.in");
    res.expect_status(0);
    assert_eq!(res.stdout, "       7      11      55\n");
    let res = with_input(&["--top"], "samples/data/lighthouse.txt");
    res.expect_status(64);
    assert!(res.stderr.starts_with("usage: "), "{}", res.stderr);
}
