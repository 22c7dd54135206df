//! `wo repl [--data DIR]`: an interactive session (LANGUAGE.md §12). Declarations
//! (`fn`, `class`, `const`, `use`, `@table`) accumulate; statements run once each and
//! expressions print their value.
//!
//! How a session keeps its state without running anything twice: the session is one
//! program whose `main` grows by one statement per input. Each input is compiled
//! with everything before it; code generation is deterministic, so the statements
//! already run compile to the same code and the same registers, and the new
//! statement's code starts where the previous `main` ended. The VM then continues
//! `main` at that point with the registers the last input left (its locals), the
//! global slots and the database carried over from the previous image. An input that
//! does not compile, or traps, is forgotten and leaves the session as it was.

use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use rustyline::error::ReadlineError;
use wo_bytecode::Image;
use wo_compiler::SourceMap;
use wo_vm::{Database, Host, Status, Value, Vm};

use crate::commands::{clock_seed, data_dir, replay_progress, SharedStdout};
use crate::exit::Failure;
use crate::render::{render_all, report_trap};

/// What a session carries from one input to the next.
struct Session {
    decls: String,
    body: Vec<String>,
    /// Where the next statement's code starts in `main`.
    next_pc: usize,
    /// The mnemonics of `main` so far, to check that recompiling kept its code.
    main_shape: Vec<&'static str>,
    regs: Vec<Value>,
    globals: Vec<Value>,
    database: Option<Database>,
    host: Option<Host>,
    stdout: SharedStdout,
    data: Option<PathBuf>,
    /// The fibers spawned by earlier inputs (they go on in the next one).
    fibers: Option<wo_vm::Fibers>,
}

/// Whether an input is a declaration rather than a statement.
fn is_declaration(input: &str) -> bool {
    let first = input.split_whitespace().next().unwrap_or("");
    matches!(first, "fn" | "class" | "const" | "use") || first.starts_with('@')
}

