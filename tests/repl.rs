//! `wo repl`: declarations accumulate (and may be redefined), statements run once,
//! expressions print their value (Texts quoted), a failing input leaves the session as
//! it was, input goes on by the compiler's line rule, positions count the user's lines,
//! stored tables are known at once, dot-commands work, and piped input with an error
//! exits 1. Most tests pipe the input (the REPL then reads plain lines, as a script
//! driving it would); the `pty` tests drive the real binary on a pseudo-terminal (line
//! editor, Ctrl-C, Tab, history).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("repl-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Runs `wo repl` with `input` on stdin; returns (status, stdout, stderr).
fn repl(dir: &Path, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    repl_bytes(dir, args, input.as_bytes())
}

/// [`repl`] of input that need not be UTF-8.
fn repl_bytes(dir: &Path, args: &[&str], input: &[u8]) -> (Option<i32>, String, String) {
    let out = repl_to(dir, args, input, Stdio::piped());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `wo repl` with `input` on stdin and its stdout going to `stdout`.
fn repl_to(dir: &Path, args: &[&str], input: &[u8], stdout: Stdio) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wo"))
        .arg("repl")
        .args(args)
        .current_dir(dir)
        .env_remove("WO_DATA")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wo repl");
    // A session refused before it starts (a FILE that is not there) reads none of
    // its input: the write may find the pipe closed.
    let written = child.stdin.take().expect("stdin is piped").write_all(input);
    if let Err(e) = written {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "write the input: {e}"
        );
    }
    child.wait_with_output().expect("wait for wo repl")
}

/// Runs a program with `wo run --data d` in `dir` (to fill a data directory).
fn run_with_data(dir: &Path, src: &str) {
    std::fs::write(dir.join("prog.wo"), src).expect("write the program");
    let out = Command::new(env!("CARGO_BIN_EXE_wo"))
        .args(["run", "prog.wo", "--data", "d"])
        .current_dir(dir)
        .env_remove("WO_DATA")
        .output()
        .expect("run wo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert_eq!(status, Some(1), "piped input with errors exits 1; {err}");
    assert_eq!(
        out, "42\nside effect\n9\n[1, 2, 9]\n2\n9\nP { a: 2 }\n",
        "every expression's value once, the print once; stderr:\n{err}"
    );
    assert!(err.contains("trap DIV0: division by zero"), "{err}");
    assert!(err.contains("expected `Int`, found `Text`"), "{err}");
}

#[test]
fn a_session_without_errors_exits_0() {
    let dir = scratch("ok");
    let (status, out, err) = repl(&dir, &[], "let a = 1\na + 1\n");
    assert_eq!((status, out.as_str()), (Some(0), "2\n"), "{err}");
}

/// Piped into the REPL, stdin is the session's own input: `io` sees an empty input (it
/// neither takes the next inputs as data nor waits on the lock the REPL holds), while
/// counted loops and `io.write` work as in a program.
#[test]
fn io_and_range_in_a_piped_session() {
    let dir = scratch("io");
    let input = "use io\nio.read_line()\nio.read_all()\nfor i in range(3) { io.write(i) }\nprint(\"\")\nrange(2)\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "nil\n\"\"\n012\n[0, 1]\n");
}

/// A spawned task that traps and is not joined is reported after the input in which
/// it trapped, once, and the session exits 1; a later `join` raises the trap again.
/// Before, the trap passed in silence and the session exited 0 (found by trying wo
/// from the outside).
#[test]
fn a_task_that_traps_unjoined_is_reported_once() {
    let dir = scratch("task-trap");
    let input = "fn g() { let z = 1 / 0 }\nspawn g()\nyield()\nprint(\"still\")\nlet t = spawn g()\nyield()\nprint(\"between\")\njoin(t)\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "still\nbetween\n");
    assert_eq!(
        err.matches("wo: a task trapped and is not joined (yet):\ntrap DIV0: division by zero\n  at g (repl:1:18)\n").count(),
        2,
        "{err}"
    );
    assert!(
        err.ends_with("trap DIV0: division by zero\n  at g (repl:1:18)\n  at input (repl:8:1)\n"),
        "{err}"
    );
}

/// A comment at the end of an unfinished line, or a comment line inside an input,
/// does not end the input (it did: the query was run without its `select`).
#[test]
fn comments_inside_an_unfinished_input_are_comments() {
    let dir = scratch("comments");
    let input = "from x in [1, 2, 3] -- all of them\n  -- but only\n  where x > 1\n  select x * 10\n@table -- a note\nclass A {\n  n: Int\n}\ninsert A { n: 4 }\ntry { fail(\"x\") } -- t\ncatch (e) { print(e) }\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "[20, 30]\nA(1)\nFAIL: x\n");
}

/// A function whose parameters change: the functions declared before that no longer
/// compile with it are dropped, and said to be, so that they can be declared again to
/// match (the new declaration was refused, with errors at the old lines only). A
/// constant in the way is not dropped: nothing is declared, and the note names it.
#[test]
fn a_changed_signature_drops_the_functions_that_no_longer_compile() {
    let dir = scratch("signature");
    let input = "fn f(a: Int) -> Int { return a + 1 }\nfn g() -> Int { return f(1) }\nfn h() -> Int { return g() * 2 }\nfn f(a: Text) -> Text { return a }\nf(\"x\")\nfn g() -> Text { return f(\"y\") }\ng()\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "\"x\"\n\"y\"\n");
    assert_eq!(
        err,
        "note: `g` (repl:2) is dropped: it does not compile with this input (repl:2:26: expected `Text`, found `Int`); declare it again\n\
         note: `h` (repl:3) is dropped: it does not compile with this input (repl:3:24: unknown function `g`); declare it again\n"
    );
    let input = "fn f(a: Int) -> Int { return a + 1 }\nconst K = f(1)\nfn f(a: Text) -> Text { return a }\nK\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "2\n");
    assert!(
        err.contains("note: nothing was declared: what was declared before (`K` (repl:2)) does not compile with it"),
        "{err}"
    );
}

