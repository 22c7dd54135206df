//! The interpreter on hand-built images: arithmetic, every trap an instruction raises,
//! try/catch across frames, deep recursion, the exit status, `main`'s arguments, `init`
//! and globals, linking, faults on ill-typed images, and resuming after a yield.

mod common;

use common::*;
use wo_bytecode::{BuiltinIdx, ClassIdx, Cmp, Const, FieldIdx, FuncIdx, GlobalIdx, Op, Pc};
use wo_vm::{LinkError, RunResult, StackFrame, Status, TrapKind, Value, Vm};

fn int_op(kind: &str, x: i64, y: i64) -> wo_bytecode::Image {
    let (a, b, c) = (r(0), r(1), r(2));
    let op = match kind {
        "+" => Op::AddInt { a, b, c },
        "-" => Op::SubInt { a, b, c },
        "*" => Op::MulInt { a, b, c },
        "/" => Op::DivInt { a, b, c },
        "%" => Op::RemInt { a, b, c },
        _ => unreachable!("no such operator"),
    };
    let mut code = vec![
        Op::LoadConst {
            a: r(1),
            k: wo_bytecode::ConstIdx(0),
        },
        Op::LoadConst {
            a: r(2),
            k: wo_bytecode::ConstIdx(1),
        },
        op,
    ];
    code.extend(print_reg(0, 3));
    code.push(Op::RetNil {});
    with_consts(
        image(vec![func("main", 0, 4, 1, code)]),
        vec![Const::Int(x), Const::Int(y)],
    )
}

fn int_result(kind: &str, x: i64, y: i64) -> Result<i64, (TrapKind, String)> {
    match run(&int_op(kind, x, y)) {
        (RunResult::Exit(0), out) => Ok(out.trim().parse().expect("an Int was printed")),
        (RunResult::Trap { trap, .. }, _) => Err((trap.kind, trap.message)),
        (other, _) => panic!("unexpected {other:?}"),
    }
}

#[test]
fn int_arithmetic() {
    assert_eq!(int_result("+", 2, 3), Ok(5));
    assert_eq!(int_result("-", 2, 3), Ok(-1));
    assert_eq!(int_result("*", -4, 3), Ok(-12));
    assert_eq!(int_result("/", 7, 2), Ok(3));
    assert_eq!(int_result("/", -7, 2), Ok(-3));
    assert_eq!(int_result("%", -7, 2), Ok(-1));
    assert_eq!(int_result("%", 7, -2), Ok(1));
    assert_eq!(int_result("%", i64::MIN, -1), Ok(0));
    assert_eq!(int_result("/", i64::MIN, 1), Ok(i64::MIN));
}

#[test]
fn int_traps() {
    let overflow = |op: &str| Err((TrapKind::Overflow, format!("integer overflow in `{op}`")));
    assert_eq!(int_result("+", i64::MAX, 1), overflow("+"));
    assert_eq!(int_result("-", i64::MIN, 1), overflow("-"));
    assert_eq!(int_result("*", i64::MAX, 2), overflow("*"));
    assert_eq!(int_result("/", i64::MIN, -1), overflow("/"));
    let div0 = Err((TrapKind::Div0, "division by zero".to_string()));
    assert_eq!(int_result("/", 1, 0), div0);
    assert_eq!(int_result("%", 1, 0), div0);
}

fn unary(op: Op, input: Const) -> (RunResult, String) {
    let mut code = vec![
        Op::LoadConst {
            a: r(1),
            k: wo_bytecode::ConstIdx(0),
        },
        op,
    ];
    code.extend(print_reg(0, 2));
    code.push(Op::RetNil {});
    run(&with_consts(
        image(vec![func("main", 0, 3, 1, code)]),
        vec![input],
    ))
}

#[test]
fn unary_ops_and_their_traps() {
    let neg = Op::NegInt { a: r(0), b: r(1) };
    assert_eq!(unary(neg, Const::Int(5)).1, "-5\n");
    assert_trap(
        &unary(neg, Const::Int(i64::MIN)).0,
        TrapKind::Overflow,
        "integer overflow in `-`",
    );
    let imm = Op::AddIntImm {
        a: r(0),
        b: r(1),
        v: 1,
    };
    assert_eq!(unary(imm, Const::Int(41)).1, "42\n");
    assert_trap(
        &unary(imm, Const::Int(i64::MAX)).0,
        TrapKind::Overflow,
        "integer overflow in `+`",
    );
    let sub_imm = Op::SubIntImm {
        a: r(0),
        b: r(1),
        v: 2,
    };
    assert_eq!(unary(sub_imm, Const::Int(44)).1, "42\n");
    assert_trap(
        &unary(sub_imm, Const::Int(i64::MIN + 1)).0,
        TrapKind::Overflow,
        "integer overflow in `-`",
    );
    let sub_min = Op::SubIntImm {
        a: r(0),
        b: r(1),
        v: i32::MIN,
    };
    assert_eq!(unary(sub_min, Const::Int(-1)).1, "2147483647\n");
    let to_int = Op::FloatToInt { a: r(0), b: r(1) };
    assert_eq!(unary(to_int, Const::Float(-2.9)).1, "-2\n");
    assert_eq!(
        unary(to_int, Const::Float(i64::MIN as f64)).1,
        "-9223372036854775808\n"
    );
    assert_trap(
        &unary(to_int, Const::Float(f64::NAN)).0,
        TrapKind::Overflow,
        "int() of NaN is out of range",
    );
    assert_trap(
        &unary(to_int, Const::Float(-(i64::MIN as f64))).0,
        TrapKind::Overflow,
        "int() of 9.223372036854776e18 is out of range",
    );
    assert_trap(
        &unary(to_int, Const::Float(f64::NEG_INFINITY)).0,
        TrapKind::Overflow,
        "int() of -inf is out of range",
    );
    let to_float = Op::IntToFloat { a: r(0), b: r(1) };
    assert_eq!(unary(to_float, Const::Int(3)).1, "3.0\n");
    let negf = Op::NegFloat { a: r(0), b: r(1) };
    assert_eq!(unary(negf, Const::Float(0.0)).1, "-0.0\n");
}

