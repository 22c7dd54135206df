//! A session's state and how one input runs. Declarations are kept as source, one
//! chunk per item (a function, a class, a constant, a `use`); redefining a name
//! replaces its chunk in place, so the order of classes, tables and functions never
//! changes under data that depends on it. Each statement input is compiled with the
//! current declarations as the body of a hidden function whose parameters are the
//! session's variables:
//!
//! ```text
//! fn __repl(x: Int, xs: multi Int) { if true { <input>
//! } }
//! ```
//!
//! and runs on a fiber whose registers hold the variables' values. Locals get
//! registers in declaration order (parameters first, then the lets of the input's
//! block), so after the run the registers hold the variables, changed or new. The
//! `if true` block lets an input re-declare a variable (`let x = x + 1`, as Python
//! rebinds), since a block may shadow a parameter. An expression input is compiled as
//! `let __value = <input>` and its value printed from its register, Texts quoted.
//!
//! Positions: every file put in the program keeps the lines of the text it came from
//! (the chunk of input 3 is padded to start on the line where the user typed it), so
//! diagnostics and trap reports say `repl:LINE:COL` counting the user's lines. Only the
//! hidden header shares the input's first line; its length is taken off the columns
//! there, and spans or labels inside the header or footer are moved to the input or
//! dropped, so no message shows the wrapper.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use wo_bytecode::Image;
use wo_compiler::ast::{self, ExprKind, StmtKind, TextPart};
use wo_compiler::tir;
use wo_compiler::{Diagnostic, FileId, Severity, SourceFile, SourceMap, Span};
use wo_vm::{Database, Host, StackFrame, Status, Value, Vm};

use crate::commands::{checkpoint_min, clock_seed, replay_progress, ProgramStderr, SharedStdout};
use crate::exit::Failure;
use crate::render::{render_all, report_trap};

/// The name of the hidden function an input runs in.
const WRAPPER: &str = "__repl";
/// The image's entry function (never run).
const ENTRY: &str = "__repl_entry";
/// The local an expression input's value goes to.
const VALUE: &str = "__value";
/// The file name of the user's typed input.
pub const REPL_FILE: &str = "repl";
/// The file name of the declarations made from a data directory's stored tables.
pub const STORED_FILE: &str = "stored-schema";

/// One declaration, as source.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// What it declares: a function, class or constant name, or `use NAME`.
    pub key: String,
    /// The stored table name, for a `@table` class.
    pub table: Option<String>,
    /// The file it came from (`repl`, a loaded path, `stored-schema`) and where it
    /// starts there (1-based line, byte column).
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub text: String,
}

/// A session variable: a `let` of an earlier input.
#[derive(Debug, Clone)]
pub struct Var {
    pub name: String,
    /// Its type as written in source (`multi Int`, `?Note`).
    pub ty: String,
    pub value: Value,
}

/// What completion and the dot-commands need to know about the session.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Variables with their types.
    pub vars: Vec<(String, String)>,
    pub decls: Vec<String>,
    /// Every class with its fields and methods.
    pub classes: Vec<(String, Vec<String>)>,
    /// Modules named by `use`.
    pub modules: Vec<String>,
}

/// How an input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// It did not compile or trapped (reported).
    Failed,
    /// Ctrl-C stopped it (reported).
    Interrupted,
}

pub struct Session {
    pub chunks: Vec<Chunk>,
    pub vars: Vec<Var>,
    globals: Vec<Value>,
    database: Option<Database>,
    host: Option<Host>,
    fibers: Option<wo_vm::Fibers>,
    /// The fibers whose task's trap was reported (`report_task_traps`).
    reported_tasks: std::collections::HashSet<u64>,
    /// Tasks reported trapped since the driver last looked: the input counts as one
    /// that trapped (for the exit status of a piped session).
    pub task_traps: usize,
    pub stdout: SharedStdout,
    pub interrupt: Arc<AtomicBool>,
    pub names: Rc<RefCell<Names>>,
    /// Functions that call functions not declared yet (`fn even` calling `odd`, typed
    /// one input at a time), each with the names it waits for: declared with the
    /// first declaration input they compile with.
    pub waiting: Vec<(Chunk, Vec<String>)>,
    /// Whether `io.read_line` and `io.read_all` read the process's stdin: only when the
    /// session's own input comes from the line editor (a terminal). Piped into the
    /// REPL, stdin is the session's source, so they see an empty input instead.
    pub reads_stdin: bool,
}

/// A compiled program of the session.
struct Built {
    image: Image,
    program: tir::Program,
    /// The wrapper's function index.
    func: u32,
}

/// The hidden function around an input: its header, the user's text, and where the
/// text starts in its file.
struct Wrapped<'a> {
    header: String,
    body: &'a str,
    file: &'a str,
    line: usize,
}

/// `text` placed at `line` (1-based) and column `col` (0-based) of a file, so that
/// the spans the compiler gives in it are the positions the user typed.
fn placed(line: usize, col: usize, text: &str) -> String {
    let mut s = "\n".repeat(line.saturating_sub(1));
    s.push_str(&" ".repeat(col));
    s.push_str(text);
    s
}

impl Wrapped<'_> {
    fn padding(&self) -> usize {
        self.line.saturating_sub(1)
    }

    fn source(&self) -> String {
        let mut s = placed(self.line, 0, &self.header);
        s.push_str(self.body);
        s.push_str("\n} }\n");
        s
    }

    /// The file as the user wrote it (for rendering), and the offset map from the
    /// compiled file to it: `None` for the header and footer.
    fn shown(&self) -> String {
        placed(self.line, 0, self.body)
    }

    fn map(&self, offset: u32) -> Option<u32> {
        let o = offset as usize;
        let start = self.padding() + self.header.len();
        let end = start + self.body.len();
        if o < start || o > end {
            return None;
        }
        u32::try_from(o - self.header.len()).ok()
    }
}

/// An input's declarations being placed among the session's ([`Session::place_items`]).
struct Placing {
    /// The session's chunks with this input's placed so far.
    chunks: Vec<Chunk>,
    /// The names of the chunks this input replaced.
    replaced: Vec<String>,
    /// Stored tables declared again under another class name: (old, new).
    renamed: Vec<(String, String)>,
    /// Where this input's declarations are in `chunks`.
    new_chunks: Vec<usize>,
}