/// Messages that spoke of what a session does not have (helper-51): a table declared
/// again as a plain class had no position; a module used without `use` pointed at
/// "the top of the file"; `.load` of a directory gave the system's "Is a directory".
#[test]
fn session_messages_speak_of_the_session() {
    let dir = scratch("session-messages");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("plain.wo"),
        "-- héllo wörld\n-- second\n\nclass Note {\n  t: Text\n}\n",
    )
    .unwrap();
    let (status, out, err) = repl(
        &dir,
        &[],
        "@table\nclass Note {\n  t: Text\n}\ninsert Note { t: \"a\" }\nclass Note {\n  t: Text\n}\nio.read_line()\n.load lib\n.load plain.wo\ncount(from n in Note select n)\n",
    );
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "Note(1)\n1\n", "{err}");
    for part in [
        "repl:6:1: error: `Note` is a table of this session, and stays one",
        "a session cannot drop a table (repl:1)",
        "repl:9:1: error: `io.read_line` needs `use io`: type it as an input of its own first",
        "error: no .wo files under `lib`",
        // At the class, not at the comments before it.
        "plain.wo:4:1: error: `Note` is a table of this session, and stays one",
    ] {
        assert!(err.contains(part), "{part}:\n{err}");
    }
}

/// A data directory the session makes (a mistyped path, most likely) is said, once
/// (helper-106: an empty `.tables` and status 0 looked like lost data).
#[test]
fn a_data_directory_the_session_makes_is_said() {
    let dir = scratch("new-data");
    let (status, _, err) = repl(&dir, &["--data", "typo.d"], ".tables\n");
    assert_eq!(status, Some(0), "{err}");
    assert!(
        err.contains("wo: note: `typo.d` did not exist: a new, empty data directory was made"),
        "{err}"
    );
    let (_, _, err) = repl(&dir, &["--data", "typo.d"], ".tables\n");
    assert!(!err.contains("did not exist"), "{err}");
}

/// `.load` takes the rest of its line as the file name, spaces and all, with or
/// without quotes (helper-102: `.load my file.wo` was "takes at most one argument").
#[test]
fn load_takes_a_file_name_with_spaces() {
    let dir = scratch("load-spaces");
    std::fs::create_dir_all(dir.join("my lib")).unwrap();
    std::fs::write(dir.join("my lib/x y.wo"), "fn hi() -> Int { return 7 }\n").unwrap();
    let (status, out, err) = repl(
        &dir,
        &[],
        ".load my lib/x y.wo\nhi()\n.load  \"my lib/x y.wo\" \nhi() + 1\n.load 'my lib/x y.wo'\nhi() + 2\n.load my lib/none.wo\n",
    );
    assert_eq!(out, "7\n8\n9\n", "{err}");
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("cannot read `my lib/none.wo`"), "{err}");
}

/// `wo repl FILE` declares the file first, as `.load FILE` (helper-102: it was a
/// usage error); a file that is not there is 66 before the session starts, one that
/// does not compile is reported and the session goes on.
#[test]
fn a_file_named_on_the_command_line_is_loaded_first() {
    let dir = scratch("repl-file");
    std::fs::write(
        dir.join("app.wo"),
        "fn hi() -> Int { return 3 }\nfn main() { print(hi()) }\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.wo"), "fn f( {\n").unwrap();
    let (status, out, err) = repl(&dir, &["app.wo"], "hi() + 1\nmain()\n");
    assert_eq!((status, out.as_str()), (Some(0), "4\n3\n"), "{err}");
    let (status, _, err) = repl(&dir, &["none.wo"], "1\n");
    assert_eq!(status, Some(66), "{err}");
    assert!(err.contains("cannot read `none.wo`"), "{err}");
    let (status, out, err) = repl(&dir, &["bad.wo"], "1 + 1\n");
    assert_eq!((status, out.as_str()), (Some(1), "2\n"), "{err}");
    assert!(err.contains("bad.wo:1:8: error:"), "{err}");
    // One file of a directory program, loaded alone: the note says where the rest
    // is, and how to load it (helper-106).
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::write(
        dir.join("app/schema.wo"),
        "@table\nclass Item {\n  n: Int\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("app/main.wo"),
        "fn main() {\n  insert Item { n: 1 }\n  print(count(from i in Item select i))\n}\n",
    )
    .unwrap();
    let (status, _, err) = repl(&dir, &["app/main.wo"], "1\n");
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("note: `app/main.wo` was loaded alone; its directory holds 1 more `.wo` file of its program: `.load app` loads them together"),
        "{err}"
    );
    let (status, out, err) = repl(&dir, &["app/schema.wo"], ".load app/main.wo\nmain()\n");
    assert_eq!((status, out.as_str()), (Some(0), "1\n"), "{err}");
    // A directory program's files are declared together, as `wo run DIR` compiles
    // them (helper-106: loaded one by one, a file using another's class failed).
    let (status, out, err) = repl(&dir, &["app"], "main()\n.load app\nmain()\n");
    assert_eq!((status, out.as_str()), (Some(0), "1\n2\n"), "{err}");
    // A name declared in two of its files is refused, as `wo run` refuses it
    // (helper-107: the file sorted last won, silently).
    std::fs::create_dir_all(dir.join("dup")).unwrap();
    std::fs::write(
        dir.join("dup/a.wo"),
        "fn h() -> Int { return 1 }\nfn main() {}\n",
    )
    .unwrap();
    std::fs::write(dir.join("dup/b.wo"), "fn h() -> Int { return 2 }\n").unwrap();
    let (status, out, err) = repl(&dir, &["dup"], "h()\n");
    assert_eq!((status, out.as_str()), (Some(1), ""), "{err}");
    assert!(
        err.contains(
            "error: `h` is declared twice: dup/a.wo:1 and dup/b.wo:1; nothing was declared"
        ),
        "{err}"
    );
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let (status, _, err) = repl(&dir, &["empty"], "1\n");
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("no .wo files under `empty`"), "{err}");
    // A bytecode image is named as one, not as text that is not UTF-8.
    std::fs::write(dir.join("app.wob"), b"WOB\0\x01\x02").unwrap();
    let (status, _, err) = repl(&dir, &["app.wob"], ".load app.wob\n");
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(
        err.matches("`app.wob` is a bytecode image, not a source file")
            .count(),
        2,
        "{err}"
    );
}

