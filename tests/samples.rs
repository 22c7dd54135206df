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

/// Odd inputs and arguments (helper-95): a file without words printed its header and
/// trapped BOUNDS; `\r` stuck to the last word of each CRLF line; a bad N trapped or
/// was silently replaced by 10.
#[test]
fn wordfreq_odd_inputs() {
    let dir = common::scratch_dir("wordfreq-odd");
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write the input");
        p.to_string_lossy().into_owned()
    };
    for text in ["", "!!! ... ,,,\n"] {
        let res = run(&["run", "samples/wordfreq.wo", "--", &file("none.txt", text)]);
        res.expect_status(0);
        assert_eq!(res.stdout, "0 words, 0 different\n");
    }
    let crlf = file("crlf.txt", "a b\r\nb\r\n42 42\r\n");
    let res = run(&["run", "samples/wordfreq.wo", "--", &crlf]);
    res.expect_status(0);
    assert!(
        res.stdout.starts_with("5 words, 3 different\n"),
        "{}",
        res.stdout
    );
    assert!(!res.stdout.contains('\r'), "{:?}", res.stdout);
    for n in ["-2", "x", "99999999999999999999"] {
        let res = run(&["run", "samples/wordfreq.wo", "--", &crlf, n]);
        res.expect_status(64);
        assert!(
            res.stderr.contains("N must be a whole number"),
            "{}",
            res.stderr
        );
    }
}

/// A small limit says only what holds (it printed `1000 = 0 + 1000`, and Goldbach
/// "for the 0 even numbers from 4 to 2"); a bad one is a usage error.
#[test]
fn primes_small_and_bad_limits() {
    let res = run(&["run", "samples/primes.wo", "--", "10"]);
    res.expect_status(0);
    assert!(
        res.stdout
            .ends_with("goldbach holds for the 3 even numbers from 4 to 8\n"),
        "{}",
        res.stdout
    );
    let res = run(&["run", "samples/primes.wo", "--", "4"]);
    res.expect_status(0);
    assert!(!res.stdout.contains("goldbach"), "{}", res.stdout);
    assert!(!res.stdout.contains("1000 ="), "{}", res.stdout);
    for bad in ["x", "-3"] {
        let res = run(&["run", "samples/primes.wo", "--", bad]);
        res.expect_status(64);
        assert!(res.stderr.starts_with("usage: "), "{}", res.stderr);
    }
}

/// The ledger's bad arguments are usage errors, and opening an account twice is
/// refused (they ended in uncaught traps, exit 70).
#[test]
fn ledger_refuses_bad_arguments_without_a_trap() {
    let dir = common::scratch_dir("ledger-args");
    let data = dir.join("d");
    let data = data.to_string_lossy();
    let ledger = |args: &[&str]| {
        let mut all = vec!["run", "samples/ledger/ledger.wo", "--data", &data, "--"];
        all.extend_from_slice(args);
        run(&all)
    };
    for (args, says) in [
        (&["open", "carol", "-5"][..], "a negative amount: -5"),
        (&["open", "carol", "x"][..], "not an amount: x"),
        (&["stress", "x"][..], "not an amount: x"),
        (&["stress-fibers", "2", "y"][..], "not an amount: y"),
    ] {
        let res = ledger(args);
        res.expect_status(64);
        assert!(res.stderr.contains(says), "{args:?}: {}", res.stderr);
    }
    ledger(&["open", "alice", "5"]).expect_status(0);
    let res = ledger(&["open", "alice", "7"]);
    res.expect_status(1);
    assert!(
        res.stderr.contains("alice is open already"),
        "{}",
        res.stderr
    );
    let res = ledger(&["report"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "alice: 5\n0 transfers\n");
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
