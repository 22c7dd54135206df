//! The interpreter: links an image's builtins, checks the operand ranges the hot loop
//! relies on, and runs fibers. It is stackless: a script call pushes a [`Frame`] on the
//! fiber's frame stack and never recurses on the Rust stack, so deep recursion traps
//! `STACK` instead of crashing, and [`Vm::resume`] can hand control back between any
//! two instructions (when the instruction budget runs out) and continue later. That is
//! the seam fibers, the scheduler and the durable-commit waits build on.
//!
//! A [`Fiber`] owns everything one thread of script execution needs: the register
//! file, the frames of its callers and its try handlers. The [`Vm`] owns what fibers
//! share: the image, its constants as values, the linked natives, the globals, the
//! [`Host`] and the [`Database`] (the engine, cached queries, the transaction). The
//! database instructions are thin here: each calls one [`Database`] method, which
//! converts between values and cells. When a trap unwinds, the database is told which
//! handler will catch it first, so a trap that leaves a transaction rolls it back. Registers are frame-relative in the bytecode and absolute here
//! (`base + r`); a callee's frame starts at the caller's `base + b`, where the caller
//! has already put the arguments (Lua style), and its result replaces that register.
//!
//! The verifier does not type-check, so a hostile image can put a Text where the
//! instruction expects an Int. Such a mismatch never panics: it ends the run with
//! [`Status::Fault`] ("internal error: …"). Operand ranges (registers, constants,
//! functions, jump targets, builtin arities) are checked once at link time by
//! [`Vm::new`], so the loop can index without further care.
//!
//! Register contract for code generators: at function entry registers `0 … arity-1`
//! hold the arguments and the others hold whatever an earlier frame left there (they
//! are not cleared, for speed, as in Lua): a function must write a register before it
//! reads it. The register file only grows; returning does not shrink it.

use std::io::Write as _;
use std::rc::Rc;

use wo_bytecode::{Const, Image, Op, Reg};

use crate::database::{self, Database, DbStop};
use crate::display;
use crate::limit;
use crate::value::{
    ErrorValue, Host, Key, KeyRef, MapData, NativeFn, Stop, TaskCell, TaskState, Trap, TrapKind,
    Value,
};
use crate::{LinkError, StackFrame};

/// The most frames one fiber may hold; a call beyond it traps `STACK`.
pub const MAX_FRAMES: usize = 100_000;

/// The most registers one fiber may hold (a bound on memory as well as depth).
pub const MAX_REGS: usize = 1 << 22;
/// Instructions (counted on back edges and calls) a fiber runs before [`Vm::resume`]
/// returns [`Status::Yield`].
pub const BUDGET: u32 = 1 << 16;

/// The register window of an image whose functions all have at most this many
/// registers (almost every image): the current frame is seen as a `[Value; 256]`, so a
/// register operand masked to its low byte indexes it without a bounds check.
const NARROW: usize = 256;
/// The register window of any other image: a `u16` register indexes `[Value; 65536]`
/// without a check. The register file then keeps 1.5 MB spare above the top frame.
const WIDE: usize = 1 << 16;

/// A builtin as the image links it: a native function, or one of the few hot `math`
/// functions the instruction loop computes itself (no call through the native table, no
/// `Result` to unpack). The native is still looked up, so linking fails the same way.
#[derive(Clone, Copy)]
enum Linked {
    Native(NativeFn),
    Float(FloatFn),
}

/// The builtins on one Float that [`Linked::Float`] runs in the loop; each computes
/// exactly what its `wo-stdlib` native does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FloatFn {
    Sqrt,
    Floor,
    Ceil,
    Round,
    Abs,
}

impl FloatFn {
    #[inline(always)]
    fn apply(self, x: f64) -> f64 {
        match self {
            FloatFn::Sqrt => x.sqrt(),
            FloatFn::Floor => x.floor(),
            FloatFn::Ceil => x.ceil(),
            // Half away from zero, as `math.round` is specified.
            FloatFn::Round => x.round(),
            FloatFn::Abs => x.abs(),
        }
    }
}

impl Linked {
    fn of(name: &str, native: NativeFn) -> Linked {
        match name {
            "math.sqrt" => Linked::Float(FloatFn::Sqrt),
            "math.floor" => Linked::Float(FloatFn::Floor),
            "math.ceil" => Linked::Float(FloatFn::Ceil),
            "math.round" => Linked::Float(FloatFn::Round),
            "abs_float" => Linked::Float(FloatFn::Abs),
            _ => Linked::Native(native),
        }
    }
}

/// One activation: which function, where it continues, where its registers start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub func: u32,
    /// The next instruction to run; the one being run (or, for a caller, the call) is
    /// `pc - 1`.
    pub pc: u32,
    /// Absolute index of the frame's register 0.
    pub base: u32,
}

/// An installed `try`: the frame level it belongs to, where to continue, and the
/// absolute register that receives the Error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Handler {
    level: u32,
    pc: u32,
    err: u32,
}

/// One thread of script execution.
#[derive(Debug)]
pub struct Fiber {
    /// Unique within its [`Vm`]; a transaction records the fiber that began it.
    id: u64,
    regs: Vec<Value>,
    /// The callers of `cur`, outermost first; `frames.len()` is `cur`'s level.
    frames: Vec<Frame>,
    cur: Frame,
    handlers: Vec<Handler>,
    /// Parked in `JOIN` or at a write held back by a checkpoint: the instruction runs
    /// again when the fiber resumes (its `pc` stays past it meanwhile, so a trap raised
    /// in the wait points at it).
    redo: bool,
}

impl Fiber {
    /// A fiber that will call function `func` with `args` in its first registers (for
    /// `SPAWN`, just the arguments: the file grows when it first runs).
    pub(crate) fn start(id: u64, func: u32, args: Vec<Value>) -> Fiber {
        Fiber {
            id,
            regs: args,
            frames: Vec::new(),
            cur: Frame {
                func,
                pc: 0,
                base: 0,
            },
            handlers: Vec::new(),
            redo: false,
        }
    }

    /// The functions of the fiber's active frames.
    pub(crate) fn funcs(&self) -> impl Iterator<Item = u32> + '_ {
        self.frames.iter().chain([&self.cur]).map(|f| f.func)
    }

    /// Gives back the registers above the current frame (dead values of returned
    /// callees) while the fiber is parked; the loop grows the file again on resume.
    pub(crate) fn shrink(&mut self, image: &Image) {
        let n_regs = image
            .functions
            .get(self.cur.func as usize)
            .map_or(0, |f| usize::from(f.n_regs));
        let top = self.cur.base as usize + n_regs;
        if self.regs.len() > top {
            self.regs.truncate(top);
            self.regs.shrink_to_fit();
        }
    }

    /// The number of active frames.
    pub fn depth(&self) -> usize {
        self.frames.len() + 1
    }

    /// The fiber's id, unique within its [`Vm`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The register file, for a session that continues in a later image
    /// (`wo repl`): the first frame's registers start at 0.
    pub fn into_registers(self) -> Vec<Value> {
        self.regs
    }
}

/// How [`Vm::resume`] left a fiber.
#[derive(Debug, Clone)]
pub enum Status {
    /// The fiber's function returned this value.
    Done(Value),
    /// The budget ran out: call `resume` again to continue.
    Yield,
    /// The fiber waits (it has done its part of the instruction): resume it when the
    /// wait is over.
    Wait(Wait),
    /// A native asked to end the program (`exit`).
    Exit(i32),
    /// An uncaught trap and the stack where it was raised, innermost first.
    Trap { trap: Trap, stack: Vec<StackFrame> },
    /// The image broke an invariant the interpreter relies on (a wrong-typed operand).
    Fault(String),
    /// The interrupt flag ([`Vm::set_interrupt`]) was raised: the run stopped between
    /// two instructions, an open transaction rolled back (`wo repl`'s Ctrl-C).
    Interrupted,
}

/// What a fiber waits for when [`Vm::resume`] returns [`Status::Wait`].
#[derive(Debug, Clone)]
pub enum Wait {
    /// `yield()`: it goes to the back of the run queue.
    Yield,
    /// `time.sleep(ms)`.
    Sleep(std::time::Duration),
    /// Its change's log record, LSN this, to be durable.
    Commit(u64),
    /// The task to end (`join` runs again when the fiber resumes).
    Join(Rc<TaskCell>),
    /// The automatic checkpoint under way to be written (the write runs again when
    /// the fiber resumes).
    Checkpoint,
}

/// What the instruction loop stopped for.
enum Step {
    Done(Value),
    Yield,
    /// The fiber waits; for `Join` and `Checkpoint` its instruction runs again when it
    /// resumes.
    Wait(Wait),
    /// `SPAWN`: start a fiber calling `func` with `args` and put its task in absolute
    /// register `dst`, then go on (done outside the loop, which keeps it lean).
    Spawn {
        func: u32,
        args: Vec<Value>,
        dst: usize,
    },
    Exit(i32),
    Trap(Trap),
    Fault(String),
}

