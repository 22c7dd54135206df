//! `wo repl [--data DIR]`: an interactive session (LANGUAGE.md §12, `docs/tools.md`).
//! This module reads inputs (a line editor on a terminal, plain lines from a pipe),
//! decides when an input is complete (`wo_compiler::repl_input`, by the compiler's own rule), runs
//! the dot-commands, and hands declarations and statements to the session
//! (`session.rs`), which compiles and runs them. `schema.rs` declares a data
//! directory's stored tables; `helper.rs` completes names on Tab.
//!
//! Ctrl-C: at the prompt it drops the line being typed; while an input runs, the
//! SIGINT handler raises the VM's interrupt flag, the run stops (an open transaction
//! rolls back) and the session goes on. A second Ctrl-C before the VM noticed the
//! first ends the process (status 130), for a native call that does not return.

mod helper;
mod schema;

pub(crate) use schema::escape;
mod session;

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::Editor;
use wo_compiler::repl_input::{
    completeness, continues, error_before_end, is_declaration, unmatched_closer, Completeness,
};

use crate::commands::{data_dir, SharedStdout};
use crate::exit::Failure;

use helper::ReplHelper;
use session::{Outcome, Session, REPL_FILE};

/// The exit status of a session whose piped input had an error (as sqlite3's).
pub const INPUT_ERROR: u8 = 1;

const PROMPT: &str = "wo> ";
const CONTINUE: &str = "... ";

/// Where input comes from.
enum Reader {
    Editor(Box<Editor<ReplHelper, DefaultHistory>>, Option<PathBuf>),
    Piped(std::io::StdinLock<'static>),
}

/// One read.
enum Read {
    Line(String),
    /// Ctrl-C at the prompt.
    Cancel,
    Eof,
    /// A piped line that is not UTF-8: the column (in characters) and the byte that
    /// is not, and the line with each bad sequence replaced by U+FFFD (what is needed
    /// to find where the input it is part of ends).
    NotUtf8 {
        col: usize,
        byte: u8,
        lossy: String,
    },
    /// A line of an input being dropped (one that is not UTF-8, said already): the
    /// input is read to its end, then dropped whole.
    Dropped(String),
}

impl Reader {
    fn read(&mut self, prompt: &str) -> Result<Read, Failure> {
        match self {
            Reader::Editor(ed, _) => match ed.readline(prompt) {
                Ok(line) => Ok(Read::Line(line)),
                Err(ReadlineError::Interrupted) => Ok(Read::Cancel),
                Err(ReadlineError::Eof) => Ok(Read::Eof),
                Err(e) => Err(Failure::Internal(format!(
                    "internal error: reading input: {e}"
                ))),
            },
            Reader::Piped(stdin) => {
                let mut bytes = Vec::new();
                match stdin.read_until(b'\n', &mut bytes) {
                    Ok(0) => Ok(Read::Eof),
                    Ok(_) => {
                        // A line that is not UTF-8 is that input's error, not the
                        // session's end (helper-94: exit 66 at the first bad byte).
                        let mut line = match String::from_utf8(bytes) {
                            Ok(line) => line,
                            Err(e) => {
                                let valid = e.utf8_error().valid_up_to();
                                let bytes = e.into_bytes();
                                let before = String::from_utf8_lossy(&bytes[..valid]);
                                let mut lossy = String::from_utf8_lossy(&bytes).into_owned();
                                if lossy.ends_with('\n') {
                                    lossy.pop();
                                }
                                return Ok(Read::NotUtf8 {
                                    col: before.chars().count() + 1,
                                    byte: bytes[valid],
                                    lossy,
                                });
                            }
                        };
                        if line.ends_with('\n') {
                            line.pop();
                            if line.ends_with('\r') {
                                line.pop();
                            }
                        }
                        Ok(Read::Line(line))
                    }
                    Err(e) => Err(Failure::Input(format!("cannot read the input: {e}"))),
                }
            }
        }
    }

