//! Helpers shared by the end-to-end tests: running the built `wo` binary with a
//! timeout, capturing what a user would see (exit status, stdout, stderr) as one text
//! for snapshots, and scratch directories under Cargo's per-target temporary folder.
//!
//! Programs run with their working directory set to a scratch copy of themselves, so
//! messages name files as a user would type them (`app.wo:2:10`) and `fs` writes never
//! land in the source tree.

// Each test binary includes this module and uses a different part of it.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long one `wo` invocation may take before the test kills it and fails.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable every test run sets, so `env.get` has something to find.
pub const TEST_ENV: (&str, &str) = ("WO_TEST_GREETING", "hello from the test harness");

/// The workspace root (where `tests/`, `samples/` live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a run of `wo` showed the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status, or `None` when a signal ended the process.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The snapshot text: status, then both streams, each under its own heading.
    pub fn snapshot(&self) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None => "killed by a signal".to_string(),
        };
        let mut out = format!("status: {status}\n--- stdout\n{}", self.stdout);
        if !self.stdout.is_empty() && !self.stdout.ends_with('\n') {
            out.push_str("\n(no newline at end of stdout)\n");
        }
        out.push_str("--- stderr\n");
        out.push_str(&self.stderr);
        if !self.stderr.is_empty() && !self.stderr.ends_with('\n') {
            out.push_str("\n(no newline at end of stderr)\n");
        }
        out
    }

    /// Fails the test with the whole outcome unless the status is `want`.
    pub fn expect_status(&self, want: i32) -> &Self {
        assert_eq!(
            self.status,
            Some(want),
            "expected exit status {want}, got:\n{}",
            self.snapshot()
        );
        self
    }
}

/// A `wo` command with a clean, fixed environment.
pub fn wo() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wo"));
    cmd.env_remove("WO_DATA")
        .env(TEST_ENV.0, TEST_ENV.1)
        .env("NO_COLOR", "1")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `wo ARGS…` in `dir` and captures everything, killing it after [`TIMEOUT`].
pub fn run_wo<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Outcome {
    let mut cmd = wo();
    cmd.current_dir(dir).args(args);
    output(cmd)
}

/// Runs a prepared command with the timeout.
pub fn output(cmd: Command) -> Outcome {
    let shown = format!("{cmd:?}");
    output_within(cmd, TIMEOUT)
        .unwrap_or_else(|| panic!("`{shown}` did not finish within {TIMEOUT:?}"))
}

/// Runs a prepared command; `None` when it had to be killed after `limit`.
pub fn output_within(mut cmd: Command, limit: Duration) -> Option<Outcome> {
    let mut child = cmd.spawn().expect("the wo binary starts");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for wo") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = out_reader.join().expect("stdout reader");
    let stderr = err_reader.join().expect("stderr reader");
    Some(Outcome {
        status: status?.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// A fresh, empty directory under Cargo's temporary folder for integration tests.
pub fn scratch_dir(label: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let safe: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wo-{}-{n}-{safe}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Copies a file or a directory tree to `to` (which must not exist yet).
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("create a directory");
        let mut entries: Vec<_> = std::fs::read_dir(from)
            .expect("read a directory")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            let name = entry.file_name().expect("an entry has a name");
            copy_tree(&entry, &to.join(name));
        }
    } else {
        std::fs::copy(from, to).expect("copy a file");
    }
}

/// The command-line arguments a corpus program wants, from a header line
/// `-- args: a b c` among its leading comment lines (for a directory program, in its
/// `main.wo`).
pub fn program_args(src: &Path) -> Vec<String> {
    let file = if src.is_dir() {
        src.join("main.wo")
    } else {
        src.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    text.lines()
        .take_while(|l| l.starts_with("--"))
        .find_map(|l| l.strip_prefix("-- args:"))
        .map(|rest| rest.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Runs a corpus program (a `.wo` file or a directory) the way a user would: from a
/// scratch copy, as `wo run NAME -- ARGS…`.
pub fn run_program(src: &Path) -> Outcome {
    let name = src.file_name().expect("a program has a name");
    let dir = scratch_dir(&name.to_string_lossy());
    copy_tree(src, &dir.join(name));
    let mut args = vec![
        "run".to_string(),
        name.to_string_lossy().into_owned(),
        "--".to_string(),
    ];
    args.extend(program_args(src));
    let res = run_wo(&dir, &args);
    let _ = std::fs::remove_dir_all(&dir);
    res
}

/// Every program of the run corpus: the `.wo` files directly in `tests/programs` and
/// its subdirectories (each one multi-file program with a `main.wo`), sorted.
pub fn corpus() -> Vec<PathBuf> {
    let dir = root().join("tests/programs");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/programs exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "wo"))
        .collect();
    out.sort();
    out
}

/// Output written to a shared buffer: a `wo_vm::Host`'s stdout that a test reads after
/// the run (`buf.0.borrow()`).
#[derive(Clone, Default)]
pub struct Buf(pub std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

/// A VM host for a test that runs an image in-process: stdout into `out`, no stderr or
/// stdin, class names `classes` (for printing objects), a fixed random seed.
pub fn host(out: &Buf, classes: std::rc::Rc<[wo_bytecode::Class]>) -> wo_vm::Host {
    wo_vm::Host {
        out: Box::new(out.clone()),
        err: Box::new(std::io::sink()),
        input: Box::new(std::io::empty()),
        classes,
        rng: 1,
        started: std::time::Instant::now(),
    }
}

impl std::io::Write for Buf {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
