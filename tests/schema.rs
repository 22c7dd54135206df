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

/// A directory that `v1` (`v1.wo`) ran on, and the plan of `wo db migrate` for `v2`
/// (`v2.wo`), which must succeed: the shape of most evolution tests.
fn planned(label: &str, v1: &str, v2: &str) -> (PathBuf, Outcome) {
    let dir = scratch_dir(label);
    write(&dir, "v1.wo", v1);
    run(&dir, "v1.wo").expect_status(0);
    write(&dir, "v2.wo", v2);
    let plan = run_wo(&dir, &["db", "migrate", "d", "v2.wo"]);
    plan.expect_status(0);
    (dir, plan)
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
        v.stdout.contains("log: ") && v.stdout.contains("1 record in"),
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

/// The files of a data directory, to check that a refused or planned migration wrote
/// nothing.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read the data directory")
        .map(|e| {
            let p = e.expect("an entry").path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).expect("read a file");
            (name, bytes)
        })
        .filter(|(n, _)| n != "lock")
        .collect();
    out.sort();
    out
}

const PEOPLE_V1: &str = r#"
@table(name: "people")
class Person {
  name: Text @unique
  age: ?Int
}

fn main(args: multi Text) {
  for a in args {
    insert Person { name: a, age: len(a) }
  }
  if len(args) > 1 {
    insert Person { name: "nil-age", age: nil }
  }
  for p in from x in Person select x {
    print("${p.id} ${p.name} ${p.age}")
  }
}
"#;

/// A scratch directory whose `d` holds people 1..4 (`ann`, `bob`, `cy`, `nil-age`).
fn with_people(label: &str) -> PathBuf {
    let dir = scratch_dir(label);
    write(&dir, "v1.wo", PEOPLE_V1);
    run_wo(
        &dir,
        &["run", "v1.wo", "--data", "d", "--", "ann", "bob", "cy"],
    )
    .expect_status(0);
    dir
}

const ADDED: &str = r#"
@table(name: "people")
class Person {
  name: Text @unique
  age: ?Int
  email: ?Text
  score: Int = 7
  ratio: Float = -0.5
  label: Text = "new"
}

fn main() {
  for p in from x in Person select x {
    print("${p.id} ${p.name} ${p.email} ${p.score} ${p.ratio} ${p.label}")
  }
}
"#;

#[test]
fn a_new_column_gives_old_rows_nil_or_its_default_with_a_notice() {
    let dir = with_people("add-column");
    write(&dir, "added.wo", ADDED);
    let res = run(&dir, "added.wo");
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        "1 ann nil 7 -0.5 new\n2 bob nil 7 -0.5 new\n3 cy nil 7 -0.5 new\n4 nil-age nil 7 -0.5 new\n"
    );
    let notice = res.stderr.trim_end();
    assert_eq!(notice.lines().count(), 1, "one line: {notice}");
    assert!(notice.starts_with("wo: d: schema migrated: "), "{notice}");
    for part in [
        "`people`: new column `email` ?Text, existing rows get nil",
        "`people`: new column `score` Int, existing rows get 7",
        "`people`: new column `label` Text, existing rows get \"new\"",
    ] {
        assert!(notice.contains(part), "{part}: {notice}");
    }
    // Applied once: the next run says nothing, and the directory verifies.
    let res = run(&dir, "added.wo");
    res.expect_status(0);
    assert_eq!(res.stderr, "");
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(
        v.stdout.contains("table people: 4 rows, next id 5"),
        "{}",
        v.stdout
    );
    // Export reads the migrated directory.
    let e = run_wo(&dir, &["db", "export", "d"]);
    e.expect_status(0);
    assert!(
        e.stdout.contains(r#"{"table":"people","id":1,"name":"ann","age":3,"email":null,"score":7,"ratio":-0.5,"label":"new"}"#),
        "{}",
        e.stdout
    );
    // So does the REPL, with the migrated tables declared.
    let mut cmd = common::wo();
    cmd.current_dir(&dir)
        .args(["repl", "--data", "d"])
        .stdin(std::process::Stdio::piped());
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the repl");
    let out = feed(child, "from x in People select x.label\n");
    assert_eq!(out.0, Some(0), "{}", out.2);
    assert_eq!(out.1, "[\"new\", \"new\", \"new\", \"new\"]\n", "{}", out.2);
    assert_eq!(files(&dir.join("d")), {
        let before = files(&dir.join("d"));
        run_wo(&dir, &["db", "migrate", "d", "added.wo"]).expect_status(0);
        before
    });
}

const WITH_COUNTERS: &str = r#"
@table(name: "people")
class Person {
  name: Text @unique
  age: ?Int
}

@table(name: "counters")
class Counter {
  v: TYPE
}

fn main() {
  print(count(from x in Person select x))
  print(count(from c in Counter select c))
}
"#;

#[test]
fn a_new_table_is_recorded_on_open_with_a_notice() {
    let dir = with_people("add-table");
    write(&dir, "int.wo", &WITH_COUNTERS.replace("TYPE", "Int"));
    write(&dir, "text.wo", &WITH_COUNTERS.replace("TYPE", "Text"));
    let res = run(&dir, "int.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "4\n0\n");
    assert_eq!(
        res.stderr.trim_end(),
        "wo: d: schema migrated: new table `counters`"
    );
    // Recorded, though it holds no row: verify lists it, and a program that declares
    // it otherwise is refused, naming the column.
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(
        v.stdout.contains("table counters: 0 rows, next id 1"),
        "{}",
        v.stdout
    );
    let before = files(&dir.join("d"));
    let res = run(&dir, "text.wo");
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("`counters`: column `v` changes type from Int to Text"),
        "{}",
        res.stderr
    );
    // Applied once: the next run says nothing and writes nothing.
    let res = run(&dir, "int.wo");
    res.expect_status(0);
    assert_eq!(res.stderr, "");
    assert_eq!(files(&dir.join("d")), before);
}

/// Two new tables beside an undeclared stored one: one hint, naming both (it was
/// given once per new table, the same words twice: helper-85).
#[test]
fn two_new_tables_beside_an_undeclared_stored_one_hint_once() {
    let dir = with_people("two-new-tables");
    write(
        &dir,
        "two.wo",
        "@table\nclass Member {\n  name: Text\n}\n\n@table\nclass Tag {\n  n: Int\n}\n\nfn main() {\n  print(count(from m in Member select m))\n}\n",
    );
    let res = run(&dir, "two.wo");
    res.expect_status(0);
    assert_eq!(
        res.stderr.trim_end(),
        "wo: d: schema migrated: new table `Member`; new table `Tag`\nwo: d: hint: the program does not declare stored table `people` (4 rows), which is kept as it is; if `Member` or `Tag` is `people` renamed, say so with `@table(was: \"people\")` on that class, and remove the empty table of that class first if a run has recorded it (`wo db migrate` warns how)"
    );
}

