//! `wo test PATH… [--filter TEXT]` (LANGUAGE.md §12, docs/tools.md): runs every
//! top-level function named `test_…` of the programs at PATH, each in a fresh VM with
//! an empty in-memory database (durable tables too), without running `main`. A test
//! passes when it returns; it fails when it traps (its trap message and position on
//! the test's line, the stack and what it printed below) or calls `exit` with a status
//! other than 0. One line per test, then `N passed, N failed`.
//!
//! A test that runs longer than its time limit (`--timeout SECONDS`, 10 unless set;
//! 0 for none) is stopped through the VM's interrupt flag, between two instructions
//! or in a wait, and fails with what it printed so far; the next test runs.
//!
//! A `test_…` function that takes parameters or returns a value cannot be run as a
//! test: `wo test` reports it as a compile error of the program (code `test`, exit
//! 65). `wo run` and `wo check` treat such functions like any other.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use wo_bytecode::{FuncIdx, Image};
use wo_compiler::ast::Item;
use wo_compiler::{Diagnostic, FileId, SourceMap};
use wo_vm::{Host, Prepared, RunOptions, RunResult, StartError};

use crate::exit::{Failure, DATAERR};
use crate::program::report;
use crate::render::Tally;

/// `wo test`'s time limit per test unless `--timeout` says otherwise: long enough for
/// any test of an in-memory program, short enough that a loop that never ends is
/// found before a CI job's own limit.
pub const DEFAULT_TIMEOUT_SECS: u64 = 10;

/// The time limit of the tests: one thread for the whole run (a thread per test cost
/// 8,000 tests 0.3 s), told when each test starts (its limit and flag) and ends. It
/// raises a test's flag once the limit has passed, unless the test ended first.
struct Watchdog {
    to_thread: Option<mpsc::Sender<Watch>>,
}

/// What the watchdog is told: a test starts (its limit and flag), or ends (`None`).
type Watch = Option<(Duration, Arc<AtomicBool>)>;

impl Watchdog {
    fn new() -> Watchdog {
        let (to_thread, from_tests) = mpsc::channel::<Watch>();
        let started = std::thread::Builder::new()
            .name("wo-test-watchdog".into())
            .spawn(move || {
                // `None` ends a test; one that ended after its limit finds it here.
                while let Ok(next) = from_tests.recv() {
                    let Some((limit, flag)) = next else { continue };
                    if let Err(mpsc::RecvTimeoutError::Timeout) = from_tests.recv_timeout(limit) {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
            });
        // A thread that cannot be started (a process limit) leaves the tests unlimited.
        Watchdog {
            to_thread: started.ok().map(|_| to_thread),
        }
    }

    /// Watches a test until the returned guard is dropped.
    fn watch(&self, limit: Duration, flag: Arc<AtomicBool>) -> Option<Watched<'_>> {
        let to_thread = self.to_thread.as_ref()?;
        to_thread.send(Some((limit, flag))).ok()?;
        Some(Watched(to_thread))
    }
}

/// A test being watched: dropped when it ends.
struct Watched<'a>(&'a mpsc::Sender<Watch>);

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        let _ = self.0.send(None);
    }
}

/// A `test_…` function found in the sources.
struct TestFn {
    name: String,
    /// Where it is declared, as `file:line`.
    place: String,
}

/// Captured program output (stdout and stderr of one test, interleaved), with the
/// stream the last bytes came from.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    last: Option<Stream>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

