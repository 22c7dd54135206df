//! The subcommands of §12: `run`, `build`, `check`, `disasm`, `db verify`,
//! `db checkpoint`. Each takes parsed arguments and returns `Ok` or a [`Failure`];
//! printing what went wrong beyond the one `wo: …` line (diagnostics, trap reports)
//! happens here.

use std::cell::{Cell, RefCell};
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wo_vm::{Host, LinkError, RunOptions, RunResult, StartError, TrapKind};

use crate::exit::{program_status, Failure};
use crate::program;
use crate::render::{report_trap, Tally};

/// Program output: buffered, and shared with the hook that flushes it before the
/// program waits for a durable commit. The flag is raised when the program has ended:
/// its last flush then reports a closed pipe instead of ending the process, so the
/// ending still decides the status (a trap, `exit(n)`, a lost change's 74).
#[derive(Clone)]
pub(crate) struct SharedStdout(Rc<RefCell<BufWriter<Stdout>>>, Rc<Cell<bool>>);

impl SharedStdout {
    /// Stdout, buffered in pieces of `capacity` bytes (0: each write goes out).
    pub(crate) fn new(capacity: usize) -> SharedStdout {
        SharedStdout(
            Rc::new(RefCell::new(BufWriter::with_capacity(
                capacity,
                std::io::stdout(),
            ))),
            Rc::new(Cell::new(false)),
        )
    }

    /// A program whose standard output was closed by its reader (`wo run p.wo | head
    /// -1`) ends here, quietly and with status 0, as Unix filters do. Every change
    /// committed before stays; a transaction still open is dropped, as if the process
    /// had been killed (LANGUAGE.md §8: only committed changes are durable). Not once
    /// the program has ended (`print("a")` then a trap, into `| true`): the output
    /// buffered before is lost, but the trap happened and is reported, and a status
    /// the program chose or a lost change's 74 stands (helper-69).
    fn end_on_closed_pipe<T>(&self, res: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &res {
            if e.kind() == std::io::ErrorKind::BrokenPipe && !self.1.get() {
                std::process::exit(0);
            }
        }
        res
    }
}

/// A program's stderr (`print_err`, written after what it printed on stdout is
/// flushed). A pipe whose reader left is a failed write like any other (`print_err`
/// traps `IO`, exit 74 uncaught), not the quiet end of a closed stdout: stdout may go
/// elsewhere (`2> >(logger) > out.txt`), and a status 0 would pass its output cut
/// short for complete. Unless stdout is that same pipe (`2>&1 | head -1`): then the
/// reader left both, and the program ends as for a closed stdout.
pub(crate) struct ProgramStderr(pub(crate) SharedStdout);

impl Write for ProgramStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // What the program printed on stdout before comes first when both streams go
        // to one place (`2>&1`). A stdout that fails is stdout's to report, at its next
        // write or when the program ends, so this line still reaches stderr.
        let _ = self.0 .0.borrow_mut().flush();
        let res = std::io::stderr().write(buf);
        // The reader of both left: as for stdout (and not once the program has ended).
        match res {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && same_pipe() => {
                self.0.end_on_closed_pipe(Err(e))
            }
            res => res,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl Write for SharedStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let res = self.0.borrow_mut().write(buf);
        self.end_on_closed_pipe(res)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let res = self.0.borrow_mut().flush();
        self.end_on_closed_pipe(res)
    }
}

/// Whether stdout and stderr are one open file (`2>&1`): the same device and inode.
fn same_pipe() -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |fd: u32| {
        std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    matches!((id(1), id(2)), (Some(a), Some(b)) if a == b)
}