/// A class renamed without `@table(was: …)` makes a new, empty table while the old
/// one keeps the rows: the plan and the notice on open say so, naming the stored
/// table and the fix (helper-61: nothing mentioned the rows left behind).
#[test]
fn a_new_table_beside_an_undeclared_stored_one_hints_at_a_rename() {
    let dir = with_people("rename-without-was");
    write(
        &dir,
        "renamed.wo",
        "@table\nclass Member {\n  name: Text\n}\n\nfn main() {\n  print(count(from m in Member select m))\n}\n",
    );
    let hint = "the program does not declare stored table `people` (4 rows), which is kept as it is; if `Member` is `people` renamed, say so with `@table(was: \"people\")` on `Member`, and remove the empty `Member` first if a run has recorded it (`wo db migrate` warns how)";
    let plan = run_wo(&dir, &["db", "migrate", "d", "renamed.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout.contains("[on open] new table `Member`"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains(hint), "{}", plan.stdout);
    let res = run(&dir, "renamed.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "0\n");
    assert_eq!(
        res.stderr.trim_end(),
        format!("wo: d: schema migrated: new table `Member`\nwo: d: hint: {hint}")
    );
    // The advice, followed: `Member` is recorded now, so the `was:` is not used, and
    // the warning says how to remove the empty table first; then the rename happens.
    write(
        &dir,
        "was.wo",
        "@table(was: \"people\")\nclass Member {\n  name: Text @unique\n  age: ?Int\n}\n\nfn main() {\n  print(count(from m in Member select m))\n}\n",
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "was.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout.contains("`Member` holds no rows: to give it `people`'s, remove the empty `Member` first, with a program that does not declare it (`fn main() {}` will do): `wo db migrate d OTHER.wo --drop Member --apply`"),
        "{}",
        plan.stdout
    );
    // An ordinary run says it too (it said nothing).
    let res = run(&dir, "was.wo");
    res.expect_status(0);
    assert!(
        res.stderr
            .contains("wo: d: warning: `@table(was: \"people\")` of table `Member` is not used"),
        "{}",
        res.stderr
    );
    write(&dir, "none.wo", "fn main() {}\n");
    run_wo(
        &dir,
        &[
            "db", "migrate", "d", "none.wo", "--drop", "Member", "--apply",
        ],
    )
    .expect_status(0);
    let res = run(&dir, "was.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "4\n");
    assert_eq!(
        res.stderr.trim_end(),
        "wo: d: schema migrated: table `people` renamed to `Member`"
    );
}

/// When another stored table refers to the empty new table, dropping it alone is
/// refused, so the warning does not advise it (helper-65: following the advice led to
/// a refusal whose way out dropped the referring table's rows).
#[test]
fn the_unused_was_warning_does_not_advise_a_drop_that_a_reference_refuses() {
    let dir = with_people("rename-with-a-reference");
    write(
        &dir,
        "v2.wo",
        "@table\nclass Member {\n  name: Text\n}\n\n@table\nclass Note {\n  m: ?ref Member\n  text: Text\n}\n\nfn main() {\n  insert Note { m: nil, text: \"x\" }\n}\n",
    );
    run(&dir, "v2.wo").expect_status(0);
    write(
        &dir,
        "v3.wo",
        "@table(was: \"people\")\nclass Member {\n  name: Text @unique\n  age: ?Int\n}\n\n@table\nclass Note {\n  m: ?ref Member\n  text: Text\n}\n\nfn main() {}\n",
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "v3.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout.contains("`Member` holds no rows, but column `m` of table `Note` refers to it, so it cannot be removed alone"),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains("--drop Member"), "{}", plan.stdout);
}

/// The command a refusal suggests can be pasted: paths with a space are quoted.
#[test]
fn the_suggested_migrate_command_quotes_its_paths() {
    let dir = with_people("quoted paths");
    std::fs::rename(dir.join("d"), dir.join("my data")).unwrap();
    write(
        &dir,
        "no age.wo",
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n}\n\nfn main() {}\n",
    );
    let res = run_wo(&dir, &["run", "no age.wo", "--data", "my data"]);
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("run `wo db migrate 'my data' 'no age.wo' --apply` to apply it"),
        "{}",
        res.stderr
    );
    run_wo(&dir, &["db", "migrate", "my data", "no age.wo", "--apply"]).expect_status(0);
}

fn feed(mut child: std::process::Child, input: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("write the input");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `(program, what the message must contain, whether `--apply` carries it out)`.
const REFUSED: &[(&str, &[&str], bool)] = &[
    (
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n}\nfn main() {}\n",
        &["`people`: column `age` ?Int removed", "run `wo db migrate d prog.wo --apply`"],
        true,
    ),
    (
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Text\n}\nfn main() {}\n",
        &["`people`: column `age` changes type from ?Int to ?Text", "refused"],
        false,
    ),
    (
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int\n  level: Int\n}\nfn main() {}\n",
        &["`people`: new column `level` Int has no value for the stored rows (only a literal default, such as `= 0`, is given to them), and the table has rows", "give it a literal default"],
        false,
    ),
    (
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: Int\n}\nfn main() {}\n",
        &["`people`: column `age` becomes non-nullable", "run `wo db migrate d prog.wo --apply`"],
        true,
    ),
];

