//! The db-bench sample (`samples/db-bench/db_bench.wo`) and the regression gate of
//! its campaign (`bench/run.py --check`): the sample's modes print their result
//! lines and keep their invariants, in memory and on disk; the gate passes a
//! results file that meets the baseline and fails one doctored to breach it.

mod common;

use common::{root, run_wo, scratch_dir};
use std::path::Path;
use std::process::Command;

const SAMPLE: &str = "samples/db-bench/db_bench.wo";

/// Runs a db-bench mode (on `data` when given) and returns its stdout.
fn bench(data: Option<&Path>, args: &[&str]) -> String {
    let mut all = vec!["run", SAMPLE];
    let d;
    if let Some(data) = data {
        d = data.display().to_string();
        all.extend(["--data", d.as_str()]);
    }
    all.push("--");
    all.extend(args);
    let res = run_wo(&root(), &all);
    res.expect_status(0);
    res.stdout
}

/// The `<op> <count> <ops/s> <p50 µs> <p99 µs>` line of `op`, as numbers.
fn result_line(out: &str, op: &str) -> [i64; 4] {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{op} ")))
        .unwrap_or_else(|| panic!("no `{op}` line in:\n{out}"));
    let f: Vec<i64> = line
        .split(' ')
        .skip(1)
        .map(|x| {
            x.parse()
                .unwrap_or_else(|_| panic!("not a number in `{line}`"))
        })
        .collect();
    assert_eq!(f.len(), 4, "`{line}`");
    assert!(f[1] > 0 && f[2] >= 0 && f[3] >= f[2], "`{line}`");
    [f[0], f[1], f[2], f[3]]
}

#[test]
fn memory_modes_print_their_lines() {
    for (args, op, n) in [
        (&["seed", "500"][..], "seed", 500),
        (&["read", "300", "--rows", "200"], "read", 300),
        (&["query", "300", "--rows", "200"], "query", 300),
        (&["write", "300", "--rows", "200"], "write", 300),
        (&["mix", "300", "4", "--rows", "200"], "mix", 300),
    ] {
        let out = bench(None, args);
        assert_eq!(result_line(&out, op)[0], n, "{out}");
    }
}

#[test]
fn durable_modes_keep_the_invariants() {
    let dir = scratch_dir("db-bench");
    let data = dir.join("d");
    let out = bench(Some(&data), &["wal", "40"]);
    assert!(out.contains("acked 40\n"), "{out}");
    result_line(&out, "wal");
    assert_eq!(bench(Some(&data), &["verify-acked", "40"]), "ok 40 items\n");
    // a row the log never acknowledged is reported, with exit 1
    let res = run_wo(
        &root(),
        &[
            "run",
            SAMPLE,
            "--data",
            &data.display().to_string(),
            "--",
            "verify-acked",
            "41",
        ],
    );
    res.expect_status(1);
    assert!(res.stdout.contains("item 41 is missing"), "{}", res.stdout);
    result_line(&bench(Some(&data), &["wmix", "60", "4"]), "wmix");
    // 20 writes timed for the rate, 20 more for the percentiles: 20 inserts in all
    result_line(&bench(Some(&data), &["write", "20"]), "write");
    assert_eq!(bench(Some(&data), &["verify"]), "ok 60 items\n");
    assert_eq!(bench(Some(&data), &["boot"]), "boot 60 rows\n");
}

/// `python3 bench/run.py --check RESULTS --baseline BASE`: its status and output.
fn gate(results: &str, baseline: &str) -> (i32, String) {
    let dir = scratch_dir("gate");
    let (r, b) = (dir.join("results.json"), dir.join("baseline.json"));
    std::fs::write(&r, results).unwrap();
    std::fs::write(&b, baseline).unwrap();
    let out = Command::new("python3")
        .arg(root().join("bench/run.py"))
        .arg("--check")
        .arg(&r)
        .arg("--baseline")
        .arg(&b)
        .output()
        .expect("python3 runs bench/run.py");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// A results file whose ratios are the committed baseline's, each times `scale`
/// (and `odd` times `odd_scale`), with the crash leg's verdict `crash_ok`.
fn results(scale: f64, odd: &str, odd_scale: f64, crash_ok: bool) -> String {
    let base = std::fs::read_to_string(root().join("bench/baseline.json")).unwrap();
    let mut ratios = Vec::new();
    for line in base.lines().filter(|l| l.contains("\"baseline\"")) {
        let name = line.trim().split('"').nth(1).unwrap().to_string();
        let value: f64 = line
            .split("\"baseline\": ")
            .nth(1)
            .unwrap()
            .split([',', '}'])
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let s = if name == odd { odd_scale } else { scale };
        ratios.push(format!(
            "\"{name}\": {{\"median\": {}, \"min\": 0, \"max\": 0}}",
            value * s
        ));
    }
    format!(
        "{{\"summary\": {{\"ratios\": {{{}}}}}, \"crash\": {{\"wo\": {{\"acked\": 9, \"ok\": {crash_ok}}}}}}}",
        ratios.join(", ")
    )
}

#[test]
fn the_gate_passes_the_baseline_and_bites_on_a_regression() {
    let base = std::fs::read_to_string(root().join("bench/baseline.json")).unwrap();
    let (code, out) = gate(&results(1.0, "", 1.0, true), &base);
    assert_eq!(code, 0, "{out}");
    // within the tolerance: still a pass
    let (code, out) = gate(&results(0.8, "", 1.0, true), &base);
    assert_eq!(code, 0, "{out}");
    // one ratio cut to 40% (past every tolerance): a breach that names the ratio
    let (code, out) = gate(&results(1.0, "read.vs_sqlite", 0.4, true), &base);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("regression: read.vs_sqlite"), "{out}");
    assert_eq!(out.matches("regression:").count(), 1, "{out}");
    // below a floor, whatever the baseline says
    let (code, out) = gate(&results(1.0, "write.vs_sqlite", 0.35, true), &base);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("regression: write.vs_sqlite"), "{out}");
    // a crash leg that lost an acknowledged row
    let (code, out) = gate(&results(1.0, "", 1.0, false), &base);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("lost acknowledged data"), "{out}");
    // a ratio missing from the results
    let (code, out) = gate("{\"summary\": {\"ratios\": {}}}", &base);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("missing"), "{out}");
}