impl Session {
    /// The tasks of the session still alive (running, asleep or waiting): what its
    /// end stops unfinished.
    pub fn alive_tasks(&self) -> usize {
        self.fibers.as_ref().map_or(0, wo_vm::Fibers::alive)
    }

    pub fn new(stdout: SharedStdout, interrupt: Arc<AtomicBool>) -> Session {
        Session {
            chunks: Vec::new(),
            vars: Vec::new(),
            globals: Vec::new(),
            database: None,
            host: None,
            fibers: None,
            reported_tasks: std::collections::HashSet::new(),
            task_traps: 0,
            stdout,
            interrupt,
            names: Rc::new(RefCell::new(Names::default())),
            waiting: Vec::new(),
            reads_stdin: false,
        }
    }

    /// Opens the data directory: its stored tables become declarations (a class per
    /// table), then the directory is opened with them.
    pub fn open_data(&mut self, dir: &std::path::Path) -> Result<(), Failure> {
        let options = wo_vm::durable::Options::default();
        if dir.is_dir() {
            match wo_vm::durable::stored_schema(dir, &options) {
                Ok(schema) => {
                    for (key, table, text) in super::schema::declarations(&schema) {
                        self.chunks.push(Chunk {
                            key,
                            table: Some(table),
                            file: STORED_FILE.to_string(),
                            line: 1,
                            col: 0,
                            text,
                        });
                    }
                }
                // An empty or new directory holds no tables yet.
                Err(wo_vm::durable::OpenError::NotADataDirectory { .. }) => {}
                Err(e) => return Err(Failure::data(&e)),
            }
        }
        let built = match self.build(&self.chunks, None) {
            Ok(b) => b,
            Err((sources, diags)) => {
                say_part!("{}", render_all(&sources, &diags));
                return Err(Failure::Internal(
                    "internal error: the declarations of the stored tables do not compile".into(),
                ));
            }
        };
        let host = self.new_host(&built.image);
        let natives = |name: &str| wo_stdlib::lookup(name);
        let mut vm = Vm::new(&built.image, &natives, host)
            .map_err(|e| Failure::Internal(format!("internal error: {e}")))?;
        let options = wo_vm::durable::Options {
            progress: Some(replay_progress()),
            checkpoint_min: checkpoint_min(),
            ..wo_vm::durable::Options::default()
        };
        let mut out = self.stdout.clone();
        let flush: Box<dyn FnMut()> = Box::new(move || {
            let _ = out.flush();
        });
        vm.database_mut()
            .open_data_dir(dir, options, Some(flush))
            .map_err(|e| Failure::data(&e))?;
        self.fibers = Some(vm.take_fibers());
        let (host, globals, database) = vm.into_parts();
        self.host = Some(host);
        self.globals = globals;
        self.database = Some(database);
        self.update_names(&built.program);
        Ok(())
    }

    fn new_host(&self, image: &Image) -> Host {
        Host {
            out: Box::new(self.stdout.clone()),
            err: Box::new(ProgramStderr(self.stdout.clone())),
            input: if self.reads_stdin {
                Box::new(wo_vm::Stdin)
            } else {
                Box::new(std::io::empty())
            },
            classes: image.classes.clone().into(),
            rng: clock_seed(),
            started: Instant::now(),
        }
    }

    /// Compiles the declarations `chunks` with `input` (or an empty wrapper).
    fn build(
        &self,
        chunks: &[Chunk],
        input: Option<&Wrapped<'_>>,
    ) -> Result<Built, (SourceMap, Vec<Diagnostic>)> {
        let mut sources = SourceMap::default();
        for c in chunks {
            let src = format!("{}{}", " ".repeat(c.col), c.text);
            let before = u32::try_from(c.line.saturating_sub(1)).unwrap_or(u32::MAX);
            sources.add_file(SourceFile::after_lines(c.file.clone(), src, before));
        }
        // The image's entry: a function as `main` may be (the wrapper, with its
        // parameters, is run directly).
        sources.add("<session>", format!("fn {ENTRY}() {{\n}}\n"));
        let wrapper_file = match input {
            Some(w) => sources.add(w.file, w.source()),
            None => sources.add("<session>", format!("fn {WRAPPER}() {{\n}}\n")),
        };
        let (modules, mut diags) = wo_compiler::parse_files(&sources);
        let mut program = wo_compiler::check::check(&modules, &sources, &mut diags);
        // A session has no `main`: the wrapper is its entry. It shows no warnings:
        // its declarations are checked again with each input (a warning would come
        // back each time), and an input's variables live on as the session's.
        diags.retain(|d| d.code != "main" && d.severity == Severity::Error);
        if diags.iter().any(|d| d.severity == Severity::Error) {
            return Err(self.shown(sources, diags, wrapper_file, input));
        }
        let Some(func) = program.funcs.iter().position(|f| f.name == WRAPPER) else {
            let d = Diagnostic::error("repl", Span::default(), "the input does not compile");
            return Err((sources, vec![d]));
        };
        program.main = program
            .funcs
            .iter()
            .position(|f| f.name == ENTRY)
            .unwrap_or(func);
        match wo_compiler::codegen::generate(&program, &sources) {
            Ok(image) => Ok(Built {
                image,
                program,
                func: u32::try_from(func).unwrap_or(u32::MAX),
            }),
            Err(d) => Err(self.shown(sources, vec![d], wrapper_file, input)),
        }
    }