    fn remember(&mut self, input: &str) {
        if let Reader::Editor(ed, history) = self {
            let _ = ed.add_history_entry(input.trim_end());
            if let Some(path) = history {
                let _ = ed.save_history(path);
            }
        }
    }
}

/// The history file: `WO_HISTORY` (empty: none), else `$XDG_STATE_HOME/wo_history`,
/// else `~/.wo_history`.
fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WO_HISTORY") {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        let dir = PathBuf::from(state);
        if dir.is_dir() {
            return Some(dir.join("wo_history"));
        }
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".wo_history"))
}

/// Whether the line editor waits at its prompt for a line (no input runs).
static AT_PROMPT: AtomicBool = AtomicBool::new(false);

/// Ctrl-C. In the signal handler itself (so the decision is the signal's moment's):
/// the second Ctrl-C before the VM noticed the first ends the process (130); the
/// first raises `flag`, which stops the running input. At the prompt the line editor
/// drops the line, as a key in its raw mode; where the terminal has no line editing
/// (`TERM=dumb`, as in Emacs's shell) the terminal drops it and sends the signal, and
/// then it must not stop the next input nor count as a first Ctrl-C (helper-68): a
/// thread woken by the signal lowers `flag` if the prompt still waits, and the REPL
/// lowers it when the prompt's line comes (a Ctrl-C just before it was the prompt's).
fn handle_interrupts(flag: &Arc<AtomicBool>) {
    use signal_hook::consts::SIGINT;
    let first = signal_hook::flag::register_conditional_shutdown(SIGINT, 130, flag.clone());
    let then = signal_hook::flag::register(SIGINT, flag.clone());
    if let Err(e) = first.and(then) {
        say!("wo: warning: Ctrl-C will end the session: {e}");
    }
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT]) else {
        return;
    };
    let flag = flag.clone();
    let _ = std::thread::Builder::new()
        .name("wo-ctrl-c".into())
        .spawn(move || {
            for _ in signals.forever() {
                if AT_PROMPT.load(Ordering::SeqCst) {
                    flag.store(false, Ordering::SeqCst);
                }
            }
        });
}

struct Repl {
    session: Session,
    reader: Reader,
    /// Lines of input read so far.
    n_lines: usize,
    n_errors: usize,
    timer: bool,
    /// The rest of a paste of several lines, not yet taken (each is an input's line,
    /// as if typed).
    queued: VecDeque<String>,
    /// A line read ahead (after an `if` that could have gone on with `else`): a
    /// `Read::Line`, or a `Read::Dropped` (not UTF-8, said already: the first line of
    /// an input to drop).
    ahead: Option<Read>,
}