#[test]
fn float_arithmetic_is_ieee() {
    let (a, b, c) = (r(0), r(1), r(2));
    let cases = [
        (Op::AddFloat { a, b, c }, 0.1, 0.2, "0.30000000000000004"),
        (Op::SubFloat { a, b, c }, 1.0, 3.0, "-2.0"),
        (Op::MulFloat { a, b, c }, 1e200, 1e200, "inf"),
        (Op::DivFloat { a, b, c }, 1.0, 0.0, "inf"),
        (Op::DivFloat { a, b, c }, 0.0, 0.0, "NaN"),
        (Op::RemFloat { a, b, c }, -7.5, 2.0, "-1.5"),
    ];
    for (op, x, y, want) in cases {
        let mut code = vec![
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::LoadConst {
                a: r(2),
                k: wo_bytecode::ConstIdx(1),
            },
            op,
        ];
        code.extend(print_reg(0, 3));
        code.push(Op::RetNil {});
        let img = with_consts(
            image(vec![func("main", 0, 4, 1, code)]),
            vec![Const::Float(x), Const::Float(y)],
        );
        assert_eq!(run(&img).1, format!("{want}\n"), "{op:?}");
    }
}

#[test]
fn comparisons_and_equality() {
    // Each case: two constants, an instruction producing a Bool in r0.
    let (a, b, c) = (r(0), r(1), r(2));
    let cases: Vec<(Op, Const, Const, bool)> = vec![
        (
            Op::CmpInt {
                a,
                b,
                c,
                op: Cmp::Lt,
            },
            Const::Int(1),
            Const::Int(2),
            true,
        ),
        (
            Op::CmpInt {
                a,
                b,
                c,
                op: Cmp::Ge,
            },
            Const::Int(1),
            Const::Int(2),
            false,
        ),
        (
            Op::CmpFloat {
                a,
                b,
                c,
                op: Cmp::Eq,
            },
            Const::Float(f64::NAN),
            Const::Float(f64::NAN),
            false,
        ),
        (
            Op::CmpFloat {
                a,
                b,
                c,
                op: Cmp::Ne,
            },
            Const::Float(f64::NAN),
            Const::Float(f64::NAN),
            true,
        ),
        (
            Op::CmpText {
                a,
                b,
                c,
                op: Cmp::Lt,
            },
            Const::Text("B".into()),
            Const::Text("a".into()),
            true,
        ),
        (
            Op::CmpText {
                a,
                b,
                c,
                op: Cmp::Le,
            },
            Const::Text("ab".into()),
            Const::Text("a".into()),
            false,
        ),
        (
            Op::Eq { a, b, c },
            Const::Text("x".into()),
            Const::Text("x".into()),
            true,
        ),
        (Op::Eq { a, b, c }, Const::Int(1), Const::Float(1.0), false),
        (Op::Ne { a, b, c }, Const::Int(1), Const::Int(2), true),
        (
            Op::Eq { a, b, c },
            Const::Float(-0.0),
            Const::Float(0.0),
            true,
        ),
    ];
    for (op, x, y, want) in cases {
        let mut code = vec![
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::LoadConst {
                a: r(2),
                k: wo_bytecode::ConstIdx(1),
            },
            op,
        ];
        code.extend(print_reg(0, 3));
        code.push(Op::RetNil {});
        let img = with_consts(image(vec![func("main", 0, 4, 1, code)]), vec![x, y]);
        assert_eq!(run(&img).1, format!("{want}\n"), "{op:?}");
    }
}

#[test]
fn equality_of_references_and_nil() {
    // r1 = [], r2 = [], r3 = r1; print(r1 == r2, r1 == r3, nil == nil, nil == 0, not true)
    let mut code = vec![
        Op::NewList {
            a: r(1),
            b: r(0),
            n: 0,
        },
        Op::NewList {
            a: r(2),
            b: r(0),
            n: 0,
        },
        Op::Move { a: r(3), b: r(1) },
        Op::LoadNil { a: r(4) },
        Op::LoadNil { a: r(5) },
        Op::LoadInt { a: r(6), v: 0 },
        Op::Eq {
            a: r(10),
            b: r(1),
            c: r(2),
        },
        Op::Eq {
            a: r(11),
            b: r(1),
            c: r(3),
        },
        Op::Eq {
            a: r(12),
            b: r(4),
            c: r(5),
        },
        Op::Eq {
            a: r(13),
            b: r(4),
            c: r(6),
        },
        Op::Ne {
            a: r(14),
            b: r(6),
            c: r(4),
        },
        Op::LoadBool { a: r(15), v: true },
        Op::Not { a: r(15), b: r(15) },
        Op::NewList {
            a: r(0),
            b: r(10),
            n: 6,
        },
    ];
    code.extend(print_reg(0, 16));
    code.push(Op::RetNil {});
    let img = image(vec![func("main", 0, 17, 1, code)]);
    assert_eq!(run(&img).1, "[false, true, true, false, true, false]\n");
}

#[test]
fn lists_and_bounds() {
    // xs = [10, 20, 30]; xs[1] = 21; print(xs, len(xs), xs[2]); xs[i] with i from const.
    let list = |idx: i64, set: bool| {
        let mut code = vec![
            Op::LoadInt { a: r(1), v: 10 },
            Op::LoadInt { a: r(2), v: 20 },
            Op::LoadInt { a: r(3), v: 30 },
            Op::NewList {
                a: r(0),
                b: r(1),
                n: 3,
            },
            Op::LoadInt { a: r(4), v: 1 },
            Op::LoadInt { a: r(5), v: 21 },
            Op::ListSet {
                a: r(0),
                b: r(4),
                c: r(5),
            },
            Op::LoadConst {
                a: r(4),
                k: wo_bytecode::ConstIdx(0),
            },
            if set {
                Op::ListSet {
                    a: r(0),
                    b: r(4),
                    c: r(5),
                }
            } else {
                Op::ListGet {
                    a: r(6),
                    b: r(0),
                    c: r(4),
                }
            },
            Op::ListLen { a: r(7), b: r(0) },
            Op::NewList {
                a: r(8),
                b: r(6),
                n: 2,
            },
        ];
        code.extend(print_reg(0, 9));
        code.extend(print_reg(8, 9));
        code.push(Op::RetNil {});
        run(&with_consts(
            image(vec![func("main", 0, 10, 1, code)]),
            vec![Const::Int(idx)],
        ))
    };
    assert_eq!(list(2, false).1, "[10, 21, 30]\n[30, 3]\n");
    assert_eq!(list(0, true).1, "[21, 21, 30]\n[nil, 3]\n");
    let (res, out) = list(5, false);
    assert_trap(
        &res,
        TrapKind::Bounds,
        "index 5 out of range for list of length 3",
    );
    assert_eq!(out, "");
    assert_trap(
        &list(-1, false).0,
        TrapKind::Bounds,
        "index -1 out of range for list of length 3",
    );
    assert_trap(
        &list(3, true).0,
        TrapKind::Bounds,
        "index 3 out of range for list of length 3",
    );
}