    /// The diagnostics as the user should see them: positions in the wrapper's file
    /// moved to the user's text, labels on the hidden parts dropped, in source order.
    fn shown(
        &self,
        mut sources: SourceMap,
        mut diags: Vec<Diagnostic>,
        wrapper_file: FileId,
        input: Option<&Wrapped<'_>>,
    ) -> (SourceMap, Vec<Diagnostic>) {
        if let Some(w) = input {
            // An error in the wrapper's own closing text, after one in the input, is
            // the parser's recovery from the first (a `}` of the wrong kind closed the
            // wrapper): only the first is the user's.
            let in_trailer = |d: &Diagnostic| {
                d.span.file == wrapper_file
                    && w.map(d.span.lo).is_none()
                    && d.span.lo as usize >= w.padding() + w.header.len()
            };
            let in_body =
                |d: &Diagnostic| d.span.file == wrapper_file && w.map(d.span.lo).is_some();
            if diags
                .iter()
                .any(|d| in_body(d) && d.severity == Severity::Error)
            {
                diags.retain(|d| !in_trailer(d));
            }
            let end = u32::try_from(w.padding() + w.body.len()).unwrap_or(u32::MAX);
            let start = u32::try_from(w.padding()).unwrap_or(u32::MAX);
            for d in &mut diags {
                if d.span.file == wrapper_file {
                    // The wrapper is no function the user wrote.
                    if d.message.starts_with("this function returns no value") {
                        d.message = "`return` in an input takes no value".to_string();
                    }
                    let lo = w.map(d.span.lo);
                    let hi = w.map(d.span.hi);
                    let (lo, hi) = match (lo, hi) {
                        (Some(lo), Some(hi)) => (lo, hi),
                        (Some(lo), None) => (lo, end),
                        (None, _) if (d.span.lo as usize) < w.padding() + w.header.len() => {
                            (start, start)
                        }
                        (None, _) => (end, end),
                    };
                    d.span.lo = lo;
                    d.span.hi = hi;
                }
                d.labels.retain_mut(|(span, _)| {
                    if span.file != wrapper_file {
                        return true;
                    }
                    match (w.map(span.lo), w.map(span.hi)) {
                        (Some(lo), Some(hi)) => {
                            span.lo = lo;
                            span.hi = hi;
                            true
                        }
                        _ => false,
                    }
                });
            }
            sources.files[wrapper_file.0 as usize] =
                wo_compiler::SourceFile::new(w.file, w.shown());
        }
        // A declaration that uses a session variable: only the inputs' code sees them
        // (`let counter = 0`, then `fn bump() { counter += 1 }`).
        for d in &mut diags {
            if d.span.file == wrapper_file {
                continue;
            }
            let Some(name) = d
                .message
                .strip_prefix("unknown variable `")
                .and_then(|m| m.split('`').next())
                .map(str::to_string)
            else {
                continue;
            };
            if self.vars.iter().any(|v| v.name == *name) {
                // "declare it with `let`" would say what was done already, and a
                // near name is not what was meant.
                d.message = format!("unknown variable `{name}`");
                d.notes.retain(|n| !n.starts_with("declare it with"));
                d.notes.push(format!(
                    "`{name}` is a variable of this session: the code of an input sees it, a function, a constant or a class does not; pass it as a parameter (`fn f({name}: …)`), or keep what must last in a table"
                ));
            }
        }
        // What is typed has no top of the file: a module is made available by an
        // input of its own.
        for d in &mut diags {
            let typed = sources
                .files
                .get(d.span.file.0 as usize)
                .is_some_and(|f| f.name == REPL_FILE);
            if let Some(at) = d.message.find(" at the top of the file").filter(|_| typed) {
                d.message.truncate(at);
                d.message.push_str(": type it as an input of its own first");
            }
        }
        // A call of a function that waits for others (`even`, before `odd`).
        for d in &mut diags {
            let Some(name) = unknown_function(d) else {
                continue;
            };
            if let Some((c, names)) = self.waiting.iter().find(|(c, _)| c.key == name) {
                let note = format!(
                    "`{name}` ({}:{}) calls {}, not declared yet: it is declared with {}",
                    c.file,
                    c.line,
                    names.join(", "),
                    if names.len() == 1 { "it" } else { "them" }
                );
                d.notes = vec![note];
            }
        }
        // A class declared from the data directory has no field defaults (the
        // directory does not keep them): say so where one is missed.
        for d in &mut diags {
            // (One field or several: helper-102 left out two, and the note did not
            // come.)
            let Some(class) = d
                .message
                .strip_prefix("missing field")
                .and_then(|m| m.rsplit_once(" in `"))
                .and_then(|(_, rest)| rest.strip_suffix("` literal"))
            else {
                continue;
            };
            if self
                .chunks
                .iter()
                .any(|c| c.key == class && c.file == STORED_FILE)
            {
                let note = format!(
                    "`{class}` was declared from the data directory, which keeps no field defaults: if the program gave this field one, declare the class again with it (or `.load` the program)"
                );
                d.notes.push(note);
            }
        }
        sources.sort(&mut diags);
        (sources, diags)
    }

    /// Places the items of one file's declarations (from `file`, starting at `line`)
    /// in `p.chunks` (each replaces the one of the same name or stored table, or is
    /// added); `false` (reported) when the text does not parse, declares a table of
    /// the session again as a plain class, or declares a name this input declared.
    fn place_items(text: &str, file: &str, line: usize, p: &mut Placing) -> bool {
        let Placing {
            chunks,
            replaced,
            renamed,
            new_chunks,
        } = p;
        // A declaration that does not parse is reported whole: the parser's recovery
        // may leave no item at all (`fn f() -> { … }`), and the input must not pass
        // in silence.
        let src = placed(line, 0, text);
        let (_, diags) = wo_compiler::parse(&src, FileId(0));
        if !diags.is_empty() {
            let mut sources = SourceMap::default();
            sources.add(file, src);
            say_part!("{}", render_all(&sources, &diags));
            return false;
        }
        let items = split_items(text);
        // (The items come in order: each line count goes on from the last, or a
        // `.load` of 16,000 functions read the file 16,000 times.)
        let mut counted = (0, line);
        for (i, (start, key, table)) in items.iter().enumerate() {
            let (l, c) = line_col_of(text, *start, &mut counted);
            let end = items.get(i + 1).map_or(text.len(), |next| next.0);
            let chunk = Chunk {
                key: key.clone(),
                table: table.clone(),
                file: file.to_string(),
                line: l,
                col: c,
                text: text[*start..end].to_string(),
            };
            let at = chunks.iter().position(|old| {
                &old.key == key || (table.is_some() && old.table.is_some() && &old.table == table)
            });
            // A table of the session declared again as a plain class: the session
            // keeps its tables (their rows are in it) until it ends.
            if let Some(old) = at.map(|i| &chunks[i]).filter(|o| o.table.is_some()) {
                if table.is_none() {
                    // At its `class` (the item's text begins with its comments).
                    let at = start + text[*start..end].find(&format!("class {key}")).unwrap_or(0);
                    let lo = line.saturating_sub(1) + at;
                    let first_line = text[at..].find('\n').unwrap_or(text.len() - at);
                    let span = Span {
                        file: FileId(0),
                        lo: u32::try_from(lo).unwrap_or(u32::MAX),
                        hi: u32::try_from(lo + first_line).unwrap_or(u32::MAX),
                    };
                    let d = Diagnostic::error(
                        "table",
                        span,
                        format!("`{key}` is a table of this session, and stays one"),
                    )
                    .with_note(format!(
                        "a session cannot drop a table ({}:{}); declare the class with `@table` again (the same stored name), or give this one another name",
                        old.file, old.line
                    ));
                    let mut sources = SourceMap::default();
                    sources.add(file, src.clone());
                    say_part!("{}", render_all(&sources, &[d]));
                    return false;
                }
            }
            // Declared twice in this one input (two files of a directory program, or
            // one file): refused, as `wo run` refuses it (helper-107: the last one
            // silently won).
            if let Some(i) = at.filter(|i| new_chunks.contains(i)) {
                let first = &chunks[i];
                let what = if &first.key == key {
                    format!("`{key}` is declared twice")
                } else {
                    format!("`{}` and `{key}` are stored as the same table", first.key)
                };
                say!(
                    "error: {what}: {}:{} and {file}:{l}; nothing was declared",
                    first.file,
                    first.line
                );
                return false;
            }
            match at {
                Some(i) => {
                    replaced.push(chunks[i].key.clone());
                    if chunks[i].key != chunk.key && chunks[i].table.is_some() {
                        renamed.push((chunks[i].key.clone(), chunk.key.clone()));
                    }
                    chunks[i] = chunk;
                    new_chunks.push(i);
                }
                None => {
                    new_chunks.push(chunks.len());
                    chunks.push(chunk);
                }
            }
        }
        true
    }

