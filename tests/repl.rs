//! `wo repl`: declarations accumulate, statements run once, expressions print their
//! value, a failing input leaves the session as it was, and with `--data` the rows
//! outlive the session. Input comes on a pipe (the line editor then reads plain
//! lines), as a script driving the REPL would send it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("repl-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Runs `wo repl` with `input` on stdin; returns (status, stdout, stderr).
fn repl(dir: &PathBuf, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wo"))
        .arg("repl")
        .args(args)
        .current_dir(dir)
        .env_remove("WO_DATA")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wo repl");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("write the input");
    let out = child.wait_with_output().expect("wait for wo repl");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_session_keeps_its_state_and_runs_each_input_once() {
    let dir = scratch("state");
    let input = "\
let x = 2
x * 21
fn sq(n: Int) -> Int {
  return n * n
}
print(\"side effect\")
sq(x + 1)
let xs = [1, 2]
push(xs, sq(3))
xs
1 / 0
x
let y: Int = \"no\"
const K = 7
K + x
class P { a: Int }
P { a: x }
";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(
        out, "42\nside effect\n9\n[1, 2, 9]\n2\n9\nP { a: 2 }\n",
        "every expression's value once, the print once; stderr:\n{err}"
    );
    assert!(err.contains("trap DIV0: division by zero"), "{err}");
    assert!(err.contains("expected `Int`, found `Text`"), "{err}");
}

#[test]
fn tables_in_a_session_and_across_sessions_with_data() {
    let dir = scratch("tables");
    let decl = "@table\nclass T { v: Int }\n";
    let first = format!(
        "{decl}insert T {{ v: 5 }}\ntransaction {{\n  insert T {{ v: 6 }}\n  fail(\"undo\")\n}}\ncount(from t in T select t)\n"
    );
    let (status, out, err) = repl(&dir, &["--data", "d"], &first);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(
        out, "T(1)\n1\n",
        "the failed transaction left nothing; stderr:\n{err}"
    );
    assert!(err.contains("trap FAIL: undo"), "{err}");
    let second = format!("{decl}from t in T select t.v\n");
    let (status, out, err) = repl(&dir, &["--data", "d"], &second);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(
        out, "[5]\n",
        "the row outlived the first session; stderr:\n{err}"
    );
}

#[test]
fn a_session_spawns_and_joins_fibers_across_inputs() {
    let dir = scratch("fibers");
    let input = "\
fn sq(n: Int) -> Int {
  return n * n
}
join(spawn sq(7))
let t = spawn sq(3)
fn cube(n: Int) -> Int {
  return n * n * n
}
let u = spawn cube(2)
join(t) + join(u)
t
";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "49\n17\ntask\n", "stderr:\n{err}");
}