#[test]
fn every_refusal_names_table_and_column_exits_65_and_writes_nothing() {
    let dir = with_people("refusals");
    for (src, wants, applies) in REFUSED {
        write(&dir, "prog.wo", src);
        let before = files(&dir.join("d"));
        let res = run(&dir, "prog.wo");
        res.expect_status(65);
        for w in *wants {
            assert!(res.stderr.contains(w), "{w}:\n{}", res.stderr);
        }
        // One change a line, each said as wo says everything.
        for line in res.stderr.lines() {
            assert!(line.starts_with("wo: "), "{line:?} in\n{}", res.stderr);
        }
        assert_eq!(files(&dir.join("d")), before, "nothing written:\n{src}");
        // The plan lists it, writes nothing, exits 0.
        let plan = run_wo(&dir, &["db", "migrate", "d", "prog.wo"]);
        plan.expect_status(0);
        let tag = if *applies { "[--apply]" } else { "[refused]" };
        assert!(plan.stdout.contains(tag), "{}", plan.stdout);
        // A refused change is not refused a second time in the engine's words.
        assert!(
            *applies || !plan.stdout.contains("the stored rows refuse it"),
            "{}",
            plan.stdout
        );
        assert!(plan.stdout.contains("(4 rows)"), "{}", plan.stdout);
        assert_eq!(files(&dir.join("d")), before);
        if !applies {
            let res = run_wo(&dir, &["db", "migrate", "d", "prog.wo", "--apply"]);
            res.expect_status(65);
            assert_eq!(files(&dir.join("d")), before);
        }
    }
    // Two refused changes: two lines, each beginning `wo: ` (the second had no prefix).
    write(
        &dir,
        "prog.wo",
        "@table(name: \"people\")\nclass Person {\n  name: Int @unique\n  age: ?Text\n}\nfn main() {}\n",
    );
    let res = run(&dir, "prog.wo");
    res.expect_status(65);
    let lines: Vec<&str> = res.stderr.lines().collect();
    assert!(
        lines.len() == 2
            && lines
                .iter()
                .all(|l| l.starts_with("wo: d: `people`: column")),
        "{}",
        res.stderr
    );
    // `?Int` → `Int` with a nil in row 4: the whole step is refused, naming the row.
    write(&dir, "prog.wo", REFUSED[3].0);
    // Opening leaves it to `--apply`, and says that `--apply` would be refused too,
    // and why (it advised `--apply` alone, which then failed).
    let res = run(&dir, "prog.wo");
    res.expect_status(65);
    assert!(
        res.stderr.contains("run `wo db migrate d prog.wo --apply` to apply it\nwo: d: but `--apply` would be refused too, since the stored rows refuse it: people.age would be nil in row 4 (age is not nullable); change them with the program as it was first"),
        "{}",
        res.stderr
    );
    let res = run_wo(&dir, &["db", "migrate", "d", "prog.wo", "--apply"]);
    res.expect_status(65);
    assert!(
        res.stderr.contains("people.age would be nil in row 4"),
        "{}",
        res.stderr
    );
    // The plan says so beforehand, naming the row.
    let plan = run_wo(&dir, &["db", "migrate", "d", "prog.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout
            .contains("[refused] the stored rows refuse it: people.age would be nil in row 4"),
        "{}",
        plan.stdout
    );
    // Its head counts the change, not the refusal, and says `--apply` would be refused
    // (helper-88: "2 changes" for one and its refusal).
    assert!(
        plan.stdout.starts_with(
            "d: 1 change, refused (nothing written; `--apply` would be refused, exit 65):\n"
        ),
        "{}",
        plan.stdout
    );
    // A new unique index over repeated values names the value.
    write(
        &dir,
        "prog.wo",
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int @unique\n}\nfn main() {}\n",
    );
    run_wo(&dir, &["run", "v1.wo", "--data", "d", "--", "dan"]).expect_status(0);
    let res = run(&dir, "prog.wo");
    res.expect_status(65);
    // Both rows are named (helper-61: values that print alike, `0.0` and `-0.0`, are
    // hard to find otherwise).
    assert!(
        res.stderr
            .contains("duplicate value 3 for unique column people.age (rows 1 and 2)"),
        "{}",
        res.stderr
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "prog.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout.contains("[refused] the stored rows refuse it:")
            && plan.stdout.contains("duplicate value 3"),
        "{}",
        plan.stdout
    );
    let res = run_wo(&dir, &["db", "verify", "d"]);
    res.expect_status(0);
}

const REMOVED_AGE: &str = r#"
@table(name: "people")
class Person {
  name: Text @unique
}

fn main() {
  for p in from x in Person select x {
    print("${p.id} ${p.name}")
  }
}
"#;

#[test]
fn migrate_apply_drops_a_removed_column_and_makes_a_column_non_nullable() {
    let dir = with_people("apply");
    write(&dir, "removed.wo", REMOVED_AGE);
    let plan = run_wo(&dir, &["db", "migrate", "d", "removed.wo"]);
    plan.expect_status(0);
    assert_eq!(
        plan.stdout,
        "d: 1 change (nothing written; `--apply` carries them out):\n  [--apply] `people`: column `age` ?Int removed (its values are dropped) (4 rows)\n"
    );
    let res = run_wo(&dir, &["db", "migrate", "d", "removed.wo", "--apply"]);
    res.expect_status(0);
    assert!(
        res.stdout.starts_with("d: migrated (1 change):\n"),
        "{}",
        res.stdout
    );
    let res = run(&dir, "removed.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "1 ann\n2 bob\n3 cy\n4 nil-age\n");
    assert_eq!(res.stderr, "");
    let plan = run_wo(&dir, &["db", "migrate", "d", "removed.wo"]);
    assert!(
        plan.stdout.contains("nothing to migrate"),
        "{}",
        plan.stdout
    );

    // `?Int` → `Int` once no row holds nil.
    let dir = with_people("apply-non-null");
    write(
        &dir,
        "fix.wo",
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int\n}\nfn main() {\n  for p in from x in Person where x.age == nil select x {\n    p.age = 0\n  }\n}\n",
    );
    run(&dir, "fix.wo").expect_status(0);
    write(&dir, "prog.wo", REFUSED[3].0);
    run_wo(&dir, &["db", "migrate", "d", "prog.wo", "--apply"]).expect_status(0);
    run(&dir, "prog.wo").expect_status(0);
    let e = run_wo(&dir, &["db", "export", "d"]);
    assert!(
        e.stdout.contains(r#""id":4,"name":"nil-age","age":0"#),
        "{}",
        e.stdout
    );
}

/// A durable table declared `durable: false` by the program: the refusal advised
/// `wo db migrate d PROGRAM --drop T`, which with that same program was refused with
/// the same message (the program's `T` and the stored `T` share the name). The advice
/// now names a program that does not declare the table, and following it works.
#[test]
fn the_advice_for_a_table_made_durable_false_can_be_followed() {
    let dir = scratch_dir("durable-false");
    write(
        &dir,
        "v1.wo",
        "@table\nclass T {\n  v: Int\n}\n\nfn main() {\n  insert T { v: 1 }\n}\n",
    );
    write(
        &dir,
        "v2.wo",
        "@table(durable: false)\nclass T {\n  v: Int\n}\n\nfn main() {\n  insert T { v: 1 }\n  print(count(from t in T select t))\n}\n",
    );
    write(&dir, "empty.wo", "fn main() {}\n");
    run(&dir, "v1.wo").expect_status(0);
    let res = run(&dir, "v2.wo");
    res.expect_status(65);
    assert!(
        res.stderr.contains("`wo db migrate d OTHER.wo --drop T --apply`, where OTHER.wo is a program that does not declare `T`"),
        "{}",
        res.stderr
    );
    let res = run_wo(
        &dir,
        &["db", "migrate", "d", "empty.wo", "--drop", "T", "--apply"],
    );
    res.expect_status(0);
    assert!(
        res.stdout.contains("table `T` dropped (1 row)"),
        "{}",
        res.stdout
    );
    let res = run(&dir, "v2.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "1\n");
}

/// A new `?T` column with a literal default gives the existing rows that default, as
/// SQL's `ADD COLUMN … DEFAULT` does (it used to give them nil); without one, nil.
#[test]
fn a_new_optional_column_with_a_literal_default_gives_old_rows_the_default() {
    let dir = with_people("optional-default");
    write(
        &dir,
        "prio.wo",
        "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int\n  prio: ?Int = 5\n  tag: ?Text = \"t\"\n  note: ?Text\n  off: ?Bool = nil\n}\n\nfn main() {\n  insert Person { name: \"new\" }\n  for p in from x in Person select x {\n    print(\"${p.id} ${p.prio} ${p.tag} ${p.note} ${p.off}\")\n  }\n}\n",
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "prio.wo"]);
    plan.expect_status(0);
    for part in [
        "[on open] `people`: new column `prio` ?Int, existing rows get 5 (4 rows)",
        "[on open] `people`: new column `tag` ?Text, existing rows get \"t\" (4 rows)",
        "[on open] `people`: new column `note` ?Text, existing rows get nil (4 rows)",
        "[on open] `people`: new column `off` ?Bool, existing rows get nil (4 rows)",
    ] {
        assert!(plan.stdout.contains(part), "{part}: {}", plan.stdout);
    }
    let res = run(&dir, "prio.wo");
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        "1 5 t nil nil\n2 5 t nil nil\n3 5 t nil nil\n4 5 t nil nil\n5 5 t nil nil\n"
    );
    assert!(
        res.stderr
            .contains("new column `prio` ?Int, existing rows get 5"),
        "{}",
        res.stderr
    );
}

