//! The database instructions on hand-built images: inserting, reading, updating,
//! deleting and finding rows, the `UNIQUE`, `FK`, `DB` and `OVERFLOW` traps with the
//! engine's messages, every query aggregate, and transactions: committed, rolled back
//! by a trap that leaves them (uncaught, or caught by a handler installed before
//! `TX_BEGIN`), and kept when the trap is caught inside them.

mod common;

use std::io::Write as _;

use common::*;
use wo_bytecode::image::{
    Column, ColumnType, Index, IndexKind, QueryAgg, QueryCol, QueryDesc, QueryPred, Table,
};
use wo_bytecode::{
    BuiltinIdx, Class, ClassIdx, Cmp, Const, FieldIdx, FuncIdx, Image, Op, Pc, QueryIdx, Reg,
    TableIdx,
};
use wo_db::Savepoint;
use wo_vm::{LinkError, RowRef, Status, Trap, TrapKind, Value, Vm};

/// Every test function has this many registers; the last one is scratch for `print`
/// and `fail`, r10–r13 hold the columns of an insert.
const N_REGS: u16 = 16;
const SCRATCH: u16 = 15;
const COLS: u16 = 10;

const DEPTS: u32 = 0;
const EMPS: u32 = 1;

fn rg(i: u16) -> Reg {
    Reg(i)
}

/// A tiny assembler: instructions for one function, constants shared by the image.
struct Asm<'c> {
    code: Vec<Op>,
    consts: &'c mut Vec<Const>,
}

impl Asm<'_> {
    fn op(&mut self, op: Op) {
        self.code.push(op);
    }

    fn int(&mut self, a: u16, v: i32) {
        self.op(Op::LoadInt { a: rg(a), v });
    }

    fn konst(&mut self, a: u16, k: Const) {
        let idx = u32::try_from(self.consts.len()).expect("few constants");
        self.consts.push(k);
        self.op(Op::LoadConst {
            a: rg(a),
            k: wo_bytecode::ConstIdx(idx),
        });
    }

    fn text(&mut self, a: u16, s: &str) {
        self.konst(a, Const::Text(s.to_string()));
    }

    fn print(&mut self, reg: u16) {
        self.code.extend(print_reg(reg, SCRATCH));
    }

    fn fail(&mut self, msg: &str) {
        self.text(SCRATCH, msg);
        self.op(Op::CallBuiltin {
            f: BuiltinIdx(FAIL),
            base: rg(SCRATCH),
            n: 1,
        });
    }

    /// `R[a] = insert departments { name }`.
    fn dept(&mut self, a: u16, name: &str) {
        self.text(COLS, name);
        self.op(Op::DbInsert {
            a: rg(a),
            t: TableIdx(DEPTS),
            b: rg(COLS),
        });
    }

    /// `R[a] = insert employees { name, salary, dept: R[dept], manager: nil }`.
    fn emp(&mut self, a: u16, name: &str, salary: i32, dept: u16) {
        self.text(COLS, name);
        self.int(COLS + 1, salary);
        self.op(Op::Move {
            a: rg(COLS + 2),
            b: rg(dept),
        });
        self.op(Op::LoadNil { a: rg(COLS + 3) });
        self.op(Op::DbInsert {
            a: rg(a),
            t: TableIdx(EMPS),
            b: rg(COLS),
        });
    }

    fn get(&mut self, a: u16, row: u16, t: u32, f: u16) {
        self.op(Op::DbGetField {
            a: rg(a),
            b: rg(row),
            t: TableIdx(t),
            f: FieldIdx(f),
        });
    }

    fn query(&mut self, a: u16, q: u32, args: u16) {
        self.op(Op::DbQuery {
            a: rg(a),
            q: QueryIdx(q),
            b: rg(args),
        });
    }

    /// `R[a] = from d in Department order by d.id desc skip 0 select d` (r4 is the
    /// skip argument).
    fn query_depts(&mut self, a: u16) {
        self.int(4, 0);
        self.query(a, Q_DEPTS_NEWEST_FIRST, 4);
    }

    /// Installs a handler whose target is set later by [`Asm::land`]; returns its pc.
    fn try_enter(&mut self, err: u16) -> usize {
        self.op(Op::TryEnter {
            t: Pc(0),
            err: rg(err),
        });
        self.code.len() - 1
    }

    /// Points the handler installed at `at` to the next instruction.
    fn land(&mut self, at: usize) {
        let here = Pc(u32::try_from(self.code.len()).expect("short code"));
        if let Some(Op::TryEnter { t, .. }) = self.code.get_mut(at) {
            *t = here;
        }
    }

    /// Prints `e.kind` of the Error in `err`.
    fn print_kind(&mut self, err: u16) {
        self.op(Op::GetField {
            a: rg(SCRATCH - 1),
            b: rg(err),
            f: FieldIdx(0),
        });
        self.print(SCRATCH - 1);
    }
}