#[test]
fn maps_get_set_and_iterate_in_insertion_order() {
    let img = with_consts(
        image(vec![func(
            "main",
            0,
            20,
            1,
            vec![
                // m = {"b": 1, "a": 2}
                Op::LoadConst {
                    a: r(1),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::LoadInt { a: r(2), v: 1 },
                Op::LoadConst {
                    a: r(3),
                    k: wo_bytecode::ConstIdx(1),
                },
                Op::LoadInt { a: r(4), v: 2 },
                Op::NewMap {
                    a: r(0),
                    b: r(1),
                    n: 2,
                },
                // m["c"] = 3; m["b"] = 10 (replaces in place)
                Op::LoadConst {
                    a: r(1),
                    k: wo_bytecode::ConstIdx(2),
                },
                Op::LoadInt { a: r(2), v: 3 },
                Op::MapSet {
                    a: r(0),
                    b: r(1),
                    c: r(2),
                },
                Op::LoadConst {
                    a: r(1),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::LoadInt { a: r(2), v: 10 },
                Op::MapSet {
                    a: r(0),
                    b: r(1),
                    c: r(2),
                },
                // print(m); print(m["zz"]); print(len(m))
                Op::Move { a: r(19), b: r(0) },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(19),
                    n: 1,
                },
                Op::LoadConst {
                    a: r(1),
                    k: wo_bytecode::ConstIdx(3),
                },
                Op::MapGet {
                    a: r(19),
                    b: r(0),
                    c: r(1),
                },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(19),
                    n: 1,
                },
                Op::MapLen { a: r(19), b: r(0) },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(19),
                    n: 1,
                },
                // for i in 0..len: k, v = entry i; print([k, v])
                Op::LoadInt { a: r(5), v: 0 },
                Op::MapLen { a: r(6), b: r(0) },
                Op::JumpUnlessCmpInt {
                    b: r(5),
                    c: r(6),
                    op: Cmp::Lt,
                    t: Pc(26),
                },
                Op::MapEntry {
                    k: r(7),
                    v: r(8),
                    m: r(0),
                    i: r(5),
                },
                Op::NewList {
                    a: r(19),
                    b: r(7),
                    n: 2,
                },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(19),
                    n: 1,
                },
                Op::AddIntImm {
                    a: r(5),
                    b: r(5),
                    v: 1,
                },
                Op::Jump { t: Pc(20) },
                // entry 3 is out of range
                Op::MapEntry {
                    k: r(7),
                    v: r(8),
                    m: r(0),
                    i: r(5),
                },
                Op::RetNil {},
            ],
        )]),
        vec![
            Const::Text("b".into()),
            Const::Text("a".into()),
            Const::Text("c".into()),
            Const::Text("zz".into()),
        ],
    );
    let (res, out) = run(&img);
    assert_eq!(
        out,
        "{\"b\": 10, \"a\": 2, \"c\": 3}\nnil\n3\n[\"b\", 10]\n[\"a\", 2]\n[\"c\", 3]\n"
    );
    assert_trap(
        &res,
        TrapKind::Bounds,
        "the `for` loop reached entry 3 of a map that has 3 now: entries removed during the loop move the later ones down (so one is skipped per removal); to remove while walking a map, walk a copy of its keys: `for k in keys(m)`",
    );
}

#[test]
fn objects_fields_and_text() {
    let img = with_consts(
        with_classes(
            image(vec![func(
                "main",
                0,
                10,
                1,
                vec![
                    Op::LoadInt { a: r(1), v: 1 },
                    Op::LoadInt { a: r(2), v: 2 },
                    Op::LoadConst {
                        a: r(3),
                        k: wo_bytecode::ConstIdx(0),
                    },
                    Op::NewObj {
                        a: r(0),
                        c: ClassIdx(0),
                        b: r(1),
                    },
                    Op::LoadInt { a: r(4), v: 7 },
                    Op::SetField {
                        a: r(0),
                        f: FieldIdx(1),
                        b: r(4),
                    },
                    Op::GetField {
                        a: r(5),
                        b: r(0),
                        f: FieldIdx(1),
                    },
                    Op::AddIntImm {
                        a: r(5),
                        b: r(5),
                        v: 1,
                    },
                    // text(p) .. " " .. text(r5)
                    Op::ToText { a: r(6), b: r(0) },
                    Op::LoadConst {
                        a: r(7),
                        k: wo_bytecode::ConstIdx(1),
                    },
                    Op::ToText { a: r(8), b: r(5) },
                    Op::ConcatN {
                        a: r(9),
                        b: r(6),
                        n: 3,
                    },
                    Op::Concat {
                        a: r(9),
                        b: r(9),
                        c: r(7),
                    },
                    Op::CallBuiltin {
                        f: BuiltinIdx(PRINT),
                        base: r(9),
                        n: 1,
                    },
                    Op::RetNil {},
                ],
            )]),
            &[("Point", &["x", "y", "label"])],
        ),
        vec![Const::Text("a\"b".into()), Const::Text(" ".into())],
    );
    assert_eq!(run(&img).1, "Point { x: 1, y: 7, label: \"a\\\"b\" } 8 \n");
}

/// `main` calls `f`, which calls `g`, which divides by zero; the handler in `main`
/// receives the Error and `main`'s registers are intact.
#[test]
fn try_catch_across_frames() {
    let main = func(
        "main",
        0,
        8,
        1,
        vec![
            Op::LoadInt { a: r(0), v: 99 },
            Op::TryEnter {
                t: Pc(5),
                err: r(1),
            },
            Op::Call {
                f: FuncIdx(1),
                base: r(2),
            },
            Op::TryExit {},
            Op::Jump { t: Pc(20) },
            // handler
            Op::GetField {
                a: r(2),
                b: r(1),
                f: FieldIdx(0),
            },
            Op::GetField {
                a: r(3),
                b: r(1),
                f: FieldIdx(1),
            },
            Op::GetField {
                a: r(4),
                b: r(1),
                f: FieldIdx(2),
            },
            Op::GetField {
                a: r(5),
                b: r(1),
                f: FieldIdx(3),
            },
            Op::Move { a: r(6), b: r(1) },
            Op::Move { a: r(7), b: r(0) },
            Op::NewList {
                a: r(2),
                b: r(2),
                n: 6,
            },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(2),
                n: 1,
            },
            Op::Jump { t: Pc(20) },
            Op::Nop {},
            Op::Nop {},
            Op::Nop {},
            Op::Nop {},
            Op::Nop {},
            Op::Nop {},
            Op::LoadInt { a: r(0), v: 3 },
            Op::Ret { a: r(0) },
        ],
    );
    let f = func(
        "f",
        0,
        2,
        100,
        vec![
            Op::LoadInt { a: r(0), v: 5 },
            Op::Call {
                f: FuncIdx(2),
                base: r(1),
            },
            Op::Ret { a: r(1) },
        ],
    );
    let g = func(
        "g",
        0,
        3,
        200,
        vec![
            Op::LoadInt { a: r(0), v: 1 },
            Op::LoadInt { a: r(1), v: 0 },
            Op::DivInt {
                a: r(2),
                b: r(0),
                c: r(1),
            },
            Op::Ret { a: r(2) },
        ],
    );
    let (res, out) = run(&image(vec![main, f, g]));
    assert_eq!(res, RunResult::Exit(3));
    assert_eq!(
        out,
        "[\"DIV0\", 1, \"division by zero\", 202, DIV0: \"division by zero\", 99]\n"
    );
}

