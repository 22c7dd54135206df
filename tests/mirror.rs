//! `wo db export` and `wo db mirror` on the real binary, against a real PostgreSQL
//! (`tests/pg`: a throwaway server per test). Every test that puts data into
//! PostgreSQL compares each table with the source row for row: the source's rows as
//! `wo db export --format csv` writes them, PostgreSQL's read back through the client
//! and written the same way.

mod common;
mod pg;

use std::path::{Path, PathBuf};

use common::{output, run_wo, scratch_dir, wo};
use pg::{parse_csv, Pg};

fn program(name: &str) -> PathBuf {
    common::root().join("tests/mirror").join(name)
}

/// Runs a test program on data directory `d` in `dir`.
fn run_on(dir: &Path, prog: &str, args: &[&str]) {
    let mut a = vec![
        "run".to_string(),
        program(prog).display().to_string(),
        "--data".into(),
        "d".into(),
        "--".into(),
    ];
    a.extend(args.iter().map(|s| s.to_string()));
    run_wo(dir, &a).expect_status(0);
}

/// The source's tables, in stored order, from the JSON lines export.
fn tables(dir: &Path) -> Vec<String> {
    let out = run_wo(dir, &["db", "export", "d"]);
    out.expect_status(0);
    let mut names: Vec<String> = Vec::new();
    for line in out.stdout.lines() {
        // `{"table":"NAME",` — the names in these tests have no escaped quote but one.
        let rest = line.strip_prefix("{\"table\":\"").expect("a JSON line");
        let end = rest.find("\",\"id\"").expect("the id follows the table");
        let name = rest[..end].replace("\\\"", "\"");
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    names
}

/// Fails unless every named table holds in PostgreSQL exactly the source's rows.
fn assert_same(pg: &Pg, dir: &Path, names: &[&str]) {
    for name in names {
        let out = run_wo(
            dir,
            &["db", "export", "d", "--format", "csv", "--table", name],
        );
        out.expect_status(0);
        let want = parse_csv(&out.stdout);
        let got = pg.rows(name);
        assert_eq!(got.len(), want.len(), "row count of `{name}`");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "a row of `{name}`");
        }
    }
}

#[test]
fn export_sql_loads_into_postgresql_with_every_value_exact() {
    let Some(pg) = Pg::start("export_sql") else {
        return;
    };
    let dir = scratch_dir("export_sql");
    run_on(&dir, "values.wo", &[]);
    let mut cmd = wo();
    cmd.current_dir(&dir)
        .args(["db", "export", "d", "--format", "sql"]);
    let out = output(cmd);
    out.expect_status(0);
    let script = dir.join("dump.sql");
    std::fs::write(&script, &out.stdout).expect("write the script");
    let (ok, _, err) = pg.psql(&[
        "-v",
        "ON_ERROR_STOP=1",
        "-q",
        "-f",
        &script.display().to_string(),
    ]);
    assert!(ok, "psql refused the export: {err}");
    let names = tables(&dir);
    assert_eq!(names, ["departments", "employees", "weird \"names\", too"]);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_same(&pg, &dir, &names);
    // The foreign keys came along: PostgreSQL refuses a dangling reference.
    let (ok, _, err) = pg.psql(&["-c", "UPDATE employees SET dept = 99 WHERE id = 1"]);
    assert!(!ok && err.contains("foreign key"), "{err}");
}