    /// One declaration input (from `file`, starting at `line`): each item replaces the
    /// one of the same name (or the same stored table), or is added.
    pub fn declare(&mut self, text: &str, file: &str, line: usize) -> Outcome {
        self.declare_all(&[(text, file, line)])
    }

    /// The declarations of several files as one input (a directory program's files,
    /// `wo repl DIR`): they compile together, so a file may use what another declares,
    /// as in `wo run DIR`. Each item keeps its file and line for messages.
    pub fn declare_all(&mut self, files: &[(&str, &str, usize)]) -> Outcome {
        let mut placing = Placing {
            chunks: self.chunks.clone(),
            replaced: Vec::new(),
            renamed: Vec::new(),
            new_chunks: Vec::new(),
        };
        for &(text, file, line) in files {
            if !Session::place_items(text, file, line, &mut placing) {
                return Outcome::Failed;
            }
        }
        let Placing {
            mut chunks,
            replaced,
            renamed,
            mut new_chunks,
        } = placing;
        // The functions waiting from earlier inputs are tried with this one (unless
        // it declares them again).
        let mut waited: Vec<usize> = Vec::new();
        for (c, _) in &self.waiting {
            if !chunks.iter().any(|old| old.key == c.key) {
                waited.push(chunks.len());
                chunks.push(c.clone());
            }
        }
        // Functions (of this input, or waiting) whose only errors are calls of
        // functions not declared yet: they wait for them.
        let mut waiting: Vec<(Chunk, Vec<String>)> = Vec::new();
        // Functions that waited and do not compile now that what they called is
        // declared: dropped, with why.
        let mut gave_up: Vec<(Chunk, String)> = Vec::new();
        // The classes made from the data directory refer to the table by the class
        // name they gave it (`b: ref A`): they follow it to the user's name (`class
        // Alpha` with `@table(name: "a")`), or nothing that refers to it compiles.
        for c in chunks.iter_mut().filter(|c| c.file == STORED_FILE) {
            for (old, new) in &renamed {
                c.text = rename_ref(&c.text, old, new);
            }
        }
        // A function declared before that no longer compiles with this input (it
        // calls a function whose parameters changed) is dropped, and said to be, so
        // that a signature can change: the callers are declared again after it.
        let mut dropped: Vec<(Chunk, String)> = Vec::new();
        let mut first_failure = None;
        let built = loop {
            let (sources, diags) = match self.build(&chunks, None) {
                Ok(b) => break b,
                Err(e) => e,
            };
            let errors: Vec<&Diagnostic> = diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            let mut outcomes = waiting_functions(&chunks, &new_chunks, &waited, &replaced, &errors);
            if !outcomes.is_empty() {
                // The last first, so that taking one leaves the others' positions
                // true; then in the order they were declared.
                outcomes.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
                let mut taken = Vec::new();
                for (i, what) in outcomes {
                    let what = match what {
                        Waits::For(names) => Ok(names),
                        Waits::Fails(at, why) => {
                            let f = &sources.files[i];
                            let (l, col) = f.line_col(at);
                            Err(format!("{}:{l}:{col}: {why}", f.name))
                        }
                    };
                    let c = take_chunk(&mut chunks, i, [&mut new_chunks, &mut waited]);
                    taken.push((c, what));
                }
                for (c, what) in taken.into_iter().rev() {
                    match what {
                        Ok(names) => waiting.push((c, names)),
                        Err(why) => gave_up.push((c, why)),
                    }
                }
                continue;
            }
            let old_fn = |d: &Diagnostic| {
                let i = d.span.file.0 as usize;
                !new_chunks.contains(&i)
                    && chunks
                        .get(i)
                        .is_some_and(|c| c.text.trim_start().starts_with("fn "))
            };
            if errors.is_empty() || !errors.iter().all(|d| old_fn(d)) {
                // What blocks it: declarations made before that are not functions.
                let mut broken: Vec<String> = Vec::new();
                let mut in_input = false;
                for d in &errors {
                    let i = d.span.file.0 as usize;
                    match chunks.get(i).filter(|_| !new_chunks.contains(&i)) {
                        Some(c) => {
                            let name = format!("`{}` ({}:{})", c.key, c.file, c.line);
                            if !broken.contains(&name) {
                                broken.push(name);
                            }
                        }
                        None => in_input = true,
                    }
                }
                let names = |cs: &[(Chunk, String)]| {
                    cs.iter()
                        .map(|(c, _)| format!("`{}` ({}:{})", c.key, c.file, c.line))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                if in_input {
                    // The input's own errors, as they are with the functions dropped.
                    say_part!("{}", render_all(&sources, &diags));
                    if !dropped.is_empty() {
                        let (verb, them) = if dropped.len() == 1 {
                            ("does", "it")
                        } else {
                            ("do", "them")
                        };
                        say!(
                            "note: nothing was declared: {} {verb} not compile with this input and would be dropped, but the input uses {them}",
                            names(&dropped)
                        );
                    }
                    return Outcome::Failed;
                }
                // Reported as the input first failed, before any function was dropped.
                let (sources, diags) = first_failure.unwrap_or((sources, diags));
                say_part!("{}", render_all(&sources, &diags));
                if !broken.is_empty() {
                    let after = if dropped.is_empty() {
                        String::new()
                    } else {
                        let (which, is) = if dropped.len() == 1 {
                            ("does", "is")
                        } else {
                            ("do", "are")
                        };
                        format!(" once {}, which {which} not, {is} dropped", names(&dropped))
                    };
                    say!(
                        "note: nothing was declared: what was declared before ({}) does not compile with it{after}; a constant or a class is not dropped for it: change it first, or give the new declaration another name",
                        broken.join(", ")
                    );
                }
                return Outcome::Failed;
            }
            let mut broken: Vec<usize> = errors.iter().map(|d| d.span.file.0 as usize).collect();
            broken.sort_unstable();
            broken.dedup();
            let mut round = Vec::new();
            for &i in broken.iter().rev() {
                let why = errors
                    .iter()
                    .find(|d| d.span.file.0 as usize == i)
                    .map(|d| {
                        let f = &sources.files[i];
                        let (l, c) = f.line_col(d.span.lo);
                        format!("{}:{l}:{c}: {}", f.name, d.message)
                    })
                    .unwrap_or_default();
                round.push((
                    take_chunk(&mut chunks, i, [&mut new_chunks, &mut waited]),
                    why,
                ));
            }
            // In the order they were declared.
            dropped.extend(round.into_iter().rev());
            first_failure.get_or_insert((sources, diags));
        };
        let saved = self.globals.clone();
        let res = self.run(&built, true, Vec::new());
        match res {
            RunEnd::Done(_) => {
                for &i in &waited {
                    let c = &chunks[i];
                    say!(
                        "note: `{}` ({}:{}) is declared now: what it waited for is declared",
                        c.key,
                        c.file,
                        c.line
                    );
                }
                for (c, names) in &waiting {
                    let same = |(w, n): &(Chunk, Vec<String>)| {
                        w.key == c.key && w.text == c.text && n == names
                    };
                    if self.waiting.iter().any(same) {
                        continue; // said when it began to wait
                    }
                    let them = names.join(", ");
                    say!(
                        "note: `{}` calls {them}, not declared yet: it is kept, and declared with {}",
                        c.key,
                        if names.len() == 1 { "it" } else { "them" }
                    );
                }
                for (c, why) in &gave_up {
                    say!(
                        "note: `{}` ({}:{}), which was waiting, is dropped: it does not compile with this input ({why}); declare it again",
                        c.key,
                        c.file,
                        c.line
                    );
                }
                self.waiting = waiting;
                self.chunks = chunks;
                for (c, why) in &dropped {
                    say!(
                        "note: `{}` ({}:{}) is dropped: it does not compile with this input ({why}); declare it again",
                        c.key,
                        c.file,
                        c.line
                    );
                }
                self.forget_vars_of(&replaced, &built.program);
                self.update_names(&built.program);
                Outcome::Ok
            }
            RunEnd::Failed => {
                self.globals = saved;
                Outcome::Failed
            }
            RunEnd::Interrupted => {
                self.globals = saved;
                Outcome::Interrupted
            }
        }
    }

    /// Drops the variables whose type names a class that was just redefined (their
    /// values have the old layout), or a class whose objects can hold one (a `W`
    /// with a field `p: P`, through lists, maps, `?` and tasks too: helper-94's old
    /// `P` inside a kept `W` read a field it did not have), saying so.
    fn forget_vars_of(&mut self, replaced: &[String], program: &tir::Program) {
        let mut affected: Vec<bool> = program
            .classes
            .iter()
            .map(|c| replaced.contains(&c.name))
            .collect();
        if !affected.contains(&true) {
            return;
        }
        fn holds(t: &tir::Ty, affected: &[bool]) -> bool {
            match t {
                tir::Ty::Class(c) => affected.get(*c).copied().unwrap_or(false),
                tir::Ty::Nullable(t) | tir::Ty::List(t) | tir::Ty::Task(t) => holds(t, affected),
                tir::Ty::Map(k, v) => holds(k, affected) || holds(v, affected),
                _ => false,
            }
        }
        // Until nothing more is added: each round adds at least one class, or ends.
        loop {
            let more: Vec<usize> = program
                .classes
                .iter()
                .enumerate()
                .filter(|(i, c)| !affected[*i] && c.fields.iter().any(|f| holds(&f.ty, &affected)))
                .map(|(i, _)| i)
                .collect();
            if more.is_empty() {
                break;
            }
            for i in more {
                affected[i] = true;
            }
        }
        let classes: Vec<&String> = program
            .classes
            .iter()
            .zip(&affected)
            .filter(|(_, &a)| a)
            .map(|(c, _)| &c.name)
            .collect();
        self.vars.retain(|v| {
            let uses =
                v.ty.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| classes.iter().any(|c| c.as_str() == w));
            if uses {
                let direct =
                    v.ty.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| replaced.iter().any(|c| c.as_str() == w));
                if direct {
                    say!(
                        "note: `{}` is forgotten: its type `{}` was redefined",
                        v.name,
                        v.ty
                    );
                } else {
                    say!(
                        "note: `{}` is forgotten: its type `{}` holds objects of a class that was redefined",
                        v.name,
                        v.ty
                    );
                }
            }
            !uses
        });
    }

    /// An input that the end of the input cut short (a declaration or statement still
    /// open): reported as an error at its last open bracket, or where it ends, and not
    /// run. Without this a declaration cut short was dropped without a word.
    pub fn cut_short(&mut self, text: &str, file: &str, line: usize) -> Outcome {
        let (at, message) = match wo_compiler::repl_input::unclosed(text) {
            Some((at, bracket)) => (
                at,
                format!("the input ended before this `{bracket}` was closed"),
            ),
            None => {
                let end = wo_compiler::repl_input::code_end(text);
                (
                    end..end,
                    "the input ended in the middle of a statement".to_string(),
                )
            }
        };
        Self::syntax_error(text, file, line, at, message)
    }

    /// Reports a syntax error at `at` (a byte range of `text`, an input that starts at
    /// `line`) without compiling the input.
    pub fn syntax_error(
        text: &str,
        file: &str,
        line: usize,
        at: std::ops::Range<usize>,
        message: String,
    ) -> Outcome {
        let src = placed(line, 0, text);
        let base = src.len() - text.len();
        let mut sources = SourceMap::default();
        let id = sources.add(file, src);
        let span = Span::new(id, base + at.start, base + at.end);
        say_part!(
            "{}",
            render_all(&sources, &[Diagnostic::error("syntax", span, message)])
        );
        Outcome::Failed
    }

    /// One statement input: runs it, keeps its variables, prints an expression's value.
    pub fn statements(&mut self, text: &str, file: &str, line: usize) -> Outcome {
        let params: Vec<String> = self
            .vars
            .iter()
            .map(|v| format!("{}: {}", v.name, v.ty))
            .collect();
        let header = format!("fn {WRAPPER}({}) {{ if true {{ ", params.join(", "));
        let body = text.trim_end();
        let plain = Wrapped {
            header: header.clone(),
            body,
            file,
            line,
        };
        // An expression alone prints its value (unless it has none: a call of a
        // function without a result).
        let mut built = None;
        let mut value = false;
        if is_expression(body) {
            let mut w = Wrapped {
                header: format!("{header}let {VALUE} = "),
                body,
                file,
                line,
            };
            let mut res = self.build(&self.chunks, Some(&w));
            // `nil` alone (an expression of no other type) is shown as it is: typed
            // `?Int` here, so the user never hears of the wrapper's variable.
            if let Err((_, diags)) = &res {
                if diags.iter().any(|d| {
                    d.message
                        .starts_with(&format!("cannot infer the type of `{VALUE}` from `nil`"))
                }) {
                    w.header = format!("{header}let {VALUE}: ?Int = ");
                    res = self.build(&self.chunks, Some(&w));
                }
            }
            match res {
                Ok(b) => {
                    built = Some((b, w));
                    value = true;
                }
                Err((sources, diags)) => {
                    // (Also `try f() catch (e) g()` of two sides without a value,
                    // whose message says more after the same words.)
                    if !diags
                        .iter()
                        .any(|d| d.message.starts_with("this expression has no value"))
                    {
                        say_part!("{}", render_all(&sources, &diags));
                        return Outcome::Failed;
                    }
                }
            }
        }
        let (built, wrapped) = match built {
            Some(b) => b,
            None => match self.build(&self.chunks, Some(&plain)) {
                Ok(b) => (b, plain),
                Err((sources, diags)) => {
                    say_part!("{}", render_all(&sources, &diags));
                    return Outcome::Failed;
                }
            },
        };
        let lets = new_lets(&built, &wrapped);
        let regs: Vec<Value> = self.vars.iter().map(|v| v.value.clone()).collect();
        let n_params = regs.len();
        let header_chars = wrapped.header.chars().count();
        let res = self.run_input(&built, regs, line, header_chars);
        let regs = match res {
            RunEnd::Done(regs) => regs,
            RunEnd::Failed => return Outcome::Failed,
            RunEnd::Interrupted => return Outcome::Interrupted,
        };
        for (v, r) in self.vars.iter_mut().zip(&regs) {
            v.value = r.clone();
        }
        let mut shown = None;
        for (k, (name, ty)) in lets.into_iter().enumerate() {
            let r = regs.get(n_params + k).cloned().unwrap_or(Value::Nil);
            if value && k == 0 {
                shown = Some(r);
                continue;
            }
            self.vars.retain(|v| v.name != name);
            self.vars.push(Var { name, ty, value: r });
        }
        if let Some(v) = shown {
            let mut s = String::new();
            wo_vm::write_value(&mut s, &v, &built.image.classes, true);
            s.push('\n');
            let _ = self.stdout.write_all(s.as_bytes());
            crate::exit::note_output(self.stdout.flush());
        }
        self.update_names(&built.program);
        Outcome::Ok
    }

    /// Runs an input's wrapper, its trap frames shown at the user's positions.
    fn run_input(
        &mut self,
        built: &Built,
        regs: Vec<Value>,
        line: usize,
        header_chars: usize,
    ) -> RunEnd {
        let fix = move |stack: &mut Vec<StackFrame>| {
            for f in stack.iter_mut() {
                if &*f.function == WRAPPER {
                    f.function = "input".into();
                    if f.line as usize == line {
                        f.col = f
                            .col
                            .saturating_sub(u32::try_from(header_chars).unwrap_or(0))
                            .max(1);
                    }
                }
            }
        };
        self.run_with(built, false, regs, &fix)
    }

    fn run(&mut self, built: &Built, init: bool, regs: Vec<Value>) -> RunEnd {
        self.run_with(built, init, regs, &|_| {})
    }

    /// Runs the image's constants (`init`) or the wrapper on `regs`, with the host,
    /// globals, database and fibers the session carries.
    fn run_with(
        &mut self,
        built: &Built,
        init: bool,
        regs: Vec<Value>,
        fix: &dyn Fn(&mut Vec<StackFrame>),
    ) -> RunEnd {
        let host = match self.host.take() {
            Some(h) => h,
            None => self.new_host(&built.image),
        };
        let natives = |name: &str| wo_stdlib::lookup(name);
        let mut vm = match Vm::new(&built.image, &natives, host) {
            Ok(vm) => vm,
            Err(e) => {
                say!("wo: internal error: the session does not link: {e}");
                return RunEnd::Failed;
            }
        };
        vm.set_interrupt(self.interrupt.clone());
        if let Some(fibers) = self.fibers.take() {
            vm.adopt_fibers(fibers);
        }
        let database = self.database.take();
        let adopted = match database {
            Some(db) => vm.adopt(std::mem::take(&mut self.globals), db),
            None => Ok(()),
        };
        let end = match adopted {
            Err(e) => {
                say!("error: {e}");
                RunEnd::Failed
            }
            Ok(()) => {
                // (A Ctrl-C that came while the input was read or compiled stops it
                // here, at once: the flag is lowered only after a run.)
                let func = if init {
                    built.image.init.map(|f| f.0)
                } else {
                    Some(built.func)
                };
                match func {
                    None => RunEnd::Done(Vec::new()),
                    Some(func) => self.finish(&mut vm, func, regs, fix),
                }
            }
        };
        // A Ctrl-C that came after the run ended is no second one (which would end
        // the process).
        self.interrupt.store(false, Ordering::Relaxed);
        crate::exit::note_output(self.stdout.flush());
        self.report_task_traps(&vm, fix);
        if matches!(end, RunEnd::Interrupted) {
            // The fibers the input left running stop with it; their ids are not
            // given again (a task handle kept from before must not name a new fiber,
            // nor a new task's trap pass as one already reported).
            self.fibers = Some(vm.take_fibers().stopped());
            say!("interrupted");
        } else {
            self.fibers = Some(vm.take_fibers());
        }
        let (host, globals, database) = vm.into_parts();
        self.host = Some(host);
        self.globals = globals;
        self.database = Some(database);
        end
    }

    /// Reports each task that trapped and is not joined, once, after the input in which
    /// it trapped (`wo run` reports such a task when `main` returns; a session has no
    /// end to wait for). A later `join` still raises the trap.
    fn report_task_traps(&mut self, vm: &Vm<'_>, fix: &dyn Fn(&mut Vec<StackFrame>)) {
        for (id, trap, mut stack) in vm.unjoined_task_traps() {
            if !self.reported_tasks.insert(id) {
                continue;
            }
            crate::exit::note_output(self.stdout.flush());
            say!("wo: a task trapped and is not joined (yet):");
            fix(&mut stack);
            report_trap(&trap, &stack);
            self.task_traps += 1;
        }
    }

    /// Runs `func` on `regs` to its end: the registers afterwards, or how it failed.
    fn finish(
        &mut self,
        vm: &mut Vm<'_>,
        func: u32,
        regs: Vec<Value>,
        fix: &dyn Fn(&mut Vec<StackFrame>),
    ) -> RunEnd {
        let mut fiber = match vm.fiber_at(func, 0, regs) {
            Ok(f) => f,
            Err(e) => {
                say!("wo: internal error: {e}");
                return RunEnd::Failed;
            }
        };
        match vm.run_to_end(&mut fiber) {
            Status::Done(_) => RunEnd::Done(fiber.into_registers()),
            Status::Trap { trap, mut stack } => {
                crate::exit::note_output(self.stdout.flush());
                fix(&mut stack);
                report_trap(&trap, &stack);
                RunEnd::Failed
            }
            Status::Exit(code) => {
                crate::exit::note_output(self.stdout.flush());
                std::process::exit(code);
            }
            Status::Fault(msg) => {
                say!("wo: {msg}");
                RunEnd::Failed
            }
            Status::Interrupted => RunEnd::Interrupted,
            Status::Yield | Status::Wait(_) => RunEnd::Failed,
        }
    }

    fn update_names(&mut self, program: &tir::Program) {
        let mut names = self.names.borrow_mut();
        names.vars = self
            .vars
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone()))
            .collect();
        names.decls = self
            .chunks
            .iter()
            .filter(|c| !c.key.starts_with("use "))
            .map(|c| c.key.clone())
            .collect();
        names.modules = self
            .chunks
            .iter()
            .filter_map(|c| c.key.strip_prefix("use ").map(str::to_string))
            .collect();
        names.classes = program
            .classes
            .iter()
            .map(|c| {
                let mut members: Vec<String> = c.fields.iter().map(|f| f.name.clone()).collect();
                members.extend(c.methods.iter().map(|(m, _)| m.clone()));
                if c.table.is_some() {
                    members.push("id".to_string());
                }
                (c.name.clone(), members)
            })
            .collect();
    }

    /// The stored table names with their class and row count, in table order.
    pub fn tables(&self) -> Vec<(String, Option<String>, usize)> {
        let Some(db) = &self.database else {
            return Vec::new();
        };
        let engine = db.db();
        engine
            .schema()
            .tables
            .iter()
            .enumerate()
            .map(|(t, def)| {
                let class = self
                    .chunks
                    .iter()
                    .find(|c| c.table.as_deref() == Some(def.name.as_str()))
                    .map(|c| c.key.clone());
                let n = u32::try_from(t).map_or(0, |t| engine.len(t));
                (def.name.clone(), class, n)
            })
            .collect()
    }
}