/// A frame that returns from inside its `try` must not leave its handler behind: a
/// later trap in the caller goes to the caller's own handler.
#[test]
fn return_inside_try_drops_the_handler() {
    let main = func(
        "main",
        0,
        6,
        1,
        vec![
            Op::TryEnter {
                t: Pc(7),
                err: r(1),
            },
            Op::Call {
                f: FuncIdx(1),
                base: r(2),
            },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(2),
                n: 1,
            },
            Op::LoadInt { a: r(3), v: 0 },
            Op::DivInt {
                a: r(3),
                b: r(3),
                c: r(3),
            },
            Op::TryExit {},
            Op::RetNil {},
            // main's handler
            Op::LoadConst {
                a: r(2),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(2),
                n: 1,
            },
            Op::Move { a: r(2), b: r(1) },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(2),
                n: 1,
            },
            Op::LoadInt { a: r(0), v: 7 },
            Op::Ret { a: r(0) },
        ],
    );
    let f = func(
        "f",
        0,
        3,
        100,
        vec![
            Op::TryEnter {
                t: Pc(3),
                err: r(1),
            },
            Op::LoadInt { a: r(0), v: 42 },
            Op::Ret { a: r(0) },
            // f's handler: must never run
            Op::LoadInt { a: r(0), v: -1 },
            Op::Ret { a: r(0) },
        ],
    );
    let img = with_consts(
        image(vec![main, f]),
        vec![Const::Text("caught in main".into())],
    );
    let (res, out) = run(&img);
    assert_eq!(out, "42\ncaught in main\nDIV0: division by zero\n");
    assert_eq!(res, RunResult::Exit(7));
}

/// After `TRY_EXIT` the handler is gone; nested handlers are innermost first; a trap
/// raised by a native (`fail`) is caught like one raised by an instruction.
#[test]
fn nested_try_and_try_exit() {
    let main = func(
        "main",
        0,
        6,
        1,
        vec![
            Op::TryEnter {
                t: Pc(8),
                err: r(1),
            }, // outer
            Op::TryEnter {
                t: Pc(5),
                err: r(2),
            }, // inner
            Op::LoadConst {
                a: r(3),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::CallBuiltin {
                f: BuiltinIdx(FAIL),
                base: r(3),
                n: 1,
            },
            Op::RetNil {},
            // inner handler: print, leave the outer try, then trap uncaught
            Op::Move { a: r(3), b: r(2) },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(3),
                n: 1,
            },
            Op::TryExit {},
            Op::Unwrap { a: r(4), b: r(5) },
            Op::RetNil {},
        ],
    );
    let img = with_consts(image(vec![main]), vec![Const::Text("inner".into())]);
    let (res, out) = run(&img);
    assert_eq!(out, "FAIL: inner\n");
    assert_trap(&res, TrapKind::Nil, "unwrap of nil");
}

fn recursive(depth_base: u16) -> wo_bytecode::Image {
    // main: try { rec() } catch (e) { print(e) }; return 5
    let main = func(
        "main",
        0,
        4,
        1,
        vec![
            Op::TryEnter {
                t: Pc(3),
                err: r(1),
            },
            Op::Call {
                f: FuncIdx(1),
                base: r(2),
            },
            Op::TryExit {},
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(1),
                n: 1,
            },
            Op::LoadInt { a: r(0), v: 5 },
            Op::Ret { a: r(0) },
        ],
    );
    let rec = func(
        "rec",
        0,
        depth_base + 1,
        50,
        vec![
            Op::Call {
                f: FuncIdx(1),
                base: r(depth_base),
            },
            Op::Ret { a: r(0) },
        ],
    );
    image(vec![main, rec])
}

#[test]
fn deep_recursion_traps_stack_and_can_be_caught() {
    for base in [0, 1, 200] {
        let (res, out) = run(&recursive(base));
        assert_eq!(
            out, "STACK: call depth limit of 100000 exceeded\n",
            "base {base}"
        );
        assert_eq!(res, RunResult::Exit(5));
    }
}

#[test]
fn uncaught_trap_reports_the_stack_innermost_first() {
    let main = func(
        "main",
        0,
        2,
        1,
        vec![
            Op::Nop {},
            Op::Call {
                f: FuncIdx(1),
                base: r(1),
            },
            Op::RetNil {},
        ],
    );
    let f = func(
        "f",
        0,
        2,
        100,
        vec![
            Op::LoadNil { a: r(0) },
            Op::Unwrap { a: r(1), b: r(0) },
            Op::RetNil {},
        ],
    );
    let (res, out, _) = run_args(&image(vec![main, f]), &[]);
    assert_eq!(out, "");
    let frame = |function: &str, line| StackFrame {
        function: function.into(),
        file: "test.wo".into(),
        line,
        col: 5,
    };
    match res {
        RunResult::Trap { trap, stack } => {
            assert_eq!(trap.kind, TrapKind::Nil);
            assert_eq!(stack, vec![frame("f", 101), frame("main", 2)]);
        }
        other => panic!("expected a trap, got {other:?}"),
    }
}

fn returns(c: Const) -> wo_bytecode::Image {
    with_consts(
        image(vec![func(
            "main",
            0,
            1,
            1,
            vec![
                Op::LoadConst {
                    a: r(0),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::Ret { a: r(0) },
            ],
        )]),
        vec![c],
    )
}

#[test]
fn main_value_is_the_exit_status() {
    assert_eq!(run(&returns(Const::Int(3))).0, RunResult::Exit(3));
    assert_eq!(run(&returns(Const::Int(300))).0, RunResult::Exit(44));
    assert_eq!(run(&returns(Const::Int(-1))).0, RunResult::Exit(255));
    assert_eq!(run(&returns(Const::Int(256))).0, RunResult::Exit(0));
    let nil = image(vec![func("main", 0, 0, 1, vec![Op::RetNil {}])]);
    assert_eq!(run(&nil).0, RunResult::Exit(0));
}

#[test]
fn exit_from_a_native_ends_the_program_and_flushes() {
    let img = with_consts(
        image(vec![func(
            "main",
            0,
            2,
            1,
            vec![
                Op::LoadConst {
                    a: r(0),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(0),
                    n: 1,
                },
                Op::LoadConst {
                    a: r(0),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT_ERR),
                    base: r(0),
                    n: 1,
                },
                // exit is not caught by a try
                Op::TryEnter {
                    t: Pc(8),
                    err: r(1),
                },
                Op::LoadInt { a: r(0), v: 4 },
                Op::CallBuiltin {
                    f: BuiltinIdx(EXIT),
                    base: r(0),
                    n: 1,
                },
                Op::RetNil {},
                Op::RetNil {},
            ],
        )]),
        vec![Const::Text("bye".into())],
    );
    let (res, out, err) = run_args(&img, &[]);
    assert_eq!(res, RunResult::Exit(4));
    assert_eq!(out, "bye\n");
    assert_eq!(err, "bye\n");
}