/// A default the compiler can compute, a constant or arithmetic on literals, fills the
/// existing rows as a literal does. Until December 3 only a literal did: `prio: ?Int =
/// DEFAULT_PRIO` gave the old rows nil while new rows got 7, and `secs: Int = 60 * 60`
/// was refused. A default that calls a function is still no value the compiler knows.
#[test]
fn a_new_column_whose_default_is_a_constant_gives_old_rows_its_value() {
    let dir = with_people("constant-default");
    write(
        &dir,
        "consts.wo",
        "const DEFAULT_PRIO = 7\nconst TWICE = DEFAULT_PRIO * 2\nconst SUFFIX = \"b\"\n\n@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int\n  prio: ?Int = DEFAULT_PRIO\n  secs: Int = 60 * 60\n  twice: Int = -TWICE + 1\n  ratio: Float = 0.5 * 3.0\n  tag: Text = \"a\" .. SUFFIX\n}\n\nfn main() {\n  insert Person { name: \"new\" }\n  for p in from x in Person select x {\n    print(\"${p.id} ${p.prio} ${p.secs} ${p.twice} ${p.ratio} ${p.tag}\")\n  }\n}\n",
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "consts.wo"]);
    plan.expect_status(0);
    for part in [
        "new column `prio` ?Int, existing rows get 7 (4 rows)",
        "new column `secs` Int, existing rows get 3600 (4 rows)",
        "new column `twice` Int, existing rows get -13 (4 rows)",
        "new column `ratio` Float, existing rows get 1.5 (4 rows)",
        "new column `tag` Text, existing rows get \"ab\" (4 rows)",
    ] {
        assert!(plan.stdout.contains(part), "{part}: {}", plan.stdout);
    }
    let res = run(&dir, "consts.wo");
    res.expect_status(0);
    let want: String = (1..=5)
        .map(|id| format!("{id} 7 3600 -13 1.5 ab\n"))
        .collect();
    assert_eq!(res.stdout, want);
    // A function's result is computed only when the program runs.
    write(
        &dir,
        "call.wo",
        "fn level() -> Int {\n  return 3\n}\n\n@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int\n  prio: ?Int = DEFAULT_PRIO\n  secs: Int = 60 * 60\n  twice: Int = -TWICE + 1\n  ratio: Float = 0.5 * 3.0\n  tag: Text = \"a\" .. SUFFIX\n  level: Int = level()\n}\n\nconst DEFAULT_PRIO = 7\nconst TWICE = DEFAULT_PRIO * 2\nconst SUFFIX = \"b\"\n\nfn main() {}\n",
    );
    let plan = run_wo(&dir, &["db", "migrate", "d", "call.wo"]);
    assert!(
        plan.stdout
            .contains("new column `level` Int has no value for the stored rows"),
        "{}",
        plan.stdout
    );
    // A long sum is computed (the first version counted its nodes as constants and
    // gave up past 32); Texts doubled through 40 constants are not built (the first
    // version computed each constant at each use, 2^40 times, and built a Text of
    // gigabytes): past 64 KiB a default is no value the compiler knows.
    let sum = vec!["1"; 40].join(" + ");
    let mut big = String::from("const C0 = \"xxxxxxxxxxxxxxxx\"\n");
    for i in 1..=40 {
        big.push_str(&format!("const C{i} = C{} .. C{}\n", i - 1, i - 1));
    }
    big.push_str(&format!("\n@table(name: \"people\")\nclass Person {{\n  name: Text @unique\n  age: ?Int\n  forty: Int = {sum}\n  huge: ?Text = C40\n  short: ?Text = C2\n}}\n\nfn main() {{}}\n"));
    write(&dir, "big.wo", &big);
    let plan = run_wo(&dir, &["db", "migrate", "d", "big.wo"]);
    plan.expect_status(0);
    for part in [
        "new column `forty` Int, existing rows get 40 (5 rows)",
        "new column `huge` ?Text, existing rows get nil (5 rows)",
        &format!(
            "new column `short` ?Text, existing rows get \"{}\" (5 rows)",
            "x".repeat(64)
        ),
    ] {
        assert!(plan.stdout.contains(part), "{part}: {}", plan.stdout);
    }
}

/// The plan names an index over a column the program removes by that column's stored
/// name (it said `index on (?)`), and tags it `[--apply]`: it goes with the removal,
/// which open does not carry out.
#[test]
fn an_index_over_a_removed_column_is_named_and_goes_with_the_removal() {
    let (dir, plan) = planned(
        "index-removed-column",
        "@table(name: \"e\", index: [y], sorted: [s])\nclass E {\n  y: Int\n  s: ?Text\n}\n\nfn main() {\n  insert E { y: 1, s: nil }\n}\n",
        "@table(name: \"e\")\nclass E {\n  s: ?Text\n}\n\nfn main() {}\n",
    );
    assert_eq!(
        plan.stdout,
        "d: 3 changes (nothing written; `--apply` carries them out):
  [--apply] `e`: column `y` Int removed (its values are dropped) (1 row)
  [--apply] `e`: index on (y) dropped with column `y` (1 row)
  [on open] `e`: sorted index on (s) dropped (1 row)
"
    );
    let res = run(&dir, "v2.wo");
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("`e`: index on (y) dropped with column `y` (1 row): not applied on open"),
        "{}",
        res.stderr
    );
    run_wo(&dir, &["db", "migrate", "d", "v2.wo", "--apply"]).expect_status(0);
    run(&dir, "v2.wo").expect_status(0);
}