/// Functions built with [`Asm`], in order: the first is `main`.
#[derive(Default)]
struct Program {
    consts: Vec<Const>,
    functions: Vec<wo_bytecode::Function>,
}

impl Program {
    fn func(&mut self, name: &str, arity: u16, body: impl FnOnce(&mut Asm<'_>)) {
        let mut asm = Asm {
            code: Vec::new(),
            consts: &mut self.consts,
        };
        body(&mut asm);
        let line0 = u32::try_from(self.functions.len() * 100 + 1).expect("few functions");
        self.functions
            .push(func(name, arity, N_REGS, line0, asm.code));
    }

    /// The image: `departments` (class `Department`) and `employees` (class `Employee`)
    /// plus an ordinary class `Point`, and the query descriptors of [`queries`].
    fn image(self) -> Image {
        let mut img = with_consts(image(self.functions), self.consts);
        img.classes = vec![
            class("Department", &["name"]),
            class("Point", &["x"]),
            class("Employee", &["name", "salary", "dept", "manager"]),
        ];
        img.tables = tables();
        img.queries = queries();
        img
    }
}

fn class(name: &str, fields: &[&str]) -> Class {
    Class {
        name: name.to_string(),
        fields: fields.iter().map(|f| (*f).to_string()).collect(),
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

fn tables() -> Vec<Table> {
    vec![
        Table {
            class: ClassIdx(0),
            name: "departments".to_string(),
            columns: vec![column("name", ColumnType::Text, false)],
            indexes: vec![Index {
                columns: vec![0],
                kind: IndexKind::Unique,
            }],
            durable: true,
            was: None,
        },
        Table {
            class: ClassIdx(2),
            name: "employees".to_string(),
            columns: vec![
                column("name", ColumnType::Text, false),
                column("salary", ColumnType::Int, false),
                column("dept", ColumnType::Ref(DEPTS), false),
                column("manager", ColumnType::Ref(EMPS), true),
            ],
            indexes: vec![
                Index {
                    columns: vec![2],
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

fn agg(table: u32, agg: QueryAgg) -> QueryDesc {
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

const Q_BY_DEPT: u32 = 0;
const Q_COUNT: u32 = 1;
const Q_EXISTS_ABOVE: u32 = 2;
const Q_SUM: u32 = 3;
const Q_MIN: u32 = 4;
const Q_MAX_DEPT: u32 = 5;
const Q_AVG: u32 = 6;
const Q_DEPTS_NEWEST_FIRST: u32 = 7;

fn queries() -> Vec<QueryDesc> {
    vec![
        // from e in Employee where e.dept == arg0 order by e.salary desc take arg1
        QueryDesc {
            table: EMPS,
            preds: vec![QueryPred {
                col: QueryCol::Col(2),
                op: Cmp::Eq,
                arg: 0,
            }],
            order: vec![(QueryCol::Col(1), true)],
            skip: None,
            take: Some(1),
            n_args: 2,
            agg: QueryAgg::Rows,
        },
        agg(EMPS, QueryAgg::Count),
        QueryDesc {
            preds: vec![QueryPred {
                col: QueryCol::Col(1),
                op: Cmp::Gt,
                arg: 0,
            }],
            n_args: 1,
            ..agg(EMPS, QueryAgg::Exists)
        },
        agg(EMPS, QueryAgg::Sum(QueryCol::Col(1))),
        agg(EMPS, QueryAgg::Min(QueryCol::Col(1))),
        agg(EMPS, QueryAgg::Max(QueryCol::Col(2))),
        agg(EMPS, QueryAgg::Avg(QueryCol::Col(1))),
        QueryDesc {
            order: vec![(QueryCol::Id, true)],
            skip: Some(0),
            n_args: 1,
            ..agg(DEPTS, QueryAgg::Rows)
        },
    ]
}

/// Runs `main` of `img` to its end; the status, stdout, and the VM to inspect.
fn go(img: &Image) -> (Status, String, Vm<'_>) {
    let (h, out) = host();
    let mut vm = Vm::new(img, &natives, h).expect("the test image links");
    let mut fiber = vm.fiber(0, Vec::new()).expect("a fiber");
    let status = vm.run_to_end(&mut fiber);
    let _ = vm.host.out.flush();
    (status, out.out(), vm)
}

fn main_only(body: impl FnOnce(&mut Asm<'_>)) -> Image {
    let mut p = Program::default();
    p.func("main", 0, |a| {
        body(a);
        a.op(Op::RetNil {});
    });
    p.image()
}

#[track_caller]
fn assert_done(status: &Status) {
    assert!(matches!(status, Status::Done(Value::Nil)), "{status:?}");
}

#[track_caller]
fn trap_of(status: Status) -> Trap {
    match status {
        Status::Trap { trap, .. } => trap,
        other => panic!("expected a trap, got {other:?}"),
    }
}

/// Rows the undo log still holds: none once every change is final.
fn undo_len(vm: &Vm<'_>) -> usize {
    vm.database().db().changes_since(Savepoint(0)).len()
}

#[test]
fn insert_get_update_delete_and_find() {
    let img = main_only(|a| {
        a.dept(0, "ops");
        a.print(0);
        a.emp(1, "ann", 100, 0);
        a.print(1);
        a.get(2, 1, EMPS, 1);
        a.print(2);
        a.int(3, 150);
        a.op(Op::DbUpdateField {
            a: rg(1),
            t: TableIdx(EMPS),
            f: FieldIdx(1),
            b: rg(3),
        });
        a.get(2, 1, EMPS, 1);
        a.print(2);
        // Navigation: e.dept.name.
        a.get(2, 1, EMPS, 2);
        a.print(2);
        a.get(3, 2, DEPTS, 0);
        a.print(3);
        a.get(2, 1, EMPS, 0);
        a.print(2);
        // A nullable ref reads as nil.
        a.get(2, 1, EMPS, 3);
        a.print(2);
        // Rows print the same inside a list.
        a.op(Op::NewList {
            a: rg(2),
            b: rg(0),
            n: 2,
        });
        a.print(2);
        a.op(Op::DbRowId { a: rg(2), b: rg(1) });
        a.print(2);
        // find(1) is the same row (equal handles); find(0), find(-5), find(9) are nil.
        a.int(4, 1);
        a.op(Op::DbFind {
            a: rg(2),
            t: TableIdx(EMPS),
            b: rg(4),
        });
        a.op(Op::Eq {
            a: rg(3),
            b: rg(2),
            c: rg(1),
        });
        a.print(3);
        for id in [0, -5, 9] {
            a.int(4, id);
            a.op(Op::DbFind {
                a: rg(2),
                t: TableIdx(EMPS),
                b: rg(4),
            });
            a.print(2);
        }
        // A department and an employee with the same id are different rows.
        a.op(Op::Eq {
            a: rg(3),
            b: rg(0),
            c: rg(1),
        });
        a.print(3);
        a.op(Op::DbAlive { a: rg(2), b: rg(1) });
        a.print(2);
        a.op(Op::DbDelete {
            a: rg(1),
            t: TableIdx(EMPS),
        });
        a.op(Op::DbAlive { a: rg(2), b: rg(1) });
        a.print(2);
        a.int(4, 1);
        a.op(Op::DbFind {
            a: rg(2),
            t: TableIdx(EMPS),
            b: rg(4),
        });
        a.print(2);
        // The id stays readable after the delete.
        a.op(Op::DbRowId { a: rg(2), b: rg(1) });
        a.print(2);
        // Ids are never reused.
        a.emp(1, "bob", 10, 0);
        a.print(1);
    });
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(
        out,
        "Department(1)\nEmployee(1)\n100\n150\nDepartment(1)\nops\nann\nnil\n\
         [Department(1), Employee(1)]\n1\ntrue\nnil\nnil\nnil\nfalse\ntrue\nfalse\nnil\n1\n\
         Employee(2)\n"
    );
    assert_eq!(vm.database().db().len(DEPTS), 1);
    assert_eq!(vm.database().db().len(EMPS), 1);
    // Outside a transaction every write is final at once.
    assert_eq!(undo_len(&vm), 0);
}

#[test]
fn reading_a_deleted_row_traps_db() {
    let img = main_only(|a| {
        a.dept(0, "ops");
        a.op(Op::DbDelete {
            a: rg(0),
            t: TableIdx(DEPTS),
        });
        a.get(1, 0, DEPTS, 0);
    });
    let trap = trap_of(go(&img).0);
    assert_eq!(trap.kind, TrapKind::Db);
    assert!(trap.message.contains("departments"), "{}", trap.message);
}

#[test]
fn a_duplicate_unique_value_traps_unique_and_changes_nothing() {
    let img = main_only(|a| {
        a.dept(0, "ops");
        let h = a.try_enter(5);
        a.dept(1, "ops");
        a.op(Op::TryExit {});
        a.land(h);
        a.print_kind(5);
        // The failed insert consumed no id.
        a.dept(1, "dev");
        a.print(1);
        // An update to a taken value is refused too.
        a.text(2, "ops");
        a.op(Op::DbUpdateField {
            a: rg(1),
            t: TableIdx(DEPTS),
            f: FieldIdx(0),
            b: rg(2),
        });
    });
    let (status, out, vm) = go(&img);
    assert_eq!(out, "UNIQUE\nDepartment(2)\n");
    let trap = trap_of(status);
    assert_eq!(trap.kind, TrapKind::Unique);
    assert!(trap.message.contains("\"ops\""), "{}", trap.message);
    assert_eq!(vm.database().db().len(DEPTS), 2);
    let dev = vm.database().db().get(DEPTS, 2, 0).expect("row 2 exists");
    assert_eq!(dev, wo_db::Cell::Text("dev".into()));
}

#[test]
fn references_to_missing_rows_and_deleting_referenced_rows_trap_fk() {
    // Storing a handle to a deleted row.
    let img = main_only(|a| {
        a.dept(0, "ops");
        a.op(Op::DbDelete {
            a: rg(0),
            t: TableIdx(DEPTS),
        });
        a.emp(1, "ann", 1, 0);
    });
    let (status, _, vm) = go(&img);
    assert_eq!(trap_of(status).kind, TrapKind::Fk);
    assert_eq!(vm.database().db().len(EMPS), 0);

    // Deleting a row that is still referenced.
    let img = main_only(|a| {
        a.dept(0, "ops");
        a.emp(1, "ann", 1, 0);
        a.op(Op::DbDelete {
            a: rg(0),
            t: TableIdx(DEPTS),
        });
    });
    let (status, _, vm) = go(&img);
    let trap = trap_of(status);
    assert_eq!(trap.kind, TrapKind::Fk);
    assert!(trap.message.contains("departments"), "{}", trap.message);
    assert_eq!(vm.database().db().len(DEPTS), 1);
}

/// ops: ann 100, bob 300, dan 50; dev: cat 200.
fn staff(a: &mut Asm<'_>) {
    a.dept(0, "ops");
    a.dept(1, "dev");
    a.emp(2, "ann", 100, 0);
    a.emp(2, "bob", 300, 0);
    a.emp(2, "cat", 200, 1);
    a.emp(2, "dan", 50, 0);
}

#[test]
fn queries_produce_rows_and_every_aggregate() {
    let img = main_only(|a| {
        // On an empty table: count 0, sum 0, min/max/avg nil, exists false.
        for q in [Q_COUNT, Q_SUM, Q_MIN, Q_MAX_DEPT, Q_AVG] {
            a.query(3, q, 4);
            a.print(3);
        }
        a.int(4, 0);
        a.query(3, Q_EXISTS_ABOVE, 4);
        a.print(3);
        staff(a);
        // where dept == ops order by salary desc take 2
        a.op(Op::Move { a: rg(4), b: rg(0) });
        a.int(5, 2);
        a.query(3, Q_BY_DEPT, 4);
        a.print(3);
        for q in [Q_COUNT, Q_SUM, Q_MIN, Q_MAX_DEPT, Q_AVG] {
            a.query(3, q, 4);
            a.print(3);
        }
        for bound in [250, 300] {
            a.int(4, bound);
            a.query(3, Q_EXISTS_ABOVE, 4);
            a.print(3);
        }
        a.query_depts(3);
        a.print(3);
    });
    let (status, out, _) = go(&img);
    assert_done(&status);
    assert_eq!(
        out,
        "0\n0\nnil\nnil\nnil\nfalse\n\
         [Employee(2), Employee(1)]\n4\n650\n50\nDepartment(2)\n162.5\n\
         true\nfalse\n\
         [Department(2), Department(1)]\n"
    );
}

#[test]
fn a_query_result_is_a_new_list_of_rows_that_read_columns() {
    let img = main_only(|a| {
        staff(a);
        a.op(Op::Move { a: rg(4), b: rg(1) });
        a.int(5, 10);
        a.query(3, Q_BY_DEPT, 4);
        a.int(6, 0);
        a.op(Op::ListGet {
            a: rg(7),
            b: rg(3),
            c: rg(6),
        });
        a.get(8, 7, EMPS, 0);
        a.print(8);
        a.op(Op::ListLen { a: rg(8), b: rg(3) });
        a.print(8);
    });
    let (status, out, _) = go(&img);
    assert_done(&status);
    assert_eq!(out, "cat\n1\n");
}

#[test]
fn an_int_sum_that_overflows_traps_overflow() {
    let img = main_only(|a| {
        a.dept(0, "ops");
        a.emp(1, "ann", i32::MAX, 0);
        // salary = i64::MAX via a constant
        a.konst(2, Const::Int(i64::MAX));
        a.op(Op::DbUpdateField {
            a: rg(1),
            t: TableIdx(EMPS),
            f: FieldIdx(1),
            b: rg(2),
        });
        a.emp(1, "bob", 1, 0);
        a.query(3, Q_SUM, 4);
    });
    let trap = trap_of(go(&img).0);
    assert_eq!(trap.kind, TrapKind::Overflow);
}

#[test]
fn a_committed_transaction_keeps_its_changes() {
    let img = main_only(|a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.dept(1, "dev");
        a.op(Op::TxCommit {});
        a.query_depts(3);
        a.print(3);
    });
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(out, "[Department(2), Department(1)]\n");
    assert!(!vm.database().in_transaction());
    assert_eq!(undo_len(&vm), 0);
}

#[test]
fn an_uncaught_trap_in_a_transaction_rolls_it_back() {
    let img = main_only(|a| {
        a.dept(0, "kept");
        a.op(Op::TxBegin {});
        a.dept(1, "ops");
        a.text(2, "renamed");
        a.op(Op::DbUpdateField {
            a: rg(0),
            t: TableIdx(DEPTS),
            f: FieldIdx(0),
            b: rg(2),
        });
        a.fail("boom");
        a.op(Op::TxCommit {});
    });
    let (status, _, vm) = go(&img);
    let trap = trap_of(status);
    assert_eq!((trap.kind, trap.message.as_str()), (TrapKind::Fail, "boom"));
    let db = vm.database().db();
    assert_eq!(db.len(DEPTS), 1);
    assert_eq!(db.get(DEPTS, 1, 0), Ok(wo_db::Cell::Text("kept".into())));
    // The rolled-back insert consumed no id.
    assert_eq!(db.next_id(DEPTS), 2);
    assert!(!vm.database().in_transaction());
    assert_eq!(undo_len(&vm), 0);
}

#[test]
fn a_trap_caught_inside_the_transaction_does_not_roll_back() {
    let img = main_only(|a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        let h = a.try_enter(5);
        a.dept(1, "ops"); // UNIQUE, caught inside the transaction
        a.op(Op::TryExit {});
        a.land(h);
        a.print_kind(5);
        a.dept(1, "dev");
        a.op(Op::TxCommit {});
        a.query_depts(3);
        a.print(3);
    });
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(out, "UNIQUE\n[Department(2), Department(1)]\n");
    assert_eq!(vm.database().db().len(DEPTS), 2);
    assert_eq!(undo_len(&vm), 0);
}

#[test]
fn a_trap_caught_outside_the_transaction_rolls_it_back() {
    let img = main_only(|a| {
        let h = a.try_enter(5);
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.fail("boom");
        a.op(Op::TxCommit {});
        a.op(Op::TryExit {});
        a.land(h);
        a.print_kind(5);
        a.query_depts(3);
        a.print(3);
        // The transaction has ended: a new one can begin, and the rolled-back insert
        // consumed no id.
        a.op(Op::TxBegin {});
        a.dept(0, "dev");
        a.op(Op::TxCommit {});
        a.print(0);
    });
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(out, "FAIL\n[]\nDepartment(1)\n");
    assert_eq!(vm.database().db().len(DEPTS), 1);
}

#[test]
fn a_trap_in_a_callee_leaves_the_transaction_by_its_handler() {
    // main: try { tx { insert; f() } } catch: f traps with its own handler inside the
    // transaction (kept), then g traps and only main's handler, installed before the
    // transaction, catches it (rolled back).
    let mut p = Program::default();
    p.func("main", 0, |a| {
        let h = a.try_enter(5);
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.op(Op::Call {
            f: FuncIdx(1),
            base: rg(6),
        });
        a.query(3, Q_COUNT, 4);
        a.query_depts(3);
        a.print(3);
        a.op(Op::Call {
            f: FuncIdx(2),
            base: rg(6),
        });
        a.op(Op::TxCommit {});
        a.op(Op::TryExit {});
        a.land(h);
        a.print_kind(5);
        a.query_depts(3);
        a.print(3);
        a.op(Op::RetNil {});
    });
    p.func("f", 0, |a| {
        a.dept(0, "dev");
        let h = a.try_enter(5);
        a.fail("caught in f");
        a.op(Op::TryExit {});
        a.land(h);
        a.op(Op::RetNil {});
    });
    p.func("g", 0, |a| {
        a.dept(0, "qa");
        a.dept(0, "qa");
        a.op(Op::RetNil {});
    });
    let img = p.image();
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(out, "[Department(2), Department(1)]\nUNIQUE\n[]\n");
    assert!(!vm.database().in_transaction());
    assert_eq!(vm.database().db().next_id(DEPTS), 1);
}

#[test]
fn a_transaction_begun_in_a_callee_rolls_back_when_the_caller_catches() {
    let mut p = Program::default();
    p.func("main", 0, |a| {
        let h = a.try_enter(5);
        a.op(Op::Call {
            f: FuncIdx(1),
            base: rg(6),
        });
        a.op(Op::TryExit {});
        a.land(h);
        a.print_kind(5);
        a.query(3, Q_COUNT, 4);
        a.query_depts(3);
        a.print(3);
        a.op(Op::RetNil {});
    });
    p.func("f", 0, |a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.fail("boom");
        a.op(Op::TxCommit {});
        a.op(Op::RetNil {});
    });
    let img = p.image();
    let (status, out, vm) = go(&img);
    assert_done(&status);
    assert_eq!(out, "FAIL\n[]\n");
    assert!(!vm.database().in_transaction());
}

#[test]
fn transactions_do_not_nest() {
    let img = main_only(|a| {
        let h = a.try_enter(5);
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.op(Op::TxBegin {});
        a.op(Op::TxCommit {});
        a.op(Op::TxCommit {});
        a.op(Op::TryExit {});
        a.land(h);
        a.op(Op::GetField {
            a: rg(6),
            b: rg(5),
            f: FieldIdx(2),
        });
        a.print(6);
        a.query_depts(3);
        a.print(3);
    });
    let (status, out, _) = go(&img);
    assert_done(&status);
    assert_eq!(out, "a transaction is already active\n[]\n");
}

#[test]
fn inside_a_transaction_the_undo_log_is_kept_until_commit() {
    let img = main_only(|a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.dept(1, "dev");
        a.op(Op::Ret { a: rg(0) });
    });
    // `main` returning inside a transaction is a broken image: it faults, and the
    // transaction is rolled back rather than left open.
    let (status, _, vm) = go(&img);
    assert!(
        matches!(&status, Status::Fault(msg) if msg.contains("inside a transaction")),
        "{status:?}"
    );
    assert!(!vm.database().in_transaction());
    assert_eq!(vm.database().db().len(DEPTS), 0);

    // Inside a transaction the budget does not preempt (LANGUAGE.md §9: no other fiber
    // runs): a budget of one call runs on to the commit, which makes the changes final.
    let mut p = Program::default();
    p.func("main", 0, |a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.op(Op::Call {
            f: FuncIdx(1),
            base: rg(6),
        });
        a.dept(1, "dev");
        a.op(Op::TxCommit {});
        a.op(Op::RetNil {});
    });
    p.func("nothing", 0, |a| a.op(Op::RetNil {}));
    let img = p.image();
    let (h, _) = host();
    let mut vm = Vm::new(&img, &natives, h).expect("links");
    let mut fiber = vm.fiber(0, Vec::new()).expect("a fiber");
    assert!(matches!(vm.resume(&mut fiber, 1), Status::Done(_)));
    assert!(!vm.database().in_transaction());
    assert_eq!(undo_len(&vm), 0);
    assert_eq!(vm.database().db().len(DEPTS), 2);
}

#[test]
fn exit_inside_a_transaction_discards_it() {
    let img = main_only(|a| {
        a.op(Op::TxBegin {});
        a.dept(0, "ops");
        a.int(SCRATCH, 3);
        a.op(Op::CallBuiltin {
            f: BuiltinIdx(EXIT),
            base: rg(SCRATCH),
            n: 1,
        });
    });
    let (status, _, vm) = go(&img);
    assert!(matches!(status, Status::Exit(3)), "{status:?}");
    assert!(!vm.database().in_transaction());
    assert_eq!(vm.database().db().len(DEPTS), 0);
}

/// The body of a hand-built `main`.
type Body = Box<dyn Fn(&mut Asm<'_>)>;

#[test]
fn wrongly_typed_registers_fault() {
    let cases: Vec<Body> = vec![
        // An Int where a row is expected.
        Box::new(|a| {
            a.int(0, 1);
            a.get(1, 0, DEPTS, 0);
        }),
        // A department handle used as an employee.
        Box::new(|a| {
            a.dept(0, "ops");
            a.get(1, 0, EMPS, 0);
        }),
        // An employee stored where a department ref belongs.
        Box::new(|a| {
            a.dept(0, "ops");
            a.emp(1, "ann", 1, 0);
            a.emp(2, "bob", 1, 1);
        }),
        // A Text in an Int column.
        Box::new(|a| {
            a.dept(0, "ops");
            a.text(1, "x");
            a.emp(2, "ann", 1, 0);
            a.op(Op::DbUpdateField {
                a: rg(2),
                t: TableIdx(EMPS),
                f: FieldIdx(1),
                b: rg(1),
            });
        }),
        Box::new(|a| a.op(Op::TxCommit {})),
        Box::new(|a| {
            a.op(Op::NewList {
                a: rg(4),
                b: rg(0),
                n: 0,
            });
            a.query(3, Q_EXISTS_ABOVE, 4);
        }),
        Box::new(|a| {
            a.text(0, "1");
            a.op(Op::DbFind {
                a: rg(1),
                t: TableIdx(DEPTS),
                b: rg(0),
            });
        }),
        Box::new(|a| {
            a.int(0, 1);
            a.op(Op::DbRowId { a: rg(1), b: rg(0) });
        }),
        Box::new(|a| {
            // A list where a row is expected.
            a.op(Op::NewList {
                a: rg(0),
                b: rg(0),
                n: 0,
            });
            a.op(Op::DbAlive { a: rg(1), b: rg(0) });
        }),
    ];
    for (i, body) in cases.iter().enumerate() {
        let img = main_only(|a| body(a));
        match go(&img).0 {
            Status::Fault(msg) => assert!(msg.starts_with("internal error: "), "{i}: {msg}"),
            other => panic!("case {i}: expected a fault, got {other:?}"),
        }
    }
}

#[test]
fn nil_in_a_column_that_is_not_nullable_traps_db() {
    let img = main_only(|a| {
        a.op(Op::LoadNil { a: rg(COLS) });
        a.op(Op::DbInsert {
            a: rg(0),
            t: TableIdx(DEPTS),
            b: rg(COLS),
        });
    });
    let trap = trap_of(go(&img).0);
    assert_eq!(trap.kind, TrapKind::Db);
    assert!(trap.message.contains("name"), "{}", trap.message);
}

#[test]
fn rows_compare_by_class_and_id() {
    let a = Value::Row(RowRef::new(0, 1));
    let b = Value::Row(RowRef::new(0, 1));
    let c = Value::Row(RowRef::new(2, 1));
    assert!(wo_vm::interp::values_eq(&a, &b));
    assert!(!wo_vm::interp::values_eq(&a, &c));
    assert!(!wo_vm::interp::values_eq(&a, &Value::Int(1)));
}

#[test]
fn broken_schemas_and_db_operands_are_refused_at_link_time() {
    let link = |img: &Image| {
        let (h, _) = host();
        Vm::new(img, &natives, h).err()
    };
    let mut img = main_only(|_| {});
    img.tables[1].columns[2].ty = ColumnType::Ref(7);
    assert!(
        matches!(link(&img), Some(LinkError::Invalid(msg)) if msg.contains("refers to table t7")),
    );
    let mut img = main_only(|_| {});
    img.queries[0].preds[0].arg = 9;
    assert!(matches!(link(&img), Some(LinkError::Invalid(_))));
    let bad_ops = [
        Op::DbInsert {
            a: rg(0),
            t: TableIdx(9),
            b: rg(0),
        },
        Op::DbInsert {
            a: rg(0),
            t: TableIdx(EMPS),
            b: rg(N_REGS - 2),
        },
        Op::DbQuery {
            a: rg(0),
            q: QueryIdx(Q_BY_DEPT),
            b: rg(N_REGS - 1),
        },
        Op::DbQuery {
            a: rg(0),
            q: QueryIdx(99),
            b: rg(0),
        },
        Op::DbGetField {
            a: rg(0),
            b: rg(0),
            t: TableIdx(DEPTS),
            f: FieldIdx(1),
        },
    ];
    for op in bad_ops {
        let img = main_only(|a| a.op(op));
        assert!(
            matches!(link(&img), Some(LinkError::Invalid(_))),
            "{op:?} was accepted"
        );
    }
}