enum RunEnd {
    Done(Vec<Value>),
    Failed,
    Interrupted,
}

/// Removes chunk `i`, keeping the lists of chunk positions true: `i` leaves them, and
/// the positions after it move down one.
fn take_chunk(chunks: &mut Vec<Chunk>, i: usize, lists: [&mut Vec<usize>; 2]) -> Chunk {
    for list in lists {
        list.retain(|&n| n != i);
        for n in list.iter_mut() {
            if *n > i {
                *n -= 1;
            }
        }
    }
    chunks.remove(i)
}

/// What becomes of a function that does not compile in a declaration input (of the
/// input, or waiting from an earlier one).
enum Waits {
    /// It fails only because it calls functions not declared yet, shown as `` `odd` ``
    /// (with a near name when there is one): it waits for them.
    For(Vec<String>),
    /// It waited, and fails for another reason: where that error is in the chunk's
    /// file, and its message. It is dropped.
    Fails(u32, String),
}

/// The name in an "unknown function `NAME`" diagnostic.
fn unknown_function(d: &Diagnostic) -> Option<&str> {
    if d.code != "name" {
        return None;
    }
    d.message
        .strip_prefix("unknown function `")
        .and_then(|m| m.strip_suffix('`'))
}

/// Among the chunks of a declaration input (`new_chunks`) and those waiting from
/// before (`waited`), the functions that wait or are dropped ([`Waits`]), by
/// position. A function that replaces a declared one (`replaced`) never waits: the
/// old one would stay in use.
fn waiting_functions(
    chunks: &[Chunk],
    new_chunks: &[usize],
    waited: &[usize],
    replaced: &[String],
    errors: &[&Diagnostic],
) -> Vec<(usize, Waits)> {
    let mut out = Vec::new();
    for &i in new_chunks.iter().chain(waited) {
        let c = &chunks[i];
        if !c.text.trim_start().starts_with("fn ") || replaced.contains(&c.key) {
            continue;
        }
        let mine: Vec<&&Diagnostic> = errors
            .iter()
            .filter(|d| d.span.file.0 as usize == i)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for d in &mine {
            match unknown_function(d) {
                Some(n) => {
                    // A near name may be what was meant (`pirnt`).
                    let guess = d
                        .notes
                        .iter()
                        .find(|t| t.starts_with("did you mean"))
                        .map_or(String::new(), |t| format!(" ({t})"));
                    let shown = format!("`{n}`{guess}");
                    if !names.contains(&shown) {
                        names.push(shown);
                    }
                }
                None => {
                    names.clear();
                    break;
                }
            }
        }
        if !names.is_empty() {
            out.push((i, Waits::For(names)));
        } else if waited.contains(&i) {
            // Why it fails: an error other than the calls it waited for.
            let why = mine
                .iter()
                .find(|d| unknown_function(d).is_none())
                .unwrap_or(&mine[0]);
            out.push((i, Waits::Fails(why.span.lo, why.message.clone())));
        }
    }
    out
}

