//! Micro-benchmarks of the interpreter on hand-built images: recursive `fib(30)` and a
//! 10M-iteration Int loop (in the shape a `while` compiles to, and rotated so the test
//! sits at the bottom). Run with `cargo run -p wo-vm --release --example bench`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use wo_bytecode::{Cmp, FuncIdx, Function, Image, Op, Pc, Reg, SrcPos};
use wo_vm::{Host, NativeFn, RunResult};

fn func(name: &str, arity: u16, n_regs: u16, code: Vec<Op>) -> Function {
    let pos = vec![SrcPos::default(); code.len()];
    Function {
        name: name.into(),
        arity,
        n_regs,
        code,
        pos,
    }
}

fn image(functions: Vec<Function>) -> Image {
    Image {
        files: vec!["bench.wo".into()],
        functions,
        ..Image::default()
    }
}

fn host() -> Host {
    Host {
        out: Box::new(std::io::sink()),
        err: Box::new(std::io::sink()),
        input: Box::new(std::io::empty()),
        classes: Rc::from(Vec::new()),
        rng: 1,
        started: Instant::now(),
    }
}

fn no_natives(_: &str) -> Option<NativeFn> {
    None
}

fn fib_image(n: i32) -> Image {
    let r = Reg;
    let main = func(
        "main",
        0,
        1,
        vec![
            Op::LoadInt { a: r(0), v: n },
            Op::Call {
                f: FuncIdx(1),
                base: r(0),
            },
            Op::Ret { a: r(0) },
        ],
    );
    let fib = func(
        "fib",
        1,
        3,
        vec![
            Op::LoadInt { a: r(1), v: 2 },
            Op::JumpUnlessCmpInt {
                b: r(0),
                c: r(1),
                op: Cmp::Lt,
                t: Pc(3),
            },
            Op::Ret { a: r(0) },
            Op::AddIntImm {
                a: r(1),
                b: r(0),
                v: -1,
            },
            Op::Call {
                f: FuncIdx(1),
                base: r(1),
            },
            Op::AddIntImm {
                a: r(2),
                b: r(0),
                v: -2,
            },
            Op::Call {
                f: FuncIdx(1),
                base: r(2),
            },
            Op::AddInt {
                a: r(0),
                b: r(1),
                c: r(2),
            },
            Op::Ret { a: r(0) },
        ],
    );
    image(vec![main, fib])
}

/// `while i < n { i = i + 1 }`: test at the top, jump back at the bottom.
fn loop_image(n: i32) -> Image {
    let r = Reg;
    image(vec![func(
        "main",
        0,
        2,
        vec![
            Op::LoadInt { a: r(0), v: 0 },
            Op::LoadInt { a: r(1), v: n },
            Op::JumpUnlessCmpInt {
                b: r(0),
                c: r(1),
                op: Cmp::Lt,
                t: Pc(5),
            },
            Op::AddIntImm {
                a: r(0),
                b: r(0),
                v: 1,
            },
            Op::Jump { t: Pc(2) },
            Op::RetNil {},
        ],
    )])
}

/// The same loop rotated: one test at the bottom that jumps back.
fn rotated_loop_image(n: i32) -> Image {
    let r = Reg;
    image(vec![func(
        "main",
        0,
        2,
        vec![
            Op::LoadInt { a: r(0), v: 0 },
            Op::LoadInt { a: r(1), v: n },
            Op::AddIntImm {
                a: r(0),
                b: r(0),
                v: 1,
            },
            Op::JumpUnlessCmpInt {
                b: r(0),
                c: r(1),
                op: Cmp::Ge,
                t: Pc(2),
            },
            Op::RetNil {},
        ],
    )])
}

fn time(label: &str, image: &Image) {
    let mut best = Duration::MAX;
    let mut res = None;
    let reps: usize = std::env::var("BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    for _ in 0..reps {
        let t = Instant::now();
        let r = wo_vm::run(image, &no_natives, Vec::new(), host());
        best = best.min(t.elapsed());
        res = Some(r);
    }
    let res = res.and_then(Result::ok);
    println!(
        "{label:<28} best of {reps}: {:>8.2} ms  ({res:?})",
        best.as_secs_f64() * 1e3
    );
    assert!(matches!(res, Some(RunResult::Exit(_))));
}

fn main() {
    // An optional argument picks one benchmark (`fib`, `loop`, `rotated`).
    let only = std::env::args().nth(1).unwrap_or_default();
    if only.is_empty() || only == "fib" {
        time("fib(30)", &fib_image(30));
    }
    if only.is_empty() || only == "loop" {
        time("loop 10M (test at top)", &loop_image(10_000_000));
    }
    if only.is_empty() || only == "rotated" {
        time("loop 10M (rotated)", &rotated_loop_image(10_000_000));
    }
}