/// `wo repl [--data DIR] [FILE]`.
pub fn repl(data: Option<PathBuf>, file: Option<&Path>) -> Result<(), Failure> {
    // A file that is not there ends it before it starts (66); one that does not
    // compile is reported, and the session goes on, to be fixed and loaded again.
    if let Some(f) = file {
        std::fs::metadata(f)
            .map_err(|e| Failure::Input(format!("cannot read `{}`: {e}", f.display())))?;
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    handle_interrupts(&interrupt);
    // On a terminal, output appears line by line while an input runs (a BufWriter
    // without capacity hands every write to stdout, which is line-buffered).
    let capacity = if std::io::stdout().is_terminal() {
        0
    } else {
        8 * 1024
    };
    let stdout = SharedStdout::new(capacity);
    let mut session = Session::new(stdout, interrupt);
    if let Some(dir) = data_dir(data) {
        // A session explores data: a new, empty directory is more likely a mistyped
        // path than a wish, so it is said (helper-106: `.tables` printed nothing, and
        // the data seemed gone).
        let existed = dir.exists();
        session.open_data(&dir)?;
        if !existed {
            say!(
                "wo: note: `{}` did not exist: a new, empty data directory was made",
                dir.display()
            );
        }
    }
    let interactive = std::io::stdin().is_terminal();
    session.reads_stdin = interactive;
    let reader = if interactive {
        let mut ed = Editor::<ReplHelper, DefaultHistory>::new().map_err(|e| {
            Failure::Internal(format!("internal error: cannot start the line editor: {e}"))
        })?;
        ed.set_helper(Some(ReplHelper {
            names: session.names.clone(),
        }));
        let history = history_path();
        if let Some(p) = &history {
            let _ = ed.load_history(p);
        }
        Reader::Editor(Box::new(ed), history)
    } else {
        Reader::Piped(std::io::stdin().lock())
    };
    let mut repl = Repl {
        session,
        reader,
        n_lines: 0,
        n_errors: 0,
        timer: false,
        queued: VecDeque::new(),
        ahead: None,
    };
    if let Some(f) = file {
        repl.load(f);
    }
    repl.run()?;
    crate::exit::note_output(repl.session.stdout.flush());
    // A function still waiting was never declared: what it calls never came (a typo
    // that would be `unknown function` in a file).
    for (c, names) in &repl.session.waiting {
        say!(
            "error: `{}` ({}:{}) was never declared: it calls {}, never declared",
            c.key,
            c.file,
            c.line,
            names.join(", ")
        );
        repl.n_errors += 1;
    }
    // As when a program's `main` returns, tasks still alive end with the session;
    // said, since a session's tasks run only while an input runs (helper-102: one
    // spawned by the last piped input never ran, without a word).
    let alive = repl.session.alive_tasks();
    if alive > 0 {
        say!(
            "note: {alive} task{} still alive at the end of the session {} stopped unfinished \
             (`join` a task to wait for it)",
            if alive == 1 { "" } else { "s" },
            if alive == 1 { "was" } else { "were" }
        );
    }
    if repl.n_errors > 0 && !interactive {
        return Err(Failure::Reported(INPUT_ERROR));
    }
    Ok(())
}

impl Repl {
    /// Reads and runs inputs until the end of input or `.quit`.
    fn run(&mut self) -> Result<(), Failure> {
        loop {
            // An input with a line that is not UTF-8 is read to its end, then dropped
            // whole: dropping only its lines up to the bad one ran the rest as inputs
            // of their own (helper-102: the body of an `if` that deleted every row).
            let mut dropped = false;
            let first = match self.read(PROMPT)? {
                Read::Line(l) => l,
                Read::Dropped(l) => {
                    dropped = true;
                    l
                }
                Read::Cancel | Read::NotUtf8 { .. } => continue,
                Read::Eof => return Ok(()),
            };
            if !dropped {
                self.n_lines += 1;
            } else if first.trim_start().starts_with('.') {
                // A dot-command is one line: nothing after it is its.
                continue;
            }
            let start = self.n_lines;
            if !dropped && first.trim_start().starts_with('.') {
                self.reader.remember(&first);
                if !self.command(first.trim()) {
                    return Ok(());
                }
                continue;
            }
            let mut text = format!("{first}\n");
            let mut cancelled = false;
            let mut cut_short = false;
            loop {
                match completeness(&text) {
                    Completeness::Complete => break,
                    Completeness::Incomplete => match self.read(CONTINUE)? {
                        Read::Line(l) => {
                            self.n_lines += 1;
                            text.push_str(&l);
                            text.push('\n');
                        }
                        Read::Dropped(l) => {
                            dropped = true;
                            text.push_str(&l);
                            text.push('\n');
                        }
                        Read::Cancel | Read::NotUtf8 { .. } => {
                            cancelled = true;
                            break;
                        }
                        Read::Eof => {
                            cut_short = true;
                            break;
                        }
                    },
                    Completeness::MayContinue => match self.read(CONTINUE)? {
                        Read::Line(l) if continues(&l) => {
                            self.n_lines += 1;
                            text.push_str(&l);
                            text.push('\n');
                        }
                        Read::Line(l) if l.trim().is_empty() => {
                            self.n_lines += 1;
                            break;
                        }
                        line @ Read::Line(_) => {
                            self.ahead = Some(line);
                            break;
                        }
                        // (`} else {` with a bad byte is this input's; any other line
                        // starts the next input, dropped whole in its turn.)
                        Read::Dropped(l) if continues(&l) => {
                            dropped = true;
                            text.push_str(&l);
                            text.push('\n');
                        }
                        line @ Read::Dropped(_) => {
                            self.ahead = Some(line);
                            break;
                        }
                        Read::Cancel | Read::NotUtf8 { .. } => {
                            cancelled = true;
                            break;
                        }
                        Read::Eof => break,
                    },
                }
            }
            if cancelled {
                continue;
            }
            if dropped {
                if cut_short {
                    return Ok(());
                }
                continue;
            }
            let grouped = if !cut_short && is_declaration(&text) {
                self.group_declarations(&mut text)
            } else {
                0
            };
            self.reader.remember(&text);
            // Cut short by the end of the input: "the input ended" only when nothing
            // before the end is wrong; else the input runs, to report its error.
            if cut_short && !error_before_end(&text) {
                self.session.cut_short(&text, REPL_FILE, start);
                self.n_errors += 1;
                return Ok(());
            }
            let outcome = self.eval(&text, REPL_FILE, start);
            if grouped > 0 && outcome == Outcome::Failed {
                say!(
                    "note: the {} declarations pasted together (repl:{start}-{}) were declared as one, so none of them was: correct the error and paste them again",
                    grouped + 1,
                    self.n_lines
                );
            }
            if cut_short {
                return Ok(());
            }
        }
    }

    /// The next line: one queued, else one read. A paste of several lines (the line
    /// editor hands a bracketed paste over whole) is taken a line at a time, so a
    /// paste of declarations and statements runs as if typed line by line.
    fn read(&mut self, prompt: &str) -> Result<Read, Failure> {
        if let Some(read) = self.ahead.take() {
            return Ok(read);
        }
        if !self.queued.is_empty() && self.session.interrupt.swap(false, Ordering::Relaxed) {
            // Ctrl-C between two of a paste's inputs drops the rest of the paste.
            self.queued.clear();
            say!("interrupted");
            self.n_errors += 1;
        }
        if let Some(line) = self.queued.pop_front() {
            return Ok(Read::Line(line));
        }
        let editor = matches!(self.reader, Reader::Editor(..));
        AT_PROMPT.store(editor, Ordering::SeqCst);
        let read = self.reader.read(prompt);
        if editor {
            // A Ctrl-C the thread has not seen yet came at the prompt too.
            self.session.interrupt.store(false, Ordering::SeqCst);
            AT_PROMPT.store(false, Ordering::SeqCst);
        }
        let read = read?;
        if let Read::NotUtf8 { col, byte, lossy } = read {
            // Said; the input it is part of is read to its end and dropped whole.
            self.n_lines += 1;
            say!(
                "{REPL_FILE}:{}:{col}: error: the input is not valid UTF-8: the byte 0x{byte:02X} (the input it is part of is dropped)",
                self.n_lines
            );
            self.n_errors += 1;
            return Ok(Read::Dropped(lossy));
        }
        let Read::Line(text) = read else {
            return Ok(read);
        };
        let mut lines = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string());
        let first = lines.next().unwrap_or_default();
        self.queued.extend(lines);
        Ok(Read::Line(first))
    }

    /// Appends to a declaration the declarations that follow it in the same paste, so
    /// they are declared together, as in a file: functions that call each other, or
    /// one that calls a function declared below it, compile. (Typed one by one, a
    /// function must come after those it calls.) Stops at the first input of the paste
    /// that is not a whole declaration, which then runs as if typed.
    /// Returns how many declarations it appended.
    fn group_declarations(&mut self, text: &mut String) -> usize {
        let mut appended = 0;
        if self.ahead.is_some() {
            return appended;
        }
        loop {
            let mut next = String::new();
            let mut taken = 0;
            let mut whole = false;
            for line in &self.queued {
                next.push_str(line);
                next.push('\n');
                taken += 1;
                if !is_blank(&next) && completeness(&next) == Completeness::Complete {
                    whole = true;
                    break;
                }
            }
            if !whole || !is_declaration(&next) {
                return appended;
            }
            self.queued.drain(..taken);
            self.n_lines += taken;
            text.push_str(&next);
            appended += 1;
        }
    }

    /// Runs one input; counts it when it failed.
    fn eval(&mut self, text: &str, file: &str, line: usize) -> Outcome {
        if is_blank(text) {
            return Outcome::Ok;
        }
        let started = Instant::now();
        let outcome = if let Some((at, closer)) = unmatched_closer(text) {
            let message = format!("unexpected `{closer}`: it closes no bracket");
            Session::syntax_error(text, file, line, at, message)
        } else if is_declaration(text) {
            self.session.declare(text, file, line)
        } else {
            self.session.statements(text, file, line)
        };
        if self.timer {
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let _ = writeln!(self.session.stdout, "time: {ms:.3} ms");
            crate::exit::note_output(self.session.stdout.flush());
        }
        if outcome == Outcome::Interrupted {
            // Ctrl-C stops the rest of a paste too (not a line typed after it).
            self.queued.clear();
        }
        let task_trapped = std::mem::take(&mut self.session.task_traps) > 0;
        if outcome != Outcome::Ok || task_trapped {
            self.n_errors += 1;
        }
        outcome
    }

    /// Runs a dot-command; `false` ends the session.
    fn command(&mut self, line: &str) -> bool {
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("");
        let mut arg = words.next();
        let mut extra = words.next();
        if cmd == ".load" && arg.is_some() {
            // A file name is the rest of the line, spaces and all, or written in
            // quotes as a shell would (helper-102: `.load my file.wo` was refused).
            arg = Some(load_argument(&line.trim()[cmd.len()..]));
            extra = None;
        }
        let mut out = self.session.stdout.clone();
        let mut error: Option<String> = None;
        if extra.is_some() {
            set(&mut error, format!("`{cmd}` takes at most one argument"));
        }
        match (cmd, arg) {
            _ if error.is_some() => {}
            (".quit" | ".exit", None) => return false,
            (".help", None) => {
                let mut text = String::new();
                for (c, what) in helper::COMMANDS {
                    text.push_str(&format!("{c:<16} {what}\n"));
                }
                text.push_str(
                    "Inputs are declarations (fn, class, const, use), statements and \
                     expressions (their value is printed).\nAn input goes on while a \
                     bracket is open or the line ends in an operator; Ctrl-C stops a \
                     running input.\n",
                );
                let _ = out.write_all(text.as_bytes());
            }
            (".tables", None) => {
                let mut text = String::new();
                for (name, class, n) in self.session.tables() {
                    let class = match class {
                        Some(c) if c != name => format!(" (class {c})"),
                        _ => String::new(),
                    };
                    let rows = if n == 1 { "row" } else { "rows" };
                    text.push_str(&format!("{name}{class}: {n} {rows}\n"));
                }
                let _ = out.write_all(text.as_bytes());
            }
            (".schema", name) => {
                let chunks: Vec<&session::Chunk> = self
                    .session
                    .chunks
                    .iter()
                    .filter(|c| match name {
                        Some(n) => c.key == n || c.table.as_deref() == Some(n),
                        None => c.table.is_some(),
                    })
                    .collect();
                if let (true, Some(n)) = (chunks.is_empty(), name) {
                    // A table's name in another case or number (`.schema person`
                    // for `Person`, helper-105).
                    let names: Vec<&str> = self
                        .session
                        .chunks
                        .iter()
                        .flat_map(|c| std::iter::once(c.key.as_str()).chain(c.table.as_deref()))
                        .collect();
                    let near = wo_vm::durable::near_table_name(n, &names)
                        .map_or(String::new(), |m| format!(" (did you mean `{m}`?)"));
                    set(&mut error, format!("nothing named `{n}` is declared{near}"));
                }
                let mut text = String::new();
                for c in chunks {
                    text.push_str(c.text.trim_end());
                    text.push('\n');
                }
                let _ = out.write_all(text.as_bytes());
            }
            (".timer", Some("on")) => self.timer = true,
            (".timer", Some("off")) => self.timer = false,
            (".timer", _) => set(&mut error, "write `.timer on` or `.timer off`".into()),
            (".load", Some(path)) => {
                let _ = out.flush();
                self.load(Path::new(path));
            }
            (".load", None) => set(&mut error, "`.load` needs a file: `.load FILE`".into()),
            (".help" | ".tables" | ".quit" | ".exit", Some(_)) => {
                set(&mut error, format!("`{cmd}` takes no argument"));
            }
            _ => set(
                &mut error,
                format!("unknown command `{cmd}`; `.help` lists the commands"),
            ),
        }
        crate::exit::note_output(self.session.stdout.flush());
        if let Some(msg) = error {
            say!("error: {msg}");
            self.n_errors += 1;
        }
        true
    }

    /// `.load DIR`: the declarations of a directory program's files join the session
    /// together, as `wo run DIR` compiles them (helper-106: loaded one by one, a file
    /// that used another's classes did not compile).
    fn load_dir(&mut self, dir: &Path) {
        let sources = match wo_compiler::load_sources(dir) {
            Ok(s) => s,
            Err(e) => {
                say!("error: {e}");
                self.n_errors += 1;
                return;
            }
        };
        let files: Vec<(&str, &str, usize)> = sources
            .files
            .iter()
            .map(|f| {
                (
                    f.src.strip_prefix('\u{feff}').unwrap_or(&f.src),
                    f.name.as_str(),
                    1,
                )
            })
            .filter(|(text, _, _)| !is_blank(text))
            .collect();
        if let Some((_, name, _)) = files.iter().find(|(text, _, _)| !is_declaration(text)) {
            say!(
                "error: `{name}` does not start with a declaration; `.load` takes a program's functions, classes and constants"
            );
            self.n_errors += 1;
            return;
        }
        if !files.is_empty() && self.session.declare_all(&files) != Outcome::Ok {
            self.n_errors += 1;
        }
    }

    /// `.load FILE`: the file's declarations join the session (a directory: all its
    /// files, [`Repl::load_dir`]).
    fn load(&mut self, path: &Path) {
        if path.is_dir() {
            self.load_dir(path);
            return;
        }
        let read = wo_compiler::read_program_file(path).map(|bytes| {
            // (Not "not valid UTF-8 … save the file as UTF-8": helper-105.)
            if bytes.starts_with(crate::program::MAGIC) {
                return None;
            }
            Some(wo_compiler::decode_source(path, bytes))
        });
        let read = match read {
            Ok(None) => {
                say!(
                    "error: `{}` is a bytecode image, not a source file: `.load` declares the functions of a `.wo` file",
                    path.display()
                );
                self.n_errors += 1;
                return;
            }
            Ok(Some(decoded)) => decoded,
            Err(e) => Err(e),
        };
        let text = match read {
            // (A byte order mark, as `wo run` takes it, helper-78.)
            Ok(t) => match t.strip_prefix('\u{feff}') {
                Some(rest) => rest.to_string(),
                None => t,
            },
            Err(e) => {
                say!("error: {e}");
                self.n_errors += 1;
                return;
            }
        };
        let name = path.display().to_string();
        if is_blank(&text) {
            return;
        }
        if !is_declaration(&text) {
            say!(
                "error: `{name}` does not start with a declaration; `.load` takes a program's functions, classes and constants"
            );
            self.n_errors += 1;
            return;
        }
        if self.session.declare(&text, &name, 1) != Outcome::Ok {
            self.n_errors += 1;
            // One file of a directory program: what it uses may be in the others
            // (helper-106: thirteen errors and no word of them, where `wo run`,
            // `check` and `test` say so).
            if let Some((dir, others)) = crate::program::program_around(path) {
                let files = if others == 1 { "file" } else { "files" };
                say!(
                    "note: `{name}` was loaded alone; its directory holds {others} more `.wo` {files} of its program: `.load {}` loads them together",
                    dir.display()
                );
            }
        }
    }
}

/// Records a dot-command's error.
fn set(error: &mut Option<String>, msg: String) {
    *error = Some(msg);
}

/// Whether an input holds no token (blank, or comments only).
fn is_blank(text: &str) -> bool {
    let lexed = wo_compiler::lexer::tokenize(
        text,
        wo_compiler::FileId(0),
        0,
        0,
        wo_compiler::lexer::Mode::File,
    );
    lexed.toks.is_empty() && lexed.diags.is_empty()
}

/// The file name of `.load`: the rest of its line, trimmed, without the quotes (`"…"`
/// or `'…'`) around it, if any.
fn load_argument(rest: &str) -> &str {
    let rest = rest.trim();
    for q in ['"', '\''] {
        if let Some(inner) = rest.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    rest
}