/// Functions typed (or piped) one input at a time may call functions declared later,
/// as a program's may: `even` calling `odd` waits for it, and both are declared when
/// `odd` comes. Until December 3 `even` was refused ("unknown function `odd`"), and
/// then `odd` too, so a program pasted line by line could not be declared at all. A
/// call of a waiting function says what it waits for; a typo gets its near name; a
/// function that waited and does not compile with what it called is dropped, saying why.
#[test]
fn a_function_may_call_one_declared_later() {
    let dir = scratch("waiting");
    let (status, out, err) = repl(
        &dir,
        &[],
        "fn even(n: Int) -> Bool {\n  if n == 0 { return true }\n  return odd(n - 1)\n}\neven(3)\nfn odd(n: Int) -> Bool {\n  if n == 0 { return false }\n  return even(n - 1)\n}\neven(10)\nodd(7)\nfn a() { pirnt(1) }\nfn c() -> Int { return b(1) }\nfn b(x: Text) -> Int { return 1 }\nc()\n",
    );
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "true\ntrue\n", "{err}");
    for part in [
        "note: `even` calls `odd`",
        "not declared yet: it is kept, and declared with it",
        "repl:5:1: error: unknown function `even`",
        "= note: `even` (repl:1) calls `odd`",
        "note: `even` (repl:1) is declared now: what it waited for is declared",
        "note: `a` calls `pirnt` (did you mean `print`?), not declared yet",
        "note: `c` (repl:13), which was waiting, is dropped: it does not compile with this input (repl:13:26: expected `Text`, found `Int`); declare it again",
        "repl:15:1: error: unknown function `c`",
    ] {
        assert!(err.contains(part), "{part}:\n{err}");
    }
}

/// The edges of waiting functions (helper-52): a `.load` that drops a function while
/// another waits (the session ended with an index out of bounds); a piped session
/// whose function waits for a name that never comes (exit 0, in silence); a waiting
/// function declared again, waiting for something else (no note); a waiting function
/// broken by a class change (the note quoted the call it waited for).
#[test]
fn waiting_functions_at_their_edges() {
    let dir = scratch("waiting-edges");
    std::fs::write(
        dir.join("lib.wo"),
        "fn g(x: Int, y: Int) -> Int {\n  return x + y\n}\n\nfn odd(n: Int) -> Bool {\n  if n == 0 {\n    return false\n  }\n  return even(n - 1)\n}\n",
    )
    .unwrap();
    let (status, out, err) = repl(
        &dir,
        &[],
        "fn g(x: Int) -> Int { return x }\nfn h() -> Int { return g(1) }\nfn even(n: Int) -> Bool { if n == 0 { return true } return odd(n - 1) }\n.load lib.wo\neven(4)\n",
    );
    assert_eq!((status, out.as_str()), (Some(0), "true\n"), "{err}");
    assert!(err.contains("note: `h` (repl:2) is dropped"), "{err}");
    let (status, _, err) = repl(&dir, &[], "fn greet() { pirnt(\"hi\") }\n");
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("error: `greet` (repl:1) was never declared: it calls `pirnt` (did you mean `print`?), never declared"),
        "{err}"
    );
    let (_, _, err) = repl(
        &dir,
        &[],
        "fn f() -> Int { return g() }\nfn f() -> Int { return h() }\nfn g() -> Int { return 1 }\n",
    );
    assert!(
        err.contains("note: `f` calls `h`, not declared yet"),
        "{err}"
    );
    let (_, _, err) = repl(
        &dir,
        &[],
        "class P { x: Int }\nfn f(p: P) -> Int { return g(p.x) }\nclass P { y: Int }\n",
    );
    assert!(
        err.contains("which was waiting, is dropped: it does not compile with this input (repl:2:32: class `P` has no field `x`)"),
        "{err}"
    );
}

/// A stored table declared again under the program's own class name, while another
/// stored table refers to it (`b: ref A`, with the REPL's name `A` for table `a`): the
/// classes made from the directory follow the new name. Until December 3 the input
/// was refused with "unknown type `A`" in `stored-schema`, a file the user never
/// wrote (helper-51).
#[test]
fn a_stored_table_declared_again_under_another_name_keeps_its_references() {
    let dir = scratch("stored-renamed");
    run_with_data(
        &dir,
        "@table(name: \"a\")\nclass A {\n  n: Int = 0\n}\n\n@table(name: \"b\")\nclass B {\n  a: ref A\n  maybe: ?ref A\n}\n\nfn main() {\n  let a = insert A { n: 4 }\n  insert B { a: a, maybe: a }\n}\n",
    );
    let (status, out, err) = repl(
        &dir,
        &["--data", "d"],
        "@table(name: \"a\")\nclass Alpha {\n  n: Int = 0\n}\ninsert Alpha {}\nfrom b in B select b.a.n + unwrap(b.maybe).n\ncount(from x in Alpha select x)\n",
    );
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "Alpha(2)\n[8]\n2\n", "{err}");
}

/// A class declared from the data directory has no field defaults (the directory does
/// not keep them): an insert that leaves such a field out says so, and `.load` of the
/// program brings them back.
#[test]
fn a_missing_default_of_a_stored_class_is_explained() {
    let dir = scratch("stored-defaults");
    std::fs::write(
        dir.join("notes.wo"),
        "@table\nclass Note {\n  title: Text\n  done: Bool = false\n  rank: Int = 0\n}\n\nfn main() {\n  insert Note { title: \"a\" }\n}\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_wo"))
        .args(["run", "notes.wo", "--data", "d"])
        .current_dir(&dir)
        .env_remove("WO_DATA")
        .status()
        .expect("wo run");
    assert!(run.success());
    let (status, out, err) = repl(
        &dir,
        &["--data", "d"],
        "insert Note { title: \"b\" }\ninsert Note { title: \"b\", rank: 1 }\n.load notes.wo\ninsert Note { title: \"c\" }\n",
    );
    assert_eq!(status, Some(1), "{err}");
    // Two fields left out, then one (helper-102: the note came only for one).
    let note = "`Note` was declared from the data directory, which keeps no field defaults";
    assert_eq!(err.matches(note).count(), 2, "{err}");
    assert_eq!(out, "Note(2)\n");
}

#[test]
fn exit_ends_the_session_with_its_status() {
    let dir = scratch("exit");
    let (status, out, err) = repl(&dir, &[], "print(1)\nexit(3)\nprint(2)\n");
    assert_eq!((status, out.as_str()), (Some(3), "1\n"), "{err}");
}