/// A class made from the data directory (`schema::declarations`) with its `ref OLD`
/// columns made `ref NEW`.
fn rename_ref(text: &str, old: &str, new: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let replaced = [": ref ", ": ?ref "].iter().find_map(|kw| {
            let at = line.find(kw)? + kw.len();
            let rest = &line[at..];
            let tail = rest.strip_prefix(old)?;
            tail.starts_with([' ', '\n'])
                .then(|| format!("{}{new}{tail}", &line[..at]))
        });
        out.push_str(replaced.as_deref().unwrap_or(line));
    }
    out
}

/// Whether a statement input is a lone expression (its value is printed). Not a
/// lone `spawn f()`: its value would print as `task`, which tells nothing
/// (helper-105); a task kept in a variable prints when asked for.
fn is_expression(body: &str) -> bool {
    let src = format!("{}{body}\n}}\n", wo_compiler::repl_input::PARSE_HEADER);
    let (m, d) = wo_compiler::parse(&src, FileId(0));
    if !d.is_empty() {
        return false;
    }
    match m.items.first() {
        Some(ast::Item::Fn(f)) => {
            f.body.stmts.len() == 1
                && matches!(&f.body.stmts[0].kind,
                    StmtKind::Expr(e) if !matches!(e.kind, ExprKind::Spawn { .. }))
        }
        _ => false,
    }
}