/// One stream's writer into a test's [`Output`].
#[derive(Clone)]
struct Captured(Rc<RefCell<Output>>, Stream);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut o = self.0.borrow_mut();
        // Where the other stream left a line unfinished, this one starts a new line:
        // the report shows lines, and neither stream's text runs into the other's.
        if o.last.is_some_and(|s| s != self.1) && o.bytes.last().is_some_and(|&b| b != b'\n') {
            o.bytes.push(b'\n');
        }
        o.bytes.extend_from_slice(buf);
        if !buf.is_empty() {
            o.last = Some(self.1);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The tests of a program, in source order, and the diagnostics for `test_…`
/// functions that cannot be tests. Also whether the program has a `main`.
fn find_tests(sources: &SourceMap) -> (Vec<TestFn>, Vec<Diagnostic>, bool) {
    let mut tests = Vec::new();
    let mut diags = Vec::new();
    let mut has_main = false;
    for (i, file) in sources.files.iter().enumerate() {
        let (module, _) = wo_compiler::parse(&file.src, FileId(i as u32));
        for item in &module.items {
            let Item::Fn(f) = item else { continue };
            has_main |= f.name.name == "main";
            if !f.name.name.starts_with("test_") {
                continue;
            }
            if !f.params.is_empty() || f.ret.is_some() {
                diags.push(Diagnostic::error(
                    "test",
                    f.span,
                    format!(
                        "test function `{}` must take no parameters and return nothing",
                        f.name.name
                    ),
                ).with_note("`wo test` runs every top-level function whose name starts with `test_`; rename a helper that is not a test"));
                continue;
            }
            let line = file.line(f.name.span.lo);
            tests.push(TestFn {
                name: f.name.name.clone(),
                place: format!("{}:{line}", file.name),
            });
        }
    }
    (tests, diags, has_main)
}

/// Adds an empty `fn main` to a program of tests alone (one with a `test_…` function
/// and no `main`), so that `wo check` compiles it as `wo test` does.
pub fn stand_in_main(sources: &mut SourceMap) {
    let (tests, bad, has_main) = find_tests(sources);
    if !has_main && (!tests.is_empty() || !bad.is_empty()) {
        sources.add("<wo test>", STAND_IN_MAIN);
    }
}

/// The `main` of a program of tests alone.
const STAND_IN_MAIN: &str = "fn main() {}\n";

/// Compiles the program at `path` for testing: the tests `filter` keeps, how many it
/// has in all, and its image (every table in memory), or the failure (diagnostics
/// already on stderr).
fn compile(
    path: &Path,
    filter: Option<&str>,
    tally: &mut Tally,
) -> Result<(Vec<TestFn>, usize, Image), Failure> {
    if !crate::program::is_stdin(path) && crate::program::is_image(path) {
        return Err(Failure::Refused(format!(
            "`{}` is a bytecode image; tests run from a program's sources",
            path.display()
        )));
    }
    let mut sources = if crate::program::is_stdin(path) {
        // `-`: a program of one file on standard input, as `wo check -` reads it.
        let name = crate::program::shown(path);
        let bytes = wo_compiler::read_program(std::io::stdin().lock(), name)
            .map_err(crate::program::load_error)?;
        if bytes.starts_with(crate::program::MAGIC) {
            return Err(Failure::Refused(String::from(
                "standard input holds a bytecode image; tests run from a program's sources",
            )));
        }
        wo_compiler::source_of_bytes(name, bytes).map_err(crate::program::load_error)?
    } else {
        wo_compiler::load_sources(path).map_err(crate::program::load_error)?
    };
    let (tests, mut diags, has_main) = find_tests(&sources);
    if !has_main {
        sources.add("<wo test>", STAND_IN_MAIN);
    }
    let compiled = wo_compiler::compile_warned(&sources);
    let mut image = match compiled {
        Ok((image, mut warnings)) if diags.is_empty() => {
            report(&sources, &mut warnings, tally);
            image
        }
        Ok(_) => {
            report(&sources, &mut diags, tally);
            return Err(Failure::Reported(DATAERR));
        }
        Err(more) => {
            diags.extend(more);
            report(&sources, &mut diags, tally);
            crate::program::hint_compiled_alone(path, &diags);
            return Err(Failure::Reported(DATAERR));
        }
    };
    for table in &mut image.tables {
        table.durable = false;
    }
    let all = tests.len();
    let tests = tests
        .into_iter()
        .filter(|t| match filter {
            Some(text) => t.name.contains(text),
            None => true,
        })
        .collect();
    Ok((tests, all, image))
}

/// How one test ended: `None` when it passed, else the text of its failure line
/// and the lines to show under it.
/// `prepared` is the program's, linked and checked once, its entry set to each test
/// in turn (not linked per test: 8,000 tests spent most of their 5.4 s checking the
/// whole program again for each); `index` finds a test's function by its name.
fn run_one(
    prepared: &mut Prepared<'_>,
    index: &HashMap<String, FuncIdx>,
    test: &TestFn,
    limit: Option<(Duration, &Watchdog)>,
) -> Option<(String, Vec<String>)> {
    let entry = match index.get(&test.name) {
        Some(&entry) => prepared.set_entry(entry).map_err(|e| e.to_string()),
        None => Err("the compiled program has no such function".to_string()),
    };
    if let Err(why) = entry {
        return Some((format!("internal error: {why}"), Vec::new()));
    }
    let output = Rc::new(RefCell::new(Output::default()));
    let host = Host {
        out: Box::new(Captured(output.clone(), Stream::Out)),
        err: Box::new(Captured(output.clone(), Stream::Err)),
        // A test reads no input: `io.read_line` gives nil, `io.read_all` "".
        input: Box::new(std::io::empty()),
        // The VM puts the program's classes here.
        classes: Rc::from([]),
        rng: crate::commands::clock_seed(),
        started: Instant::now(),
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    let _watched = limit.and_then(|(limit, watchdog)| watchdog.watch(limit, interrupt.clone()));
    let options = RunOptions {
        interrupt: Some(interrupt),
        ..RunOptions::default()
    };
    let res = wo_vm::run_prepared(prepared, Vec::new(), host, options);
    let printed: Vec<String> = String::from_utf8_lossy(&output.borrow().bytes)
        .lines()
        // A blank line is `  |`, without a trailing space.
        .map(|l| {
            if l.is_empty() {
                "  |".to_string()
            } else {
                format!("  | {l}")
            }
        })
        .collect();
    match res {
        Ok(RunResult::Exit(0)) => None,
        Ok(RunResult::Exit(code)) => Some((format!("exited with status {code}"), printed)),
        Ok(RunResult::Trap { trap, stack }) => {
            let at = stack
                .first()
                .map(|f| format!(" at {}:{}:{}", f.file, f.line, f.col))
                .unwrap_or_default();
            // The stack when there is more than the test itself (a task's trap has
            // only the task's frames). Shortened as `wo run` shortens it (repeated
            // frames, a deep recursion).
            let only_the_test = stack.len() == 1 && *stack[0].function == *test.name;
            let mut below: Vec<String> = if !stack.is_empty() && !only_the_test {
                crate::render::stack_lines(&stack)
            } else {
                Vec::new()
            };
            below.extend(printed);
            // A message of several lines: its first on the FAILED line, with where;
            // the rest below it, indented, before the stack and the output.
            let mut lines = trap.message.lines();
            let first = lines.next().unwrap_or_default();
            let rest: Vec<String> = lines
                .map(|l| {
                    if l.is_empty() {
                        String::new()
                    } else {
                        format!("    {l}")
                    }
                })
                .collect();
            below.splice(0..0, rest);
            Some((format!("trap {}: {first}{at}", trap.kind.name()), below))
        }
        Ok(RunResult::Fault(msg)) => Some((msg, printed)),
        Ok(RunResult::Interrupted) => {
            let secs = limit.map_or(0, |(l, _)| l.as_secs());
            let why = format!(
                "timed out after {secs} s (`wo test --timeout SECONDS` sets the limit, 0 none)"
            );
            Some((why, printed))
        }
        Err(StartError::Link(e)) => Some((format!("internal error: {e}"), printed)),
        Err(e) => Some((format!("cannot start: {e}"), printed)),
    }
}

/// `wo test PATH… [--filter TEXT]`.
pub fn test(paths: &[PathBuf], filter: Option<&str>, timeout_secs: u64) -> Result<(), Failure> {
    let limit = (timeout_secs > 0).then(|| Duration::from_secs(timeout_secs));
    let watchdog = limit.map(|_| Watchdog::new());
    let mut tally = Tally::default();
    let mut worst = 0u8;
    let (mut n_passed, mut n_failed, mut n_untested) = (0usize, 0usize, 0usize);
    let mut n_all = 0usize;
    let stdout = std::io::stdout();
    // A program named twice (`wo test t t/`, `a.wo ./a.wo`) runs once (helper-101).
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        if !seen.insert(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone())) {
            continue;
        }
        let (tests, image) = match compile(path, filter, &mut tally) {
            Ok((tests, all, image)) => {
                n_all += all;
                (tests, image)
            }
            Err(failure) => {
                failure.say();
                worst = worst.max(failure.status());
                n_untested += 1;
                continue;
            }
        };
        let natives = |name: &str| wo_stdlib::lookup(name);
        let mut prepared = match Prepared::new(&image, &natives) {
            Ok(prepared) => prepared,
            Err(e) => {
                let failure = Failure::Internal(format!(
                    "internal error: the compiled program does not link: {e}"
                ));
                failure.say();
                worst = worst.max(failure.status());
                n_untested += 1;
                continue;
            }
        };
        let index: HashMap<String, FuncIdx> = image
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| {
                (
                    f.name.to_string(),
                    FuncIdx(u32::try_from(i).unwrap_or(u32::MAX)),
                )
            })
            .rev()
            .collect();
        for test in &tests {
            let mut out = stdout.lock();
            match run_one(&mut prepared, &index, test, limit.zip(watchdog.as_ref())) {
                None => {
                    n_passed += 1;
                    crate::exit::note_output(writeln!(out, "ok     {} {}", test.place, test.name));
                }
                Some((why, below)) => {
                    n_failed += 1;
                    crate::exit::note_output(writeln!(
                        out,
                        "FAILED {} {}: {why}",
                        test.place, test.name
                    ));
                    for line in below {
                        crate::exit::note_output(writeln!(out, "{line}"));
                    }
                }
            }
            crate::exit::note_output(out.flush());
        }
    }
    if let Some(summary) = tally.summary() {
        say!("{summary}");
    }
    // A filter that matches no test is said: a misspelt one in a CI job would
    // otherwise pass it without running anything (helper-90). The status stays, as
    // `go test -run` and `cargo test` keep theirs.
    if let Some(text) = filter.filter(|_| n_passed + n_failed == 0 && n_all > 0) {
        let s = if n_all == 1 { "" } else { "s" };
        say!("wo: warning: no test name contains `{text}` (of {n_all} test{s})");
    }
    // A program that did not compile (or could not be read) ran no test: the summary
    // says so rather than let "0 passed, 0 failed" read as a clean run.
    // And how many a filter left out, as `cargo test` says (helper-101).
    let mut summary = format!("{n_passed} passed, {n_failed} failed");
    if filter.is_some() {
        let _ = write!(summary, ", {} filtered out", n_all - n_passed - n_failed);
    }
    match n_untested {
        0 => {}
        1 => summary.push_str(", 1 program not tested"),
        n => {
            let _ = write!(summary, ", {n} programs not tested");
        }
    }
    out!("{summary}");
    if n_failed > 0 {
        worst = worst.max(1);
    }
    match worst {
        0 => Ok(()),
        status => Err(Failure::Reported(status)),
    }
}
