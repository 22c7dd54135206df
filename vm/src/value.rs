//! Script values as the interpreter holds them in registers, traps, and the host state
//! that native functions (the standard library) see. Objects, lists and maps have
//! reference semantics (`Rc` + `RefCell`); Text is immutable and shared. Every
//! object, list and map is made by a constructor here, which counts it for the cycle
//! collector (`gc.rs`); code that writes a reference into an existing container tells
//! the collector (`gc::wrote_*`).

use std::cell::RefCell;
use std::io::{BufRead, Read as _, Write};
use std::rc::Rc;

/// A map key: the key types the checker allows (`Int`, `Text`, `Bool`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Int(i64),
    Bool(bool),
    Text(Rc<str>),
}

/// A map key borrowed from a value, for lookups: it hashes and compares exactly as the
/// [`Key`] it stands for, so finding a Text key neither clones nor drops an `Rc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRef<'a> {
    Int(i64),
    Bool(bool),
    Text(&'a str),
}

impl Key {
    pub fn as_key_ref(&self) -> KeyRef<'_> {
        match self {
            Key::Int(i) => KeyRef::Int(*i),
            Key::Bool(b) => KeyRef::Bool(*b),
            Key::Text(t) => KeyRef::Text(t),
        }
    }
}

impl<'a> KeyRef<'a> {
    /// `v` as a key, when it is of a key type.
    pub fn of(v: &'a Value) -> Option<KeyRef<'a>> {
        match v {
            Value::Int(i) => Some(KeyRef::Int(*i)),
            Value::Bool(b) => Some(KeyRef::Bool(*b)),
            Value::Text(t) => Some(KeyRef::Text(t)),
            _ => None,
        }
    }
}

/// One hasher call per key (a map's keys all have one type, so the variant need not be
/// hashed): a Text key costs one pass over its bytes.
impl std::hash::Hash for KeyRef<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match *self {
            KeyRef::Int(i) => state.write_i64(i),
            KeyRef::Bool(b) => state.write_u8(u8::from(b)),
            KeyRef::Text(t) => state.write(t.as_bytes()),
        }
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_key_ref().hash(state);
    }
}

pub use crate::map::MapData;
/// The one order of Floats, shared with the engine (`order by`, sorted indexes).
pub use wo_db::float_order;

/// An object of a (non-table) class: its class index and fields in declaration order.
/// Made only by [`Value::new_object`].
#[derive(Debug)]
pub struct Object {
    pub class: u32,
    /// Its place in the cycle collector's registry (`gc.rs`), which it leaves when it
    /// is dropped.
    pub(crate) gc: std::cell::Cell<u32>,
    pub fields: RefCell<Vec<Value>>,
}

/// Dropping an object releases what it alone holds with a work list instead of
/// recursion, so a long chain (`Node { next: Node { next: … } }`, a list of lists held
/// by an object) cannot overflow the Rust stack when it is freed.
impl Drop for Object {
    fn drop(&mut self) {
        if self.gc.get() != crate::gc::UNTRACKED {
            crate::gc::untrack_obj(self);
        }
        let mut work = std::mem::take(self.fields.get_mut());
        while let Some(v) = work.pop() {
            match v {
                Value::Obj(rc) => {
                    if let Ok(mut obj) = Rc::try_unwrap(rc) {
                        work.append(obj.fields.get_mut());
                    }
                }
                Value::List(rc) => {
                    if let Ok(cell) = Rc::try_unwrap(rc) {
                        work.extend(cell.into_inner());
                    }
                }
                Value::Map(rc) => {
                    if let Ok(cell) = Rc::try_unwrap(rc) {
                        work.extend(cell.into_inner().into_values());
                    }
                }
                _ => {}
            }
        }
    }
}

/// A caught trap, as the `Error` type exposes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorValue {
    pub kind: TrapKind,
    pub message: Rc<str>,
    pub line: i64,
}

/// A handle to a row of a table: the class index of the table's class (so printing and
/// equality need nothing but the value) and the row id. Rows live in the database, not
/// on the heap, so a handle is plain data; it keeps its id after the row is deleted,
/// when only `id` and `DB_ALIVE` still work on it. `gen` is the generation of the id
/// when the handle was made (`wo_db::Db::generation`): an insert undone by a rollback
/// gives its id again, and the handle to the undone row must not reach the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowRef {
    pub class: u32,
    pub gen: u32,
    pub id: i64,
}

