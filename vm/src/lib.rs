//! `wo-vm`: loads verified images, links their builtins and runs them. Values, traps,
//! the stackless interpreter, the database boundary (rows, queries, transactions) and
//! the fiber scheduler (`sched.rs`).

pub mod database;
pub mod display;
pub mod gc;
pub mod interp;
pub mod limit;
pub mod map;
mod sched;
mod stdin;
pub mod value;

pub use database::Database;
pub use display::{to_text, write_value};
pub use interp::{Fiber, Prepared, Status, Vm, Wait};
pub use sched::Fibers;
pub use stdin::Stdin;
pub use value::{
    ErrorValue, Host, Input, Key, MapData, NativeFn, Object, ReadError, RowRef, Stop, TaskCell,
    TaskState, Trap, TrapKind, Value,
};
/// The durable half of the database, for the CLI (`wo db …`, `--data` errors).
pub use wo_db::durable;
/// The engine's schema, for tools that show a data directory's tables (`wo repl`).
pub use wo_db::{ColType, FloatSum, IndexKind, IntSum, Schema};

use std::io::Write as _;
use std::rc::Rc;

use wo_bytecode::Image;

/// One line of a trap's call stack, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackFrame {
    /// Shared texts: a trap raised again through many `join`s copies up to 200
    /// frames at each one (a copy of `String`s cost 35 µs a level).
    pub function: Rc<str>,
    pub file: Rc<str>,
    pub line: u32,
    pub col: u32,
}

impl StackFrame {
    /// The frame that stands for `n` frames left out of a long stack (no file, line 0).
    pub fn omitted(n: usize) -> StackFrame {
        StackFrame {
            function: format!("… {n} frames left out").into(),
            file: "".into(),
            line: 0,
            col: 0,
        }
    }

    /// How many frames this one stands for, when it is [`StackFrame::omitted`].
    pub fn left_out(&self) -> Option<usize> {
        if !self.file.is_empty() || self.line != 0 {
            return None;
        }
        self.function
            .strip_prefix("… ")?
            .strip_suffix(" frames left out")?
            .parse()
            .ok()
    }
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    /// `main` returned (its Int value, or 0) or `exit(code)` was called.
    Exit(i32),
    /// An uncaught trap: the trap and the call stack where it was raised, innermost first.
    Trap { trap: Trap, stack: Vec<StackFrame> },
    /// The image broke an invariant the interpreter relies on (for example an Int
    /// instruction found a Text in its register); the text starts `internal error:`.
    Fault(String),
    /// [`RunOptions::interrupt`] was raised: the run stopped between two instructions
    /// (or in a wait), an open transaction rolled back.
    Interrupted,
}

/// Why an image could not be linked against this VM's builtins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    #[error("unknown builtin `{0}`")]
    UnknownBuiltin(String),
    #[error("builtin `{name}` takes {expected} arguments, the image says {found}")]
    Arity {
        name: String,
        expected: u16,
        found: u16,
    },
    /// An operand out of range, a bad entry point, a function that can run past its end.
    #[error("invalid image: {0}")]
    Invalid(String),
}

/// Links `image`'s builtins through `natives` and runs `init` then `main` with `args`,
/// with the database in memory. Output goes to `host.out` / `host.err`, flushed before
/// this returns (on every path).
pub fn run(
    image: &Image,
    natives: &dyn Fn(&str) -> Option<NativeFn>,
    args: Vec<String>,
    host: Host,
) -> Result<RunResult, LinkError> {
    run_with(image, natives, args, host, RunOptions::default()).map_err(|e| match e {
        StartError::Link(l) => l,
        StartError::Data(d) => LinkError::Invalid(d.to_string()),
    })
}

/// Told that the program has ended ([`RunOptions::ended`]).
pub type Ended = Box<dyn FnOnce()>;

/// How to run a program beyond its image and arguments.
#[derive(Default)]
pub struct RunOptions {
    /// Make the database durable in this directory (`--data` / `WO_DATA`).
    pub data_dir: Option<std::path::PathBuf>,
    /// How to open it (storage, checkpoint policy, replay progress).
    pub data_options: Option<wo_db::durable::Options>,
    /// Called before the program waits for a durable commit (flush stdout here).
    pub before_sync: Option<database::BeforeSync>,
    /// A flag another thread raises to stop the run ([`RunResult::Interrupted`]):
    /// `wo test`'s time limit.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Called once the program has ended (`main` returned, `exit`, a trap), before
    /// anything more is written (the notes on tasks never joined, the last flush):
    /// `wo run` learns there that the ending stands (a reader that left does not turn
    /// a trap's report or a status into a quiet exit with 0).
    pub ended: Option<Ended>,
    /// When the trap that ends the program is that of a task never joined, a line
    /// on stderr says so before the report (`wo run`; `wo test` shows what the
    /// test wrote there as its output, and its report names the task's frames).
    pub say_task_trap: bool,
}