/// The variables an input declares at its top level, in order, with their types as
/// source (the written annotation, else the inferred type).
fn new_lets(built: &Built, w: &Wrapped<'_>) -> Vec<(String, String)> {
    let Some(func) = built.program.funcs.get(built.func as usize) else {
        return Vec::new();
    };
    let block = match func.body.first().map(|s| &s.kind) {
        Some(tir::StmtKind::If { then, .. }) => then,
        _ => &func.body,
    };
    let class_names: Vec<String> = built
        .program
        .classes
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let inferred: Vec<String> = block
        .iter()
        .filter_map(|s| match &s.kind {
            tir::StmtKind::Let(_, e) => Some(e.ty.display(&class_names).to_string()),
            _ => None,
        })
        .collect();
    // The names and written types come from the syntax tree of the same source.
    let src = w.source();
    let (m, _) = wo_compiler::parse(&src, FileId(0));
    let Some(ast::Item::Fn(f)) = m.items.first() else {
        return Vec::new();
    };
    let stmts = match f.body.stmts.first().map(|s| &s.kind) {
        Some(StmtKind::If { then, .. }) => &then.stmts,
        _ => return Vec::new(),
    };
    let lets: Vec<(String, Option<String>)> = stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Let { name, ty, .. } => Some((
                name.name.clone(),
                ty.as_ref()
                    .and_then(|t| src.get(t.span.lo as usize..t.span.hi as usize))
                    .map(str::to_string),
            )),
            _ => None,
        })
        .collect();
    if lets.len() != inferred.len() {
        return Vec::new();
    }
    lets.into_iter()
        .zip(inferred)
        .map(|((name, written), inferred)| (name, written.unwrap_or(inferred)))
        .collect()
}