#[test]
fn main_receives_the_arguments() {
    let img = image(vec![func(
        "main",
        1,
        2,
        1,
        vec![
            Op::Move { a: r(1), b: r(0) },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(1),
                n: 1,
            },
            Op::ListLen { a: r(1), b: r(0) },
            Op::Ret { a: r(1) },
        ],
    )]);
    let (res, out, _) = run_args(&img, &["a", "b c", "\"q\""]);
    assert_eq!(out, "[\"a\", \"b c\", \"\\\"q\\\"\"]\n");
    assert_eq!(res, RunResult::Exit(3));
    let (res, out, _) = run_args(&img, &[]);
    assert_eq!(out, "[]\n");
    assert_eq!(res, RunResult::Exit(0));
}

#[test]
fn init_sets_globals_before_main() {
    let main = func(
        "main",
        0,
        1,
        1,
        vec![
            Op::GetGlobal {
                a: r(0),
                g: GlobalIdx(1),
            },
            Op::CallBuiltin {
                f: BuiltinIdx(PRINT),
                base: r(0),
                n: 1,
            },
            Op::GetGlobal {
                a: r(0),
                g: GlobalIdx(0),
            },
            Op::Ret { a: r(0) },
        ],
    );
    let init = func(
        "init",
        0,
        1,
        10,
        vec![
            Op::LoadInt { a: r(0), v: 12 },
            Op::SetGlobal {
                g: GlobalIdx(0),
                a: r(0),
            },
            Op::LoadConst {
                a: r(0),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::SetGlobal {
                g: GlobalIdx(1),
                a: r(0),
            },
            Op::RetNil {},
        ],
    );
    let mut img = with_consts(image(vec![main, init]), vec![Const::Text("limit".into())]);
    img.n_globals = 2;
    img.init = Some(FuncIdx(1));
    let (res, out) = run(&img);
    assert_eq!(out, "limit\n");
    assert_eq!(res, RunResult::Exit(12));
}

#[test]
fn a_trap_in_init_ends_the_program() {
    let main = func("main", 0, 0, 1, vec![Op::RetNil {}]);
    let init = func(
        "init",
        0,
        2,
        10,
        vec![
            Op::LoadNil { a: r(0) },
            Op::Unwrap { a: r(1), b: r(0) },
            Op::RetNil {},
        ],
    );
    let mut img = image(vec![main, init]);
    img.init = Some(FuncIdx(1));
    assert_trap(&run(&img).0, TrapKind::Nil, "unwrap of nil");
}

#[test]
fn linking_checks_names_and_arities() {
    let main = || func("main", 0, 0, 1, vec![Op::RetNil {}]);
    let link = |img: &wo_bytecode::Image| {
        let (h, _) = host();
        wo_vm::run(img, &natives, Vec::new(), h)
    };
    let mut img = image(vec![main()]);
    img.builtins.push(wo_bytecode::BuiltinRef {
        name: "no_such".into(),
        arity: 1,
    });
    assert_eq!(link(&img), Err(LinkError::UnknownBuiltin("no_such".into())));
    let mut img = image(vec![main()]);
    img.builtins[0].arity = 2;
    assert_eq!(
        link(&img),
        Err(LinkError::Arity {
            name: "print".into(),
            expected: 1,
            found: 2
        })
    );
    // Known to the catalogue but not provided by the native table.
    let mut img = image(vec![main()]);
    img.builtins.push(wo_bytecode::BuiltinRef {
        name: "len_list".into(),
        arity: 1,
    });
    assert_eq!(
        link(&img),
        Err(LinkError::UnknownBuiltin("len_list".into()))
    );
}

#[test]
fn out_of_range_operands_are_refused_before_running() {
    let bad = [
        func(
            "main",
            0,
            1,
            1,
            vec![Op::LoadNil { a: r(1) }, Op::RetNil {}],
        ),
        func("main", 0, 1, 1, vec![Op::Jump { t: Pc(9) }]),
        func("main", 0, 1, 1, vec![Op::LoadNil { a: r(0) }]),
        func(
            "main",
            0,
            1,
            1,
            vec![
                Op::Call {
                    f: FuncIdx(7),
                    base: r(0),
                },
                Op::RetNil {},
            ],
        ),
        func(
            "main",
            0,
            2,
            1,
            vec![
                Op::CallBuiltin {
                    f: BuiltinIdx(PRINT),
                    base: r(1),
                    n: 2,
                },
                Op::RetNil {},
            ],
        ),
        func(
            "main",
            0,
            2,
            1,
            vec![
                Op::NewList {
                    a: r(0),
                    b: r(1),
                    n: 2,
                },
                Op::RetNil {},
            ],
        ),
    ];
    for f in bad {
        let (h, _) = host();
        let res = wo_vm::run(&image(vec![f.clone()]), &natives, Vec::new(), h);
        assert!(
            matches!(res, Err(LinkError::Invalid(_))),
            "{:?}: {res:?}",
            f.code
        );
    }
}

#[test]
fn ill_typed_operands_fault_instead_of_panicking() {
    let cases = [
        vec![
            Op::LoadNil { a: r(0) },
            Op::AddInt {
                a: r(0),
                b: r(0),
                c: r(0),
            },
            Op::RetNil {},
        ],
        vec![
            Op::LoadInt { a: r(0), v: 1 },
            Op::JumpIf { a: r(0), t: Pc(0) },
            Op::RetNil {},
        ],
        vec![
            Op::LoadInt { a: r(0), v: 1 },
            Op::GetField {
                a: r(0),
                b: r(0),
                f: FieldIdx(0),
            },
            Op::RetNil {},
        ],
        vec![
            Op::NewList {
                a: r(0),
                b: r(0),
                n: 0,
            },
            Op::MapSet {
                a: r(0),
                b: r(0),
                c: r(0),
            },
            Op::RetNil {},
        ],
        vec![Op::LoadBool { a: r(0), v: true }, Op::Ret { a: r(0) }],
        vec![Op::TryExit {}, Op::RetNil {}],
    ];
    for code in cases {
        let img = image(vec![func("main", 0, 1, 1, code.clone())]);
        match run(&img).0 {
            RunResult::Fault(msg) => assert!(msg.starts_with("internal error: "), "{msg}"),
            other => panic!("{code:?}: expected a fault, got {other:?}"),
        }
    }
}

/// A counted loop over registers that a hand-made image left without Ints faults; one
/// whose count register was forged past the end of the Int range wraps instead of
/// panicking on overflow.
#[test]
fn counted_loop_on_forged_registers_faults_or_wraps() {
    for op in [
        Op::ForPrep {
            a: r(0),
            v: r(3),
            t: Pc(1),
        },
        Op::ForLoop {
            a: r(0),
            v: r(3),
            t: Pc(0),
        },
    ] {
        let img = image(vec![func("main", 0, 4, 1, vec![op, Op::RetNil {}])]);
        match run(&img).0 {
            RunResult::Fault(msg) => assert!(msg.starts_with("internal error: "), "{msg}"),
            other => panic!("{op:?}: expected a fault, got {other:?}"),
        }
    }
    // r0 = MAX (counter), r1 = 2 (iterations left), r2 = 1 (step): two more turns.
    let mut code = vec![
        Op::LoadConst {
            a: r(0),
            k: wo_bytecode::ConstIdx(0),
        },
        Op::LoadInt { a: r(1), v: 2 },
        Op::LoadInt { a: r(2), v: 1 },
    ];
    code.extend(print_reg(3, 4));
    code.push(Op::ForLoop {
        a: r(0),
        v: r(3),
        t: Pc(3),
    });
    code.push(Op::RetNil {});
    let img = with_consts(
        image(vec![func("main", 0, 5, 1, code)]),
        vec![Const::Int(i64::MAX)],
    );
    let (res, out) = run(&img);
    assert_eq!(res, RunResult::Exit(0));
    assert_eq!(
        out,
        format!("nil\n{}\n{}\n", i64::MIN, i64::MIN + 1),
        "the counter wraps past MAX"
    );
}

/// TEXT_NEXT walks a text's characters by a byte cursor and leaves at its end; a cursor
/// or text that a hand-made image forged faults, and an end jump back to itself spends
/// the instruction budget like any back edge.
#[test]
fn text_walk_by_byte_cursor() {
    // r0 = the text, r1 = the cursor (from r3's constant), r2 = the character.
    let walk = |text: &str, cursor: Const| {
        let mut code = vec![
            Op::LoadConst {
                a: r(0),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(1),
            },
            Op::TextNext {
                v: r(2),
                b: r(0),
                i: r(1),
                t: Pc(8),
            },
        ];
        code.extend(print_reg(2, 3));
        code.extend(print_reg(1, 3));
        code.push(Op::Jump { t: Pc(2) });
        code.push(Op::RetNil {});
        assert_eq!(code.len(), 9);
        let img = with_consts(
            image(vec![func("main", 0, 4, 1, code)]),
            vec![Const::Text(text.into()), cursor],
        );
        run(&img)
    };
    assert_eq!(
        walk("aé😀", Const::Int(0)),
        (RunResult::Exit(0), "a\n1\né\n3\n😀\n7\n".to_string())
    );
    assert_eq!(walk("", Const::Int(0)), (RunResult::Exit(0), String::new()));
    assert_eq!(
        walk("aé", Const::Int(3)),
        (RunResult::Exit(0), String::new())
    );
    for (text, cursor) in [
        ("aé", Const::Int(2)),
        ("aé", Const::Int(4)),
        ("aé", Const::Int(-1)),
        ("aé", Const::Int(i64::MAX)),
        ("aé", Const::Float(0.0)),
    ] {
        match walk(text, cursor.clone()) {
            (RunResult::Fault(msg), _) => assert!(msg.starts_with("internal error: "), "{msg}"),
            other => panic!("{text:?} at {cursor:?}: expected a fault, got {other:?}"),
        }
    }
    let not_text = image(vec![func(
        "main",
        0,
        3,
        1,
        vec![
            Op::LoadInt { a: r(0), v: 1 },
            Op::LoadInt { a: r(1), v: 0 },
            Op::TextNext {
                v: r(2),
                b: r(0),
                i: r(1),
                t: Pc(3),
            },
            Op::RetNil {},
        ],
    )]);
    match run(&not_text).0 {
        RunResult::Fault(msg) => assert!(msg.contains("expected a Text"), "{msg}"),
        other => panic!("expected a fault, got {other:?}"),
    }
    // At the end of an empty text, TEXT_NEXT goes to itself: each turn is a back edge.
    let spin = with_consts(
        image(vec![func(
            "main",
            0,
            3,
            1,
            vec![
                Op::LoadConst {
                    a: r(0),
                    k: wo_bytecode::ConstIdx(0),
                },
                Op::LoadInt { a: r(1), v: 0 },
                Op::TextNext {
                    v: r(2),
                    b: r(0),
                    i: r(1),
                    t: Pc(2),
                },
                Op::RetNil {},
            ],
        )]),
        vec![Const::Text("".into())],
    );
    let (h, _) = host();
    let mut vm = Vm::new(&spin, &natives, h).expect("links");
    let mut fiber = vm.fiber(0, Vec::new()).expect("a fiber");
    assert!(matches!(vm.resume(&mut fiber, 100), Status::Yield));
}

/// JUMP_UNLESS_EQ_K compares by EQ's rules with any constant (a hand-made image may hold
/// any value in the register): equal texts, -0.0 and 0.0 are equal; NaN, a value of
/// another type and nil are not. `eq: false` is the test of `!=`.
#[test]
fn jump_unless_eq_k_tests_by_the_rules_of_eq() {
    let test = |value: Const, k: Const, eq: bool| -> String {
        // r0 = the value; print "jumped" or "fell through".
        let mut code = vec![
            Op::LoadConst {
                a: r(0),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::JumpUnlessEqConst {
                b: r(0),
                k: wo_bytecode::ConstIdx(1),
                eq,
                t: Pc(6),
            },
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(2),
            },
        ];
        code.extend(print_reg(1, 2));
        code.push(Op::RetNil {});
        code.push(Op::LoadConst {
            a: r(1),
            k: wo_bytecode::ConstIdx(3),
        });
        code.extend(print_reg(1, 2));
        code.push(Op::RetNil {});
        assert_eq!(code.len(), 10);
        let img = with_consts(
            image(vec![func("main", 0, 3, 1, code)]),
            vec![
                value,
                k,
                Const::Text("fell through".into()),
                Const::Text("jumped".into()),
            ],
        );
        match run(&img) {
            (RunResult::Exit(0), out) => out.trim_end().to_string(),
            other => panic!("expected a clean run, got {other:?}"),
        }
    };
    let text = |s: &str| Const::Text(s.into());
    for (value, k, equal) in [
        (text("a"), text("a"), true),
        (text("é"), text("é"), true),
        (text("a"), text("b"), false),
        (text("a"), text("ab"), false),
        (text(""), text(""), true),
        (text(&"x".repeat(40)), text(&"x".repeat(40)), true),
        (
            text(&"x".repeat(40)),
            text(&format!("{}y", "x".repeat(39))),
            false,
        ),
        (Const::Float(-0.0), Const::Float(0.0), true),
        (Const::Float(f64::NAN), Const::Float(f64::NAN), false),
        (Const::Int(1), Const::Float(1.0), false),
        (Const::Int(1), text("1"), false),
    ] {
        let (when_eq, when_ne) = if equal {
            ("fell through", "jumped")
        } else {
            ("jumped", "fell through")
        };
        assert_eq!(
            test(value.clone(), k.clone(), true),
            when_eq,
            "{value:?} == {k:?}"
        );
        assert_eq!(
            test(value.clone(), k.clone(), false),
            when_ne,
            "{value:?} != {k:?}"
        );
    }
}

/// FOR_PREP counts the iterations without overflowing at the ends of the Int range and
/// traps BOUNDS on a step of 0.
#[test]
fn counted_loop_counts_at_the_ends_of_the_int_range() {
    let count = |start: i64, stop: i64, step: i64| -> Result<u64, (TrapKind, String)> {
        // r5 counts the iterations (at most a few, or the loop breaks out at 5).
        let mut code = vec![
            Op::LoadConst {
                a: r(0),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(1),
            },
            Op::LoadConst {
                a: r(2),
                k: wo_bytecode::ConstIdx(2),
            },
            Op::LoadInt { a: r(5), v: 0 },
            Op::ForPrep {
                a: r(0),
                v: r(3),
                t: Pc(8),
            },
            Op::AddIntImm {
                a: r(5),
                b: r(5),
                v: 1,
            },
            Op::JumpUnlessCmpIntImm {
                b: r(5),
                v: 5,
                op: Cmp::Lt,
                t: Pc(8),
            },
            Op::ForLoop {
                a: r(0),
                v: r(3),
                t: Pc(5),
            },
        ];
        code.extend(print_reg(5, 6));
        code.push(Op::RetNil {});
        let img = with_consts(
            image(vec![func("main", 0, 7, 1, code)]),
            vec![Const::Int(start), Const::Int(stop), Const::Int(step)],
        );
        match run(&img) {
            (RunResult::Exit(0), out) => Ok(out.trim().parse().expect("a count")),
            (RunResult::Trap { trap, .. }, _) => Err((trap.kind, trap.message)),
            (other, _) => panic!("unexpected {other:?}"),
        }
    };
    let (min, max) = (i64::MIN, i64::MAX);
    assert_eq!(count(0, 3, 1), Ok(3));
    assert_eq!(count(3, 0, 1), Ok(0));
    assert_eq!(count(3, 0, -1), Ok(3));
    assert_eq!(count(max - 1, max, max), Ok(1));
    assert_eq!(count(min, max, max), Ok(3));
    assert_eq!(count(max, min, min), Ok(2));
    assert_eq!(count(min, max, 1), Ok(5), "2^64 - 1 iterations, cut at 5");
    assert_eq!(count(max, min, -1), Ok(5));
    assert_eq!(count(max - 2, max, 1), Ok(2));
    assert_eq!(count(min + 2, min, -1), Ok(2));
    let zero = Err((TrapKind::Bounds, "`range` step is 0".to_string()));
    assert_eq!(count(0, 3, 0), zero);
    assert_eq!(count(3, 0, 0), zero);
}

/// `resume` hands control back when the budget runs out and continues where it
/// stopped: a 1000-iteration loop resumed with a budget of 7.
#[test]
fn resume_after_yield_continues_the_loop() {
    let img = image(vec![func(
        "main",
        0,
        2,
        1,
        vec![
            Op::LoadInt { a: r(0), v: 0 },
            Op::LoadInt { a: r(1), v: 1000 },
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
            Op::Ret { a: r(0) },
        ],
    )]);
    let (h, _) = host();
    let mut vm = Vm::new(&img, &natives, h).expect("links");
    let mut fiber = vm.fiber(0, Vec::new()).expect("a fiber");
    let mut yields = 0;
    let v = loop {
        match vm.resume(&mut fiber, 7) {
            Status::Yield => yields += 1,
            Status::Done(v) => break v,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(matches!(v, Value::Int(1000)), "{v:?}");
    assert_eq!(yields, 999 / 7);
}

/// A million-object chain is freed without overflowing the Rust stack.
#[test]
fn long_object_chain_drops_without_recursion() {
    let img = with_classes(
        image(vec![func(
            "main",
            0,
            5,
            1,
            vec![
                Op::LoadNil { a: r(0) }, // head
                Op::LoadInt { a: r(2), v: 0 },
                Op::LoadInt {
                    a: r(3),
                    v: 1_000_000,
                },
                Op::Move { a: r(1), b: r(0) },
                Op::NewObj {
                    a: r(0),
                    c: ClassIdx(0),
                    b: r(1),
                },
                Op::AddIntImm {
                    a: r(2),
                    b: r(2),
                    v: 1,
                },
                Op::JumpUnlessCmpInt {
                    b: r(2),
                    c: r(3),
                    op: Cmp::Ge,
                    t: Pc(3),
                },
                Op::LoadNil { a: r(0) },
                Op::LoadNil { a: r(1) },
                Op::LoadInt { a: r(0), v: 9 },
                Op::Ret { a: r(0) },
            ],
        )]),
        &[("Node", &["next"])],
    );
    assert_eq!(run(&img).0, RunResult::Exit(9));
}

/// `JUMP_UNLESS_CMP_IMM` against each comparison, on both sides of the constant: the
/// program prints 1 when the jump is not taken and 0 when it is.
#[test]
fn compare_with_immediate_branches() {
    let check = |x: i64, op: Cmp, v: i32| -> bool {
        let mut code = vec![
            Op::LoadConst {
                a: r(1),
                k: wo_bytecode::ConstIdx(0),
            },
            Op::LoadInt { a: r(0), v: 0 },
            Op::JumpUnlessCmpIntImm {
                b: r(1),
                v,
                op,
                t: Pc(4),
            },
            Op::LoadInt { a: r(0), v: 1 },
        ];
        code.extend(print_reg(0, 2));
        code.push(Op::RetNil {});
        let img = with_consts(
            image(vec![func("main", 0, 3, 1, code)]),
            vec![Const::Int(x)],
        );
        match run(&img).1.as_str() {
            "1\n" => true,
            "0\n" => false,
            other => panic!("unexpected output {other:?}"),
        }
    };
    for (x, v) in [
        (-3, -3),
        (5, 7),
        (7, 5),
        (i64::MIN, i32::MIN),
        (i64::MAX, i32::MAX),
    ] {
        assert_eq!(check(x, Cmp::Lt, v), x < i64::from(v), "{x} < {v}");
        assert_eq!(check(x, Cmp::Le, v), x <= i64::from(v), "{x} <= {v}");
        assert_eq!(check(x, Cmp::Gt, v), x > i64::from(v), "{x} > {v}");
        assert_eq!(check(x, Cmp::Ge, v), x >= i64::from(v), "{x} >= {v}");
        assert_eq!(check(x, Cmp::Eq, v), x == i64::from(v), "{x} == {v}");
        assert_eq!(check(x, Cmp::Ne, v), x != i64::from(v), "{x} != {v}");
    }
}

/// A function with more than 256 registers makes the interpreter use its wide register
/// window: registers past 255 stay distinct from the low ones (no aliasing through the
/// narrow window's mask), also across calls that grow the register file.
#[test]
fn functions_with_more_than_256_registers() {
    // main: r300 = 7; r44 = 1; r1000 = f(r1000 = 35) (f returns its argument + 1);
    // print r300 + r44 + r1000 = 44.
    let main = func(
        "main",
        0,
        1200,
        1,
        vec![
            Op::LoadInt { a: r(300), v: 7 },
            Op::LoadInt { a: r(44), v: 1 },
            Op::LoadInt { a: r(1000), v: 35 },
            Op::Call {
                f: FuncIdx(1),
                base: r(1000),
            },
            Op::AddInt {
                a: r(2),
                b: r(300),
                c: r(44),
            },
            Op::AddInt {
                a: r(2),
                b: r(2),
                c: r(1000),
            },
            Op::Move {
                a: r(1100),
                b: r(2),
            },
            Op::CallBuiltin {
                f: BuiltinIdx(0),
                base: r(1100),
                n: 1,
            },
            Op::RetNil {},
        ],
    );
    let inc = func(
        "inc",
        1,
        700,
        10,
        vec![
            Op::LoadInt { a: r(600), v: 1 },
            Op::AddInt {
                a: r(0),
                b: r(0),
                c: r(600),
            },
            Op::Ret { a: r(0) },
        ],
    );
    let (res, out) = run(&image(vec![main, inc]));
    assert_eq!(out, "44\n");
    assert_eq!(res, RunResult::Exit(0));
}

/// Issue 13 I1 and I2 reach the VM too when an image does not come through
/// `read_image`: `Vm::new` refuses 2^32 - 1 global slots (it tried to allocate 103 GB)
/// and a handler at its own TRY_ENTER (a trap then looped forever, never spending the
/// budget), before anything runs.
#[test]
fn hostile_globals_and_handlers_are_refused_at_link_time() {
    let mut huge = image(vec![func(
        "main",
        0,
        1,
        1,
        vec![
            Op::GetGlobal {
                a: r(0),
                g: GlobalIdx(u32::MAX - 1),
            },
            Op::RetNil {},
        ],
    )]);
    huge.n_globals = u32::MAX;
    let looping = image(vec![func(
        "main",
        0,
        3,
        1,
        vec![
            Op::LoadInt { a: r(1), v: 0 },
            Op::TryEnter {
                t: Pc(1),
                err: r(0),
            },
            Op::DivInt {
                a: r(2),
                b: r(1),
                c: r(1),
            },
            Op::RetNil {},
        ],
    )]);
    for img in [huge, looping] {
        let (h, _) = host();
        match Vm::new(&img, &natives, h) {
            Err(LinkError::Invalid(msg)) => {
                assert!(
                    msg.contains("global slots") || msg.contains("handler"),
                    "{msg}"
                );
            }
            Err(e) => panic!("unexpected {e:?}"),
            Ok(_) => panic!("linked"),
        }
    }
}

/// Issue 11 item 3: `..` (`CONCAT`), interpolation (`CONCAT_N`) and `TO_TEXT` trap
/// `LIMIT` like `repeat` and `join` instead of building a text over the limit. The
/// limit is lowered to 10 bytes on this test's thread so nothing big is allocated.
#[test]
fn texts_over_the_limit_trap_limit_whatever_builds_them() {
    wo_vm::limit::set_max_bytes(10);
    let load = |a: u16| Op::LoadConst {
        a: r(a),
        k: wo_bytecode::ConstIdx(0),
    };
    let main = |ops: Vec<Op>| {
        let mut code = vec![load(1), load(2)];
        code.extend(ops);
        code.extend(print_reg(0, 3));
        code.push(Op::RetNil {});
        with_consts(
            image(vec![func("main", 0, 4, 1, code)]),
            vec![Const::Text("abcdef".into())],
        )
    };
    let concat = Op::Concat {
        a: r(0),
        b: r(1),
        c: r(2),
    };
    assert_trap(
        &run(&main(vec![concat])).0,
        TrapKind::Limit,
        "concatenation would make a text of 12 bytes, over the limit of 10 bytes",
    );
    let concat_n = Op::ConcatN {
        a: r(0),
        b: r(1),
        n: 2,
    };
    assert_trap(
        &run(&main(vec![concat_n])).0,
        TrapKind::Limit,
        "concatenation would make a text of 12 bytes, over the limit of 10 bytes",
    );
    // `["abcdef", "abcdef"]` is 22 bytes.
    let to_text = vec![
        Op::NewList {
            a: r(3),
            b: r(1),
            n: 2,
        },
        Op::ToText { a: r(0), b: r(3) },
    ];
    assert_trap(
        &run(&main(to_text)).0,
        TrapKind::Limit,
        "printing a value would make a text over the limit of 10 bytes",
    );
    // Within the limit nothing changes, and the trap is an ordinary catchable one.
    let (res, out) = run(&main(vec![Op::Move { a: r(0), b: r(1) }]));
    assert_eq!((res, out.as_str()), (RunResult::Exit(0), "abcdef\n"));
    // @2 TRY_ENTER, @3 CONCAT, @4 TRY_EXIT, @5 R0 = nil, @6 print(R0): the handler.
    let caught = vec![
        Op::TryEnter {
            t: Pc(6),
            err: r(0),
        },
        concat,
        Op::TryExit {},
        Op::LoadNil { a: r(0) },
    ];
    let (res, out) = run(&main(caught));
    assert_eq!(res, RunResult::Exit(0));
    assert_eq!(
        out,
        "LIMIT: concatenation would make a text of 12 bytes, over the limit of 10 bytes\n"
    );
}