/// A unique index is dropped only on purpose, with `--apply`: a program (or an image)
/// from before the index, run on the data, is refused instead of dropping it in
/// silence (helper-95: the old image dropped it, stored a duplicate, and the current
/// program could no longer open the directory). Other indexes still go on open.
#[test]
fn a_unique_index_is_dropped_only_by_migrate_apply() {
    let dir = scratch_dir("unique-dropped");
    let old = "@table(name: \"acct\", index: [n])\nclass Acct {\n  email: Text\n  n: Int\n}\n\nfn main(args: multi Text) {\n  insert Acct { email: args[0], n: 1 }\n}\n";
    write(&dir, "old.wo", old);
    run_wo(&dir, &["build", "old.wo"]).expect_status(0);
    write(
        &dir,
        "new.wo",
        &old.replace("email: Text", "email: Text @unique"),
    );
    run_wo(&dir, &["run", "new.wo", "--data", "d", "--", "a@x"]).expect_status(0);
    let stale = run_wo(&dir, &["run", "old.wob", "--data", "d", "--", "a@x"]);
    stale.expect_status(65);
    assert!(
        stale.stderr.contains(
            "`acct`: unique index on (email) dropped (its values may then repeat) (1 row): not applied on open"
        ),
        "{}",
        stale.stderr
    );
    // Nothing was stored: the program with the index still opens, and refuses a
    // repeated value.
    let again = run_wo(&dir, &["run", "new.wo", "--data", "d", "--", "a@x"]);
    again.expect_status(70);
    assert!(again.stderr.contains("UNIQUE"), "{}", again.stderr);
    // Dropping it on purpose; the plain index goes on open with it.
    let plain = old.replace(", index: [n]", "");
    write(&dir, "plain.wo", &plain);
    let plan = run_wo(&dir, &["db", "migrate", "d", "plain.wo"]);
    plan.expect_status(0);
    assert_eq!(
        plan.stdout,
        "d: 2 changes (nothing written; `--apply` carries them out):
  [--apply] `acct`: unique index on (email) dropped (its values may then repeat) (1 row)
  [on open] `acct`: index on (n) dropped (1 row)
"
    );
    run_wo(&dir, &["db", "migrate", "d", "plain.wo", "--apply"]).expect_status(0);
    run_wo(&dir, &["run", "plain.wo", "--data", "d", "--", "a@x"]).expect_status(0);
}

/// An older program run on a directory a newer one migrated (`city` renamed to
/// `town`): the refusal of its new column says that a stored column of its type may
/// be it under another name, and how to keep its values; the other lines do not send
/// the user to `--apply`, which the refusal refuses too (helper-106: they did, and the
/// only hint, a default, would have dropped every `town`).
#[test]
fn an_older_program_on_a_renamed_column_is_told_of_the_stored_name() {
    let (dir, _) = planned(
        "older-program",
        "@table\nclass C {\n  name: Text\n  city: Text\n}\n\nfn main() {\n  insert C { name: \"a\", city: \"x\" }\n}\n",
        "@table\nclass C {\n  name: Text\n  town: Text @was(\"city\")\n}\n\nfn main() {}\n",
    );
    run(&dir, "v2.wo").expect_status(0);
    let res = run(&dir, "v1.wo");
    res.expect_status(65);
    assert!(
        res.stderr.contains("or, if it is the stored Text column `town` under another name (renamed by a newer program, or to be renamed now), keep its values: declare `town: Text`, or `city: Text @was(\"town\")`"),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr.contains("column `town` Text removed (its values are dropped) (1 row): not applied on open (`wo db migrate … --apply` applies it once nothing is refused)"),
        "{}",
        res.stderr
    );
    assert!(!res.stderr.contains("to apply it"), "{}", res.stderr);
}

/// A `@was` that is not used because both the old and the new name are stored says
/// so in the plan (it was silently ignored): the new column keeps its own values, the
/// old one is a removed column. Likewise `@table(was:)`.
#[test]
fn a_was_not_used_because_both_names_are_stored_is_a_warning() {
    let (dir, plan) = planned(
        "was-unused",
        "@table(name: \"t\")\nclass T {\n  a: Int\n  b: Int\n}\n\n@table(name: \"u\")\nclass U {\n  x: Int\n}\n\n@table(name: \"v\")\nclass V {\n  x: Int\n}\n\nfn main() {\n  insert T { a: 1, b: 2 }\n}\n",
        "@table(name: \"t\")\nclass T {\n  b: Int @was(\"a\")\n}\n\n@table(name: \"v\", was: \"u\")\nclass V {\n  x: Int\n}\n\nfn main() {\n  for t in from x in T select x {\n    print(t.b)\n  }\n}\n",
    );
    for part in [
        "  [warning] `t`: `@was(\"a\")` of column `b` is not used, since both `a` and `b` are stored: `b` keeps its own values, and `a` is a removed column\n",
        "  [warning] `@table(was: \"u\")` of table `v` is not used, since both `u` and `v` are stored",
    ] {
        assert!(plan.stdout.contains(part), "{part}: {}", plan.stdout);
    }
    // Opening refuses the removal, and says why the `@was` did not make it a rename.
    let res = run(&dir, "v2.wo");
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("d: warning: `t`: `@was(\"a\")` of column `b` is not used"),
        "{}",
        res.stderr
    );
    let res = run_wo(&dir, &["db", "migrate", "d", "v2.wo", "--apply"]);
    res.expect_status(0);
    assert!(res.stdout.contains("[warning]"), "{}", res.stdout);
    let res = run(&dir, "v2.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "2\n");
}

/// The plan's head counts the changes and, apart, the differences no migration makes
/// (helper-95: "1 change, refused" over three refused type changes).
#[test]
fn the_plan_head_counts_the_differences_no_migration_makes() {
    let (_, plan) = planned(
        "plan-head",
        "@table(name: \"t\")\nclass T {\n  a: Int\n  b: Int\n}\n\nfn main() {\n  insert T { a: 1, b: 2 }\n}\n",
        "@table(name: \"t\")\nclass T {\n  a: Text\n  b: Text\n  c: ?Int\n}\n\nfn main() {}\n",
    );
    assert!(
        plan.stdout.starts_with(
            "d: 1 change and 2 differences no migration makes, refused (nothing written; `--apply` would be refused, exit 65):\n"
        ),
        "{}",
        plan.stdout
    );
}

/// A `was` that names nothing stored, a misspelling most likely, is a warning on the
/// run that adds the new column or table (it was silently unused: helper-95).
#[test]
fn a_was_naming_nothing_stored_is_a_warning() {
    let (dir, plan) = planned(
        "was-nothing",
        "@table(name: \"p\")\nclass P {\n  a: Int\n}\n\nfn main() {\n  insert P { a: 1 }\n}\n",
        "@table(name: \"p\")\nclass P {\n  a: Int\n  aa: ?Int @was(\"zzz\")\n}\n\n@table(name: \"q\", was: \"pp\")\nclass Q {\n  x: Int\n}\n\nfn main() {}\n",
    );
    for line in [
        "  [warning] `@table(was: \"pp\")` of table `q` names no stored table (stored: `p`): `q` is a new table\n",
        "  [warning] `p`: `@was(\"zzz\")` of column `aa` names no stored column (`p` stores `a`): `aa` is a new column\n",
    ] {
        assert!(plan.stdout.contains(line), "{line}: {}", plan.stdout);
    }
    let res = run(&dir, "v2.wo");
    res.expect_status(0);
    assert!(
        res.stderr
            .contains("d: warning: `p`: `@was(\"zzz\")` of column `aa` names no stored column"),
        "{}",
        res.stderr
    );
    // Once added, the column and the table are stored: nothing more is said.
    let res = run(&dir, "v2.wo");
    res.expect_status(0);
    assert!(!res.stderr.contains("warning"), "{}", res.stderr);
}

