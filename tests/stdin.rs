//! Standard input through the real binary (LANGUAGE.md §11, the `io` module): each
//! `tests/stdin/NAME.wo` runs with `NAME.in` piped to its stdin, and the snapshot pins
//! its exit status, stdout and stderr (CRLF and a last line without a newline, empty
//! input, `io.read_all` after `io.read_line`, input that is not UTF-8 trapping `IO`
//! with exit 74, a fiber that cannot run while `main` reads, `io.write`). Then a
//! conversation: the test answers each prompt only after it has seen it, so a prompt
//! that was not flushed before the read would leave both sides waiting (the test then
//! fails on its timeout instead of hanging).

mod common;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{wo, Outcome};

/// How long the conversation waits for one prompt before it fails.
const PROMPT_WAIT: Duration = Duration::from_secs(60);

/// Runs `wo run PROGRAM` with `input` on its stdin and captures the outcome.
fn run_with_input(program: &Path, input: Vec<u8>) -> Outcome {
    let mut cmd = wo();
    cmd.arg("run")
        .arg(program.file_name().expect("a program has a name"))
        .current_dir(program.parent().expect("a program is in a directory"))
        .stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("the wo binary starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // A program may stop reading early: a closed pipe is not an error here.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let outcome = wait(child);
    writer.join().expect("the stdin writer");
    outcome
}

/// Waits for `child` (at most [`PROMPT_WAIT`]) and collects its streams.
fn wait(child: Child) -> Outcome {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(PROMPT_WAIT)
        .expect("wo finishes")
        .expect("wo's output is readable");
    Outcome {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn programs_with_piped_input() {
    insta::glob!("stdin/*.wo", |path| {
        let input = std::fs::read(path.with_extension("in")).expect("every program has a .in");
        insta::assert_snapshot!(run_with_input(path, input).snapshot());
    });
}

/// An uncaught `IO` trap from standard input exits 74, as every uncaught `IO` does.
#[test]
fn invalid_utf8_exits_74() {
    let program = common::root().join("tests/stdin/invalid_utf8.wo");
    let res = run_with_input(&program, b"ok\n\xc3\x28\n".to_vec());
    res.expect_status(74);
    assert_eq!(res.stdout, "ok\n");
    assert!(
        res.stderr
            .starts_with("trap IO: io.read_line: standard input is not UTF-8"),
        "{}",
        res.stderr
    );
}

/// A prompt written with `io.write` (no newline) reaches the terminal before the read
/// blocks: the test sends each answer only after reading the prompt that asks for it.
#[test]
fn prompts_are_flushed_before_each_read() {
    let dir = common::scratch_dir("stdin-prompts");
    let program = dir.join("ask.wo");
    std::fs::write(
        &program,
        "use io\n\
         fn main() {\n\
           io.write(\"name? \")\n\
           let name = io.read_line() ?? \"nobody\"\n\
           io.write(\"hello ${name}; age? \")\n\
           let age = parse_int(io.read_line() ?? \"\") ?? -1\n\
           print(\"in a year: ${age + 1}\")\n\
         }\n",
    )
    .expect("the scratch directory is writable");
    let mut cmd = wo();
    cmd.arg("run")
        .arg(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("the wo binary starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    // Bytes of stdout as they arrive, so the test can wait for a prompt with a timeout.
    let (tx, rx) = mpsc::channel::<u8>();
    let reader = std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        while let Ok(1) = stdout.read(&mut byte) {
            if tx.send(byte[0]).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut expect = |want: &str| {
        while !seen.ends_with(want.as_bytes()) {
            match rx.recv_timeout(PROMPT_WAIT) {
                Ok(b) => seen.push(b),
                Err(_) => panic!(
                    "waited for {want:?}, stdout so far: {:?}",
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
    };
    expect("name? ");
    stdin.write_all(b"Ada\n").expect("wo reads its stdin");
    stdin.flush().expect("the pipe takes the answer");
    expect("hello Ada; age? ");
    stdin.write_all(b"36\r\n").expect("wo reads its stdin");
    drop(stdin);
    expect("in a year: 37\n");
    let status = child.wait().expect("wo ends");
    assert_eq!(status.code(), Some(0));
    reader.join().expect("the stdout reader");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A filter whose input is already there writes its output in big pieces: stdout is
/// flushed before a read only when the read would wait. Counted with strace, with a
/// file on stdin (a read of a file never waits). The input has a line longer than a
/// read-ahead chunk (64 KiB) and a last line without a newline.
#[test]
fn a_filter_is_not_flushed_line_by_line() {
    let traced = std::process::Command::new("strace")
        .args(["-f", "-o", "/dev/null", "-e", "trace=write", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !traced {
        eprintln!("skipped: strace is missing or may not trace here");
        return;
    }
    let dir = common::scratch_dir("stdin-filter");
    let program = dir.join("lengths.wo");
    std::fs::write(
        &program,
        "use io\n\
         fn main() {\n\
           while true {\n\
             let line = io.read_line()\n\
             if line == nil { break }\n\
             print(len(unwrap(line)))\n\
           }\n\
         }\n",
    )
    .expect("the scratch directory is writable");
    let mut input = String::new();
    let mut want = String::new();
    for i in 0..20_000 {
        let line = "x".repeat(i % 7);
        input.push_str(&line);
        input.push('\n');
        want.push_str(&format!("{}\n", line.len()));
    }
    input.push_str(&"é".repeat(100_000));
    input.push_str("\r\nlast");
    want.push_str("100000\n4\n");
    let input_path = dir.join("input.txt");
    std::fs::write(&input_path, &input).expect("the scratch directory is writable");
    let trace = dir.join("trace");
    let out = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=write", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_wo"))
        .arg("run")
        .arg(&program)
        .stdin(std::fs::File::open(&input_path).expect("the input opens"))
        .output()
        .expect("strace runs wo");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout) == want,
        "wrong lengths"
    );
    let writes = std::fs::read_to_string(&trace)
        .expect("strace wrote its trace")
        .lines()
        .filter(|l| l.contains("write(1,"))
        .count();
    // About 100 KB of output in the 8 KiB pieces of the output buffer: ~13 writes, where
    // a flush before every read made 20,002.
    assert!(writes < 100, "{writes} writes to stdout");
    let _ = std::fs::remove_dir_all(&dir);
}