/// An image linked and checked once ([`Prepared::new`]), from which any number of
/// VMs start ([`Vm::start`]): `wo test` starts one per test, and linking and checking
/// the whole image for each made a file of many tests quadratic (8,000 tests: 5.4 s).
pub struct Prepared<'img> {
    image: &'img Image,
    natives: Vec<Linked>,
    consts: Vec<Value>,
    classes: Rc<[wo_bytecode::Class]>,
    /// The one-character texts of ASCII, shared by the VMs started on it.
    ascii: Rc<[Value; 128]>,
    /// The global slots up to the highest one an instruction names.
    n_globals: usize,
    wide: bool,
    /// The function a run calls after `init`: the image's entry unless
    /// [`Prepared::set_entry`] chose another.
    entry: wo_bytecode::FuncIdx,
}

impl<'img> Prepared<'img> {
    /// Links `image`'s builtins through `natives` and checks every operand range.
    pub fn new(
        image: &'img Image,
        natives: &dyn Fn(&str) -> Option<NativeFn>,
    ) -> Result<Prepared<'img>, LinkError> {
        let mut linked = Vec::with_capacity(image.builtins.len());
        for b in &image.builtins {
            let spec = wo_bytecode::builtins::lookup(&b.name)
                .ok_or_else(|| LinkError::UnknownBuiltin(b.name.clone()))?;
            if spec.arity != b.arity {
                return Err(LinkError::Arity {
                    name: b.name.clone(),
                    expected: spec.arity,
                    found: b.arity,
                });
            }
            let f = natives(&b.name).ok_or_else(|| LinkError::UnknownBuiltin(b.name.clone()))?;
            linked.push(Linked::of(&b.name, f));
        }
        check_image(image)?;
        let consts = image
            .consts
            .iter()
            .map(|c| match c {
                Const::Int(i) => Value::Int(*i),
                Const::Float(f) => Value::Float(*f),
                Const::Text(t) => match t.as_bytes() {
                    // Shared with the characters a text walk hands out, so comparing
                    // one with this constant finds the same pointer.
                    [b] if b.is_ascii() => Value::char_text(char::from(*b)),
                    _ => Value::Text(Rc::from(t.as_str())),
                },
            })
            .collect();
        // Only the slots some instruction names are allocated: `n_globals` comes from
        // the image, and a hostile one must not make the VM allocate gigabytes.
        let n_globals = image
            .functions
            .iter()
            .flat_map(|f| &f.code)
            .filter_map(|op| match *op {
                Op::GetGlobal { g, .. } | Op::SetGlobal { g, .. } => Some(g.index() + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Ok(Prepared {
            image,
            natives: linked,
            consts,
            classes: Rc::from(image.classes.as_slice()),
            ascii: Rc::new(std::array::from_fn(|b| {
                Value::char_text(char::from(u8::try_from(b).unwrap_or(0)))
            })),
            n_globals,
            wide: image
                .functions
                .iter()
                .any(|f| usize::from(f.n_regs) > NARROW),
            entry: image.entry,
        })
    }

    pub fn image(&self) -> &'img Image {
        self.image
    }

    /// The function runs call after `init`.
    pub fn entry(&self) -> wo_bytecode::FuncIdx {
        self.entry
    }

    /// Makes runs call `entry` after `init` instead of the image's entry (`wo test`
    /// runs each test so). It must exist and take no parameters.
    pub fn set_entry(&mut self, entry: wo_bytecode::FuncIdx) -> Result<(), LinkError> {
        match self.image.functions.get(entry.index()) {
            Some(f) if f.arity == 0 => {
                self.entry = entry;
                Ok(())
            }
            Some(f) => Err(LinkError::Invalid(format!(
                "entry function `{}` takes {} parameters (none expected)",
                f.name, f.arity
            ))),
            None => Err(LinkError::Invalid(format!(
                "entry function {} does not exist",
                entry.0
            ))),
        }
    }
}

/// The state fibers share.
pub struct Vm<'img> {
    image: &'img Image,
    consts: Vec<Value>,
    /// The one-character texts of ASCII ([`Value::char_text`]'s, so the same `Rc`s):
    /// TEXT_NEXT hands them out without a thread-local lookup. Made once per
    /// [`Prepared`].
    ascii: Rc<[Value; 128]>,
    natives: Vec<Linked>,
    /// The global slots up to the highest one an instruction names (the verifier keeps
    /// every such index below the image's `n_globals`).
    pub globals: Vec<Value>,
    pub host: Host,
    /// The database all fibers share.
    pub(crate) database: Database,
    /// The id the next fiber gets.
    pub(crate) next_fiber: std::cell::Cell<u64>,
    /// Where `CONCAT` and `CONCAT_N` build their result before it becomes a Text (kept
    /// between instructions so building a Text costs one allocation, not two).
    scratch: String,
    /// Whether some function has more than [`NARROW`] registers (the loop then runs
    /// with the [`WIDE`] window).
    wide: bool,
    /// Fibers `SPAWN` started during the current turn, for the scheduler to queue.
    pub(crate) spawned: Vec<(Fiber, Rc<TaskCell>)>,
    /// The scheduler's queues (`sched.rs`).
    pub(crate) sched: crate::sched::Sched,
    /// Raised from outside (a SIGINT handler) to stop the run. Looked at only where a
    /// fiber's budget runs out or the scheduler waits, never in the instruction loop.
    interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Back edges and calls per turn under the scheduler ([`Vm::set_turn`]).
    pub(crate) turn: u32,
}

