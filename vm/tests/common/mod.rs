//! Helpers shared by the interpreter tests: a tiny assembler for hand-built images, a
//! host whose output lands in a shared buffer, and a small native table (`print`,
//! `print_err`, `fail`, `exit`, `text`, `len_list`).

#![allow(dead_code)] // each test file uses a different part of the helpers

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use wo_bytecode::{BuiltinRef, Class, Const, FuncIdx, Function, Image, Op, Reg, SrcPos};
use wo_vm::{Host, NativeFn, RunResult, Stop, Trap, TrapKind, Value};

pub fn r(i: u16) -> Reg {
    Reg(i)
}

/// A function whose instruction `i` sits at line `line0 + i`, column 1 + index of the
/// function name length (any distinct value will do), file 0.
pub fn func(name: &str, arity: u16, n_regs: u16, line0: u32, code: Vec<Op>) -> Function {
    let pos = (0..code.len())
        .map(|i| SrcPos {
            file: 0,
            line: line0 + i as u32,
            col: 5,
        })
        .collect();
    Function {
        name: name.into(),
        arity,
        n_regs,
        code,
        pos,
    }
}

/// The builtins every test image links (in this order, so `CallBuiltin` index 0 is
/// `print`).
pub const PRINT: u16 = 0;
pub const FAIL: u16 = 1;
pub const EXIT: u16 = 2;
pub const PRINT_ERR: u16 = 3;

pub fn image(functions: Vec<Function>) -> Image {
    Image {
        files: vec!["test.wo".into()],
        consts: Vec::new(),
        functions,
        classes: Vec::new(),
        builtins: ["print", "fail", "exit", "print_err"]
            .iter()
            .map(|n| BuiltinRef {
                name: (*n).into(),
                arity: 1,
            })
            .collect(),
        tables: Vec::new(),
        queries: Vec::new(),
        n_globals: 0,
        init: None,
        entry: FuncIdx(0),
    }
}

pub fn with_consts(mut img: Image, consts: Vec<Const>) -> Image {
    img.consts = consts;
    img
}

pub fn with_classes(mut img: Image, classes: &[(&str, &[&str])]) -> Image {
    img.classes = classes
        .iter()
        .map(|(n, fs)| Class {
            name: (*n).into(),
            fields: fs.iter().map(|f| (*f).into()).collect(),
        })
        .collect();
    img
}

/// A writer that keeps what it is given to itself until `flush`, then appends it to the
/// shared buffer, so a test sees output only if the VM flushed.
pub struct Buffered {
    pending: Vec<u8>,
    shared: Rc<RefCell<Vec<u8>>>,
}

impl Write for Buffered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.shared.borrow_mut().append(&mut self.pending);
        Ok(())
    }
}

pub struct Out {
    pub out: Rc<RefCell<Vec<u8>>>,
    pub err: Rc<RefCell<Vec<u8>>>,
}

impl Out {
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.out.borrow()).into_owned()
    }
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.err.borrow()).into_owned()
    }
}

pub fn host() -> (Host, Out) {
    let out = Rc::new(RefCell::new(Vec::new()));
    let err = Rc::new(RefCell::new(Vec::new()));
    let host = Host {
        out: Box::new(Buffered {
            pending: Vec::new(),
            shared: out.clone(),
        }),
        err: Box::new(Buffered {
            pending: Vec::new(),
            shared: err.clone(),
        }),
        input: Box::new(std::io::empty()),
        classes: Rc::from(Vec::new()),
        rng: 1,
        started: Instant::now(),
    };
    (host, Out { out, err })
}

fn print(host: &mut Host, args: &[Value]) -> Result<Value, Stop> {
    let t = wo_vm::to_text(&args[0], &host.classes);
    let _ = writeln!(host.out, "{t}");
    Ok(Value::Nil)
}

fn print_err(host: &mut Host, args: &[Value]) -> Result<Value, Stop> {
    let t = wo_vm::to_text(&args[0], &host.classes);
    let _ = writeln!(host.err, "{t}");
    Ok(Value::Nil)
}

fn fail(host: &mut Host, args: &[Value]) -> Result<Value, Stop> {
    Err(Stop::Trap(Trap::new(
        TrapKind::Fail,
        wo_vm::to_text(&args[0], &host.classes),
    )))
}

fn exit(_: &mut Host, args: &[Value]) -> Result<Value, Stop> {
    match args[0] {
        Value::Int(c) => Err(Stop::Exit(c as i32)),
        _ => Err(Stop::Exit(1)),
    }
}

pub fn natives(name: &str) -> Option<NativeFn> {
    Some(match name {
        "print" => print,
        "print_err" => print_err,
        "fail" => fail,
        "exit" => exit,
        _ => return None,
    })
}

/// Runs `img` with `args`; the result and what went to stdout and stderr.
pub fn run_args(img: &Image, args: &[&str]) -> (RunResult, String, String) {
    let (h, out) = host();
    let res = wo_vm::run(
        img,
        &natives,
        args.iter().map(|a| (*a).to_string()).collect(),
        h,
    )
    .expect("the test image links");
    (res, out.out(), out.err())
}

pub fn run(img: &Image) -> (RunResult, String) {
    let (res, out, _) = run_args(img, &[]);
    (res, out)
}

/// `print(R[reg])` using register `scratch` (which it clobbers).
pub fn print_reg(reg: u16, scratch: u16) -> [Op; 2] {
    [
        Op::Move {
            a: r(scratch),
            b: r(reg),
        },
        Op::CallBuiltin {
            f: wo_bytecode::BuiltinIdx(PRINT),
            base: r(scratch),
            n: 1,
        },
    ]
}

/// Asserts that `res` is an uncaught trap of `kind` with `message`.
pub fn assert_trap(res: &RunResult, kind: TrapKind, message: &str) {
    match res {
        RunResult::Trap { trap, .. } => {
            assert_eq!(trap.kind, kind, "trap {trap:?}");
            assert_eq!(trap.message, message);
        }
        other => panic!("expected a {kind:?} trap, got {other:?}"),
    }
}