/// The data directory: `--data`, else a non-empty `WO_DATA`.
pub(crate) fn data_dir(data: Option<PathBuf>) -> Option<PathBuf> {
    data.or_else(|| {
        std::env::var_os("WO_DATA")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// The automatic checkpoint threshold: `WO_CHECKPOINT_MIN` (bytes; a knob for tests
/// that need frequent checkpoints), else the default.
pub(crate) fn checkpoint_min() -> u64 {
    std::env::var("WO_CHECKPOINT_MIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(wo_vm::durable::DEFAULT_CHECKPOINT_MIN)
}

/// Shows log replay progress on stderr: one updating line on a terminal, otherwise a
/// line every 100,000 records.
pub(crate) fn replay_progress() -> Box<dyn FnMut(&wo_vm::durable::Progress)> {
    let tty = std::io::stderr().is_terminal();
    Box::new(move |p| {
        let pct = (p.bytes * 100).checked_div(p.total_bytes).unwrap_or(100);
        if tty {
            say_part!("\rwo: replaying the log: {} records ({pct}%)", p.records);
        } else {
            say!("wo: replaying the log: {} records ({pct}%)", p.records);
        }
    })
}

/// `wo run PATH [--data DIR] [-- ARGS…]`.
///
/// `data` is the `--data` option; `WO_DATA` is consulted when it is absent. With a
/// data directory the database is recovered from it before the program starts, and
/// every change is durable before the program goes on.
pub fn run(path: &Path, data: Option<PathBuf>, args: Vec<String>) -> Result<(), Failure> {
    let data_dir = data_dir(data);
    let program = program::load(path)?;
    // On a terminal each line shows as it is printed (the standard library's stdout
    // is line-buffered); elsewhere output leaves in 64 KiB pieces.
    let capacity = if std::io::stdout().is_terminal() {
        0
    } else {
        64 * 1024
    };
    let stdout = SharedStdout::new(capacity);
    let ended = stdout.1.clone();
    let host = Host {
        out: Box::new(stdout.clone()),
        err: Box::new(ProgramStderr(stdout.clone())),
        input: Box::new(wo_vm::Stdin),
        classes: program.image.classes.clone().into(),
        rng: clock_seed(),
        started: Instant::now(),
    };
    let natives = |name: &str| wo_stdlib::lookup(name);
    let mut flush_out = stdout;
    let options = RunOptions {
        data_options: data_dir.as_ref().map(|_| wo_vm::durable::Options {
            progress: Some(replay_progress()),
            checkpoint_min: checkpoint_min(),
            program: Some(path.display().to_string()),
            ..wo_vm::durable::Options::default()
        }),
        data_dir,
        before_sync: Some(Box::new(move || {
            let _ = flush_out.flush();
        })),
        interrupt: None,
        ended: Some(Box::new(move || ended.set(true))),
        say_task_trap: true,
    };
    let started = wo_vm::run_with(&program.image, &natives, args, host, options);
    let started = match started {
        Ok(res) => Ok(res),
        Err(StartError::Link(link)) => Err(link),
        Err(StartError::Data(e)) => return Err(Failure::data(&e)),
        Err(other) => return Err(Failure::Internal(format!("internal error: {other}"))),
    };
    match started {
        // An image from a file may be hostile or from another version: invalid input.
        // One just compiled from source that does not link is a compiler bug.
        Err(link) if program.sources.is_none() => {
            Err(Failure::invalid_image(path, link_reason(&link)))
        }
        Err(link) => Err(Failure::Internal(format!(
            "internal error: the compiled program does not link: {}",
            link_reason(&link)
        ))),
        Ok(RunResult::Exit(code)) => match program_status(i64::from(code)) {
            0 => Ok(()),
            status => Err(Failure::Program(status)),
        },
        // The VM caught the image breaking an invariant it relies on while running. From
        // a file, that is a damaged or hostile image; from source, a compiler bug.
        Ok(RunResult::Fault(msg)) if program.sources.is_none() => {
            let reason = msg.strip_prefix("internal error: ").unwrap_or(&msg);
            Err(Failure::invalid_image(path, reason))
        }
        Ok(RunResult::Fault(msg)) => Err(Failure::Internal(msg)),
        Ok(RunResult::Interrupted) => Err(Failure::Internal(
            "internal error: interrupted without an interrupt flag".into(),
        )),
        Ok(RunResult::Trap { trap, stack }) => {
            report_trap(&trap, &stack);
            Err(Failure::Trap {
                io: trap.kind == TrapKind::Io,
            })
        }
    }
}

/// The text of a link error without a leading `invalid image: ` (the caller says it).
fn link_reason(link: &LinkError) -> String {
    match link {
        LinkError::Invalid(reason) => reason.clone(),
        other => other.to_string(),
    }
}

/// A non-zero seed for `random.*` from the wall clock (`random.seed(n)` replaces it).
pub(crate) fn clock_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Fold the 128-bit count so both halves matter; xorshift needs a non-zero state.
    let folded = (nanos as u64) ^ ((nanos >> 64) as u64) ^ u64::from(std::process::id());
    folded.max(1)
}

/// `wo build PATH [-o OUT.wob]`: compiles (or re-reads) PATH and writes the image,
/// by default next to PATH with the extension `.wob`. An existing OUT is replaced only
/// if it is a wo image: `-o prog.wo` would destroy a source.
pub fn build(path: &Path, out: Option<PathBuf>) -> Result<(), Failure> {
    if program::is_stdin(path) && out.is_none() {
        return Err(Failure::Refused(String::from(
            "`wo build -` reads the program from standard input: name the image with `-o OUT`",
        )));
    }
    if out.as_deref().is_some_and(program::is_stdin) {
        // (Not a file named `-`, which the next `wo build -` would read as this.)
        return Err(Failure::Refused(String::from(
            "`-o -`: the image goes to a file; name it (`-o app.wob`)",
        )));
    }
    let out = out.unwrap_or_else(|| default_image_path(path));
    refuse_to_overwrite(path, &out)?;
    let program = program::load(path)?;
    let bytes = wo_bytecode::format::write_image(&program.image);
    // Whole or not at all: an image being replaced (a program's deployed copy) is
    // never left half written.
    crate::save::write_whole(&out, &bytes).map_err(|source| Failure::Output {
        path: out.clone(),
        source,
    })
}

/// `prog.wo` → `prog.wob`; a directory `app/` → `app.wob` beside it.
fn default_image_path(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    if p.file_name().is_none() {
        // `.` or `..`: name the image after the directory itself.
        if let Ok(real) = std::fs::canonicalize(path) {
            p = real;
        }
    }
    p.with_extension("wob")
}

/// `wo build` replaces OUT only when it is absent or a wo image.
fn refuse_to_overwrite(input: &Path, out: &Path) -> Result<(), Failure> {
    let shown = out.display();
    // An image named like a source is read as one by `wo run DIR`, `wo check`, `wo fmt`
    // of its directory (helper-67: "not valid UTF-8" at the next run of the directory).
    if out.extension().is_some_and(|e| e == "wo") {
        return Err(Failure::Refused(format!(
            "refusing to write an image named `{shown}`: a `.wo` file is read as a source (name it `.wob`)"
        )));
    }
    let Ok(meta) = std::fs::metadata(out) else {
        // Absent (or unreadable: writing it will say why); a name ending in `/` is a
        // directory's, which the image cannot be.
        if out.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return Err(Failure::Refused(format!(
                "`{shown}` names a directory; name the image file with `-o`"
            )));
        }
        return Ok(());
    };
    if meta.is_dir() {
        return Err(Failure::Refused(format!(
            "`{shown}` is a directory; name the image file with `-o`"
        )));
    }
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let inside_input = std::fs::canonicalize(out)
        .ok()
        .zip(std::fs::canonicalize(input).ok())
        .is_some_and(|(o, i)| o.starts_with(i));
    if same(input, out) && program::is_image(input) {
        return Err(Failure::Refused(format!(
            "`{shown}` is already a bytecode image (`wo build` of an image checks it and writes it again: name another file with `-o`)"
        )));
    }
    if same(input, out) || inside_input {
        return Err(Failure::Refused(format!(
            "refusing to write the image over `{shown}`, which is one of the program's sources"
        )));
    }
    if !program::is_image(out) {
        return Err(Failure::Refused(format!(
            "refusing to replace `{shown}`: it exists and is not a wo image"
        )));
    }
    Ok(())
}

/// `wo check PATH…`: every diagnostic of every program, one summary line. The status
/// is the highest of the individual failures (a missing input outranks a compile error).
pub fn check(paths: &[PathBuf]) -> Result<(), Failure> {
    program::stdin_once(paths)?;
    let mut tally = Tally::default();
    let mut worst: Option<Failure> = None;
    for path in paths {
        if let Err(failure) = program::check(path, &mut tally) {
            failure.say();
            let outranks = match &worst {
                Some(w) => failure.status() > w.status(),
                None => true,
            };
            if outranks {
                worst = Some(failure);
            }
        }
    }
    if let Some(summary) = tally.summary() {
        say!("{summary}");
    }
    // Each failure was printed above; only the status is left to give.
    worst.map_or(Ok(()), |w| Err(Failure::Reported(w.status())))
}

/// `wo disasm PATH`: the bytecode of a source program (annotated with its source
/// lines) or of an image.
pub fn disasm(path: &Path) -> Result<(), Failure> {
    let program = program::load_with(path, true)?;
    let sources = program.sources.as_ref();
    let line_of = |file: u32, line: u32| -> Option<String> {
        let f = sources?.files.get(usize::try_from(file).ok()?)?;
        (line >= 1).then(|| f.line_text(line).to_string())
    };
    let text = wo_bytecode::disasm::disasm(&program.image, &line_of);
    // A closed pipe (`wo disasm x.wo | head`) is not an error worth reporting; a
    // full disk is (`exit::note_output`).
    crate::exit::note_output(std::io::stdout().lock().write_all(text.as_bytes()));
    Ok(())
}

/// The maintenance commands' DIR must be a directory (66 otherwise, saying what it
/// is, as the data directory's own check says it).
fn need_data_dir(dir: &Path) -> Result<(), Failure> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(Failure::Input(wo_vm::durable::not_a_data_directory(dir)))
}

/// `wo db verify DIR`: what the directory holds and the first problem, read-only.
/// Exit 65 when opening it would be refused.
pub fn db_verify(dir: &Path) -> Result<(), Failure> {
    need_data_dir(dir)?;
    let report = wo_vm::durable::verify(dir).map_err(|e| Failure::data(&e))?;
    out!("{report}");
    match report.problem {
        Some(_) => Err(Failure::Data {
            status: crate::exit::DATAERR,
            message: format!("data directory `{}` is damaged", dir.display()),
        }),
        None => Ok(()),
    }
}

/// `wo db checkpoint DIR`: opens the directory with the schema it stores, writes a
/// checkpoint and starts a new, empty log.
pub fn db_checkpoint(dir: &Path) -> Result<(), Failure> {
    need_data_dir(dir)?;
    let options = wo_vm::durable::Options {
        progress: Some(replay_progress()),
        ..wo_vm::durable::Options::default()
    };
    let stats = wo_vm::durable::checkpoint_dir(dir, options).map_err(|e| match e {
        wo_vm::durable::CheckpointDirError::Open(e) => Failure::data(&e),
        other => Failure::Data {
            status: crate::exit::IOERR,
            message: format!("checkpoint failed: {other}"),
        },
    })?;
    out!(
        "checkpoint of `{}`: {} rows, {} bytes, up to lsn {}, in {:.1} ms",
        dir.display(),
        stats.rows,
        stats.bytes,
        stats.lsn,
        stats.total.as_secs_f64() * 1000.0
    );
    Ok(())
}

/// `wo db migrate DIR PROGRAM [--apply] [--drop NAME]…`: the plan (every difference
/// and the rows it touches), and with `--apply` the migration as one crash-atomic
/// step (docs/schema.md).
pub fn db_migrate(dir: &Path, path: &Path, apply: bool, drop: Vec<String>) -> Result<(), Failure> {
    need_data_dir(dir)?;
    let program = program::load(path)?;
    let (schema, evolution) = wo_vm::database::engine_schema(&program.image);
    let options = wo_vm::durable::Options {
        progress: Some(replay_progress()),
        evolution,
        program: Some(path.display().to_string()),
        ..wo_vm::durable::Options::default()
    };
    let req = wo_vm::durable::MigrateRequest { apply, drop };
    let plan = wo_vm::durable::migrate(dir, schema, options, &req).map_err(|e| {
        // `--drop NAME` of a table that is not stored: the command line's fault, as
        // `wo db export --table NAME` of one is.
        if e.exit_status() == i32::from(crate::exit::USAGE) {
            Failure::Refused(e.to_string())
        } else {
            Failure::data(&e)
        }
    })?;
    let d = dir.display();
    if plan.is_empty() {
        out!("{d}: the stored schema is the program's; nothing to migrate");
        // A `@table(was:)` not used, since both names are stored, still says so.
        out_part!("{plan}");
        return Ok(());
    }
    // A `[refused]` line is no change: it says why `--apply` would carry out none
    // (helper-88: "2 changes" for one change and its refusal).
    let refused = plan
        .steps
        .iter()
        .filter(|s| s.kind == wo_vm::durable::StepKind::Refused)
        .count();
    let n = plan.steps.len() - refused;
    let s = if n == 1 { "" } else { "s" };
    // The differences no migration makes (a changed type), apart from the line that
    // says what the stored rows refuse (helper-95: "1 change, refused" over three
    // refused differences).
    let impossible = plan
        .steps
        .iter()
        .filter(|s| {
            s.kind == wo_vm::durable::StepKind::Refused
                && !s.what.starts_with(wo_vm::durable::ROWS_REFUSE)
        })
        .count();
    if apply {
        out!("{d}: migrated ({n} change{s}):");
    } else if impossible > 0 {
        let s2 = if impossible == 1 { "" } else { "s" };
        out!("{d}: {n} change{s} and {impossible} difference{s2} no migration makes, refused (nothing written; `--apply` would be refused, exit 65):");
    } else if refused > 0 {
        out!("{d}: {n} change{s}, refused (nothing written; `--apply` would be refused, exit 65):");
    } else {
        out!("{d}: {n} change{s} (nothing written; `--apply` carries them out):");
    }
    out_part!("{plan}");
    Ok(())
}

/// A failure of `wo db export` or `wo db mirror`, with its status.
fn mirror_failure(e: &wo_mirror::Error) -> Failure {
    Failure::Data {
        status: e.exit_status(),
        message: e.to_string(),
    }
}

/// `wo db export DIR [--table NAME] [--format jsonl|csv|sql]`: the rows on stdout.
pub fn db_export(dir: &Path, table: Option<&str>, format: &str) -> Result<(), Failure> {
    use wo_mirror::export::Format;
    let format = match format {
        "csv" => Format::Csv,
        "sql" => Format::Sql,
        _ => Format::Jsonl,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match wo_mirror::export::export(dir, table, format, &mut out) {
        // Its reader closed the pipe (`wo db export d | head`): quietly, as filters do.
        Err(wo_mirror::Error::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        res => res.map(|_| ()).map_err(|e| mirror_failure(&e)),
    }
}

/// `wo db mirror DIR --to URL [--follow]`: copy into PostgreSQL and keep it current.
pub fn db_mirror(dir: &Path, url: &str, follow: bool) -> Result<(), Failure> {
    wo_mirror::mirror::mirror(dir, url, follow).map_err(|e| mirror_failure(&e))
}
