//! `wo test` (LANGUAGE.md §12, docs/tools.md) driven as a user would: the `test_…`
//! functions run one by one in fresh VMs with empty in-memory databases, `main` never
//! runs, a failure shows its trap and position and what the test printed, the last
//! line counts, and the exit status is 0, 1 (a test failed), 65 (a program does not
//! compile, or a `test_…` function has parameters or a result), 66 or 64.

mod common;

use std::path::Path;

use common::{root, run_wo, scratch_dir};

fn write(dir: &Path, name: &str, src: &str) {
    std::fs::write(dir.join(name), src).expect("write a test program");
}

const NOTES: &str = r#"@table(name: "notes")
class Note {
  title: Text @unique
}

fn main() {
  print("main must not run")
  exit(9)
}

fn test_starts_empty_and_inserts() {
  assert(count(from n in Note select n) == 0, "a fresh database")
  insert Note { title: "a" }
  assert(count(from n in Note select n) == 1, "one note")
}

fn test_starts_empty_again() {
  insert Note { title: "a" }
}

fn helper(n: Int) -> Int {
  return n * 2
}

fn test_fails() {
  print("before the failure")
  print("")
  check_double()
}

fn check_double() {
  assert(helper(2) == 5, "2 * 2 is not 5")
}

fn test_exit_status() {
  exit(3)
}
"#;

#[test]
fn each_test_runs_alone_and_failures_are_reported() {
    let dir = scratch_dir("wo-test-notes");
    write(&dir, "notes.wo", NOTES);
    let res = run_wo(&dir, &["test", "notes.wo"]);
    res.expect_status(1);
    assert_eq!(
        res.stdout,
        "ok     notes.wo:11 test_starts_empty_and_inserts\n\
         ok     notes.wo:17 test_starts_empty_again\n\
         FAILED notes.wo:25 test_fails: trap ASSERT: 2 * 2 is not 5 at notes.wo:32:3\n  \
         at check_double (notes.wo:32:3)\n  \
         at test_fails (notes.wo:28:3)\n  \
         | before the failure\n  \
         |\n\
         FAILED notes.wo:35 test_exit_status: exited with status 3\n\
         2 passed, 2 failed\n"
    );
    // Durable tables run in memory without a word about a data directory.
    assert_eq!(res.stderr, "");
}

/// The program is linked once and each test starts a fresh VM from it: constants are
/// evaluated again for each (an object or list held by one is not the one the test
/// before changed), and a fiber a test left behind is gone.
#[test]
fn each_test_has_its_own_constants_and_fibers() {
    let dir = scratch_dir("wo-test-fresh");
    let src = r#"class Counter {
  n: Int
}

const SEEN = Counter { n: 0 }
const NAMES = ["a"]

fn bump() -> Int {
  SEEN.n += 1
  push(NAMES, "b")
  return SEEN.n
}

fn forever() {
  while true {
    SEEN.n += 100
    yield()
  }
}

fn test_first() {
  let t = spawn forever()
  yield()
  assert(bump() == 101, "the fiber ran once")
  assert(len(NAMES) == 2, "a fresh list")
}

fn test_second() {
  yield()
  assert(bump() == 1, "fresh constants, no fiber left")
  assert(len(NAMES) == 2, "a fresh list again")
}
"#;
    write(&dir, "fresh.wo", src);
    let res = run_wo(&dir, &["test", "fresh.wo"]);
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        "ok     fresh.wo:21 test_first
ok     fresh.wo:28 test_second
2 passed, 0 failed
"
    );
}

#[test]
fn filter_selects_tests_by_name() {
    let dir = scratch_dir("wo-test-filter");
    write(&dir, "notes.wo", NOTES);
    let res = run_wo(&dir, &["test", "notes.wo", "--filter", "empty"]);
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        "ok     notes.wo:11 test_starts_empty_and_inserts\n\
         ok     notes.wo:17 test_starts_empty_again\n\
         2 passed, 0 failed, 2 filtered out\n"
    );
    assert_eq!(res.stderr, "");
    // A program named twice runs once (helper-101: `wo test t t/c.wo` ran each
    // test twice).
    let res = run_wo(
        &dir,
        &["test", "notes.wo", "./notes.wo", "--filter", "empty"],
    );
    assert!(
        res.stdout
            .ends_with("\n2 passed, 0 failed, 2 filtered out\n"),
        "{}",
        res.stdout
    );
    // A filter that matches none is said on stderr (helper-90: a misspelt one in CI
    // passed without a word); the status stays, as `go test -run` keeps it.
    let res = run_wo(&dir, &["test", "notes.wo", "--filter", "nothing"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "0 passed, 0 failed, 4 filtered out\n");
    assert!(
        res.stderr
            .starts_with("wo: warning: no test name contains `nothing` (of "),
        "{}",
        res.stderr
    );
}