#[test]
fn text_results_are_quoted_and_differ_from_numbers() {
    let dir = scratch("quoted");
    let input =
        "\"1\"\n1\n\"a\\\"b\"\n[\"x\"]\nlet t = \"v\"\nt\nprint(t)\nlet n: ?Text = nil\nn\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "\"1\"\n1\n\"a\\\"b\"\n[\"x\"]\n\"v\"\nv\nnil\n");
}

#[test]
fn functions_and_lets_may_be_redefined() {
    let dir = scratch("redefine");
    let input = "\
fn f(n: Int) -> Int {
  return n + 1
}
f(1)
let r = f(1)
fn f(n: Int) -> Text {
  return \"r${n}\"
}
f(1)
r
let x = 1
let x = x + 1
x
let x = \"now text\"
x
const C = 1
const C = 2
C
";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "2\n\"r1\"\n2\n2\n\"now text\"\n2\n");
}

#[test]
fn redefining_a_class_forgets_variables_of_the_old_one() {
    let dir = scratch("reclass");
    let input = "class P { a: Int }\nlet p = P { a: 1 }\nlet k = 5\nclass P { b: Text }\np\nk\nP { b: \"x\" }\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "5\nP { b: \"x\" }\n");
    assert!(err.contains("`p` is forgotten"), "{err}");
    // An old `P` inside a kept object of another class: that variable goes too
    // (helper-94: `w.p.y` was an internal error, `w.p.x` of the old layout read as the
    // new type).
    let input = "class P {\n  x: Int\n}\nclass W {\n  p: P\n}\nlet w = W { p: P { x: 1 } }\nlet ws = {\"a\": [w]}\nclass P {\n  x: Text\n  y: Int = 4\n}\nw.p.y\nW { p: P { x: \"new\" } }.p.y\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "4\n");
    for name in ["w", "ws"] {
        assert!(
            err.contains(&format!("`{name}` is forgotten: its type `"))
                && err.contains("holds objects of a class that was redefined"),
            "{err}"
        );
    }
    assert!(err.contains("unknown variable `w`"), "{err}");
    assert!(!err.contains("internal error"), "{err}");
}

/// A piped line that is not UTF-8 is that input's error, named by line, column and
/// byte; the session goes on (helper-94: it ended with exit 66 and no position).
#[test]
fn a_line_that_is_not_utf8_is_an_error_of_its_input_only() {
    let dir = scratch("not-utf8");
    let (status, out, err) = repl_bytes(&dir, &[], b"1\n\"\xff\"\n2\n");
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "1\n2\n");
    assert_eq!(
        err,
        "repl:2:2: error: the input is not valid UTF-8: the byte 0xFF (the input it is part of is dropped)\n"
    );
}

/// The input a bad line is part of is dropped whole: its lines after the bad one too,
/// with the `else` that continues it (helper-102: only the lines up to the bad one
/// were dropped, and the rest ran as inputs of their own, the body of an `if false`
/// that deleted every row among them). A dot-command is one line.
#[test]
fn an_input_with_a_line_that_is_not_utf8_is_dropped_whole() {
    let dir = scratch("not-utf8-whole");
    let lines: [&[u8]; 18] = [
        b"let rows = [1, 2]",
        b"if false {",
        b"  print(\"d\xe9j\xe0\")",
        b"  pop(rows)",
        b"  print(\"body ran\")",
        b"}",
        b"print(len(rows))",
        b"fn f() { -- caf\xe9",
        b"  print(\"f ran\")",
        b"}",
        b"if true {",
        b"  print(\"then ran\")",
        b"}",
        b"else { -- \xff",
        b"  print(2)",
        b"}",
        b".load caf\xe9.wo",
        b"print(\"end\")",
    ];
    let mut input = lines.join(&b'\n');
    input.push(b'\n');
    let (status, out, err) = repl_bytes(&dir, &[], &input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "2\nend\n");
    assert_eq!(
        err,
        "repl:3:11: error: the input is not valid UTF-8: the byte 0xE9 (the input it is part of is dropped)\n\
         repl:8:16: error: the input is not valid UTF-8: the byte 0xE9 (the input it is part of is dropped)\n\
         repl:14:11: error: the input is not valid UTF-8: the byte 0xFF (the input it is part of is dropped)\n\
         repl:17:10: error: the input is not valid UTF-8: the byte 0xE9 (the input it is part of is dropped)\n"
    );
}

/// A task whose fiber runs a function that a later input declares again is stopped,
/// and says so to its `join` (helper-94: it vanished, and `join` reported a deadlock).
#[test]
fn a_task_in_a_function_declared_again_is_stopped_and_says_so() {
    let dir = scratch("task-redeclared");
    let input = "fn lp() -> Int {\n  for i in range(4) {\n    print(i)\n    yield()\n  }\n  return 7\n}\nlet t = spawn lp()\nprint(\"a\")\nfn lp() -> Int {\n  return 1\n}\njoin(t)\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "0\na\n");
    assert!(
        err.contains("trap FAIL: the task was stopped: `lp`, which it was running, was declared again by a later input"),
        "{err}"
    );
    assert!(!err.contains("deadlock"), "{err}");
}

