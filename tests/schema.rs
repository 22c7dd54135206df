//! Schema evolution on the real binary (LANGUAGE.md §8, docs/schema.md): a directory
//! written by an older wo opens; a program may declare a subset of the stored tables.

mod common;

use std::path::{Path, PathBuf};

use common::{copy_tree, root, run_wo, scratch_dir, Outcome};

fn fixture(name: &str) -> PathBuf {
    root().join("tests/schema").join(name)
}

/// A scratch directory holding the programs of `tests/schema` and, as `d`, a copy of
/// the data directory written by wo before schema evolution (log format 1,
/// checkpoint format 2).
fn with_v1_dir(label: &str) -> PathBuf {
    let dir = scratch_dir(label);
    copy_tree(&fixture("v1-datadir"), &dir.join("d"));
    std::fs::copy(fixture("report.wo"), dir.join("report.wo")).expect("copy a program");
    dir
}

fn write(dir: &Path, name: &str, src: &str) {
    std::fs::write(dir.join(name), src).expect("write a program");
}

fn run(dir: &Path, prog: &str) -> Outcome {
    run_wo(dir, &["run", prog, "--data", "d"])
}

/// What `report.wo` prints for the fixture (printed by the wo that wrote it).
const V1_ROWS: &str = "department 1 eng
department 2 ops
employee 1 ada 120 0.5 true eng - tab\there
employee 2 bob 90 -0.0 false ops 1 promoted
employee 4 dee 70 2.0 true ops 1 nil
employee 5 eve 60 NaN false ops - line
break
";

#[test]
fn a_directory_written_before_schema_evolution_opens() {
    let dir = with_v1_dir("v1-opens");
    let res = run(&dir, "report.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, V1_ROWS);
    assert_eq!(res.stderr, "");
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(
        v.stdout.contains("table employees: 4 rows, next id 6"),
        "{}",
        v.stdout
    );
    // Checkpointed by this wo, it still holds the same rows.
    run_wo(&dir, &["db", "checkpoint", "d"]).expect_status(0);
    let res = run(&dir, "report.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, V1_ROWS);
}

const DEPARTMENTS_ONLY: &str = r#"
@table(name: "departments")
class Department {
  name: Text @unique
}

fn main(args: multi Text) {
  if len(args) > 0 and args[0] == "add" {
    insert Department { name: "sales" }
  }
  if len(args) > 0 and args[0] == "delete" {
    let d = unwrap(first(from x in Department where x.name == "ops" select x))
    try {
      delete d
      print("deleted")
    } catch (e) {
      print("refused: ${e}")
    }
  }
  print(count(from x in Department select x))
}
"#;

#[test]
fn a_program_declaring_some_of_the_stored_tables_runs_and_keeps_the_others() {
    let dir = with_v1_dir("subset");
    write(&dir, "depts.wo", DEPARTMENTS_ONLY);
    // The program checkpoints by itself (a tiny threshold): the kept table is in the
    // checkpoint it writes.
    let mut cmd = common::wo();
    cmd.current_dir(&dir)
        .env("WO_CHECKPOINT_MIN", "1")
        .args(["run", "depts.wo", "--data", "d", "--", "add"]);
    let res = common::output(cmd);
    res.expect_status(0);
    assert_eq!(res.stdout, "3\n");
    let v = run_wo(&dir, &["db", "verify", "d"]);
    assert!(
        v.stdout.contains("log: ") && v.stdout.contains("1 records"),
        "{}",
        v.stdout
    );
    // The undeclared table's foreign keys still hold.
    let res = run_wo(&dir, &["run", "depts.wo", "--data", "d", "--", "delete"]);
    res.expect_status(0);
    assert!(res.stdout.starts_with("refused: "), "{}", res.stdout);
    assert!(res.stdout.contains("employees.dept"), "{}", res.stdout);
    let res = run(&dir, "depts.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "3\n");
    let res = run(&dir, "report.wo");
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        V1_ROWS.replace(
            "department 2 ops\n",
            "department 2 ops\ndepartment 3 sales\n"
        )
    );
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(
        v.stdout.contains("table employees: 4 rows, next id 6"),
        "{}",
        v.stdout
    );
}