#[test]
fn a_file_of_tests_needs_no_main() {
    let dir = scratch_dir("wo-test-no-main");
    write(
        &dir,
        "t.wo",
        "fn test_sum() {\n  assert(1 + 1 == 2, \"sum\")\n}\n",
    );
    let res = run_wo(&dir, &["test", "t.wo"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "ok     t.wo:1 test_sum\n1 passed, 0 failed\n");
    // `wo check` takes it as the test program it is (helper-57: it said "the
    // program has no `fn main()`" where `wo test` ran it, so check-then-test failed
    // in CI); `wo run` still wants one, and so does `wo check` of a file without tests.
    let res = run_wo(&dir, &["check", "t.wo"]);
    res.expect_status(0);
    assert_eq!(res.stderr, "");
    // `wo run` says where its tests go (helper-101: it said only "no `fn main()`").
    let res = run_wo(&dir, &["run", "t.wo"]);
    res.expect_status(65);
    assert!(
        res.stderr
            .contains("note: it has tests (`fn test_…`): `wo test` runs them without a `main`"),
        "{}",
        res.stderr
    );
    write(&dir, "lib.wo", "fn sum() -> Int {\n  return 2\n}\n");
    let res = run_wo(&dir, &["check", "lib.wo"]);
    res.expect_status(65);
    assert!(
        res.stderr.contains("the program has no `fn main()`") && !res.stderr.contains("wo test"),
        "{}",
        res.stderr
    );
}

#[test]
fn a_test_with_parameters_or_a_result_is_a_compile_error() {
    let dir = scratch_dir("wo-test-signature");
    write(
        &dir,
        "bad.wo",
        "fn test_a(x: Int) {\n}\n\nfn test_b() -> Int {\n  return 1\n}\n\nfn test_c() {\n}\n",
    );
    let res = run_wo(&dir, &["test", "bad.wo"]);
    res.expect_status(65);
    assert_eq!(res.stdout, "0 passed, 0 failed, 1 program not tested\n");
    assert!(
        res.stderr.contains(
            "bad.wo:1:1: error: test function `test_a` must take no parameters and return nothing"
        ),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr
            .contains("bad.wo:4:1: error: test function `test_b`"),
        "{}",
        res.stderr
    );
    assert!(res.stderr.ends_with("wo: 2 errors\n"), "{}", res.stderr);
    // As an ordinary program it is fine.
    std::fs::write(
        dir.join("bad.wo"),
        "fn test_a(x: Int) {\n}\n\nfn main() {\n  test_a(1)\n}\n",
    )
    .expect("write");
    run_wo(&dir, &["run", "bad.wo"]).expect_status(0);
}

#[test]
fn compile_errors_and_missing_inputs() {
    let dir = scratch_dir("wo-test-errors");
    write(&dir, "err.wo", "fn test_a() {\n  let x: Int = \"a\"\n}\n");
    write(&dir, "good.wo", "fn test_ok() {\n}\n");
    let res = run_wo(&dir, &["test", "err.wo", "good.wo"]);
    res.expect_status(65);
    assert!(res.stderr.contains("err.wo:2:16: error:"), "{}", res.stderr);
    // The other program's tests still run.
    assert_eq!(
        res.stdout,
        "ok     good.wo:1 test_ok\n1 passed, 0 failed, 1 program not tested\n"
    );

    let res = run_wo(&dir, &["test", "missing.wo", "err.wo"]);
    res.expect_status(66);
    assert_eq!(res.stdout, "0 passed, 0 failed, 2 programs not tested\n");
    assert!(res.stderr.contains("missing.wo"), "{}", res.stderr);
    run_wo(&dir, &["test"]).expect_status(64);

    // An image has no tests to find (nor a layout): refused as a usage error.
    write(&dir, "prog.wo", "fn main() {}\n");
    run_wo(&dir, &["build", "prog.wo"]).expect_status(0);
    let res = run_wo(&dir, &["test", "prog.wob"]);
    res.expect_status(64);
    assert!(
        res.stderr.contains("`prog.wob` is a bytecode image"),
        "{}",
        res.stderr
    );
    let res = run_wo(&dir, &["fmt", "prog.wob"]);
    res.expect_status(64);
    assert!(
        res.stderr.contains("`prog.wob` is a bytecode image"),
        "{}",
        res.stderr
    );
}

#[test]
fn the_ledger_sample_has_passing_tests() {
    let res = run_wo(&root(), &["test", "samples/ledger"]);
    res.expect_status(0);
    assert!(
        res.stdout.ends_with("6 passed, 0 failed\n"),
        "{}",
        res.stdout
    );
    assert!(
        res.stdout.contains(
            "ok     samples/ledger/ledger_test.wo:23 test_an_overdraft_is_undone_whole\n"
        ),
        "{}",
        res.stdout
    );
}

/// A deep recursion's stack is shortened as `wo run` shortens it: one line for the
/// repeated frame, not one per frame (it printed 100,002 lines).
#[test]
fn a_failing_test_shows_a_deep_stack_shortened() {
    let dir = scratch_dir("wo-test-deep-stack");
    write(
        &dir,
        "t.wo",
        "fn rec(n: Int) -> Int {\n  return rec(n + 1) + 1\n}\n\nfn test_stack() {\n  print(rec(0))\n}\n",
    );
    let res = run_wo(&dir, &["test", "t.wo"]);
    res.expect_status(1);
    assert!(
        res.stdout.contains("trap STACK") && res.stdout.contains("  … the frame above "),
        "{}",
        res.stdout
    );
    assert!(res.stdout.lines().count() < 10, "{}", res.stdout);
}

/// A trap message of several lines keeps the report's lines: its first line is on the
/// FAILED line with the position, the rest indented below. Output left without a
/// newline on one stream ends its line before the other stream's text.
#[test]
fn a_multi_line_message_and_mixed_streams_keep_their_lines() {
    let dir = scratch_dir("wo-test-lines");
    write(
        &dir,
        "lines.wo",
        "use io\n\nfn test_m() {\n  io.write(\"no newline\")\n  print_err(\"to stderr\")\n  print(\"out again\")\n  fail(\"line1\\n\\nline2\")\n}\n\nfn main() {}\n",
    );
    let res = run_wo(&dir, &["test", "lines.wo"]);
    res.expect_status(1);
    assert_eq!(
        res.stdout,
        "FAILED lines.wo:3 test_m: trap FAIL: line1 at lines.wo:7:3\n\
         \n    \
         line2\n  \
         | no newline\n  \
         | to stderr\n  \
         | out again\n\
         0 passed, 1 failed\n"
    );
}

/// A test that never ends is stopped at the time limit (`--timeout`, 10 s unless set)
/// wherever it is: in a loop, inside a transaction, waiting for a task that never
/// ends, asleep. It fails with what it printed, and the next test runs (in a fresh
/// VM, as every test).
#[test]
fn a_test_that_never_ends_is_stopped_at_the_time_limit() {
    let dir = scratch_dir("wo-test-timeout");
    write(
        &dir,
        "hang.wo",
        r#"use time

@table(name: "things")
class Thing {
  n: Int
}

fn test_loop() {
  print("starting")
  while true {}
}

fn test_in_a_transaction() {
  transaction {
    insert Thing { n: 1 }
    while true {}
  }
}

fn spin() -> Int {
  while true {}
  return 0
}

fn test_joins_a_task_that_never_ends() {
  let t = spawn spin()
  print(join(t))
}

fn test_sleeps() {
  time.sleep(60000)
}

fn test_sleeps_in_a_transaction() {
  transaction {
    insert Thing { n: 2 }
    time.sleep(60000)
  }
}

fn test_after() {
  assert(count(from t in Thing select t) == 0, "a fresh database")
}

fn test_naps() {
  time.sleep(1500)
}

fn main() {}
"#,
    );
    let started = std::time::Instant::now();
    let res = run_wo(&dir, &["test", "hang.wo", "--timeout", "1"]);
    res.expect_status(1);
    let why = "timed out after 1 s (`wo test --timeout SECONDS` sets the limit, 0 none)";
    assert_eq!(
        res.stdout,
        format!(
            "FAILED hang.wo:8 test_loop: {why}\n  \
             | starting\n\
             FAILED hang.wo:13 test_in_a_transaction: {why}\n\
             FAILED hang.wo:25 test_joins_a_task_that_never_ends: {why}\n\
             FAILED hang.wo:30 test_sleeps: {why}\n\
             FAILED hang.wo:34 test_sleeps_in_a_transaction: {why}\n\
             ok     hang.wo:41 test_after\n\
             FAILED hang.wo:45 test_naps: {why}\n\
             1 passed, 6 failed\n"
        )
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    // 0 is no limit (the nap of 1.5 s passes), as is a limit it keeps within; a bad
    // value is a usage error.
    let res = run_wo(&dir, &["test", "hang.wo", "--timeout", "soon"]);
    res.expect_status(64);
    for limit in ["0", "5"] {
        let args = ["test", "hang.wo", "--timeout", limit, "--filter", "naps"];
        let res = run_wo(&dir, &args);
        res.expect_status(0);
        assert_eq!(
            res.stdout,
            "ok     hang.wo:45 test_naps\n1 passed, 0 failed, 6 filtered out\n"
        );
    }
}

/// A task's trap that fails a test shows where the task was (helper-57: the stack of
/// a task never joined, one frame long, was taken for the test's own and left out).
#[test]
fn a_trap_in_a_task_shows_the_task_frame() {
    let dir = scratch_dir("wo-test-task");
    write(
        &dir,
        "u.wo",
        "fn boom() -> Int {\n  fail(\"boom\")\n  return 1\n}\n\nfn test_unjoined() {\n  let t = spawn boom()\n  yield()\n}\n\nfn test_own() {\n  fail(\"own\")\n}\n",
    );
    let res = run_wo(&dir, &["test", "u.wo"]);
    res.expect_status(1);
    assert_eq!(
        res.stdout,
        "FAILED u.wo:6 test_unjoined: trap FAIL: boom at u.wo:2:3\n  \
         at boom (u.wo:2:3)\n\
         FAILED u.wo:11 test_own: trap FAIL: own at u.wo:12:3\n\
         0 passed, 2 failed\n"
    );
}

/// A test file of a directory program, named alone, is compiled alone: its names
/// from the other files are unknown, and a note says why (helper-101: nine
/// "unknown" errors, where `wo lsp`, which compiles the directory, showed none).
#[test]
fn a_file_of_a_directory_program_named_alone_gets_a_note() {
    let dir = scratch_dir("wo-test-alone");
    write(
        &dir,
        "todo.wo",
        "@table\nclass Todo {\n  title: Text\n}\n\nfn add(t: Text) -> Todo {\n  return insert Todo { title: t }\n}\n\nfn main() {\n  print(add(\"x\").title)\n}\n",
    );
    write(
        &dir,
        "todo_test.wo",
        "fn test_add() {\n  add(\"a\")\n  assert(count(from x in Todo select x) == 1, \"one\")\n}\n",
    );
    let note = "wo: note: `todo_test.wo` was compiled alone; its directory holds 1 more `.wo` file, and a directory is one program: name `.` to compile them together\n";
    for cmd in ["test", "check"] {
        let res = run_wo(&dir, &[cmd, "todo_test.wo"]);
        res.expect_status(65);
        assert!(res.stderr.contains(note), "{cmd}: {}", res.stderr);
    }
    let res = run_wo(&dir, &["test", "."]);
    res.expect_status(0);
    assert!(
        res.stdout.ends_with("1 passed, 0 failed\n"),
        "{}",
        res.stdout
    );
    // A directory of programs (two `main`s), or a file alone in its directory: no
    // note.
    write(&dir, "other.wo", "fn main() {\n  print(1)\n}\n");
    let res = run_wo(&dir, &["test", "todo_test.wo"]);
    res.expect_status(65);
    assert!(!res.stderr.contains("compiled alone"), "{}", res.stderr);
    std::fs::remove_file(dir.join("todo.wo")).unwrap();
    std::fs::remove_file(dir.join("other.wo")).unwrap();
    let res = run_wo(&dir, &["test", "todo_test.wo"]);
    res.expect_status(65);
    assert!(!res.stderr.contains("compiled alone"), "{}", res.stderr);
}