impl RowRef {
    /// A handle to row `id` of the table of class `class`, made at generation 0 (the
    /// id's insert was never undone).
    pub fn new(class: u32, id: i64) -> RowRef {
        RowRef { class, gen: 0, id }
    }
}

/// One register's worth of value: 24 bytes (a tag and the widest payload, Text's fat
/// `Rc<str>` pointer).
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(Rc<str>),
    List(Rc<RefCell<Vec<Value>>>),
    Map(Rc<RefCell<MapData>>),
    Obj(Rc<Object>),
    Error(Rc<ErrorValue>),
    /// A row of a table (LANGUAGE.md §7).
    Row(RowRef),
    /// A fiber started by `spawn` and, once it ends, its result (LANGUAGE.md §9).
    Task(Rc<TaskCell>),
}

impl Value {
    /// Whether the value holds no reference (nil, a Bool, a number, a row handle): it
    /// can be overwritten without dropping anything.
    #[inline(always)]
    pub fn is_plain(&self) -> bool {
        matches!(
            self,
            Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Row(_)
        )
    }

    /// `c` as a one-character Text. The 128 ASCII ones are made once per thread and
    /// shared, so walking ASCII text (`for c in t`, `chars`, `substr(t, i, 1)`)
    /// allocates nothing per character.
    pub fn char_text(c: char) -> Value {
        thread_local! {
            static ASCII_CHARS: Vec<Rc<str>> = (0u8..128)
                .map(|b| Rc::from(char::from(b).encode_utf8(&mut [0; 4]) as &str))
                .collect();
        }
        match u8::try_from(c) {
            Ok(b) if b.is_ascii() => ASCII_CHARS.with(|a| Value::Text(a[usize::from(b)].clone())),
            _ => Value::Text(Rc::from(c.encode_utf8(&mut [0; 4]) as &str)),
        }
    }

    /// A new list (counted by the cycle collector, like every container).
    pub fn new_list(items: Vec<Value>) -> Value {
        let rc = Rc::new(RefCell::new(items));
        crate::gc::made();
        Value::List(rc)
    }

    /// A new map.
    pub fn new_map(m: MapData) -> Value {
        let rc = Rc::new(RefCell::new(m));
        crate::gc::made();
        Value::Map(rc)
    }

    /// A new object of class `class` with `fields` in declaration order.
    pub fn new_object(class: u32, fields: Vec<Value>) -> Value {
        let rc = Rc::new(Object {
            class,
            gc: std::cell::Cell::new(crate::gc::UNTRACKED),
            fields: RefCell::new(fields),
        });
        crate::gc::made();
        Value::Obj(rc)
    }
}

/// What a `task` value refers to: the fiber that runs it, and how it ended.
#[derive(Debug)]
pub struct TaskCell {
    /// The id of the fiber running the task.
    pub fiber: u64,
    pub state: RefCell<TaskState>,
    /// Fibers waiting in `join` for this task to end.
    pub waiters: RefCell<Vec<u64>>,
}

/// How far a task has got.
#[derive(Debug, Clone)]
pub enum TaskState {
    Running,
    /// Its function returned this value (nil for a function without a result).
    Done(Value),
    /// A trap left its function: kept here and raised again by `join`; `joined` says
    /// whether some `join` has taken it (an unjoined one ends the program with its
    /// report).
    Trapped {
        trap: Trap,
        stack: Vec<crate::StackFrame>,
        joined: bool,
    },
}

// The register file is an array of these; a row handle must not make them wider.
const _: () = assert!(std::mem::size_of::<Value>() <= 24);

/// The trap kinds of LANGUAGE.md §10, with their stable codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrapKind {
    Div0 = 1,
    Overflow = 2,
    Bounds = 3,
    Key = 4,
    Nil = 5,
    Stack = 6,
    Limit = 7,
    Fail = 8,
    Assert = 9,
    Db = 10,
    Unique = 11,
    Fk = 12,
    Io = 13,
}