/// Whether every bracket and text literal opened in `text` is closed (a multi-line
/// input goes on until it is).
fn complete(text: &str) -> bool {
    let mut depth = 0i64;
    let mut in_text = false;
    let mut escaped = false;
    for line in text.lines() {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if in_text {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_text = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '-' if chars.peek() == Some(&'-') => break,
                '"' => in_text = true,
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
    }
    // An annotation alone on its line waits for the class it annotates.
    let annotation_only =
        text.trim_start().starts_with('@') && !text.split_whitespace().any(|w| w == "class");
    depth <= 0 && !in_text && !annotation_only
}

impl Session {
    fn source(&self, decls: &str, stmt: Option<&str>) -> String {
        let mut src = String::new();
        src.push_str(decls);
        src.push_str("\nfn main() {\n");
        for s in &self.body {
            src.push_str(s);
            src.push('\n');
        }
        if let Some(s) = stmt {
            src.push_str(s);
            src.push('\n');
        }
        src.push_str("}\n");
        src
    }

    fn compile(
        &self,
        src: &str,
    ) -> Result<(Image, SourceMap), (SourceMap, Vec<wo_compiler::Diagnostic>)> {
        let mut sources = SourceMap::default();
        sources.add("repl", src);
        match wo_compiler::compile(&sources) {
            Ok(image) => Ok((image, sources)),
            Err(diags) => Err((sources, diags)),
        }
    }

    /// One input: a declaration, an expression to print, or a statement.
    fn eval(&mut self, input: &str) {
        let input = input.trim_end();
        if is_declaration(input) {
            let decls = format!("{}{input}\n", self.decls);
            let src = self.source(&decls, None);
            match self.compile(&src) {
                Ok((image, _)) => {
                    if self.run(&image, true) {
                        self.decls = decls;
                    }
                }
                Err((sources, diags)) => eprint!("{}", render_all(&sources, &diags)),
            }
            return;
        }
        // An expression prints its value; anything else runs as a statement.
        let shown = format!("print({input})");
        let candidates = [shown.as_str(), input];
        let mut first_error = None;
        for stmt in candidates {
            let src = self.source(&self.decls, Some(stmt));
            match self.compile(&src) {
                Ok((image, _)) => {
                    if self.run(&image, false) {
                        self.body.push(stmt.to_string());
                    }
                    return;
                }
                Err(e) => {
                    if stmt == input {
                        first_error = Some(e);
                    }
                }
            }
        }
        if let Some((sources, diags)) = first_error {
            eprint!("{}", render_all(&sources, &diags));
        }
    }

    /// Runs the new part of `main` (and, after a new declaration, the constants).
    /// Returns whether the input becomes part of the session.
    fn run(&mut self, image: &Image, declared: bool) -> bool {
        let Some(main) = image.functions.get(image.entry.index()) else {
            return false;
        };
        let shape: Vec<&'static str> = main.code.iter().map(|op| op.mnemonic()).collect();
        if shape.len() < self.next_pc || shape[..self.next_pc] != self.main_shape[..self.next_pc] {
            eprintln!(
                "wo: this input changes the code of earlier ones; restart the session to use it"
            );
            return false;
        }
        let host = match self.host.take() {
            Some(h) => h,
            None => Host {
                out: Box::new(self.stdout.clone()),
                err: Box::new(std::io::stderr()),
                classes: image.classes.clone().into(),
                rng: clock_seed(),
                started: Instant::now(),
            },
        };
        let natives = |name: &str| wo_stdlib::lookup(name);
        let mut vm = match Vm::new(image, &natives, host) {
            Ok(vm) => vm,
            Err(e) => {
                eprintln!("wo: internal error: the session does not link: {e}");
                return false;
            }
        };
        if let Some(fibers) = self.fibers.take() {
            vm.adopt_fibers(fibers);
        }
        match self.database.take() {
            Some(db) => {
                if let Err(e) = vm.adopt(std::mem::take(&mut self.globals), db) {
                    eprintln!("wo: {e}");
                    let (host, globals, database) = vm.into_parts();
                    self.host = Some(host);
                    self.globals = globals;
                    self.database = Some(database);
                    return false;
                }
            }
            None => {
                if let Some(dir) = &self.data {
                    let options = wo_vm::durable::Options {
                        progress: Some(replay_progress()),
                        ..wo_vm::durable::Options::default()
                    };
                    let mut out = self.stdout.clone();
                    let flush: Box<dyn FnMut()> = Box::new(move || {
                        let _ = out.flush();
                    });
                    if let Err(e) = vm.database_mut().open_data_dir(dir, options, Some(flush)) {
                        eprintln!("wo: {e}");
                        std::process::exit(i32::from(Failure::data(&e).status()));
                    }
                }
            }
        }
        let mut ok = true;
        if declared {
            if let Some(init) = image.init {
                ok = self.finish(&mut vm, init.0, 0, Vec::new()).is_some();
            }
        }
        if ok && !declared {
            let regs = self.regs.clone();
            match self.finish(&mut vm, image.entry.0, self.next_pc, regs) {
                Some(regs) => {
                    self.regs = regs;
                    self.next_pc = main.code.len().saturating_sub(1);
                    self.main_shape = shape.clone();
                }
                None => ok = false,
            }
        }
        if ok && declared {
            self.main_shape = shape;
        }
        let _ = self.stdout.flush();
        self.fibers = Some(vm.take_fibers());
        let (host, globals, database) = vm.into_parts();
        self.host = Some(host);
        self.globals = globals;
        self.database = Some(database);
        ok
    }

    /// Runs `func` from `pc` to its end; the registers afterwards, or `None` after a
    /// trap (reported) or a fault.
    fn finish(
        &mut self,
        vm: &mut Vm<'_>,
        func: u32,
        pc: usize,
        regs: Vec<Value>,
    ) -> Option<Vec<Value>> {
        let pc = u32::try_from(pc).ok()?;
        let mut fiber = match vm.fiber_at(func, pc, regs) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("wo: internal error: {e}");
                return None;
            }
        };
        match vm.run_to_end(&mut fiber) {
            Status::Done(_) => Some(fiber.into_registers()),
            Status::Trap { trap, stack } => {
                let _ = self.stdout.flush();
                report_trap(&trap, &stack);
                None
            }
            Status::Exit(code) => {
                let _ = self.stdout.flush();
                std::process::exit(code);
            }
            Status::Fault(msg) => {
                eprintln!("wo: {msg}");
                None
            }
            Status::Yield | Status::Wait(_) => None,
        }
    }
}

/// `wo repl [--data DIR]`.
pub fn repl(data: Option<PathBuf>) -> Result<(), Failure> {
    let mut session = Session {
        decls: String::new(),
        body: Vec::new(),
        next_pc: 0,
        main_shape: Vec::new(),
        regs: Vec::new(),
        globals: Vec::new(),
        database: None,
        host: None,
        stdout: SharedStdout(Rc::new(RefCell::new(BufWriter::new(std::io::stdout())))),
        data: data_dir(data),
        fibers: None,
    };
    let mut editor = rustyline::DefaultEditor::new().map_err(|e| {
        Failure::Internal(format!("internal error: cannot start the line editor: {e}"))
    })?;
    loop {
        let mut input = String::new();
        let mut prompt = "wo> ";
        loop {
            match editor.readline(prompt) {
                Ok(line) => {
                    input.push_str(&line);
                    input.push('\n');
                    if complete(&input) {
                        break;
                    }
                    prompt = "... ";
                }
                Err(ReadlineError::Interrupted) => {
                    input.clear();
                    break;
                }
                Err(ReadlineError::Eof) => {
                    if !input.trim().is_empty() {
                        session.eval(&input);
                    }
                    let _ = session.stdout.flush();
                    return Ok(());
                }
                Err(e) => {
                    return Err(Failure::Internal(format!(
                        "internal error: reading input: {e}"
                    )))
                }
            }
        }
        if input.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(input.trim_end());
        session.eval(&input);
    }
}
