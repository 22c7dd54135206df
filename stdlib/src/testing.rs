//! Helpers for the unit tests: a `Host` whose output streams write into shared buffers,
//! a way to call a native by its catalogue name, and short constructors for values.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use wo_vm::{Host, MapData, Stop, TrapKind, Value};

/// A writer that appends to a buffer the test can read afterwards.
#[derive(Clone, Default)]
pub struct SharedBuf(pub Rc<RefCell<Vec<u8>>>);

impl SharedBuf {
    pub fn contents(&self) -> String {
        String::from_utf8_lossy(&self.0.borrow()).into_owned()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A host and the buffers behind its stdout and stderr.
pub struct TestHost {
    pub host: Host,
    pub out: SharedBuf,
    pub err: SharedBuf,
}

pub fn host() -> TestHost {
    let out = SharedBuf::default();
    let err = SharedBuf::default();
    let host = Host {
        out: Box::new(out.clone()),
        err: Box::new(err.clone()),
        input: Box::new(std::io::empty()),
        classes: Rc::from(vec![wo_bytecode::image::Class {
            name: "Point".to_string(),
            fields: vec!["x".to_string(), "y".to_string()],
        }]),
        rng: 0,
        started: std::time::Instant::now(),
    };
    TestHost { host, out, err }
}

impl TestHost {
    /// Calls the native `name` on this host.
    pub fn call(&mut self, name: &str, argv: &[Value]) -> Result<Value, Stop> {
        let f = crate::lookup(name).unwrap_or_else(|| panic!("no native `{name}`"));
        f(&mut self.host, argv)
    }
}

/// Calls the native `name` on a fresh host.
pub fn call(name: &str, argv: &[Value]) -> Result<Value, Stop> {
    host().call(name, argv)
}

/// Calls the one-argument native `name` on a fresh host.
pub fn call1(name: &str, arg: &Value) -> Result<Value, Stop> {
    call(name, std::slice::from_ref(arg))
}

pub fn t(s: &str) -> Value {
    Value::Text(Rc::from(s))
}

pub fn list(items: Vec<Value>) -> Value {
    Value::new_list(items)
}

pub fn ints(items: &[i64]) -> Value {
    list(items.iter().map(|i| Value::Int(*i)).collect())
}

pub fn floats(items: &[f64]) -> Value {
    list(items.iter().map(|f| Value::Float(*f)).collect())
}

pub fn texts(items: &[&str]) -> Value {
    list(items.iter().map(|s| t(s)).collect())
}

pub fn map_of(entries: Vec<(Value, Value)>) -> Value {
    let mut m = MapData::default();
    for (k, v) in entries {
        m.insert(crate::key(&k).expect("test keys are keys"), v);
    }
    Value::new_map(m)
}

/// The value's text by the printing rules, for comparing results.
pub fn show(v: &Value) -> String {
    wo_vm::display::to_text(v, &[])
}

/// A native's result, or a value taken as a successful result.
pub trait Outcome {
    fn outcome(self) -> Result<Value, Stop>;
}

impl Outcome for Result<Value, Stop> {
    fn outcome(self) -> Result<Value, Stop> {
        self
    }
}

impl Outcome for Value {
    fn outcome(self) -> Result<Value, Stop> {
        Ok(self)
    }
}

/// Asserts that `res` is a value whose printed text is `expected`.
#[track_caller]
pub fn assert_shows(res: impl Outcome, expected: &str) {
    match res.outcome() {
        Ok(v) => assert_eq!(show(&v), expected),
        Err(stop) => panic!("expected `{expected}`, got {stop:?}"),
    }
}

/// Asserts that `res` is a trap of `kind` whose message contains `msg`.
#[track_caller]
pub fn assert_trap(res: Result<Value, Stop>, kind: TrapKind, msg: &str) {
    match res {
        Err(Stop::Trap(trap)) => {
            assert_eq!(trap.kind, kind, "trap {trap:?}");
            assert!(
                trap.message.contains(msg),
                "message {:?} does not contain {msg:?}",
                trap.message
            );
        }
        other => panic!("expected a {} trap, got {other:?}", kind.name()),
    }
}

/// Asserts that `res` is an internal fault (not a catchable trap) whose text contains
/// `msg`.
pub fn assert_fault(res: Result<Value, Stop>, msg: &str) {
    match res {
        Err(Stop::Fault(text)) => {
            assert!(
                text.contains(msg),
                "fault {text:?} does not contain {msg:?}"
            );
        }
        other => panic!("expected an internal fault, got {other:?}"),
    }
}