/// When a stored table's `@table(was: "u")` is not used but another table of the
/// program, not stored, takes `u`'s rows by the same `was:`, there is no warning: it
/// said `u` was kept as it is, while the plan renamed it (found in review).
#[test]
fn a_was_another_table_takes_is_no_warning() {
    let (dir, plan) = planned(
        "was-taken",
        "@table(name: \"u\")\nclass U {\n  x: Int\n}\n\n@table(name: \"v\")\nclass V {\n  x: Int\n}\n\nfn main() {\n  insert U { x: 7 }\n}\n",
        "@table(name: \"v\", was: \"u\")\nclass V {\n  x: Int\n}\n\n@table(name: \"w\", was: \"u\")\nclass W {\n  x: Int\n}\n\nfn main() {\n  print(from w in W select w.x)\n}\n",
    );
    assert!(
        plan.stdout.contains("table `u` renamed to `w`"),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains("warning"), "{}", plan.stdout);
    let res = run(&dir, "v2.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "[7]\n");
    assert!(!res.stderr.contains("warning"), "{}", res.stderr);
}

/// A swap of two column names with `@was` cannot be one rename: a compile error
/// (65, nothing written), where it used to read as a reorder and keep each value under
/// its old name. Done through a name not in use, one rename per run, it keeps the data.
#[test]
fn a_swap_of_names_with_was_is_refused_and_one_rename_per_run_does_it() {
    let dir = scratch_dir("was_swap");
    let v1 = "@table\nclass Pair {\n  a: Int\n  b: Int\n}\n\nfn main() {\n  insert Pair { a: 1, b: 2 }\n}\n";
    let show =
        "fn main() {\n  for p in from x in Pair select x {\n    print(\"${p.a} ${p.b}\")\n  }\n}\n";
    write(&dir, "v1.wo", v1);
    run(&dir, "v1.wo").expect_status(0);
    let swap =
        format!("@table\nclass Pair {{\n  a: Int @was(\"b\")\n  b: Int @was(\"a\")\n}}\n\n{show}");
    write(&dir, "swap.wo", &swap);
    let res = run(&dir, "swap.wo");
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("column `a` says it was `b`, but `Pair` also has a column `b`"),
        "{}",
        res.stderr
    );
    assert!(res.stderr.contains("one rename per run"), "{}", res.stderr);
    // Through a name not in use, one rename per run.
    let steps = [
        "  tmp: Int @was(\"a\")\n  b: Int",
        "  tmp: Int\n  a: Int @was(\"b\")",
        "  a: Int\n  b: Int @was(\"tmp\")",
    ];
    for (i, cols) in steps.iter().enumerate() {
        let name = format!("step{i}.wo");
        let body = if i == 2 { show } else { "fn main() {}\n" };
        write(
            &dir,
            &name,
            &format!("@table\nclass Pair {{\n{cols}\n}}\n\n{body}"),
        );
        let res = run(&dir, &name);
        res.expect_status(0);
        if i == 2 {
            assert_eq!(res.stdout, "2 1\n");
        }
    }
    // The last step's `@was` is left over; it stays harmless until `tmp` is used
    // again, and then it is refused rather than read as a rename.
    run(&dir, "step2.wo").expect_status(0);
    let reused =
        "@table\nclass Pair {\n  a: Int\n  b: Int @was(\"tmp\")\n  tmp: ?Int\n}\n\nfn main() {}\n";
    write(&dir, "reused.wo", reused);
    let res = run(&dir, "reused.wo");
    res.expect_status(65);
    assert!(res.stderr.contains("left over"), "{}", res.stderr);
}

