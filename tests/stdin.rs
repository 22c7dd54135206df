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

/// An error reading standard input (here it is a directory) traps `IO` once; then the
/// input has ended. A program that catches `IO` to go on with the next line, as it may
/// for a line that is not UTF-8, got the same trap forever (helper-62: 19 GB of
/// output before it was killed).
#[test]
fn a_read_error_is_reported_once_then_the_input_has_ended() {
    let (dir, program) = scratch_program(
        "stdin-directory",
        "rd.wo",
        "use io\n\nfn main() {\n  let n = 0\n  while n < 5 {\n    let line = try io.read_line() catch (e) \"${e.kind}: ${e.message}\"\n    if line == nil {\n      break\n    }\n    n += 1\n    print(line)\n  }\n  print(\"lines ${n}\")\n  print(\"rest [${io.read_all()}]\")\n}\n",
    );
    let child = wo()
        .arg("run")
        .arg(&program)
        .stdin(std::fs::File::open(&dir).expect("the directory opens"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wo starts");
    let res = wait(child);
    res.expect_status(0);
    assert_eq!(
        res.stdout,
        "IO: cannot read standard input: Is a directory (os error 21)\nlines 1\nrest []\n"
    );
}

/// A scratch directory named `dir` holding the program `file` with source `src`; the
/// directory and the program's path.
fn scratch_program(dir: &str, file: &str, src: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = common::scratch_dir(dir);
    let program = dir.join(file);
    std::fs::write(&program, src).expect("the scratch directory is writable");
    (dir, program)
}

/// `wo run PROGRAM` with piped stdin and stdout, talked to one message at a time: the
/// test waits (at most [`PROMPT_WAIT`]) for what it expects before it sends more.
struct Conversation {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    bytes: mpsc::Receiver<u8>,
    reader: Option<std::thread::JoinHandle<()>>,
    seen: Vec<u8>,
}

impl Conversation {
    fn start(program: &Path) -> Conversation {
        let mut cmd = wo();
        cmd.arg("run")
            .arg(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("the wo binary starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut stdout = child.stdout.take().expect("stdout is piped");
        // Bytes of stdout as they arrive, so the test can wait for one with a timeout.
        let (tx, bytes) = mpsc::channel::<u8>();
        let reader = std::thread::spawn(move || {
            let mut byte = [0u8; 1];
            while let Ok(1) = stdout.read(&mut byte) {
                if tx.send(byte[0]).is_err() {
                    break;
                }
            }
        });
        Conversation {
            child,
            stdin: Some(stdin),
            bytes,
            reader: Some(reader),
            seen: Vec::new(),
        }
    }

    fn expect(&mut self, want: &str) {
        while !self.seen.ends_with(want.as_bytes()) {
            match self.bytes.recv_timeout(PROMPT_WAIT) {
                Ok(b) => self.seen.push(b),
                Err(_) => panic!(
                    "waited for {want:?}, stdout so far: {:?}",
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(bytes).expect("wo reads its stdin");
        stdin.flush().expect("the pipe takes the bytes");
    }

    /// Closes stdin and waits for the program's status.
    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wo ends");
        if let Some(r) = self.reader.take() {
            r.join().expect("the stdout reader");
        }
        status.code()
    }
}

/// A prompt written with `io.write` (no newline) reaches the terminal before the read
/// blocks: the test sends each answer only after reading the prompt that asks for it.
#[test]
fn prompts_are_flushed_before_each_read() {
    let (dir, program) = scratch_program(
        "stdin-prompts",
        "ask.wo",
        "use io\n\
         fn main() {\n\
           io.write(\"name? \")\n\
           let name = io.read_line() ?? \"nobody\"\n\
           io.write(\"hello ${name}; age? \")\n\
           let age = parse_int(io.read_line() ?? \"\") ?? -1\n\
           print(\"in a year: ${age + 1}\")\n\
         }\n",
    );
    let mut talk = Conversation::start(&program);
    talk.expect("name? ");
    talk.send(b"Ada\n");
    talk.expect("hello Ada; age? ");
    talk.send(b"36\r\n");
    talk.expect("in a year: 37\n");
    assert_eq!(talk.finish(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A read that has part of its line and must wait for the rest flushes stdout before
/// it waits: the answer to the first line is out while the second is half sent.
#[test]
fn a_read_that_waits_mid_line_flushes_first() {
    let (dir, program) = scratch_program(
        "stdin-mid-line",
        "echo.wo",
        "use io\n\
         fn main() {\n\
           while true {\n\
             let line = io.read_line()\n\
             if line == nil { break }\n\
             print(\"got ${unwrap(line)}\")\n\
           }\n\
         }\n",
    );
    let mut talk = Conversation::start(&program);
    talk.send(b"one\ntw");
    talk.expect("got one\n");
    talk.send(b"o\n");
    talk.expect("got two\n");
    assert_eq!(talk.finish(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// With stdout and stderr on one pipe (`2>&1`), lines come in the order the program
/// wrote them: stdout is flushed before each write to stderr.
#[test]
fn stdout_comes_before_a_later_stderr_line() {
    let (dir, program) = scratch_program(
        "stdin-order",
        "mix.wo",
        "use io\n\
         fn main() {\n\
           let n = 0\n\
           while io.read_line() != nil {\n\
             n += 1\n\
             print(\"out ${n}\")\n\
             print_err(\"err ${n}\")\n\
           }\n\
         }\n",
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf 'a\\nb\\nc\\n' | \"$0\" run \"$1\" 2>&1")
        .arg(env!("CARGO_BIN_EXE_wo"))
        .arg(&program)
        .output()
        .expect("sh runs wo");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\n"
    );
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
    let (dir, program) = scratch_program(
        "stdin-filter",
        "lengths.wo",
        "use io\n\
         fn main() {\n\
           while true {\n\
             let line = io.read_line()\n\
             if line == nil { break }\n\
             print(len(unwrap(line)))\n\
           }\n\
         }\n",
    );
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