#[test]
fn input_continues_by_the_compilers_line_rule() {
    let dir = scratch("continue");
    let input = "\
let total = 1 +
  2
total
let xs = [10, 20, 30,
  40]
let big = from x in xs
  where x > 15
  order by x desc
  select x
big
if total > 5 {
  print(\"big\")
}
else {
  print(\"small\")
}
if total > 5 {
  print(\"no else\")
}
print(\"next\")
try {
  fail(\"boom\")
}
catch (e) {
  print(e.message)
}
";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(
        out, "3\n[40, 30, 20]\nsmall\nnext\nboom\n",
        "stderr:\n{err}"
    );
    assert!(err.is_empty(), "no error about a `}}` never typed: {err}");
}

#[test]
fn an_unterminated_text_is_reported_at_once() {
    let dir = scratch("unterminated");
    let input = "print(\"abc\nprint(\"after\")\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(
        out, "after\n",
        "the next line ran on its own; stderr:\n{err}"
    );
    assert!(
        err.starts_with("repl:1:7: error: unterminated text literal"),
        "{err}"
    );
}

#[test]
fn positions_count_the_users_lines_and_never_show_the_wrapper() {
    let dir = scratch("positions");
    let input = "\
let a = 1
let b: Int = \"x\"
fn g(n: Int) -> Int {
  return 10 / n
}
g(0)
a +
  nope
return 5
";
    let (status, _out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("repl:2:14: error: expected `Int`, found `Text`"),
        "{err}"
    );
    assert!(
        err.contains("\n2 | let b: Int = \"x\"\n"),
        "the user's line: {err}"
    );
    assert!(err.contains("  at g (repl:4:"), "{err}");
    assert!(err.contains("  at input (repl:6:"), "{err}");
    assert!(err.contains("repl:8:3: error:"), "{err}");
    assert!(
        err.contains("repl:9:8: error: `return` in an input takes no value"),
        "{err}"
    );
    for hidden in ["main", "__repl", "__value", "if true"] {
        assert!(!err.contains(hidden), "`{hidden}` shown:\n{err}");
    }
}

#[test]
fn tables_in_a_session_and_across_sessions_with_data() {
    let dir = scratch("tables");
    let decl = "@table\nclass T { v: Int }\n";
    let first = format!(
        "{decl}insert T {{ v: 5 }}\ntransaction {{\n  insert T {{ v: 6 }}\n  fail(\"undo\")\n}}\ncount(from t in T select t)\n"
    );
    let (status, out, err) = repl(&dir, &["--data", "d"], &first);
    assert_eq!(status, Some(1), "{err}");
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

const NOTES: &str = "\
@table(index: [title])
class Note {
  title: Text
  body: ?Text
}
@table(name: \"tags\")
class Tag {
  label: Text
  note: ref Note
}
fn main() {
  let n = insert Note { title: \"a\", body: \"hello\" }
  insert Tag { label: \"x\", note: n }
  insert Note { title: \"b\" }
}
";

#[test]
fn a_data_directory_s_stored_tables_are_known_at_once() {
    let dir = scratch("stored");
    run_with_data(&dir, NOTES);
    let input = "\
from x in Note select x
from x in Note select x.title
from t in Tags select t.note.title
insert Note { title: \"c\" }
@table
class Note {
  titel: Text
}
1 + 1
count(from x in Note select x)
";
    let (status, out, err) = repl(&dir, &["--data", "d"], input);
    assert_eq!(status, Some(1), "the typo is an error; {err}");
    assert_eq!(
        out, "[Note(1), Note(2)]\n[\"a\", \"b\"]\n[\"a\"]\nNote(3)\n2\n3\n",
        "stderr:\n{err}"
    );
    assert!(err.contains("Note"), "the typo is reported: {err}");
    // The inserted row is durable.
    let (status, out, err) = repl(&dir, &["--data", "d"], "count(from x in Note select x)\n");
    assert_eq!((status, out.as_str()), (Some(0), "3\n"), "{err}");
}

/// Tables named as a built-in type (`int`, `error`: valid `@table(name:)`s) made
/// the session on their directory exit 70 ("the declarations of the stored tables do
/// not compile"): their classes are `Int2` and `Error2` now.
#[test]
fn stored_tables_named_as_built_in_types() {
    let dir = scratch("builtin-names");
    run_with_data(
        &dir,
        "@table(name: \"int\")\nclass I {\n  v: Int\n}\n\n@table(name: \"error\")\nclass E {\n  v: Int\n}\n\nfn main() {\n  insert I { v: 1 }\n  insert E { v: 2 }\n}\n",
    );
    let input = ".tables\nfrom x in Int2 select x.v\nfrom e in Error2 select e.v\n";
    let (status, out, err) = repl(&dir, &["--data", "d"], input);
    assert_eq!(status, Some(0), "{err}");
    assert!(out.contains("int (class Int2): 1 row"), "{out}");
    assert!(out.ends_with("[1]\n[2]\n"), "{out}");
}

/// A function that uses a session variable: it was told to "declare it with `let
/// counter = …`", which the session had done. The note says that functions do not
/// see the session's variables, and what to do.
#[test]
fn a_function_using_a_session_variable_is_told_why() {
    let dir = scratch("session-var");
    let input = "let counter = 0\nfn bump() {\n  counter += 1\n}\nfn get() -> Int {\n  return counter\n}\ncounter\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(out, "0\n");
    assert_eq!(
        err.matches("`counter` is a variable of this session")
            .count(),
        2,
        "{err}"
    );
    assert!(!err.contains("declare it with"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn dot_commands() {
    let dir = scratch("dot");
    run_with_data(&dir, NOTES);
    let input = "\
.help
.tables
.schema Tags
.timer on
1 + 1
.timer off
2 + 2
.load prog.wo
.schema Note
from x in Note where x.title == \"b\" select x.id
from t in Tag select t.label
.schema Nothing
.schema tag
.bogus
.quit
print(\"not run\")
";
    let (status, out, err) = repl(&dir, &["--data", "d"], input);
    assert_eq!(status, Some(1), "three bad commands; {err}");
    for cmd in [".help", ".tables", ".schema", ".timer", ".load", ".quit"] {
        assert!(out.contains(cmd), ".help lists {cmd}: {out}");
    }
    assert!(
        out.contains("Note: 2 rows\ntags (class Tags): 1 row\n"),
        "{out}"
    );
    assert!(
        out.contains("@table(name: \"tags\")\nclass Tags {\n  label: Text\n  note: ref Note\n}\n"),
        "{out}"
    );
    assert!(out.contains("2\ntime: "), "{out}");
    assert!(out.contains(" ms\n4\n"), "the timer is off again: {out}");
    assert!(
        out.contains("@table(index: [title])\nclass Note {"),
        ".load replaced the declaration: {out}"
    );
    assert!(out.ends_with("[2]\n[\"x\"]\n"), "{out}");
    assert!(!out.contains("not run"), "{out}");
    assert!(
        err.contains("nothing named `Nothing` is declared\n"),
        "{err}"
    );
    assert!(
        err.contains("nothing named `tag` is declared (did you mean `Tag`?)"),
        "{err}"
    );
    assert!(err.contains("unknown command `.bogus`"), "{err}");
}

#[test]
fn a_session_spawns_and_joins_fibers_across_inputs() {
    let dir = scratch("fibers");
    let input = "\
fn sq(n: Int) -> Int {
  return n * n
}
join(spawn sq(7))
spawn sq(5)
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
    // A lone `spawn` prints nothing (its `task` told nothing: helper-105); a task
    // asked for prints.
    assert_eq!(out, "49\n17\ntask\n", "stderr:\n{err}");
    assert!(!err.contains("still alive"), "{err}");
}

/// Tasks still alive when the session ends stop with it, as when a program's `main`
/// returns, and the session says so (helper-102: a task spawned by the last piped
/// input never ran, without a word); the status is not changed by it.
#[test]
fn tasks_alive_at_the_end_of_a_session_are_named() {
    let dir = scratch("alive");
    let input = "use time\nfn work() {\n  time.sleep(60)\n  print(\"done\")\n}\nlet t = spawn work()\nlet u = spawn work()\nprint(\"end\")\n";
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "end\n");
    assert!(
        err.contains("note: 2 tasks still alive at the end of the session were stopped"),
        "{err}"
    );
    let (status, _, err) = repl(&dir, &[], &input.replace("print(\"end\")", ".quit"));
    assert_eq!(status, Some(0), "{err}");
    assert!(err.contains("note: 2 tasks still alive"), "{err}");
}

/// The REPL on a pseudo-terminal, as a person uses it: rexpect forks the real binary
/// on a pty whose line discipline turns Ctrl-C into SIGINT.
mod pty {
    use super::scratch;
    use rexpect::session::PtySession;
    use std::path::Path;
    use std::process::Command;

    fn start(dir: &Path, history: &Path) -> PtySession {
        start_on(dir, "xterm", history.as_os_str())
    }

    /// `wo repl` on a pty for terminal `term`, with history file `history` (empty:
    /// none), once its prompt shows.
    fn start_on(dir: &Path, term: &str, history: &std::ffi::OsStr) -> PtySession {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wo"));
        cmd.arg("repl")
            .current_dir(dir)
            .env_remove("WO_DATA")
            .env("TERM", term)
            .env("WO_HISTORY", history);
        let mut s =
            rexpect::session::spawn_command(cmd, Some(30_000)).expect("start wo repl on a pty");
        s.exp_string("wo> ").expect("the prompt");
        s
    }

    /// Types `line`, waits for `expect` and then the prompt `next`.
    fn line(s: &mut PtySession, line: &str, expect: &str, next: &str) {
        s.send_line(line).expect("send a line");
        if !expect.is_empty() {
            s.exp_string(expect)
                .unwrap_or_else(|e| panic!("after `{line}`, `{expect}`: {e}"));
        }
        s.exp_string(next)
            .unwrap_or_else(|e| panic!("after `{line}`, the prompt `{next}`: {e}"));
    }

    /// Where the terminal has no line editing (`TERM=dumb`: Emacs's shell), the line
    /// editor reads in the terminal's own line mode, and Ctrl-C at the prompt reaches
    /// wo as a signal: it must not stay raised to interrupt the next input, even with
    /// the line sent right after it (helper-69), and a second one at a prompt must not
    /// end the session (helper-68).
    #[test]
    fn ctrl_c_at_the_prompt_of_a_dumb_terminal() {
        let dir = scratch("pty-dumb");
        let mut s = start_on(&dir, "dumb", "".as_ref());
        s.send("1 +").unwrap();
        s.send_control('c').unwrap();
        line(
            &mut s,
            "print(\"after\" .. \"wards\")",
            "afterwards",
            "wo> ",
        );
        // A second one, at the next prompt, is a first one again.
        s.send_control('c').unwrap();
        line(&mut s, "print(\"again\" .. \"!\")", "again!", "wo> ");
        // Ctrl-C still stops a running input (once it runs: its first line is out).
        line(
            &mut s,
            "print(\"spin\" .. \"ning\"); while true { }",
            "spinning",
            "",
        );
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("wo> ").unwrap();
        line(&mut s, "40 + 2", "42", "wo> ");
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }

    #[test]
    fn ctrl_c_tab_continuation_and_history() {
        let dir = scratch("pty");
        let history = dir.join("history");
        let mut s = start(&dir, &history);
        line(&mut s, "let xs = [1, 2]", "", "wo> ");
        line(&mut s, "@table", "", "... ");
        line(&mut s, "class T { value: Int }", "", "wo> ");
        line(&mut s, "insert T { value: 1 }", "T(1)", "wo> ");
        // A statement that never ends, inside a transaction with a change; its
        // output shows while it runs (stdout is line-buffered on a terminal).
        line(&mut s, "transaction {", "", "... ");
        line(&mut s, "  insert T { value: 2 }", "", "... ");
        line(&mut s, "  print(\"looping\")", "", "... ");
        line(&mut s, "  while true { }", "", "... ");
        line(&mut s, "}", "looping", "");
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("wo> ").unwrap();
        // The transaction rolled back; variables and the in-memory table are kept.
        line(&mut s, "count(from t in T select t) * 100", "100", "wo> ");
        line(&mut s, "xs", "[1, 2]", "wo> ");
        // Ctrl-C at the prompt drops the line being typed.
        s.send("1 +").unwrap();
        s.send_control('c').unwrap();
        s.exp_string("wo> ").unwrap();
        line(&mut s, "40 + 2", "42", "wo> ");
        // A line ending in an operator continues.
        line(&mut s, "let y = 1000 +", "", "... ");
        line(&mut s, "1", "", "wo> ");
        line(&mut s, "y * 3", "3003", "wo> ");
        // Tab completes a column of the query's table.
        s.send("from t in T select t.val").unwrap();
        s.send("\t").unwrap();
        line(&mut s, " * 7", "[7]", "wo> ");
        line(&mut s, "\"hist\" .. \"ory\"", "\"history\"", "wo> ");
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
        let saved = std::fs::read_to_string(&history).expect("the history file");
        assert!(saved.contains("let xs = [1, 2]"), "{saved}");

        // A new session recalls the last one's lines.
        let mut s = start(&dir, &history);
        s.send("\x1b[A").unwrap(); // Up: `.quit`
        s.send("\x1b[A").unwrap(); // Up: the last input
        line(&mut s, "", "\"history\"", "wo> ");
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }

    /// Ctrl-C stops the fibers an input left running, and the ids of the fibers spawned
    /// after go on from where they were: before, they started again at 0, so the trap
    /// of a new task that had an old one's id passed in silence (taken as reported).
    #[test]
    fn a_task_trap_after_ctrl_c_is_reported() {
        let dir = scratch("pty-task-trap");
        let mut s = start(&dir, &dir.join("history"));
        line(&mut s, "fn g() { let z = 1 / 0 }", "", "wo> ");
        line(&mut s, "fn spin() { while true { yield() } }", "", "wo> ");
        line(&mut s, "let t = spawn g()", "", "wo> ");
        line(&mut s, "yield()", "trap DIV0", "wo> ");
        line(&mut s, "spawn spin()", "", "wo> ");
        line(&mut s, "let sp = spawn spin()", "", "wo> ");
        // Ctrl-C once the input runs (the line editor has left raw mode).
        line(&mut s, "fn forever() {", "", "... ");
        line(&mut s, "  print(\"spinning\")", "", "... ");
        line(&mut s, "  while true { yield() }", "", "... ");
        line(&mut s, "}", "", "wo> ");
        line(&mut s, "forever()", "spinning", "");
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("wo> ").unwrap();
        line(&mut s, "let u = spawn g()", "", "wo> ");
        line(&mut s, "yield()", "trap DIV0", "wo> ");
        line(&mut s, "spawn g()", "", "wo> ");
        line(&mut s, "yield()", "trap DIV0", "wo> ");
        line(&mut s, "print(\"after\")", "after", "wo> ");
        // A task stopped inside its own transaction too (helper-60: it was not kept,
        // so its task stayed running and a join said "deadlock").
        line(&mut s, "use time", "", "wo> ");
        line(
            &mut s,
            "fn txsleep() -> Int { transaction { time.sleep(100000) }\n return 1 }",
            "",
            "wo> ",
        );
        line(&mut s, "let tt = spawn txsleep()", "", "wo> ");
        s.send_line("print(\"yielding\"); yield()").unwrap();
        s.exp_string("yielding").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("wo> ").unwrap();
        line(
            &mut s,
            "join(tt)",
            "stopped by an interrupt (Ctrl-C)",
            "wo> ",
        );
        // A task the interrupt stopped says so when joined (helper-59: "deadlock").
        line(
            &mut s,
            "join(sp)",
            "stopped by an interrupt (Ctrl-C)",
            "wo> ",
        );
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }

    /// A bracketed paste of declarations and statements runs as if typed line by line:
    /// the line editor hands the paste over whole, and it was taken as one
    /// declaration input (`f()` was "unexpected identifier").
    #[test]
    fn a_paste_of_declarations_and_statements_runs() {
        let dir = scratch("pty-paste");
        let mut s = start(&dir, &dir.join("history"));
        s.send("\x1b[200~@table\nclass T {\n  v: Int\n}\n\nfn f(n: Int) -> Int {\n  return n * 2\n}\ninsert T { v: f(20) }\nprint(f(21) + 1000)\x1b[201~")
            .unwrap();
        s.send("\r").unwrap();
        s.flush().unwrap();
        s.exp_string("T(1)").unwrap();
        s.exp_string("1042").unwrap();
        s.exp_string("wo> ").unwrap();
        line(&mut s, "from t in T select t.v", "[40]", "wo> ");
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }

    /// The declarations of a paste are declared together, as in a file: functions
    /// that call each other, or one that calls a function pasted below it, used to
    /// fail with "unknown function" (each was declared alone, in order). A statement
    /// ends the group; a declaration after it is a group of its own.
    #[test]
    fn a_paste_declares_its_declarations_together() {
        let dir = scratch("pty-paste-group");
        let mut s = start(&dir, &dir.join("history"));
        s.send("\x1b[200~fn even(n: Int) -> Bool {\n  if n == 0 {\n    return true\n  }\n  return odd(n - 1)\n}\n\n-- the other half\nfn odd(n: Int) -> Bool {\n  if n == 0 {\n    return false\n  }\n  return even(n - 1)\n}\nprint(\"${even(10)} ${odd(7)}\")\nfn twice(n: Int) -> Int {\n  return half(n) * 4\n}\nfn half(n: Int) -> Int {\n  return n / 2\n}\nprint(twice(21))\x1b[201~")
            .unwrap();
        s.send("\r").unwrap();
        s.flush().unwrap();
        s.exp_string("true true").unwrap();
        s.exp_string("40").unwrap();
        s.exp_string("wo> ").unwrap();
        // A group with an error declares none of its declarations, and says so.
        s.send("\x1b[200~fn good() -> Int {\n  return 1\n}\nfn bad() -> Int {\n  return \"x\"\n}\x1b[201~")
            .unwrap();
        s.send("\r").unwrap();
        s.flush().unwrap();
        s.exp_string("expected `Int`").unwrap();
        s.exp_string("note: the 2 declarations pasted together (repl:23-28) were declared as one, so none of them was").unwrap();
        s.exp_string("wo> ").unwrap();
        // Typed one at a time, a function that calls one not declared yet waits for
        // it (until December 3 it was refused).
        line(
            &mut s,
            "fn up() -> Int { return down() }",
            "not declared yet: it is kept",
            "wo> ",
        );
        line(
            &mut s,
            "fn down() -> Int { return 3 }",
            "is declared now",
            "wo> ",
        );
        line(&mut s, "up() * 10", "30", "wo> ");
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }

    /// Ctrl-C during a pasted input drops the rest of the paste, but not a line typed
    /// after an `if` (read ahead to see whether it was `else`), which then runs.
    #[test]
    fn ctrl_c_drops_the_rest_of_a_paste_but_not_a_line_typed_after_an_if() {
        let dir = scratch("pty-paste-ctrl-c");
        let mut s = start(&dir, &dir.join("history"));
        line(
            &mut s,
            "fn spin() { print(\"spinning\"); while true { } }",
            "",
            "wo> ",
        );
        s.send("\x1b[200~print(\"o\" .. \"ne\")\nspin()\nprint(\"nev\" .. \"er\")\x1b[201~\r")
            .unwrap();
        s.flush().unwrap();
        s.exp_string("one").unwrap();
        s.exp_string("spinning").unwrap();
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("wo> ").unwrap();
        line(&mut s, "if true { spin() }", "", "... ");
        line(&mut s, "print(7 * 6)", "spinning", "");
        s.send_control('c').unwrap();
        s.exp_string("interrupted").unwrap();
        s.exp_string("42").unwrap();
        s.exp_string("wo> ").unwrap();
        s.send_line(".quit").unwrap();
        let rest = s.exp_eof().unwrap();
        assert!(!rest.contains("never"), "{rest}");
    }

    /// Lines that arrive together (a paste without bracketed paste, typing ahead) are
    /// each an input: the line editor keeps what it read past the first line (the
    /// `buffer-redux` feature of rustyline); without it, only the first ran.
    #[test]
    fn lines_that_arrive_together_each_run() {
        let dir = scratch("pty-burst");
        let mut s = start(&dir, &dir.join("history"));
        s.send("print(101)\rprint(202)\rprint(303)\r").unwrap();
        s.flush().unwrap();
        for n in ["101", "202", "303"] {
            s.exp_string(n)
                .unwrap_or_else(|e| panic!("the output {n} of a line typed ahead: {e}"));
        }
        s.exp_string("wo> ").unwrap();
        s.send_line(".quit").unwrap();
        s.exp_eof().unwrap();
    }
}

/// `nil` alone shows `nil` (it reported that the wrapper's variable `__value` could
/// not be typed, a name the user never wrote).
#[test]
fn nil_alone_shows_nil() {
    let dir = scratch("nil");
    let (status, out, err) = repl(&dir, &[], "nil\nlet x: ?Int = nil\nx ?? 3\n");
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "nil\n3\n");
    assert!(!err.contains("__value"), "{err}");
}

/// A `try … catch` statement over several lines ends its input: a declaration on the
/// next line was taken into it (and refused). And handles kept across inputs stay
/// what they were when an input declares another table: a handle made after a
/// rollback still reads its row, one to the rolled-back insert still traps `DB`
/// (both found by trying wo from the outside).
#[test]
fn a_try_statement_ends_its_input_and_handles_survive_a_new_table() {
    let dir = scratch("try-then-table");
    let input = r#"@table
class A {
  n: Int
}
let keep: multi A = []
try {
  transaction {
    push(keep, insert A { n: 1 })
    fail("x")
  }
} catch (e) {
  print("rolled back")
}
let b = insert A { n: 2 }
@table
class B {
  m: Int
}
print(b.n)
print(try keep[0].n catch (e) -1)
print(b == keep[0])
try fail("y") catch (e) print(e.kind)
"#;
    // (The last: a `try … catch` statement on one line whose sides give no value,
    // which the REPL took for an expression to show and refused, helper-59.)
    let (status, out, err) = repl(&dir, &[], input);
    assert_eq!(out, "rolled back\n2\n-1\nfalse\nFAIL\n", "stderr:\n{err}");
    assert_eq!(status, Some(0), "stderr:\n{err}");
}

/// Piped input that ends inside a declaration or statement is an error at its last open
/// bracket (exit 1), not dropped; a closer that closes nothing is reported where it
/// was written, not where the wrapper a statement runs in would put it.
#[test]
fn input_cut_short_or_closing_nothing_is_an_error_where_written() {
    let dir = scratch("cut_short");
    for (input, line_col, what) in [
        (
            "fn f() {\n  print(1)\n",
            "repl:1:8",
            "before this `{` was closed",
        ),
        (
            "class C {\n  x: Int\n",
            "repl:1:9",
            "before this `{` was closed",
        ),
        ("const A = [1,\n", "repl:1:11", "before this `[` was closed"),
        ("print(1 +\n", "repl:1:6", "before this `(` was closed"),
        (
            "print(1)\nlet x = 1 +\n",
            "repl:2:12",
            "in the middle of a statement",
        ),
        ("}\n", "repl:1:1", "unexpected `}`: it closes no bracket"),
        (
            "print(1)\n  print(2))\n",
            "repl:2:11",
            "unexpected `)`: it closes no bracket",
        ),
        // An error before the end is the one reported, not the open bracket.
        ("print((1]\n", "repl:1:9", "unexpected `]`, expected `)`"),
        ("let x = 1 1 (\n", "repl:1:11", "unexpected integer `1`"),
        // A declaration that does not parse is reported even when nothing of it is left.
        (
            "fn f() -> { return 1 }\nprint(1)\n",
            "repl:1:11",
            "unexpected `{`",
        ),
        ("const = 3\n", "repl:1:7", "unexpected `=`"),
    ] {
        let (code, _, err) = repl(&dir, &[], input);
        assert_eq!(code, Some(1), "{input:?}: {err}");
        assert!(
            err.contains(&format!("{line_col}: error: ")) && err.contains(what),
            "{input:?}: {err}"
        );
    }
    // A closer of the wrong kind ends the input with one error: not another for the
    // wrapper it closed, and the next line is an input of its own.
    let (code, out, err) = repl(&dir, &[], "print([1, 2}\nprint(3)\n");
    assert_eq!((code, out.as_str()), (Some(1), "3\n"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    // What came before the cut still ran.
    let (code, out, _) = repl(&dir, &[], "fn f() {\n  print(1)\n}\nf()\nfn g() {\n");
    assert_eq!((code, out.as_str()), (Some(1), "1\n"));
}

/// A `.load` of a large file (helper-76): each declaration kept its place in the file
/// by a padding of newlines, and the session compiled them all for each input, so
/// 16,000 functions took 4.5 GB (now a line offset: 82 MB). Lines stay true.
#[test]
fn a_large_load_keeps_its_lines() {
    let dir = scratch("large-load");
    let n = 4_000;
    let mut src: String = (0..n)
        .map(|i| format!("fn f{i}() -> Int {{\n  return {i}\n}}\n"))
        .collect();
    src.push_str("fn last(z: Int) -> Int {\n  return 1 / z\n}\n");
    std::fs::write(dir.join("big.wo"), src).unwrap();
    let (_, out, err) = repl(&dir, &[], ".load big.wo\nf3999() + f1()\nlast(0)\n");
    assert!(out.contains("4000\n"), "{out}\n{err}");
    let trap_line = 3 * n + 2;
    assert!(
        err.contains(&format!("at last (big.wo:{trap_line}:")),
        "{err}"
    );
}

/// Output that cannot be written fails the session with 74, as it fails `wo run`
/// (helper-102: `wo repl > /dev/full` exited 0, all its output lost).
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written_is_an_io_error() {
    let dir = scratch("dev-full");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = repl_to(&dir, &[], b"print(\"hi\")\n\"x\"\n", Stdio::from(full));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{err}");
    assert!(
        err.contains("cannot write the output: No space left on device"),
        "{err}"
    );
}