#[test]
fn renames_with_was_keep_the_data_and_a_leftover_was_is_ignored() {
    let dir = with_people("renames");
    let renamed = r#"
@table(name: "persons", was: "people")
class Person {
  full_name: Text @unique @was("name")
  age: ?Int
}

fn main() {
  for p in from x in Person select x {
    print("${p.id} ${p.full_name} ${p.age}")
  }
}
"#;
    write(&dir, "renamed.wo", renamed);
    let plan = run_wo(&dir, &["db", "migrate", "d", "renamed.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout
            .contains("[on open] table `people` renamed to `persons` (4 rows)"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout
            .contains("[on open] `persons`: column `name` renamed to `full_name` (4 rows)"),
        "{}",
        plan.stdout
    );
    let res = run(&dir, "renamed.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "1 ann 3\n2 bob 3\n3 cy 2\n4 nil-age nil\n");
    assert!(
        res.stderr.contains("table `people` renamed to `persons`"),
        "{}",
        res.stderr
    );
    // The leftover `@was` is ignored from now on.
    let res = run(&dir, "renamed.wo");
    res.expect_status(0);
    assert_eq!(res.stderr, "");
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(
        v.stdout.contains("table persons: 4 rows, next id 5"),
        "{}",
        v.stdout
    );
    assert!(!v.stdout.contains("table people"), "{}", v.stdout);
    // `wo disasm` shows the renames.
    let d = run_wo(&dir, &["disasm", "renamed.wo"]);
    d.expect_status(0);
    assert!(
        d.stdout.contains("; table persons: was `people`"),
        "{}",
        d.stdout
    );
    assert!(
        d.stdout.contains("; column persons.full_name: was `name`"),
        "{}",
        d.stdout
    );
    // The old program now sees a new, empty `people` table beside `persons`.
    let res = run(&dir, "v1.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "");
    // And the renamed program, its `was: "people"` left over, still reads `persons`
    // by its stored name and leaves the new `people` alone.
    let res = run(&dir, "renamed.wo");
    res.expect_status(0);
    assert_eq!(res.stdout, "1 ann 3\n2 bob 3\n3 cy 2\n4 nil-age nil\n");
}

#[test]
fn migrate_drop_removes_an_undeclared_table_unless_a_kept_one_refers_to_it() {
    let dir = with_v1_dir("drop");
    write(&dir, "depts.wo", DEPARTMENTS_ONLY);
    // `employees` refers to `departments`: only dropping both works, not the target.
    write(
        &dir,
        "nothing.wo",
        "@table(name: \"other\")\nclass Other {\n  x: Int\n}\nfn main() {}\n",
    );
    let res = run_wo(
        &dir,
        &[
            "db",
            "migrate",
            "d",
            "nothing.wo",
            "--apply",
            "--drop",
            "departments",
        ],
    );
    res.expect_status(65);
    assert!(
        res.stderr.contains("table `employees` (kept) refers to it"),
        "{}",
        res.stderr
    );
    let res = run_wo(
        &dir,
        &[
            "db",
            "migrate",
            "d",
            "depts.wo",
            "--apply",
            "--drop",
            "departments",
        ],
    );
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("the program declares table `departments`"),
        "{}",
        res.stderr
    );
    // A table that is not stored is the command line's mistake (64), as with `wo db
    // export --table`.
    let res = run_wo(
        &dir,
        &[
            "db", "migrate", "d", "depts.wo", "--apply", "--drop", "nope",
        ],
    );
    res.expect_status(64);
    assert!(
        res.stderr.contains(
            "stores no table `nope`; the one it stores that the program does not declare is `employees`"
        ),
        "{}",
        res.stderr
    );
    // Named twice, it is one drop.
    let res = run_wo(
        &dir,
        &[
            "db",
            "migrate",
            "d",
            "depts.wo",
            "--drop",
            "employees",
            "--drop",
            "employees",
        ],
    );
    res.expect_status(0);
    assert!(
        res.stdout
            .contains("[--apply] table `employees` dropped (4 rows)"),
        "{}",
        res.stdout
    );
    assert_eq!(res.stdout.matches("dropped").count(), 1, "{}", res.stdout);
    let res = run_wo(
        &dir,
        &[
            "db",
            "migrate",
            "d",
            "depts.wo",
            "--apply",
            "--drop",
            "employees",
        ],
    );
    res.expect_status(0);
    let v = run_wo(&dir, &["db", "verify", "d"]);
    v.expect_status(0);
    assert!(!v.stdout.contains("employees"), "{}", v.stdout);
    // Now `ops` can be deleted: nothing refers to it.
    let res = run_wo(&dir, &["run", "depts.wo", "--data", "d", "--", "delete"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "deleted\n1\n");
}

#[test]
fn the_old_format_directory_migrates() {
    let dir = with_v1_dir("v1-migrates");
    let report = std::fs::read_to_string(fixture("report.wo")).expect("read report.wo");
    let more = report
        .replace("  note: ?Text\n}", "  note: ?Text\n  bonus: Int = 5\n}")
        .replace("${e.note}\")", "${e.note} ${e.bonus}\")");
    write(&dir, "more.wo", &more);
    let plan = run_wo(&dir, &["db", "migrate", "d", "more.wo"]);
    plan.expect_status(0);
    assert!(
        plan.stdout
            .contains("`employees`: new column `bonus` Int, existing rows get 5 (4 rows)"),
        "{}",
        plan.stdout
    );
    run_wo(&dir, &["db", "migrate", "d", "more.wo", "--apply"]).expect_status(0);
    let res = run(&dir, "more.wo");
    res.expect_status(0);
    assert_eq!(res.stderr, "");
    assert!(
        res.stdout
            .contains("employee 1 ada 120 0.5 true eng - tab\there 5\n"),
        "{}",
        res.stdout
    );
    run_wo(&dir, &["db", "verify", "d"]).expect_status(0);
}

#[test]
fn migrate_takes_the_lock() {
    let dir = with_people("lock");
    write(&dir, "removed.wo", REMOVED_AGE);
    let mut holder = common::wo()
        .current_dir(&dir)
        .args(["repl", "--data", "d"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start a repl on d");
    // Wait until it holds the directory.
    let mut held = false;
    for _ in 0..200 {
        let v = run_wo(&dir, &["db", "verify", "d"]);
        if v.stdout.contains("in use by") {
            held = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(held, "the repl took the lock");
    let res = run_wo(&dir, &["db", "migrate", "d", "removed.wo"]);
    res.expect_status(75);
    let res = run_wo(&dir, &["db", "migrate", "d", "removed.wo", "--apply"]);
    res.expect_status(75);
    drop(holder.stdin.take());
    holder.wait().expect("the repl ends");
    run_wo(&dir, &["db", "migrate", "d", "removed.wo", "--apply"]).expect_status(0);
}

/// Stored rows of `items`, as a program with `price` and `tag` sees them.
const ITEMS_V2: &str = r#"
@table(name: "items")
class Item {
  name: Text
  qty: Int
  price: Float = 1.5
  tag: ?Text
}

fn main() {
  print(count(from x in Item where x.price == 1.5 and x.tag == nil select x))
}
"#;

#[test]
fn sigkill_during_a_large_migration_leaves_the_old_or_the_new_schema() {
    let dir = scratch_dir("kill-migrate");
    write(
        &dir,
        "items.wo",
        r#"
@table(name: "items")
class Item {
  name: Text
  qty: Int
}

fn main(args: multi Text) {
  if len(args) > 0 {
    let i = 0
    while i < 4 {
      transaction {
        let j = 0
        while j < 50000 {
          insert Item { name: "item ${i * 50000 + j}", qty: j }
          j = j + 1
        }
      }
      i = i + 1
    }
  }
  print(count(from x in Item select x))
}
"#,
    );
    write(&dir, "items2.wo", ITEMS_V2);
    let res = run_wo(&dir, &["run", "items.wo", "--data", "d", "--", "fill"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "200000\n");
    let (mut old, mut new) = (0, 0);
    for round in 0..12u64 {
        let mut child = common::wo()
            .current_dir(&dir)
            .args(["db", "migrate", "d", "items2.wo", "--apply"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start wo db migrate");
        std::thread::sleep(std::time::Duration::from_millis(30 + round * 97 % 900));
        let _ = child.kill();
        let _ = child.wait();
        let v = run_wo(&dir, &["db", "verify", "d"]);
        v.expect_status(0);
        assert!(v.stdout.trim_end().ends_with("ok"), "{}", v.stdout);
        assert!(
            v.stdout
                .contains("table items: 200000 rows, next id 200001"),
            "{}",
            v.stdout
        );
        let plan = run_wo(&dir, &["db", "migrate", "d", "items2.wo"]);
        plan.expect_status(0);
        if plan.stdout.contains("nothing to migrate") {
            new += 1;
            let res = run_wo(&dir, &["run", "items2.wo", "--data", "d"]);
            res.expect_status(0);
            assert_eq!(res.stdout, "200000\n");
            // Back to the old schema for the next round.
            run_wo(&dir, &["db", "migrate", "d", "items.wo", "--apply"]).expect_status(0);
        } else {
            old += 1;
            assert!(
                plan.stdout
                    .contains("new column `price` Float, existing rows get 1.5 (200000 rows)"),
                "{}",
                plan.stdout
            );
            let res = run_wo(&dir, &["run", "items.wo", "--data", "d"]);
            res.expect_status(0);
            assert_eq!(res.stdout, "200000\n");
        }
    }
    eprintln!("SIGKILL during a migration: {old} times old, {new} times new");
    assert!(old > 0, "some kill came before the migration was in charge");
}

/// The plan of `wo db migrate` names every refusal of the stored rows at once: each
/// column's first nil where none may be, and a repeated value under a new unique
/// index beside them (helper-109: the duplicate showed only once the nil was mended).
#[test]
fn the_plan_names_every_refusal_of_the_stored_rows() {
    let v1 = "@table(name: \"people\")\nclass Person {\n  name: Text\n  age: ?Int\n  town: ?Text\n}\nfn main() {\n  insert Person { name: \"ann\", age: 3, town: \"x\" }\n  insert Person { name: \"bo\", age: nil, town: \"y\" }\n  insert Person { name: \"bo\", age: 4, town: nil }\n}\n";
    let v2 = "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: Int\n  town: Text\n}\nfn main() {}\n";
    let (dir, plan) = planned("schema-all-refusals", v1, v2);
    for said in [
        "[refused] the stored rows refuse it: people.age would be nil in row 2 (age is not nullable)",
        "[refused] the stored rows refuse it: people.town would be nil in row 3 (town is not nullable)",
        "[refused] the stored rows refuse it: duplicate value \"bo\" for unique column people.name (rows 2 and 3)",
    ] {
        assert!(plan.stdout.contains(said), "{said}:\n{}", plan.stdout);
    }
    // Opening with the new program leaves the change to `--apply` and says all three.
    let res = run(&dir, "v2.wo");
    res.expect_status(65);
    assert!(
        res.stderr.contains("since the stored rows refuse it: people.age would be nil in row 2 (age is not nullable); people.town would be nil in row 3 (town is not nullable); duplicate value \"bo\" for unique column people.name (rows 2 and 3); change them"),
        "{}",
        res.stderr
    );
    // `--apply` is refused naming them all too.
    let res = run_wo(&dir, &["db", "migrate", "d", "v2.wo", "--apply"]);
    res.expect_status(65);
    assert!(
        res.stderr.contains("the migration is refused: people.age would be nil in row 2 (age is not nullable); people.town would be nil in row 3 (town is not nullable); duplicate value \"bo\" for unique column people.name (rows 2 and 3)"),
        "{}",
        res.stderr
    );
    // Every new unique index's repeated value, of every table (helper-111: one hid
    // the others).
    run(&dir, "v1.wo").expect_status(0);
    write(&dir, "v3.wo", "@table(name: \"people\")\nclass Person {\n  name: Text @unique\n  age: ?Int @unique\n  town: ?Text @unique\n}\nfn main() {}\n");
    let plan = run_wo(&dir, &["db", "migrate", "d", "v3.wo"]);
    plan.expect_status(0);
    for said in [
        "duplicate value \"bo\" for unique column people.name (rows 2 and 3)",
        "duplicate value 3 for unique column people.age (rows 1 and 4)",
        "duplicate value \"x\" for unique column people.town (rows 1 and 4)",
    ] {
        assert!(plan.stdout.contains(said), "{said}:\n{}", plan.stdout);
    }
    // Nothing was written: the old program still runs on the directory.
    run(&dir, "v1.wo").expect_status(0);
}

/// A refusal of the stored rows names a renamed column by its new name and by the
/// name it is stored under, which the program it advises ("the program as it was
/// first") knows it by.
#[test]
fn a_refusal_names_a_renamed_column_by_its_stored_name_too() {
    let v1 = "@table(name: \"people\")\nclass Person {\n  name: Text\n  age: ?Int\n}\nfn main() {\n  insert Person { name: \"bo\", age: nil }\n  insert Person { name: \"bo\", age: 4 }\n}\n";
    let v2 = "@table(name: \"persons\", was: \"people\")\nclass Person {\n  who: Text @unique @was(\"name\")\n  years: Int @was(\"age\")\n}\nfn main() {}\n";
    let (dir, plan) = planned("schema-renamed-refusals", v1, v2);
    for said in [
        "[refused] the stored rows refuse it: persons.years (stored as `people.age`) would be nil in row 1 (years is not nullable)",
        "[refused] the stored rows refuse it: duplicate value \"bo\" for unique column persons.who (stored as `people.name`) (rows 1 and 2)",
    ] {
        assert!(plan.stdout.contains(said), "{said}:\n{}", plan.stdout);
    }
    let res = run(&dir, "v2.wo");
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("persons.years (stored as `people.age`) would be nil in row 1"),
        "{}",
        res.stderr
    );
    // The note goes with the column it is about, not with a name that ends alike
    // (`my-people.years`) or a value that spells it (helper-112).
    let v1 = "@table(name: \"my-people\")\nclass Q {\n  years: ?Int\n}\n@table(name: \"people\")\nclass P {\n  name: Text\n  age: ?Int\n}\nfn main() {\n  insert Q { years: nil }\n  insert P { name: \"people.nm\", age: nil }\n  insert P { name: \"people.nm\", age: 1 }\n}\n";
    let v2 = "@table(name: \"my-people\")\nclass Q {\n  years: Int\n}\n@table(name: \"people\")\nclass P {\n  nm: Text @unique @was(\"name\")\n  years: ?Int @was(\"age\")\n}\nfn main() {}\n";
    let (_, plan) = planned("schema-renamed-refusals-alike", v1, v2);
    for said in [
        "[refused] the stored rows refuse it: my-people.years would be nil in row 1 (years is not nullable)",
        "[refused] the stored rows refuse it: duplicate value \"people.nm\" for unique column people.nm (stored as `people.name`) (rows 1 and 2)",
    ] {
        assert!(plan.stdout.contains(said), "{said}:\n{}", plan.stdout);
    }
    // `--apply` refused for one repeated value names it so too (helper-113).
    let v1 = "@table(name: \"people\")\nclass P {\n  name: Text\n}\nfn main() {\n  insert P { name: \"bo\" }\n  insert P { name: \"bo\" }\n}\n";
    let v2 = "@table(name: \"persons\", was: \"people\")\nclass P {\n  who: Text @unique @was(\"name\")\n}\nfn main() {}\n";
    let (dir, _) = planned("schema-renamed-refusal-apply", v1, v2);
    let res = run_wo(&dir, &["db", "migrate", "d", "v2.wo", "--apply"]);
    res.expect_status(65);
    assert!(
        res.stderr.contains("duplicate value \"bo\" for unique column persons.who (stored as `people.name`) (rows 1 and 2)"),
        "{}",
        res.stderr
    );
}

/// A new column with a literal default under `@unique`, on a table with two rows or
/// more, would repeat its default: refused as a change, with advice that fits (the
/// rows' refusal said to mend them with the old program, which has no such column:
/// helper-111).
#[test]
fn a_new_unique_column_with_a_default_is_refused_on_a_table_with_rows() {
    let v1 = "@table\nclass A {\n  x: Int\n}\nfn main() {\n  insert A { x: 1 }\n  insert A { x: 2 }\n}\n";
    let v2 = "@table\nclass A {\n  x: Int\n  code: Int = 7 @unique\n}\nfn main() {}\n";
    let (dir, plan) = planned("schema-unique-default", v1, v2);
    assert!(
        plan.stdout.contains("[refused] `A`: new column `code` Int is unique, but its default 7 would be every stored row's value")
            && plan.stdout.contains("add it as `code: ?Int` without a default"),
        "{}",
        plan.stdout
    );
    run(&dir, "v2.wo").expect_status(65);
    // As a `?Int` without a default, every row gets nil, which may repeat.
    write(&dir, "v3.wo", &v2.replace("Int = 7", "?Int"));
    run(&dir, "v3.wo").expect_status(0);
}