/// The items of a declaration input: where each starts, its key and its stored table.
fn split_items(text: &str) -> Vec<(usize, String, Option<String>)> {
    let (m, _) = wo_compiler::parse(text, FileId(0));
    let mut out = Vec::new();
    for item in &m.items {
        let (start, key, table) = match item {
            ast::Item::Use(id) => {
                let lo = id.span.lo as usize;
                let start = text[..lo].rfind("use").unwrap_or(lo);
                (start, format!("use {}", id.name), None)
            }
            ast::Item::Const { name, span, .. } => (span.lo as usize, name.name.clone(), None),
            ast::Item::Fn(f) => (f.span.lo as usize, f.name.name.clone(), None),
            ast::Item::Class(c) => {
                let start = c
                    .annots
                    .iter()
                    .map(|a| a.span.lo)
                    .chain(std::iter::once(c.span.lo))
                    .min()
                    .unwrap_or(c.span.lo) as usize;
                (start, c.name.name.clone(), stored_name(c))
            }
        };
        out.push((start, key, table));
    }
    if let Some(first) = out.first_mut() {
        // Comments before the first item go with it.
        first.0 = 0;
    }
    out
}

/// The stored name of a `@table` class: its `name:` argument, else the class name.
fn stored_name(c: &ast::ClassDecl) -> Option<String> {
    let table = c.annots.iter().find(|a| a.name.name == "table")?;
    let named = table.args.iter().flatten().find(|a| a.name.name == "name");
    if let Some(arg) = named {
        if let ExprKind::Text(parts) = &arg.value.kind {
            if let [TextPart::Lit(s)] = parts.as_slice() {
                return Some(s.clone());
            }
        }
    }
    Some(c.name.name.clone())
}

/// The 1-based line and byte column of `offset` in `text`; `counted` is an offset
/// and its line, where counting goes on (the text's start and first line at first).
fn line_col_of(text: &str, offset: usize, counted: &mut (usize, usize)) -> (usize, usize) {
    let (from, line) = *counted;
    let (from, line) = if from <= offset {
        (from, line)
    } else {
        (0, line - text[..from].matches('\n').count())
    };
    let l = line
        + text
            .get(from..offset)
            .map_or(0, |s| s.matches('\n').count());
    *counted = (offset, l);
    let c = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1);
    (l, c)
}