impl<'img> Vm<'img> {
    /// Links `image`'s builtins through `natives` and checks every operand range.
    /// `host.classes` is replaced by the image's classes. ([`Prepared::new`] then
    /// [`Vm::start`]: to start many VMs on one image, prepare it once.)
    pub fn new(
        image: &'img Image,
        natives: &dyn Fn(&str) -> Option<NativeFn>,
        host: Host,
    ) -> Result<Vm<'img>, LinkError> {
        Vm::start(&Prepared::new(image, natives)?, host)
    }

    /// A fresh VM on a prepared image: its own globals, fibers and empty in-memory
    /// database; what preparing computed (the linked builtins, the constants, the
    /// checks) is shared, not redone. `host.classes` is replaced by the image's classes.
    pub fn start(prepared: &Prepared<'img>, mut host: Host) -> Result<Vm<'img>, LinkError> {
        let image = prepared.image;
        let database = Database::new(image)?;
        host.classes = prepared.classes.clone();
        Ok(Vm {
            image,
            consts: prepared.consts.clone(),
            ascii: Rc::clone(&prepared.ascii),
            natives: prepared.natives.clone(),
            globals: vec![Value::Nil; prepared.n_globals],
            host,
            database,
            next_fiber: std::cell::Cell::new(0),
            scratch: String::new(),
            wide: prepared.wide,
            spawned: Vec::new(),
            sched: crate::sched::Sched::default(),
            interrupt: None,
            turn: BUDGET,
        })
    }

    pub fn image(&self) -> &'img Image {
        self.image
    }

    /// Stops the run when `flag` becomes true: [`Vm::run_to_end`] then returns
    /// [`Status::Interrupted`] at the next budget exhaustion (every [`BUDGET`] back
    /// edges and calls), wait or sleep, after rolling back an open transaction. The
    /// caller clears the flag.
    pub fn set_interrupt(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.interrupt = Some(flag);
    }

    /// How many back edges and calls a fiber runs per turn under the scheduler
    /// ([`BUDGET`] unless set; at least 1). A shorter turn changes only where turns end
    /// (the interleaving stays a function of the program and its input) and lets an
    /// interrupt take effect sooner: the fuzz harness bounds runs under the scheduler
    /// with it.
    pub fn set_turn(&mut self, n: u32) {
        self.turn = n.max(1);
    }

    /// Whether the interrupt flag is raised.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Whether an interrupt flag is set at all (the scheduler then sleeps in slices).
    pub(crate) fn interruptible(&self) -> bool {
        self.interrupt.is_some()
    }

    /// Takes the state a `wo repl` session carries from one image to the next: the
    /// host, the global slots and the database.
    pub fn into_parts(self) -> (Host, Vec<Value>, Database) {
        (self.host, self.globals, self.database)
    }

    /// Continues a session in this image: `globals` from the previous image (this
    /// image's constants are a superset, in the same slots) and its database, whose
    /// engine (and data directory) this VM adopts.
    pub fn adopt(&mut self, globals: Vec<Value>, database: Database) -> Result<(), String> {
        for (slot, v) in self.globals.iter_mut().zip(globals) {
            *slot = v;
        }
        self.database.adopt(database)
    }

    /// A fiber that continues function `func` at `pc` with the first frame's registers
    /// `regs` (a `wo repl` session: `main` grows by one statement per input, and the
    /// registers of the statements already run are kept).
    pub fn fiber_at(&self, func: u32, pc: u32, mut regs: Vec<Value>) -> Result<Fiber, String> {
        let mut fiber = self.fiber(func, Vec::new())?;
        let window = if self.wide { WIDE } else { NARROW };
        if regs.len() < window {
            regs.resize(window, Value::Nil);
        }
        fiber.regs = regs;
        fiber.cur.pc = pc;
        Ok(fiber)
    }

    /// The database (its engine, and whether a transaction is active).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The database, to open a data directory before anything runs.
    pub fn database_mut(&mut self) -> &mut Database {
        &mut self.database
    }

    /// A new fiber that will call function `func` with `args` (checked against its
    /// arity: extra arguments are dropped, missing ones are nil).
    pub fn fiber(&self, func: u32, args: Vec<Value>) -> Result<Fiber, String> {
        let f = self
            .image
            .functions
            .get(func as usize)
            .ok_or_else(|| format!("no function {func}"))?;
        // The window of the first frame starts at 0.
        let window = if self.wide { WIDE } else { NARROW };
        let mut regs = vec![Value::Nil; window];
        for (slot, a) in regs.iter_mut().zip(args).take(usize::from(f.arity)) {
            *slot = a;
        }
        let id = self.next_fiber.get();
        self.next_fiber.set(id + 1);
        Ok(Fiber::start(id, func, regs))
    }

    /// Runs `fiber` until it finishes, traps, exits or runs through `budget` back
    /// edges and calls. After [`Status::Yield`] it can be resumed; after anything else
    /// it is finished.
    pub fn resume(&mut self, fiber: &mut Fiber, budget: u32) -> Status {
        let mut budget = budget.max(1);
        if std::mem::take(&mut fiber.redo) {
            fiber.cur.pc -= 1;
        }
        loop {
            let step = if self.wide {
                self.exec::<WIDE>(fiber, &mut budget)
            } else {
                self.exec::<NARROW>(fiber, &mut budget)
            };
            match step {
                Step::Done(v) => {
                    if self.database.tx.is_some_and(|tx| tx.fiber == fiber.id) {
                        self.database.fiber_ended(fiber.id);
                        return Status::Fault(
                            "internal error: the fiber's function returned inside a transaction"
                                .into(),
                        );
                    }
                    return Status::Done(v);
                }
                Step::Yield => {
                    // Inside its transaction a fiber is not preempted (LANGUAGE.md §9),
                    // but it can be interrupted: the transaction rolls back.
                    if self.database.tx.is_some_and(|tx| tx.fiber == fiber.id) {
                        if self.interrupted() {
                            self.database.fiber_ended(fiber.id);
                            return Status::Interrupted;
                        }
                        budget = self.turn;
                        continue;
                    }
                    return Status::Yield;
                }
                Step::Wait(w) => {
                    fiber.redo = matches!(w, Wait::Join(_) | Wait::Checkpoint);
                    return Status::Wait(w);
                }
                Step::Spawn { func, args, dst } => {
                    // Fibers that have not ended (each keeps its registers and frames)
                    // are bounded as calls are: a recursion through `spawn` and `join`
                    // traps instead of taking all memory.
                    let most = crate::limit::max_fibers();
                    if self.sched.alive() + self.spawned.len() >= most {
                        let trap = Trap::new(
                            TrapKind::Limit,
                            format!(
                                "more than {most} fibers alive at once (spawned and not ended)"
                            ),
                        );
                        if let Some(stack) = self.unwind(fiber, trap) {
                            return stack;
                        }
                        continue;
                    }
                    let id = self.next_fiber.get();
                    self.next_fiber.set(id + 1);
                    let task = Rc::new(TaskCell {
                        fiber: id,
                        state: std::cell::RefCell::new(TaskState::Running),
                        waiters: std::cell::RefCell::new(Vec::new()),
                    });
                    crate::gc::made();
                    self.spawned
                        .push((Fiber::start(id, func, args), task.clone()));
                    match fiber.regs.get_mut(dst) {
                        Some(slot) => *slot = Value::Task(task),
                        None => return Status::Fault("SPAWN register out of range".into()),
                    }
                }
                Step::Exit(code) => {
                    // The program ends; an open transaction never committed.
                    self.database.fiber_ended(fiber.id);
                    return Status::Exit(code);
                }
                Step::Fault(msg) => {
                    self.database.fiber_ended(fiber.id);
                    return Status::Fault(msg);
                }
                Step::Trap(trap) => {
                    if let Some(stack) = self.unwind(fiber, trap) {
                        return stack;
                    }
                }
            }
        }
    }

    /// The call stack of `fiber`, innermost first.
    pub fn stack_of(&self, fiber: &Fiber) -> Vec<StackFrame> {
        std::iter::once(&fiber.cur)
            .chain(fiber.frames.iter().rev())
            .map(|fr| self.stack_frame(fr))
            .collect()
    }

    fn stack_frame(&self, fr: &Frame) -> StackFrame {
        let f = self.image.functions.get(fr.func as usize);
        let pos = f.and_then(|f| f.pos.get((fr.pc as usize).saturating_sub(1)));
        StackFrame {
            function: f.map_or_else(|| "?".into(), |f| f.name.as_str().into()),
            file: pos
                .and_then(|p| self.image.files.get(p.file as usize))
                .map_or_else(|| "".into(), |s| s.as_str().into()),
            line: pos.map_or(0, |p| p.line),
            col: pos.map_or(0, |p| p.col),
        }
    }

    /// Delivers `trap` to the innermost handler of `fiber`, or returns the final status
    /// when there is none.
    pub(crate) fn unwind(&mut self, fiber: &mut Fiber, trap: Trap) -> Option<Status> {
        // A trap raised while the fiber waits in `join` ends that wait.
        fiber.redo = false;
        // The line where the trap was raised: for one that `join` raises again, in the
        // task that trapped (its stack's innermost frame), as the uncaught report says.
        let line = match trap.origin.as_ref().and_then(|o| o.first()) {
            Some(frame) => i64::from(frame.line),
            None => i64::from(self.stack_frame(&fiber.cur).line),
        };
        // The handler that catches the trap, if any, decides whether it leaves a
        // transaction (which then rolls back before the unwinding goes on).
        let catcher = fiber
            .handlers
            .len()
            .checked_sub(1)
            .map(|i| (i, fiber.handlers[i].level as usize));
        self.database.unwinding(fiber.id, catcher);
        let Some(h) = fiber.handlers.pop() else {
            let mut stack = self.stack_of(fiber);
            if let Some(origin) = &trap.origin {
                stack.splice(0..0, origin.iter().cloned());
                // A trap raised again by `join` after `join` (a recursion through
                // `spawn`) keeps both ends of its stack, not every fiber's frames:
                // each task that traps holds its stack.
                shorten_joined_stack(&mut stack);
            }
            return Some(Status::Trap { trap, stack });
        };
        let level = h.level as usize;
        if level < fiber.frames.len() {
            fiber.cur = fiber.frames[level];
            fiber.frames.truncate(level);
        }
        fiber.cur.pc = h.pc;
        let err = Value::Error(Rc::new(ErrorValue {
            kind: trap.kind,
            message: Rc::from(trap.message),
            line,
        }));
        match fiber.regs.get_mut(h.err as usize) {
            Some(slot) => *slot = err,
            None => {
                return Some(Status::Fault(
                    "internal error: handler register out of range".into(),
                ))
            }
        }
        None
    }

    /// The instruction loop. The current frame's registers are a window of `W`
    /// registers (a power of two at least as large as every function's register count),
    /// so `R[r]` is `fr[r & (W - 1)]` and needs no bounds check: the register file
    /// always extends at least `W` registers past the current frame's base.
    #[allow(clippy::too_many_lines)] // one arm per opcode reads best as one match
    fn exec<const W: usize>(&mut self, fiber: &mut Fiber, budget: &mut u32) -> Step {
        let image: &'img Image = self.image;
        let consts = &self.consts[..];
        let ascii: &[Value; 128] = &self.ascii;
        let natives = &self.natives[..];
        let globals = &mut self.globals;
        let host = &mut self.host;
        let database = &mut self.database;
        let scratch = &mut self.scratch;
        let interrupt = &self.interrupt;
        let Fiber {
            id: fiber_id,
            regs,
            frames,
            cur,
            handlers,
            redo: _,
        } = fiber;
        let fiber_id = *fiber_id;

        let mut func = cur.func as usize;
        let mut code: &'img [Op] = &image.functions[func].code;
        let mut pc = cur.pc as usize;
        let mut base = cur.base as usize;
        let mut left = *budget;
        if regs.len() < base + W {
            grow(regs, base + W);
        }
        // The current frame's registers: `fr[r]` is `R[r]`.
        let mut fr = window::<W>(regs, base);

        // Saves the current frame into the fiber.
        macro_rules! save {
            () => {{
                *cur = Frame {
                    func: func as u32,
                    pc: pc as u32,
                    base: base as u32,
                };
                *budget = left;
            }};
        }
        macro_rules! trap {
            ($kind:ident, $msg:expr) => {{
                save!();
                return Step::Trap(Trap::new(TrapKind::$kind, $msg));
            }};
        }
        macro_rules! fault {
            ($($arg:tt)*) => {
                return fault_step(image, func, pc - 1, format_args!($($arg)*))
            };
        }
        // A database method's result: the value, or the trap or fault it stopped with.
        macro_rules! db {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(DbStop::Trap(t)) => {
                        save!();
                        return Step::Trap(t);
                    }
                    Err(DbStop::Fault(msg)) => fault!("{msg}"),
                    Err(DbStop::Gate) => {
                        save!();
                        return Step::Wait(Wait::Checkpoint);
                    }
                }
            };
        }
        // After a write that became final: with a data directory, the fiber waits here
        // for its record's sync (the change is already made and visible).
        macro_rules! commit_wait {
            () => {
                if let Some(lsn) = database.take_wait() {
                    save!();
                    return Step::Wait(Wait::Commit(lsn));
                }
            };
        }
        macro_rules! r {
            ($x:expr) => {
                fr[usize::from($x.0) & (W - 1)]
            };
        }
        macro_rules! int {
            ($x:expr) => {
                match &r!($x) {
                    Value::Int(v) => *v,
                    other => fault!("expected Int, found {}", type_name(other)),
                }
            };
        }
        macro_rules! float {
            ($x:expr) => {
                match &r!($x) {
                    Value::Float(v) => *v,
                    other => fault!("expected Float, found {}", type_name(other)),
                }
            };
        }
        macro_rules! boolean {
            ($x:expr) => {
                match &r!($x) {
                    Value::Bool(v) => *v,
                    other => fault!("expected Bool, found {}", type_name(other)),
                }
            };
        }
        macro_rules! text {
            ($x:expr) => {
                match &r!($x) {
                    Value::Text(v) => v,
                    other => fault!("expected Text, found {}", type_name(other)),
                }
            };
        }
        macro_rules! int_arith {
            ($a:expr, $b:expr, $c:expr, $method:ident, $sym:literal) => {{
                let (x, y) = match (&r!($b), &r!($c)) {
                    (Value::Int(x), Value::Int(y)) => (*x, *y),
                    (x, y) => fault!(
                        "expected Int operands, found {} and {}",
                        type_name(x),
                        type_name(y)
                    ),
                };
                match x.$method(y) {
                    Some(v) => set_int(&mut r!($a), v),
                    None => trap!(Overflow, concat!("integer overflow in `", $sym, "`")),
                }
            }};
        }
        macro_rules! float_arith {
            ($a:expr, $b:expr, $c:expr, $op:tt) => {{
                let v = float!($b) $op float!($c);
                set_float(&mut r!($a), v);
            }};
        }
        macro_rules! back_edge {
            ($t:expr, $at:expr) => {{
                let t = $t.0 as usize;
                pc = t;
                if t < $at + 1 {
                    left -= 1;
                    if left == 0 {
                        save!();
                        return Step::Yield;
                    }
                }
            }};
        }

        loop {
            let Some(op) = code.get(pc) else {
                save!();
                return Step::Fault(format!(
                    "internal error: function `{}` ran past its end",
                    image.functions[func].name
                ));
            };
            let at = pc;
            pc += 1;
            match *op {
                Op::Nop {} => {}
                Op::Move { a, b } => {
                    if let Value::Float(x) = r!(b) {
                        set_float(&mut r!(a), x);
                        continue;
                    }
                    let v = copy(&r!(b));
                    put(&mut r!(a), v);
                }
                Op::LoadConst { a, k } => put(&mut r!(a), consts[k.index()].clone()),
                Op::LoadInt { a, v } => set_int(&mut r!(a), i64::from(v)),
                Op::LoadNil { a } => put(&mut r!(a), Value::Nil),
                Op::LoadBool { a, v } => put(&mut r!(a), Value::Bool(v)),
                Op::GetGlobal { a, g } => put(&mut r!(a), globals[g.index()].clone()),
                Op::SetGlobal { g, a } => globals[g.index()] = r!(a).clone(),

                Op::AddInt { a, b, c } => int_arith!(a, b, c, checked_add, "+"),
                Op::SubInt { a, b, c } => int_arith!(a, b, c, checked_sub, "-"),
                Op::MulInt { a, b, c } => int_arith!(a, b, c, checked_mul, "*"),
                Op::DivInt { a, b, c } => {
                    let (x, y) = (int!(b), int!(c));
                    if y == 0 {
                        trap!(Div0, "division by zero");
                    }
                    match x.checked_div(y) {
                        Some(v) => set_int(&mut r!(a), v),
                        None => trap!(Overflow, "integer overflow in `/`"),
                    }
                }
                Op::RemInt { a, b, c } => {
                    let (x, y) = (int!(b), int!(c));
                    if y == 0 {
                        trap!(Div0, "division by zero");
                    }
                    set_int(&mut r!(a), x.wrapping_rem(y));
                }
                Op::AddIntImm { a, b, v } => match &r!(b) {
                    Value::Int(x) => match x.checked_add(i64::from(v)) {
                        Some(s) => set_int(&mut r!(a), s),
                        None => trap!(Overflow, "integer overflow in `+`"),
                    },
                    other => fault!("expected Int, found {}", type_name(other)),
                },
                Op::SubIntImm { a, b, v } => match &r!(b) {
                    Value::Int(x) => match x.checked_sub(i64::from(v)) {
                        Some(s) => set_int(&mut r!(a), s),
                        None => trap!(Overflow, "integer overflow in `-`"),
                    },
                    other => fault!("expected Int, found {}", type_name(other)),
                },
                Op::NegInt { a, b } => match int!(b).checked_neg() {
                    Some(v) => set_int(&mut r!(a), v),
                    None => trap!(Overflow, "integer overflow in `-`"),
                },
                Op::AddFloat { a, b, c } => float_arith!(a, b, c, +),
                Op::SubFloat { a, b, c } => float_arith!(a, b, c, -),
                Op::MulFloat { a, b, c } => float_arith!(a, b, c, *),
                Op::DivFloat { a, b, c } => float_arith!(a, b, c, /),
                Op::RemFloat { a, b, c } => float_arith!(a, b, c, %),
                Op::NegFloat { a, b } => {
                    let v = -float!(b);
                    put(&mut r!(a), Value::Float(v));
                }
                Op::IntToFloat { a, b } => {
                    let v = int!(b) as f64;
                    put(&mut r!(a), Value::Float(v));
                }
                Op::FloatToInt { a, b } => {
                    let f = float!(b);
                    // 2^63 is exact as an f64; every finite value in [-2^63, 2^63) fits.
                    if f.is_nan()
                        || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f)
                    {
                        let mut msg = String::from("int() of ");
                        display::write_float(&mut msg, f);
                        msg.push_str(" is out of range");
                        trap!(Overflow, msg);
                    }
                    set_int(&mut r!(a), f as i64);
                }

                Op::CmpInt { a, b, c, op } => {
                    let v = op.test(&int!(b), &int!(c));
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::CmpFloat { a, b, c, op } => {
                    let v = op.test(&float!(b), &float!(c));
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::CmpText { a, b, c, op } => {
                    let v = op.test(text!(b).as_bytes(), text!(c).as_bytes());
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::Eq { a, b, c } => {
                    let v = values_eq(&r!(b), &r!(c));
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::Ne { a, b, c } => {
                    let v = !values_eq(&r!(b), &r!(c));
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::Not { a, b } => {
                    let v = !boolean!(b);
                    put(&mut r!(a), Value::Bool(v));
                }

                Op::Concat { a, b, c } => {
                    // Built in the scratch buffer, so the only allocation is the Text's.
                    let (x, y) = (text!(b), text!(c));
                    let len = x.len().saturating_add(y.len());
                    if let Err(t) = limit::text_buffer(scratch, "concatenation", len) {
                        save!();
                        return Step::Trap(t);
                    }
                    scratch.push_str(x);
                    scratch.push_str(y);
                    match take_text(scratch) {
                        Ok(t) => put(&mut r!(a), Value::Text(t)),
                        Err(t) => {
                            save!();
                            return Step::Trap(t);
                        }
                    }
                }
                Op::ConcatN { a, b, n } => {
                    let lo = b.index();
                    let parts = &fr[lo..lo + usize::from(n)];
                    let mut len: usize = 0;
                    for p in parts {
                        match p {
                            Value::Text(t) => len = len.saturating_add(t.len()),
                            other => fault!("expected Text, found {}", type_name(other)),
                        }
                    }
                    if let Err(t) = limit::text_buffer(scratch, "concatenation", len) {
                        save!();
                        return Step::Trap(t);
                    }
                    for p in parts {
                        if let Value::Text(t) = p {
                            scratch.push_str(t);
                        }
                    }
                    match take_text(scratch) {
                        Ok(t) => put(&mut r!(a), Value::Text(t)),
                        Err(t) => {
                            save!();
                            return Step::Trap(t);
                        }
                    }
                }
                Op::ToText { a, b } => match display::try_text_of(&r!(b), &host.classes) {
                    Ok(t) => put(&mut r!(a), Value::Text(t)),
                    Err(t) => {
                        save!();
                        return Step::Trap(t);
                    }
                },

                Op::Jump { t } => back_edge!(t, at),
                Op::JumpIf { a, t } => {
                    if boolean!(a) {
                        back_edge!(t, at);
                    }
                }
                Op::JumpIfNot { a, t } => {
                    if !boolean!(a) {
                        back_edge!(t, at);
                    }
                }
                Op::JumpIfNil { a, t } => {
                    if matches!(r!(a), Value::Nil) {
                        back_edge!(t, at);
                    }
                }
                Op::JumpIfNotNil { a, t } => {
                    if !matches!(r!(a), Value::Nil) {
                        back_edge!(t, at);
                    }
                }
                Op::JumpUnlessCmpInt { b, c, op, t } => {
                    let hold = match (&r!(b), &r!(c)) {
                        (Value::Int(x), Value::Int(y)) => op.test(x, y),
                        (x, y) => fault!(
                            "expected Int operands, found {} and {}",
                            type_name(x),
                            type_name(y)
                        ),
                    };
                    if !hold {
                        back_edge!(t, at);
                    }
                }
                Op::JumpUnlessCmpIntImm { b, v, op, t } => {
                    let hold = match &r!(b) {
                        Value::Int(x) => op.test(x, &i64::from(v)),
                        other => fault!("expected Int, found {}", type_name(other)),
                    };
                    if !hold {
                        back_edge!(t, at);
                    }
                }
                Op::JumpUnlessEqConst { b, k, eq, t } => {
                    // Text against a Text literal is the hot case (a text walk). Its
                    // own arm is cheaper than `values_eq`, even in line: marking that
                    // `#[inline]` cost 11 more instructions a character on
                    // `bench/vm/charwalk` (callgrind, December 2).
                    let hold = match (&r!(b), &consts[k.index()]) {
                        (Value::Text(x), Value::Text(y)) => text_eq(x, y),
                        (x, y) => values_eq(x, y),
                    };
                    if hold != eq {
                        back_edge!(t, at);
                    }
                }
                Op::ForPrep { a, v, t } => {
                    let (start, stop, step) = (
                        int!(a),
                        int!(Reg(a.0.wrapping_add(1))),
                        int!(Reg(a.0.wrapping_add(2))),
                    );
                    let Some(left) = range_count(start, stop, step) else {
                        trap!(Bounds, "`range` step is 0");
                    };
                    match left {
                        // An empty range: skip the loop (a forward jump).
                        None => pc = t.index(),
                        Some(n) => {
                            set_int(&mut r!(Reg(a.0.wrapping_add(1))), n);
                            set_int(&mut r!(v), start);
                        }
                    }
                }
                Op::ForLoop { a, v, t } => {
                    let (cur, left, step) = match (
                        &r!(a),
                        &r!(Reg(a.0.wrapping_add(1))),
                        &r!(Reg(a.0.wrapping_add(2))),
                    ) {
                        (Value::Int(x), Value::Int(n), Value::Int(s)) => (*x, *n, *s),
                        (x, n, s) => fault!(
                            "expected Int loop registers, found {}, {} and {}",
                            type_name(x),
                            type_name(n),
                            type_name(s)
                        ),
                    };
                    if left != 0 {
                        // `left` is an unsigned count in an Int's bits; the counter
                        // cannot overflow because FOR_PREP counted the iterations (a
                        // hand-made image only wraps, it cannot panic).
                        let next = cur.wrapping_add(step);
                        set_int(&mut r!(Reg(a.0.wrapping_add(1))), left.wrapping_sub(1));
                        set_int(&mut r!(a), next);
                        set_int(&mut r!(v), next);
                        back_edge!(t, at);
                    }
                }

                Op::TextNext { v, b, i, t } => {
                    let at_byte = int!(i);
                    // The character as a one-character Text and its width in bytes; an
                    // ASCII byte is one of the shared Texts, found with one test.
                    let next = match &r!(b) {
                        Value::Text(s) => {
                            let p = usize::try_from(at_byte).unwrap_or(usize::MAX);
                            match s.as_bytes().get(p) {
                                Some(&b) if b.is_ascii() => {
                                    Some((ascii[usize::from(b)].clone(), 1))
                                }
                                _ => match s.get(p..) {
                                    Some(rest) => rest
                                        .chars()
                                        .next()
                                        .map(|c| (Value::char_text(c), c.len_utf8())),
                                    None => fault!(
                                        "a text cursor at byte {at_byte} is not at a \
                                         character of a text of {} bytes",
                                        s.len()
                                    ),
                                },
                            }
                        }
                        other => fault!("expected a Text, found {}", type_name(other)),
                    };
                    match next {
                        Some((one, width)) => {
                            // At most 4 more than an offset into a text, so no overflow.
                            set_int(&mut r!(i), at_byte + width as i64);
                            put(&mut r!(v), one);
                        }
                        None => back_edge!(t, at),
                    }
                }

                Op::Call { f, base: b } => {
                    let callee = &image.functions[f.index()];
                    let new_base = base + (usize::from(b.0) & (W - 1));
                    if frames.len() + 1 >= MAX_FRAMES {
                        trap!(Stack, format!("call depth limit of {MAX_FRAMES} exceeded"));
                    }
                    if new_base + W > regs.len() {
                        if new_base + usize::from(callee.n_regs) > MAX_REGS {
                            trap!(Stack, format!("call depth limit of {MAX_FRAMES} exceeded"));
                        }
                        grow(regs, new_base + W);
                    }
                    // Registers past the arguments keep whatever an earlier frame left
                    // there: code must write a register before reading it.
                    frames.push(Frame {
                        func: func as u32,
                        pc: pc as u32,
                        base: base as u32,
                    });
                    func = f.index();
                    code = &callee.code;
                    pc = 0;
                    base = new_base;
                    fr = window::<W>(regs, new_base);
                    left -= 1;
                    if left == 0 {
                        save!();
                        return Step::Yield;
                    }
                }
                Op::CallBuiltin { f, base: b, n } => {
                    let lo = b.index();
                    let native = match natives[f.index()] {
                        Linked::Native(native) => native,
                        Linked::Float(op) => {
                            let x = float!(b);
                            set_float(&mut r!(b), op.apply(x));
                            continue;
                        }
                    };
                    match native(host, &fr[lo..lo + usize::from(n)]) {
                        Ok(v) => fr[lo] = v,
                        Err(Stop::Trap(t)) => {
                            save!();
                            return Step::Trap(t);
                        }
                        Err(Stop::Exit(code)) => {
                            save!();
                            return Step::Exit(code);
                        }
                        Err(Stop::Fault(msg)) => fault!("{msg}"),
                        // Inside a transaction no other fiber runs: `yield()` does
                        // nothing and `time.sleep` blocks the whole program.
                        Err(Stop::Yield) => {
                            fr[lo] = Value::Nil;
                            if database.tx.is_none() {
                                save!();
                                return Step::Wait(Wait::Yield);
                            }
                        }
                        Err(Stop::Sleep(d)) => {
                            fr[lo] = Value::Nil;
                            if database.tx.is_none() {
                                save!();
                                return Step::Wait(Wait::Sleep(d));
                            }
                            // The whole program sleeps, in slices when it can be
                            // interrupted (`wo repl`'s Ctrl-C, `wo test`'s limit):
                            // then the transaction rolls back, as in a loop.
                            let _ = host.out.flush();
                            let until = std::time::Instant::now() + d;
                            loop {
                                let rest =
                                    until.saturating_duration_since(std::time::Instant::now());
                                if rest.is_zero() {
                                    break;
                                }
                                let Some(flag) = interrupt else {
                                    std::thread::sleep(rest);
                                    break;
                                };
                                std::thread::sleep(rest.min(std::time::Duration::from_millis(50)));
                                if flag.load(std::sync::atomic::Ordering::Relaxed) {
                                    save!();
                                    return Step::Yield;
                                }
                            }
                        }
                    }
                }
                Op::Ret { a } => {
                    // The result goes to the callee's R[0], which is the caller's R[b];
                    // a swap moves it there without dropping anything.
                    fr.swap(0, usize::from(a.0) & (W - 1));
                    match frames.pop() {
                        None => {
                            save!();
                            return Step::Done(std::mem::take(&mut fr[0]));
                        }
                        Some(caller) => {
                            drop_handlers(handlers, frames.len());
                            func = caller.func as usize;
                            let f = &image.functions[func];
                            code = &f.code;
                            pc = caller.pc as usize;
                            base = caller.base as usize;
                            fr = window::<W>(regs, base);
                        }
                    }
                }
                Op::RetNil {} => match frames.pop() {
                    None => {
                        save!();
                        return Step::Done(Value::Nil);
                    }
                    Some(caller) => {
                        regs[base] = Value::Nil;
                        drop_handlers(handlers, frames.len());
                        func = caller.func as usize;
                        let f = &image.functions[func];
                        code = &f.code;
                        pc = caller.pc as usize;
                        base = caller.base as usize;
                        fr = window::<W>(regs, base);
                    }
                },
                Op::TryEnter { t, err } => handlers.push(Handler {
                    level: frames.len() as u32,
                    pc: t.0,
                    err: (base + err.index()) as u32,
                }),
                Op::TryExit {} => {
                    if handlers
                        .last()
                        .is_some_and(|h| h.level as usize == frames.len())
                    {
                        handlers.pop();
                    } else {
                        fault!("TRY_EXIT without a handler in this frame");
                    }
                }
                Op::Unwrap { a, b } => {
                    if matches!(r!(b), Value::Nil) {
                        trap!(Nil, "unwrap of nil");
                    }
                    let v = r!(b).clone();
                    put(&mut r!(a), v);
                }

                Op::NewList { a, b, n } => {
                    let lo = b.index();
                    let items = fr[lo..lo + usize::from(n)].to_vec();
                    put(&mut r!(a), Value::new_list(items));
                }
                // The same read; a `for` loop's step (LIST_ENTRY) says why it went
                // past the end.
                Op::ListGet { a, b, c } | Op::ListEntry { a, b, c } => {
                    let i = int!(c);
                    let v = match &r!(b) {
                        Value::List(l) => {
                            let l = l.borrow();
                            match usize::try_from(i).ok().and_then(|i| l.get(i)) {
                                Some(v) => copy(v),
                                None if matches!(*op, Op::ListEntry { .. }) => {
                                    trap!(Bounds, bounds_msg_for(i, l.len()))
                                }
                                None => trap!(Bounds, bounds_msg(i, l.len())),
                            }
                        }
                        other => fault!("expected a list, found {}", type_name(other)),
                    };
                    put(&mut r!(a), v);
                }
                Op::ListSet { a, b, c } => {
                    let i = int!(b);
                    let v = r!(c).clone();
                    let is_ref = crate::gc::is_ref(&v);
                    match &r!(a) {
                        Value::List(list) => {
                            let mut l = list.borrow_mut();
                            let len = l.len();
                            match usize::try_from(i).ok().and_then(|i| l.get_mut(i)) {
                                Some(slot) => *slot = v,
                                None => {
                                    drop(l);
                                    trap!(Bounds, bounds_msg(i, len));
                                }
                            }
                            drop(l);
                            if is_ref {
                                crate::gc::wrote_list(list);
                            }
                        }
                        other => fault!("expected a list, found {}", type_name(other)),
                    }
                }
                Op::ListLen { a, b } => {
                    let n = match &r!(b) {
                        Value::List(l) => l.borrow().len(),
                        other => fault!("expected a list, found {}", type_name(other)),
                    };
                    set_int(&mut r!(a), n as i64);
                }
                Op::NewMap { a, b, n } => {
                    let lo = b.index();
                    let mut m = MapData::with_capacity(usize::from(n));
                    for pair in fr[lo..lo + 2 * usize::from(n)].chunks_exact(2) {
                        let Some(k) = to_key(&pair[0]) else {
                            fault!("a map key cannot be {}", type_name(&pair[0]));
                        };
                        m.insert(k, pair[1].clone());
                    }
                    put(&mut r!(a), Value::new_map(m));
                }
                Op::MapGet { a, b, c } => {
                    let v = match (&r!(b), &r!(c)) {
                        (Value::Map(m), k) => {
                            let Some(k) = KeyRef::of(k) else {
                                fault!("a map key cannot be {}", type_name(k));
                            };
                            m.borrow().get(k).cloned().unwrap_or_default()
                        }
                        (other, _) => fault!("expected a map, found {}", type_name(other)),
                    };
                    put(&mut r!(a), v);
                }
                Op::MapSet { a, b, c } => {
                    let v = r!(c).clone();
                    let Some(k) = to_key(&r!(b)) else {
                        fault!("a map key cannot be {}", type_name(&r!(b)));
                    };
                    let is_ref = crate::gc::is_ref(&v);
                    match &r!(a) {
                        Value::Map(m) => {
                            m.borrow_mut().insert(k, v);
                            if is_ref {
                                crate::gc::wrote_map(m);
                            }
                        }
                        other => fault!("expected a map, found {}", type_name(other)),
                    }
                }
                Op::MapLen { a, b } => {
                    let n = match &r!(b) {
                        Value::Map(m) => m.borrow().len(),
                        other => fault!("expected a map, found {}", type_name(other)),
                    };
                    set_int(&mut r!(a), n as i64);
                }
                Op::MapEntry { k, v, m, i } => {
                    let idx = int!(i);
                    let (key, val) = match &r!(m) {
                        Value::Map(map) => {
                            // A `for` loop asks by position: squeezing out the holes
                            // that removals left keeps it linear.
                            let mut map = map.borrow_mut();
                            map.compact();
                            match usize::try_from(idx).ok().and_then(|i| map.get_index(i)) {
                                Some(e) => (e.key_value(), e.value().clone()),
                                None => trap!(Bounds, bounds_msg_map(idx, map.len())),
                            }
                        }
                        other => fault!("expected a map, found {}", type_name(other)),
                    };
                    put(&mut r!(k), key);
                    put(&mut r!(v), val);
                }

                Op::NewObj { a, c, b } => {
                    let n = image.classes[c.index()].fields.len();
                    let lo = b.index();
                    let fields = fr[lo..lo + n].to_vec();
                    r!(a) = Value::new_object(c.0, fields);
                }
                Op::GetField { a, b, f } => {
                    // A number field goes straight into the register's payload, with no
                    // `Value` in between (the general path below copies all 24 bytes).
                    let num = match &r!(b) {
                        Value::Obj(o) => match o.fields.borrow().get(f.index()) {
                            Some(&Value::Float(x)) => Num::Float(x),
                            Some(&Value::Int(x)) => Num::Int(x),
                            _ => Num::Other,
                        },
                        _ => Num::Other,
                    };
                    match num {
                        Num::Float(x) => {
                            set_float(&mut r!(a), x);
                            continue;
                        }
                        Num::Int(x) => {
                            set_int(&mut r!(a), x);
                            continue;
                        }
                        Num::Other => {}
                    }
                    let v = match &r!(b) {
                        Value::Obj(o) => match o.fields.borrow().get(f.index()) {
                            Some(v) => copy(v),
                            None => fault!("no field {} in the object", f.index()),
                        },
                        Value::Error(e) => match f.index() {
                            0 => Value::Text(Rc::from(e.kind.name())),
                            1 => Value::Int(e.kind.code()),
                            2 => Value::Text(e.message.clone()),
                            3 => Value::Int(e.line),
                            n => fault!("no field {n} in an Error"),
                        },
                        other => fault!("expected an object, found {}", type_name(other)),
                    };
                    put(&mut r!(a), v);
                }
                Op::SetField { a, f, b } => {
                    if let (&Value::Float(x), Value::Obj(o)) = (&r!(b), &r!(a)) {
                        if let Some(slot) = o.fields.borrow_mut().get_mut(f.index()) {
                            set_float(slot, x);
                            continue;
                        }
                    }
                    let v = copy(&r!(b));
                    let is_ref = crate::gc::is_ref(&v);
                    match &r!(a) {
                        Value::Obj(o) => {
                            match o.fields.borrow_mut().get_mut(f.index()) {
                                Some(slot) => put(slot, v),
                                None => fault!("no field {} in the object", f.index()),
                            }
                            if is_ref {
                                crate::gc::wrote_obj(o);
                            }
                        }
                        other => fault!("expected an object, found {}", type_name(other)),
                    }
                }
                Op::DbInsert { a, t, b } => {
                    let lo = b.index();
                    let n = image.tables[t.index()].columns.len();
                    let v = db!(database.insert(t.0, &fr[lo..lo + n]));
                    put(&mut r!(a), v);
                    commit_wait!();
                }
                Op::DbGetField { a, b, t, f } => {
                    let v = db!(database.get_field(t.0, &r!(b), f.index()));
                    put(&mut r!(a), v);
                }
                Op::DbUpdateField { a, t, f, b } => {
                    db!(database.update_field(t.0, &r!(a), f.index(), &r!(b)));
                    commit_wait!();
                }
                Op::DbDelete { a, t } => {
                    db!(database.delete(t.0, &r!(a)));
                    commit_wait!();
                }
                Op::DbFind { a, t, b } => {
                    let v = db!(database.find(t.0, &r!(b)));
                    put(&mut r!(a), v);
                }
                Op::DbRowId { a, b } => {
                    let id = db!(database::row_id(&r!(b)));
                    set_int(&mut r!(a), id);
                }
                Op::DbAlive { a, b } => {
                    let v = db!(database.alive(&r!(b)));
                    put(&mut r!(a), Value::Bool(v));
                }
                Op::DbQuery { a, q, b } => {
                    let lo = b.index();
                    let n = usize::from(image.queries[q.index()].n_args);
                    let v = db!(database.query(q.0, &fr[lo..lo + n]));
                    put(&mut r!(a), v);
                }
                Op::TxBegin {} => db!(database.begin(fiber_id, frames.len(), handlers.len())),
                Op::TxCommit {} => {
                    db!(database.commit(fiber_id));
                    commit_wait!();
                }
                Op::Spawn { a, f, base: b, n } => {
                    let lo = b.index();
                    let args = fr[lo..lo + usize::from(n)].to_vec();
                    save!();
                    return Step::Spawn {
                        func: f.0,
                        args,
                        dst: base + usize::from(a.0),
                    };
                }
                Op::Join { a, b } => {
                    let Value::Task(task) = &r!(b) else {
                        fault!("expected a task, found {}", type_name(&r!(b)))
                    };
                    match join(task, database.tx.is_some()) {
                        Ok(v) => put(&mut r!(a), v),
                        Err(JoinStop::Trap(t)) => {
                            save!();
                            return Step::Trap(t);
                        }
                        Err(JoinStop::Wait(task)) => {
                            save!();
                            return Step::Wait(Wait::Join(task));
                        }
                    }
                }
            }
        }
    }
}

/// Why `JOIN` did not produce a value.
enum JoinStop {
    /// The task trapped (raised again here), or `join` of an unfinished task inside a
    /// transaction.
    Trap(Trap),
    /// The task has not ended: wait for it.
    Wait(Rc<TaskCell>),
}

/// The most frames a trap raised again by `join` keeps: the innermost half (where it
/// happened) and the outermost half, with one frame saying how many were left out.
pub const MAX_JOINED_FRAMES: usize = 200;

fn shorten_joined_stack(stack: &mut Vec<StackFrame>) {
    if stack.len() <= MAX_JOINED_FRAMES {
        return;
    }
    let half = MAX_JOINED_FRAMES / 2;
    let left_out = stack.len() - 2 * half;
    // Frames already left out are counted in, not nested.
    let earlier: usize = stack[half..stack.len() - half]
        .iter()
        .filter_map(StackFrame::left_out)
        .map(|n| n.saturating_sub(1))
        .sum();
    let marker = StackFrame::omitted(left_out + earlier);
    stack.splice(half..stack.len() - half, std::iter::once(marker));
}

/// `JOIN` of `task`: its result, its trap (now marked joined), or a wait.
#[cold]
#[inline(never)]
fn join(task: &Rc<TaskCell>, in_transaction: bool) -> Result<Value, JoinStop> {
    let mut state = task.state.borrow_mut();
    match &mut *state {
        TaskState::Done(v) => Ok(v.clone()),
        TaskState::Trapped {
            trap,
            joined,
            stack,
        } => {
            *joined = true;
            Err(JoinStop::Trap(Trap {
                origin: Some(stack.as_slice().into()),
                ..trap.clone()
            }))
        }
        TaskState::Running if in_transaction => Err(JoinStop::Trap(Trap::new(
            TrapKind::Db,
            "join of a task that has not ended, inside a transaction (no other fiber runs until it commits)",
        ))),
        TaskState::Running => Err(JoinStop::Wait(task.clone())),
    }
}

/// Builds the status for an image that broke an interpreter invariant at `at`.
#[cold]
#[inline(never)]
fn fault_step(image: &Image, func: usize, at: usize, what: std::fmt::Arguments<'_>) -> Step {
    let f = &image.functions[func];
    let op = f.code.get(at).map_or("?", |op| op.mnemonic());
    Step::Fault(format!(
        "internal error: {what} in function `{}` at @{at} ({op})",
        f.name
    ))
}

/// Grows the register file to at least `top` (in chunks; doubling stops at
/// [`MAX_REGS`], beyond which only the window of the last frame is added).
#[cold]
fn grow(regs: &mut Vec<Value>, top: usize) {
    let want = (regs.len() * 2).min(MAX_REGS).max(top);
    regs.resize(want, Value::Nil);
}

/// The `W` registers from `base`: the current frame's window. The register file always
/// extends that far (the fiber starts with `W` registers and a call grows it first).
#[inline(always)]
fn window<const W: usize>(regs: &mut [Value], base: usize) -> &mut [Value; W] {
    (&mut regs[base..base + W])
        .try_into()
        .expect("a range of W registers is W long")
}

/// The most bytes the scratch buffer keeps between instructions.
const SCRATCH_KEEP: usize = 1 << 16;

/// The text built in `scratch` as a Text (one allocation); a buffer that grew for a
/// long text is given back rather than kept for the rest of the run.
#[inline]
fn take_text(scratch: &mut String) -> Result<Rc<str>, Trap> {
    let t = limit::share_text("concatenation", scratch);
    if scratch.capacity() > SCRATCH_KEEP {
        *scratch = String::new();
    }
    t
}

/// Drops the handlers of frames above `level` (the frame that just returned).
#[inline(always)]
fn drop_handlers(handlers: &mut Vec<Handler>, level: usize) {
    while handlers.last().is_some_and(|h| h.level as usize > level) {
        handlers.pop();
    }
}

#[inline(always)]
/// The iterations of `range(start, stop, step)` after the first, as an unsigned count
/// in an Int's bits (there can be up to 2^64 - 1 of them): `Some(None)` when the range
/// is empty, `None` when the step is 0.
pub fn range_count(start: i64, stop: i64, step: i64) -> Option<Option<i64>> {
    let (from, to, by) = (i128::from(start), i128::from(stop), i128::from(step));
    let span = match step {
        0 => return None,
        1.. if from < to => to - from,
        ..=-1 if from > to => from - to,
        _ => return Some(None),
    };
    // `span - 1` over `|step|` is below 2^64, so it fits an unsigned count.
    let left = u64::try_from((span - 1) / by.abs()).unwrap_or(u64::MAX);
    Some(Some(i64::from_ne_bytes(left.to_ne_bytes())))
}

fn set_int(slot: &mut Value, v: i64) {
    if let Value::Int(x) = slot {
        *x = v;
    } else {
        put(slot, Value::Int(v));
    }
}

/// Stores `v` in `slot`. The old value is dropped only when it holds a reference: for a
/// number, a Bool, nil or a row handle there is nothing to release, and skipping the
/// (out-of-line) drop glue is most of the cost of a register write in numeric code.
#[inline(always)]
fn put(slot: &mut Value, v: Value) {
    if slot.is_plain() {
        std::mem::forget(std::mem::replace(slot, v));
    } else {
        *slot = v;
    }
}

/// `slot = v` for a Float: a register that already holds a Float (the usual case in a
/// numeric loop) only has its payload rewritten.
#[inline(always)]
fn set_float(slot: &mut Value, v: f64) {
    if let Value::Float(x) = slot {
        *x = v;
    } else {
        put(slot, Value::Float(v));
    }
}

/// A number read out of an object's field, or `Other` for anything the general path
/// handles (a `Copy` type, so the fast path holds nothing that needs dropping).
#[derive(Clone, Copy)]
enum Num {
    Float(f64),
    Int(i64),
    Other,
}

/// A copy of `v`: numbers are copied without going through `Clone`'s match over every
/// variant; anything else is cloned (a reference count goes up).
#[inline(always)]
fn copy(v: &Value) -> Value {
    match v {
        Value::Float(f) => Value::Float(*f),
        Value::Int(i) => Value::Int(*i),
        other => other.clone(),
    }
}

fn bounds_msg(i: i64, len: usize) -> String {
    format!("index {i} out of range for list of length {len}")
}

/// `LIST_ENTRY` is a `for` loop's step: past the end, elements were removed during
/// the loop (it read the length once, at its start).
fn bounds_msg_for(i: i64, len: usize) -> String {
    format!(
        "the `for` loop reached element {i} of a list that has {len} now: elements removed during the loop move the later ones down (so one is skipped per removal); to remove while walking a list, keep the elements to keep in a new list, or walk the indexes from the end: `for i in range(len(xs) - 1, -1, -1)`"
    )
}

/// `MAP_ENTRY` is a `for` loop's step: past the end, entries were removed during the
/// loop (LANGUAGE.md: removing one moves the later ones down).
fn bounds_msg_map(i: i64, len: usize) -> String {
    format!(
        "the `for` loop reached entry {i} of a map that has {len} now: entries removed during the loop move the later ones down (so one is skipped per removal); to remove while walking a map, walk a copy of its keys: `for k in keys(m)`"
    )
}

/// `==` of LANGUAGE.md §3: scalars and Text by content, references by identity, nil
/// equals only nil.
pub fn values_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Text(x), Value::Text(y)) => text_eq(x, y),
        (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
        (Value::Map(x), Value::Map(y)) => Rc::ptr_eq(x, y),
        (Value::Obj(x), Value::Obj(y)) => Rc::ptr_eq(x, y),
        (Value::Error(x), Value::Error(y)) => Rc::ptr_eq(x, y),
        (Value::Row(x), Value::Row(y)) => x == y,
        (Value::Task(x), Value::Task(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// Text equality by content. Short texts (a character from `for c in t` against a
/// literal, say) are compared in line: a call to `memcmp` costs more than the bytes.
#[inline]
fn text_eq(x: &str, y: &str) -> bool {
    let (x, y) = (x.as_bytes(), y.as_bytes());
    if x.len() != y.len() {
        return false;
    }
    if std::ptr::eq(x.as_ptr(), y.as_ptr()) {
        true
    } else if x.len() <= 16 {
        x.iter().zip(y).all(|(p, q)| p == q)
    } else {
        x == y
    }
}

/// A value as a map key (`Int`, `Text` or `Bool`).
pub fn to_key(v: &Value) -> Option<Key> {
    match v {
        Value::Int(i) => Some(Key::Int(*i)),
        Value::Bool(b) => Some(Key::Bool(*b)),
        Value::Text(t) => Some(Key::Text(t.clone())),
        _ => None,
    }
}

/// The name of a value's runtime type, for internal error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Bool(_) => "Bool",
        Value::Int(_) => "Int",
        Value::Float(_) => "Float",
        Value::Text(_) => "Text",
        Value::List(_) => "a list",
        Value::Map(_) => "a map",
        Value::Obj(_) => "an object",
        Value::Error(_) => "an Error",
        Value::Row(_) => "a row",
        Value::Task(_) => "a task",
    }
}

/// Checks every operand range the instruction loop indexes without checking: register
/// runs inside the frame, constant, function, class, global, builtin, table and query
/// indices, jump targets, call arities, and that no function can run past its last
/// instruction; and the table definitions and query descriptors the database is built
/// from (the verifier's schema rules).
fn check_image(image: &Image) -> Result<(), LinkError> {
    wo_bytecode::verify::verify_schema(image).map_err(|e| LinkError::Invalid(e.to_string()))?;
    if image.n_globals > wo_bytecode::MAX_GLOBALS {
        return Err(LinkError::Invalid(format!(
            "the image asks for {} global slots (at most {})",
            image.n_globals,
            wo_bytecode::MAX_GLOBALS
        )));
    }
    let bad = |f: &str, at: usize, msg: String| {
        Err(LinkError::Invalid(format!(
            "function `{f}` instruction {at}: {msg}"
        )))
    };
    let entry = image.functions.get(image.entry.index()).ok_or_else(|| {
        LinkError::Invalid(format!("entry function {} does not exist", image.entry.0))
    })?;
    if entry.arity > 1 {
        return Err(LinkError::Invalid(format!(
            "entry function `{}` takes {} parameters (0 or 1 expected)",
            entry.name, entry.arity
        )));
    }
    if let Some(init) = image.init {
        match image.functions.get(init.index()) {
            Some(f) if f.arity == 0 => {}
            Some(f) => {
                return Err(LinkError::Invalid(format!(
                    "init function `{}` takes parameters",
                    f.name
                )))
            }
            None => {
                return Err(LinkError::Invalid(format!(
                    "init function {} does not exist",
                    init.0
                )))
            }
        }
    }
    for func in &image.functions {
        let name = func.name.as_str();
        let n_regs = usize::from(func.n_regs);
        if n_regs < usize::from(func.arity) {
            return Err(LinkError::Invalid(format!(
                "function `{name}` has {n_regs} registers for {} parameters",
                func.arity
            )));
        }
        match func.code.last() {
            Some(Op::Ret { .. } | Op::RetNil {} | Op::Jump { .. }) => {}
            _ => {
                return Err(LinkError::Invalid(format!(
                    "function `{name}` does not end in a return or a jump"
                )))
            }
        }
        let run = |at: usize, b: usize, n: usize| -> Result<(), LinkError> {
            if b + n > n_regs {
                return bad(
                    name,
                    at,
                    format!("registers r{b}..r{} outside the frame of {n_regs}", b + n),
                );
            }
            Ok(())
        };
        for (at, op) in func.code.iter().enumerate() {
            // The first register of a run that is only read is checked with its run
            // below: an empty run may start one past the last register.
            let run_base = matches!(
                op,
                Op::NewList { .. }
                    | Op::NewMap { .. }
                    | Op::ConcatN { .. }
                    | Op::NewObj { .. }
                    | Op::DbInsert { .. }
                    | Op::DbQuery { .. }
            );
            for (name, operand) in op.operands() {
                use wo_bytecode::op::OperandRef as O;
                let ok = match operand {
                    O::Reg(_) if run_base && name == "b" => true,
                    O::Reg(_) if matches!(op, Op::Spawn { .. }) && name == "base" => true,
                    O::Reg(r) => r.index() < n_regs,
                    O::Const(k) => k.index() < image.consts.len(),
                    O::Func(f) => f.index() < image.functions.len(),
                    O::Class(c) => c.index() < image.classes.len(),
                    O::Builtin(b) => b.index() < image.builtins.len(),
                    O::Global(g) => u64::from(g.0) < u64::from(image.n_globals),
                    O::Pc(t) => t.index() < func.code.len(),
                    O::Table(t) => t.index() < image.tables.len(),
                    O::Query(q) => q.index() < image.queries.len(),
                    _ => true,
                };
                if !ok {
                    return bad(name, at, format!("operand {operand:?} out of range"));
                }
            }
            match *op {
                Op::ConcatN { b, n, .. } | Op::NewList { b, n, .. } => {
                    run(at, b.index(), usize::from(n))?;
                }
                Op::NewMap { b, n, .. } => run(at, b.index(), 2 * usize::from(n))?,
                Op::ForPrep { a, .. } | Op::ForLoop { a, .. } => run(at, a.index(), 3)?,
                Op::NewObj { b, c, .. } => {
                    run(at, b.index(), image.classes[c.index()].fields.len())?
                }
                Op::Call { f, base } => {
                    run(
                        at,
                        base.index(),
                        usize::from(image.functions[f.index()].arity).max(1),
                    )?;
                }
                Op::Spawn { f, base, n, .. } => {
                    if image.functions[f.index()].arity != n {
                        return bad(name, at, format!("SPAWN passes {n} arguments"));
                    }
                    run(at, base.index(), usize::from(n))?;
                }
                Op::CallBuiltin { f, base, n } => {
                    let expected = image.builtins[f.index()].arity;
                    if n != expected {
                        return bad(
                            name,
                            at,
                            format!("builtin takes {expected} arguments, the call passes {n}"),
                        );
                    }
                    run(at, base.index(), usize::from(n).max(1))?;
                }
                Op::DbInsert { t, b, .. } => {
                    run(at, b.index(), image.tables[t.index()].columns.len())?;
                }
                Op::DbQuery { q, b, .. } => {
                    run(at, b.index(), usize::from(image.queries[q.index()].n_args))?;
                }
                // A handler at or before its TRY_ENTER loops without spending budget.
                Op::TryEnter { t, .. } if t.index() <= at => {
                    return bad(name, at, format!("handler @{} is not after it", t.0));
                }
                Op::DbGetField { t, f, .. } | Op::DbUpdateField { t, f, .. } => {
                    let n_columns = image.tables[t.index()].columns.len();
                    if f.index() >= n_columns {
                        return bad(
                            name,
                            at,
                            format!("column .{} outside the {n_columns} columns", f.0),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