impl TrapKind {
    /// The upper-case name scripts see in `e.kind`.
    pub fn name(self) -> &'static str {
        match self {
            TrapKind::Div0 => "DIV0",
            TrapKind::Overflow => "OVERFLOW",
            TrapKind::Bounds => "BOUNDS",
            TrapKind::Key => "KEY",
            TrapKind::Nil => "NIL",
            TrapKind::Stack => "STACK",
            TrapKind::Limit => "LIMIT",
            TrapKind::Fail => "FAIL",
            TrapKind::Assert => "ASSERT",
            TrapKind::Db => "DB",
            TrapKind::Unique => "UNIQUE",
            TrapKind::Fk => "FK",
            TrapKind::Io => "IO",
        }
    }

    pub fn code(self) -> i64 {
        self as i64
    }
}

/// A runtime error before it is caught or reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Trap {
    pub kind: TrapKind,
    pub message: String,
    /// For a trap raised again by `join`: the call stack where it happened, in the
    /// task's fiber (innermost first). A report of it shows those frames above the
    /// joiner's.
    pub origin: Option<Rc<[crate::StackFrame]>>,
}

impl Trap {
    pub fn new(kind: TrapKind, message: impl Into<String>) -> Trap {
        Trap {
            kind,
            message: message.into(),
            origin: None,
        }
    }
}

/// Why a native function did not return a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// A trap: unwinds to the nearest `try`.
    Trap(Trap),
    /// `exit(code)`: ends the program at once; not catchable.
    Exit(i32),
    /// The image broke an invariant the native relies on (an argument of a kind the
    /// checker rules out, possible only in a hand-made image): the program ends with an
    /// internal fault, as when an instruction finds a wrongly typed register. Not
    /// catchable; the text is what follows `internal error: `.
    Fault(String),
    /// `yield()`: other fibers take their turn first.
    Yield,
    /// `time.sleep(ms)`: the fiber waits this long.
    Sleep(std::time::Duration),
}

impl From<Trap> for Stop {
    fn from(t: Trap) -> Stop {
        Stop::Trap(t)
    }
}

/// Why a read of standard input stopped short: the read itself failed, or the
/// `before_wait` call made before a wait did (the natives' flush of stdout, so the
/// error is about stdout, not the input).
#[derive(Debug)]
pub enum ReadError {
    Read(std::io::Error),
    BeforeWait(std::io::Error),
}

/// Standard input as the `io` natives read it. Any `BufRead` is one (tests pass a
/// byte slice or `std::io::empty()`); [`crate::Stdin`] is the process's own.
pub trait Input {
    /// Appends the bytes up to and including the next `\n` (or up to the end of the
    /// input), at most `max` of them; returns how many (0 at the end). Calls
    /// `before_wait` each time it is about to wait for input that has not arrived (the
    /// natives flush stdout there); an error from it ends the read as
    /// [`ReadError::BeforeWait`].
    fn read_line(
        &mut self,
        buf: &mut Vec<u8>,
        max: u64,
        before_wait: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> Result<usize, ReadError>;
    /// Appends the rest of the input, at most `max` bytes; returns how many.
    fn read_all(&mut self, buf: &mut Vec<u8>, max: u64) -> std::io::Result<usize>;
}

/// Input in memory never waits, so `before_wait` is never called.
impl<R: BufRead> Input for R {
    fn read_line(
        &mut self,
        buf: &mut Vec<u8>,
        max: u64,
        _before_wait: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> Result<usize, ReadError> {
        self.take(max)
            .read_until(b'\n', buf)
            .map_err(ReadError::Read)
    }

    fn read_all(&mut self, buf: &mut Vec<u8>, max: u64) -> std::io::Result<usize> {
        self.take(max).read_to_end(buf)
    }
}

/// What natives see of the VM: output streams, standard input, class names for
/// printing, the random generator and the monotonic clock origin. Kept apart from the
/// register file so a native can borrow its arguments and the host at once.
pub struct Host {
    pub out: Box<dyn Write>,
    pub err: Box<dyn Write>,
    /// Read by `io.read_line` and `io.read_all` (which flush `out` first when the read
    /// would wait).
    pub input: Box<dyn Input>,
    /// Class names and field names, indexed by class index (for printing objects).
    pub classes: Rc<[wo_bytecode::Class]>,
    /// xorshift-style state for `random.*`; seeded from the clock unless `random.seed`.
    pub rng: u64,
    pub started: std::time::Instant,
}

/// A native function: arguments in, a value or a stop out.
pub type NativeFn = fn(&mut Host, &[Value]) -> Result<Value, Stop>;
