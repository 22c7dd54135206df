//! Hand-built images shared by the format, verifier and disassembler tests: a small
//! program with calls, a loop, constants, a class, globals, builtins, two tables and
//! query descriptors (every column type, index kind and aggregate), plus a function that
//! uses every opcode once so the round trip and the compatibility fixture cover the
//! whole encoding table. Also the snapshot helper (`WO_BLESS=1` rewrites expectations).

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::path::PathBuf;

use wo_bytecode::image::{
    Column, ColumnType, Index, IndexKind, QueryAgg, QueryCol, QueryDesc, QueryPred, Table,
};
use wo_bytecode::op::Op;
use wo_bytecode::*;

/// The source of `main.wo`, which the sample image's positions point into.
pub const MAIN_WO: &str = "\
const LIMIT = 1000000

fn norm1(p: Point) -> Int {
    return abs(p.x) + abs(p.y)
}

fn main() {
    let p = Point(3, -4)
    let total = 0
    for i in 0..10 {
        total = total + i
    }
    print(\"sum is \" .. text(total + norm1(p)))
}
";

/// `source_line` for [`disasm`]: lines of `main.wo` (file 0) only.
pub fn source_line(file: u32, line: u32) -> Option<String> {
    if file != 0 {
        return None;
    }
    let idx = usize::try_from(line.checked_sub(1)?).ok()?;
    MAIN_WO.lines().nth(idx).map(str::to_string)
}

fn r(i: u16) -> Reg {
    Reg(i)
}

fn at(file: u32, line: u32, col: u32) -> SrcPos {
    SrcPos { file, line, col }
}

/// Builds a function from (op, line, col) rows in one file.
pub fn func(name: &str, arity: u16, n_regs: u16, file: u32, rows: &[(Op, u32, u32)]) -> Function {
    Function {
        name: name.to_string(),
        arity,
        n_regs,
        code: rows.iter().map(|row| row.0).collect(),
        pos: rows.iter().map(|row| at(file, row.1, row.2)).collect(),
    }
}

pub fn sample_image() -> Image {
    let init = func(
        "<init>",
        0,
        1,
        0,
        &[
            (
                Op::LoadConst {
                    a: r(0),
                    k: ConstIdx(0),
                },
                1,
                15,
            ),
            (
                Op::SetGlobal {
                    g: GlobalIdx(0),
                    a: r(0),
                },
                1,
                1,
            ),
            (Op::RetNil {}, 1, 1),
        ],
    );
    let main = func(
        "main",
        0,
        6,
        0,
        &[
            (Op::LoadInt { a: r(1), v: 3 }, 8, 19),
            (Op::LoadInt { a: r(2), v: -4 }, 8, 22),
            (
                Op::NewObj {
                    a: r(0),
                    c: ClassIdx(0),
                    b: r(1),
                },
                8,
                13,
            ),
            (Op::LoadInt { a: r(1), v: 0 }, 9, 17),
            (Op::LoadInt { a: r(2), v: 0 }, 10, 14),
            (Op::LoadInt { a: r(3), v: 10 }, 10, 17),
            (
                Op::JumpUnlessCmpInt {
                    b: r(2),
                    c: r(3),
                    op: Cmp::Lt,
                    t: Pc(10),
                },
                10,
                5,
            ),
            (
                Op::AddInt {
                    a: r(1),
                    b: r(1),
                    c: r(2),
                },
                11,
                17,
            ),
            (
                Op::AddIntImm {
                    a: r(2),
                    b: r(2),
                    v: 1,
                },
                10,
                5,
            ),
            (Op::Jump { t: Pc(6) }, 10, 5),
            (
                Op::LoadConst {
                    a: r(3),
                    k: ConstIdx(2),
                },
                13,
                11,
            ),
            (Op::Move { a: r(5), b: r(0) }, 13, 38),
            (
                Op::Call {
                    f: FuncIdx(2),
                    base: r(5),
                },
                13,
                32,
            ),
            (
                Op::AddInt {
                    a: r(4),
                    b: r(1),
                    c: r(5),
                },
                13,
                24,
            ),
            (
                Op::CallBuiltin {
                    f: BuiltinIdx(1),
                    base: r(4),
                    n: 1,
                },
                13,
                19,
            ),
            (
                Op::Concat {
                    a: r(3),
                    b: r(3),
                    c: r(4),
                },
                13,
                11,
            ),
            (
                Op::CallBuiltin {
                    f: BuiltinIdx(0),
                    base: r(3),
                    n: 1,
                },
                13,
                5,
            ),
            (Op::RetNil {}, 14, 1),
        ],
    );
    let norm1 = func(
        "norm1",
        1,
        3,
        0,
        &[
            (
                Op::GetField {
                    a: r(1),
                    b: r(0),
                    f: FieldIdx(0),
                },
                4,
                16,
            ),
            (
                Op::CallBuiltin {
                    f: BuiltinIdx(2),
                    base: r(1),
                    n: 1,
                },
                4,
                12,
            ),
            (
                Op::GetField {
                    a: r(2),
                    b: r(0),
                    f: FieldIdx(1),
                },
                4,
                25,
            ),
            (
                Op::CallBuiltin {
                    f: BuiltinIdx(2),
                    base: r(2),
                    n: 1,
                },
                4,
                21,
            ),
            (
                Op::AddInt {
                    a: r(1),
                    b: r(1),
                    c: r(2),
                },
                4,
                12,
            ),
            (Op::Ret { a: r(1) }, 4, 5),
        ],
    );
    Image {
        files: vec!["main.wo".to_string(), "every_op.wo".to_string()],
        consts: vec![
            Const::Int(1_000_000),
            Const::Float(2.5),
            Const::Text("sum is ".to_string()),
            Const::Text("quote \" and newline \n, ünïcödé".to_string()),
            Const::Int(i64::MIN),
            Const::Float(-0.0),
        ],
        functions: vec![init, main, norm1, every_op()],
        classes: vec![
            Class {
                name: "Point".to_string(),
                fields: vec!["x".to_string(), "y".to_string()],
            },
            Class {
                name: "Empty".to_string(),
                fields: vec![],
            },
            Class {
                name: "Department".to_string(),
                fields: vec!["name".to_string()],
            },
            Class {
                name: "Employee".to_string(),
                fields: [
                    "name", "salary", "level", "dept", "manager", "rating", "active",
                ]
                .iter()
                .map(|f| (*f).to_string())
                .collect(),
            },
        ],
        tables: sample_tables(),
        queries: sample_queries(),
        builtins: vec![
            BuiltinRef {
                name: "print".to_string(),
                arity: 1,
            },
            BuiltinRef {
                name: "text".to_string(),
                arity: 1,
            },
            BuiltinRef {
                name: "abs_int".to_string(),
                arity: 1,
            },
            BuiltinRef {
                name: "min_int".to_string(),
                arity: 2,
            },
        ],
        n_globals: 1,
        init: Some(FuncIdx(0)),
        entry: FuncIdx(1),
    }
}

fn column(name: &str, ty: ColumnType, nullable: bool) -> Column {
    Column {
        name: name.to_string(),
        ty,
        nullable,
        was: None,
        default: None,
    }
}

/// `departments` (t0, class c2, not durable) and `employees` (t1, class c3) with every
/// column type and index kind.
pub fn sample_tables() -> Vec<Table> {
    vec![
        Table {
            class: ClassIdx(2),
            name: "departments".to_string(),
            columns: vec![column("name", ColumnType::Text, false)],
            indexes: vec![Index {
                columns: vec![0],
                kind: IndexKind::Unique,
            }],
            durable: false,
            was: None,
        },
        Table {
            class: ClassIdx(3),
            name: "employees".to_string(),
            columns: vec![
                column("name", ColumnType::Text, false),
                column("salary", ColumnType::Int, false),
                column("level", ColumnType::Int, false),
                column("dept", ColumnType::Ref(0), false),
                column("manager", ColumnType::Ref(1), true),
                column("rating", ColumnType::Float, true),
                column("active", ColumnType::Bool, false),
            ],
            indexes: vec![
                Index {
                    columns: vec![3],
                    kind: IndexKind::Hash,
                },
                Index {
                    columns: vec![3, 2],
                    kind: IndexKind::Hash,
                },
                Index {
                    columns: vec![1],
                    kind: IndexKind::Sorted,
                },
            ],
            durable: true,
            was: None,
        },
    ]
}

fn query(table: u32, agg: QueryAgg) -> QueryDesc {
    QueryDesc {
        table,
        preds: Vec::new(),
        order: Vec::new(),
        skip: None,
        take: None,
        n_args: 0,
        agg,
    }
}

/// q0: `from employees where dept == arg0 and salary >= arg1 order by salary desc, id
/// skip arg2 take arg3`; q1–q6 one of each aggregate.
pub fn sample_queries() -> Vec<QueryDesc> {
    vec![
        QueryDesc {
            table: 1,
            preds: vec![
                QueryPred {
                    col: QueryCol::Col(3),
                    op: Cmp::Eq,
                    arg: 0,
                },
                QueryPred {
                    col: QueryCol::Col(1),
                    op: Cmp::Ge,
                    arg: 1,
                },
            ],
            order: vec![(QueryCol::Col(1), true), (QueryCol::Id, false)],
            skip: Some(2),
            take: Some(3),
            n_args: 4,
            agg: QueryAgg::Rows,
        },
        query(1, QueryAgg::Count),
        QueryDesc {
            preds: vec![QueryPred {
                col: QueryCol::Id,
                op: Cmp::Eq,
                arg: 0,
            }],
            n_args: 1,
            ..query(0, QueryAgg::Exists)
        },
        query(1, QueryAgg::Sum(QueryCol::Col(1))),
        query(1, QueryAgg::Min(QueryCol::Id)),
        query(1, QueryAgg::Max(QueryCol::Col(5))),
        query(1, QueryAgg::Avg(QueryCol::Col(2))),
    ]
}

/// One of every opcode, with operands that pass the verifier, in file 1 with varied
/// positions (including a backwards line and a repeated one) to exercise the debug table.
pub fn every_op() -> Function {
    let ops = vec![
        Op::Nop {},
        Op::Move { a: r(0), b: r(1) },
        Op::LoadConst {
            a: r(2),
            k: ConstIdx(3),
        },
        Op::LoadInt {
            a: r(3),
            v: i32::MIN,
        },
        Op::LoadNil { a: r(4) },
        Op::LoadBool { a: r(5), v: true },
        Op::GetGlobal {
            a: r(6),
            g: GlobalIdx(0),
        },
        Op::SetGlobal {
            g: GlobalIdx(0),
            a: r(6),
        },
        Op::AddInt {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::SubInt {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::MulInt {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::DivInt {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::RemInt {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::AddIntImm {
            a: r(0),
            b: r(1),
            v: -7,
        },
        Op::NegInt { a: r(0), b: r(1) },
        Op::AddFloat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::SubFloat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::MulFloat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::DivFloat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::RemFloat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::NegFloat { a: r(0), b: r(1) },
        Op::IntToFloat { a: r(0), b: r(1) },
        Op::FloatToInt { a: r(0), b: r(1) },
        Op::CmpInt {
            a: r(0),
            b: r(1),
            c: r(2),
            op: Cmp::Le,
        },
        Op::CmpFloat {
            a: r(0),
            b: r(1),
            c: r(2),
            op: Cmp::Ne,
        },
        Op::CmpText {
            a: r(0),
            b: r(1),
            c: r(2),
            op: Cmp::Ge,
        },
        Op::Eq {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::Ne {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::Not { a: r(0), b: r(1) },
        Op::Concat {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::ConcatN {
            a: r(0),
            b: r(1),
            n: 3,
        },
        Op::ToText { a: r(0), b: r(1) },
        Op::Jump { t: Pc(34) },
        Op::JumpIf { a: r(0), t: Pc(0) },
        Op::JumpIfNot { a: r(0), t: Pc(35) },
        Op::JumpIfNil { a: r(0), t: Pc(36) },
        Op::JumpIfNotNil { a: r(0), t: Pc(37) },
        Op::JumpUnlessCmpInt {
            b: r(1),
            c: r(2),
            op: Cmp::Gt,
            t: Pc(38),
        },
        Op::Call {
            f: FuncIdx(2),
            base: r(7),
        },
        Op::CallBuiltin {
            f: BuiltinIdx(3),
            base: r(6),
            n: 2,
        },
        Op::TryEnter {
            t: Pc(42),
            err: r(9),
        },
        Op::TryExit {},
        Op::Spawn {
            a: r(1),
            f: FuncIdx(0),
            base: r(2),
            n: 0,
        },
        Op::Join { a: r(1), b: r(2) },
        Op::Unwrap { a: r(0), b: r(1) },
        Op::NewList {
            a: r(0),
            b: r(1),
            n: 4,
        },
        Op::ListGet {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::ListSet {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::ListLen { a: r(0), b: r(1) },
        Op::NewMap {
            a: r(0),
            b: r(2),
            n: 2,
        },
        Op::MapGet {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::MapSet {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::MapLen { a: r(0), b: r(1) },
        Op::MapEntry {
            k: r(0),
            v: r(1),
            m: r(2),
            i: r(3),
        },
        Op::ListEntry {
            a: r(0),
            b: r(1),
            c: r(2),
        },
        Op::NewObj {
            a: r(0),
            c: ClassIdx(0),
            b: r(8),
        },
        Op::NewObj {
            a: r(0),
            c: ClassIdx(1),
            b: r(9),
        },
        Op::GetField {
            a: r(0),
            b: r(1),
            f: FieldIdx(65534),
        },
        Op::SetField {
            a: r(0),
            f: FieldIdx(1),
            b: r(1),
        },
        Op::DbInsert {
            a: r(0),
            t: TableIdx(1),
            b: r(3),
        },
        Op::DbGetField {
            a: r(0),
            b: r(1),
            t: TableIdx(1),
            f: FieldIdx(1),
        },
        Op::DbUpdateField {
            a: r(1),
            t: TableIdx(1),
            f: FieldIdx(6),
            b: r(2),
        },
        Op::DbDelete {
            a: r(1),
            t: TableIdx(0),
        },
        Op::DbFind {
            a: r(0),
            t: TableIdx(0),
            b: r(1),
        },
        Op::DbRowId { a: r(0), b: r(1) },
        Op::DbAlive { a: r(0), b: r(1) },
        Op::DbQuery {
            a: r(0),
            q: QueryIdx(0),
            b: r(2),
        },
        Op::TxBegin {},
        Op::TxCommit {},
        Op::SubIntImm {
            a: r(1),
            b: r(2),
            v: 5,
        },
        Op::JumpUnlessCmpIntImm {
            b: r(3),
            v: -1,
            op: Cmp::Lt,
            t: Pc(1),
        },
        Op::ForPrep {
            a: r(4),
            v: r(7),
            t: Pc(2),
        },
        Op::ForLoop {
            a: r(4),
            v: r(7),
            t: Pc(1),
        },
        Op::TextNext {
            v: r(7),
            b: r(1),
            i: r(2),
            t: Pc(3),
        },
        Op::JumpUnlessEqConst {
            b: r(7),
            k: ConstIdx(1),
            eq: false,
            t: Pc(2),
        },
        Op::Ret { a: r(0) },
        Op::RetNil {},
    ];
    let n = u32::try_from(ops.len()).expect("a short list");
    let pos = (0..n)
        .map(|i| at(1, 100 + i / 3 - u32::from(i == 20) * 30, (i * 7) % 40 + 1))
        .collect();
    Function {
        name: "every_op".to_string(),
        arity: 2,
        n_regs: 10,
        code: ops,
        pos,
    }
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture_dir() -> PathBuf {
    crate_dir().join("tests").join("fixtures")
}

pub fn blessing() -> bool {
    std::env::var_os("WO_BLESS").is_some_and(|v| v == "1")
}

/// Compares `actual` with `tests/snapshots/<name>`; `WO_BLESS=1` writes it instead.
pub fn check_snapshot(name: &str, actual: &str) {
    let path = crate_dir().join("tests").join("snapshots").join(name);
    if blessing() {
        std::fs::write(&path, actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        panic!(
            "snapshot {} differs (rerun with WO_BLESS=1 to accept):\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}