/// Why a program could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The data directory could not be opened (its `exit_status` says why: 65
    /// damaged or incompatible, 74 I/O, 75 locked).
    #[error(transparent)]
    Data(#[from] wo_db::durable::OpenError),
}

/// [`run`] with options: with `data_dir`, the data directory is opened and recovered
/// before `init` runs, and every change is durable before it is acknowledged.
pub fn run_with(
    image: &Image,
    natives: &dyn Fn(&str) -> Option<NativeFn>,
    args: Vec<String>,
    host: Host,
    options: RunOptions,
) -> Result<RunResult, StartError> {
    // Linking checks the image before anything runs, so nothing has been written when
    // it fails (the host is dropped, which flushes buffered writers).
    run_prepared(&Prepared::new(image, natives)?, args, host, options)
}

/// [`run_with`] on an image prepared once ([`Prepared::new`]), for a caller that runs
/// it many times (`wo test`): each run has a fresh VM and database.
pub fn run_prepared(
    prepared: &Prepared<'_>,
    args: Vec<String>,
    host: Host,
    options: RunOptions,
) -> Result<RunResult, StartError> {
    let image = prepared.image();
    let entry = prepared.entry();
    let mut vm = Vm::start(prepared, host)?;
    if let Some(flag) = options.interrupt {
        vm.set_interrupt(flag);
    }
    if let Some(dir) = &options.data_dir {
        let opts = options.data_options.unwrap_or_default();
        vm.database.open_data_dir(dir, opts, options.before_sync)?;
        if let Some(n) = vm.database.migration_notice() {
            for line in n.lines() {
                let _ = writeln!(vm.host.err, "wo: {line}");
            }
        }
    } else if vm.database.has_durable_tables() {
        let _ = writeln!(
            vm.host.err,
            "wo: note: no data directory (--data or WO_DATA): tables live in memory and are lost when the program ends"
        );
    }
    let res = run_vm(
        &mut vm,
        image,
        entry,
        args,
        options.ended,
        options.say_task_trap,
    );
    let flushed = vm.host.out.flush();
    let _ = vm.host.err.flush();
    // Output that cannot be written when the program ends is an IO failure like a
    // `print` that fails (LANGUAGE.md §11), not a silent loss.
    Ok(match (res, flushed) {
        // The reader left (`| head -1`): what the program chose stands.
        (res @ RunResult::Exit(_), Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => res,
        (RunResult::Exit(_), Err(e)) => RunResult::Trap {
            trap: Trap::new(TrapKind::Io, format!("cannot write to stdout: {e}")),
            stack: Vec::new(),
        },
        // The trap decides the status, but the loss is said too (helper-64: a stdout
        // on a full disk, whose failed flush before a `print_err` is stdout's to
        // report, was never mentioned when a trap ended the program).
        // (Not when the trap is that same failure, a `print` that could not write.)
        // (Nor when the reader left: `wo run p.wo | head -1`, as filters do.)
        (res @ RunResult::Trap { .. }, Err(e))
            if !is_stdout_failure(&res) && e.kind() != std::io::ErrorKind::BrokenPipe =>
        {
            let _ = writeln!(
                vm.host.err,
                "wo: besides the trap reported below, output was lost: cannot write to stdout: {e}"
            );
            res
        }
        (res, _) => res,
    })
}

/// Whether a run ended in the trap of a write to stdout that failed.
fn is_stdout_failure(res: &RunResult) -> bool {
    matches!(res, RunResult::Trap { trap, .. }
        if trap.kind == TrapKind::Io && trap.message.starts_with("cannot write to stdout"))
}

/// Says on stderr that a task never joined trapped `IO` (a durability failure, which
/// decides what a restart recovers), if one did; `report_follows` when the report of
/// the trap that decides the status comes after this line. Whether it said so.
fn say_unjoined_io(vm: &mut Vm<'_>, report_follows: bool) -> bool {
    let Some(io) = vm.unjoined_durability_failure() else {
        return false;
    };
    let besides = if report_follows {
        "besides the trap reported below, "
    } else {
        ""
    };
    let _ = writeln!(
        vm.host.err,
        "wo: {besides}a task trapped IO and was never joined: {}",
        io.message
    );
    true
}

/// A note on stderr for each task that trapped and was never joined, past the first
/// `skip` of them (the one whose report decides the status) and besides durability
/// failures (said by [`say_unjoined_io`]): three at most, then how many more.
fn note_unjoined(vm: &mut Vm<'_>, skip: usize) {
    let mut notes = Vec::new();
    let mut failed = 0usize;
    let mut seen = 0usize;
    vm.each_unjoined_trap(|trap, stack| {
        seen += 1;
        if seen <= skip || database::is_durability_failure(trap) {
            return;
        }
        failed += 1;
        if failed <= 3 {
            let at = stack
                .first()
                .map(|f| format!(" at {} ({}:{}:{})", f.function, f.file, f.line, f.col))
                .unwrap_or_default();
            notes.push(format!(
                "wo: note: a task trapped and was never joined: trap {}: {}{at}",
                trap.kind.name(),
                trap.message.lines().next().unwrap_or_default()
            ));
        }
    });
    for note in notes {
        let _ = writeln!(vm.host.err, "{note}");
    }
    if failed > 3 {
        let _ = writeln!(
            vm.host.err,
            "wo: note: and {} more tasks trapped and were never joined",
            failed - 3
        );
    }
}

fn run_vm(
    vm: &mut Vm<'_>,
    image: &Image,
    entry: wo_bytecode::FuncIdx,
    args: Vec<String>,
    ended: Option<Ended>,
    say_task_trap: bool,
) -> RunResult {
    let ended = || {
        if let Some(ended) = ended {
            ended();
        }
    };
    if let Some(init) = image.init {
        match run_fiber(vm, init.0, Vec::new()) {
            Ok(_) => {}
            Err(end) => {
                ended();
                return end;
            }
        }
    }
    let entry_arity = image.functions.get(entry.index()).map_or(0, |f| f.arity);
    let entry_args = if entry_arity == 1 {
        let list: Vec<Value> = args.into_iter().map(|a| Value::Text(Rc::from(a))).collect();
        vec![Value::new_list(list)]
    } else {
        Vec::new()
    };
    let res = run_fiber(vm, entry.0, entry_args);
    ended();
    // `main` returned: a task that trapped and was never joined decides the status.
    if res.is_ok() {
        if let Some((trap, stack)) = vm.unjoined_trap() {
            // The status and the report are the first trap's (LANGUAGE.md §9); a
            // durability failure in another task is said too, since it decides what
            // a restart recovers; the others are noted, and the report is said to be
            // a task's (helper-89: of three workers that failed, one showed, as if
            // `main` had trapped).
            if !database::is_durability_failure(&trap) {
                say_unjoined_io(vm, true);
            }
            note_unjoined(vm, 1);
            let mut n = 0usize;
            vm.each_unjoined_trap(|_, _| n += 1);
            let _ = if !say_task_trap {
                Ok(())
            } else if n == 1 {
                writeln!(vm.host.err, "wo: a task trapped and was never joined:")
            } else {
                writeln!(
                    vm.host.err,
                    "wo: a task trapped and was never joined (the first of {n} to trap; it decides the status):"
                )
            };
            return RunResult::Trap { trap, stack };
        }
    }
    // `main` trapped, or a fiber called `exit(n)`. A durability failure of a commit
    // still in flight (finished as the program ended) or of a task never joined is
    // said, since it decides what a restart recovers. `main`'s trap came first and
    // keeps its status; a status the program chose does not hide the failure: it is
    // 74, as for any durability failure (a script that checks only the status must
    // not take a lost change for success).
    let said = match &res {
        Err(RunResult::Trap { trap, .. }) => database::is_durability_failure(trap),
        Err(RunResult::Exit(_)) => false,
        _ => true,
    };
    // The status is `main`'s trap's or the one the program chose, but a task that
    // failed is not passed over in silence (as a thread's exception is printed in
    // Python).
    if res.is_err() {
        note_unjoined(vm, 0);
    }
    let report_follows = matches!(res, Err(RunResult::Trap { .. }));
    if !said && say_unjoined_io(vm, report_follows) {
        if let Err(RunResult::Exit(_)) = res {
            return RunResult::Exit(74); // EX_IOERR, the status of an uncaught IO trap
        }
    }
    match res {
        Ok(Value::Int(v)) => RunResult::Exit((v & 0xff) as i32),
        Ok(Value::Nil) => RunResult::Exit(0),
        Ok(other) => RunResult::Fault(format!(
            "internal error: `main` returned {}",
            interp::type_name(&other)
        )),
        Err(end) => end,
    }
}

/// Runs one function on a fresh fiber to its end: its value, or how the program ends.
fn run_fiber(vm: &mut Vm<'_>, func: u32, args: Vec<Value>) -> Result<Value, RunResult> {
    let mut fiber = vm.fiber(func, args).map_err(RunResult::Fault)?;
    match vm.run_to_end(&mut fiber) {
        Status::Done(v) => Ok(v),
        Status::Exit(code) => Err(RunResult::Exit(code)),
        Status::Trap { trap, stack } => Err(RunResult::Trap { trap, stack }),
        Status::Fault(msg) => Err(RunResult::Fault(msg)),
        Status::Yield | Status::Wait(_) => Err(RunResult::Fault(
            "internal error: fiber yielded at the end".into(),
        )),
        Status::Interrupted if vm.interruptible() => Err(RunResult::Interrupted),
        Status::Interrupted => Err(RunResult::Fault(
            "internal error: interrupted without an interrupt flag".into(),
        )),
    }
}
