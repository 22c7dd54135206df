//! One test per engine rule: types, ids, UNIQUE, FK, deleted rows, updates, the undo
//! log, queries and their plans, aggregates. Each asserts the exact error message.

use std::rc::Rc;

use wo_db::*;

const DEPT: TableId = 0;
const EMP: TableId = 1;

fn col(name: &str, ty: ColType, nullable: bool) -> Column {
    Column {
        name: name.into(),
        ty,
        nullable,
    }
}

/// departments(name Text @unique), employees(name Text, salary Int, level Int,
/// dept ref departments, manager ?ref employees, score ?Float) with index [dept],
/// index [dept, level], sorted [salary].
fn schema() -> Schema {
    Schema {
        tables: vec![
            TableDef {
                name: "departments".into(),
                columns: vec![col("name", ColType::Text, false)],
                indexes: vec![IndexDef {
                    columns: vec![0],
                    kind: IndexKind::Unique,
                }],
                durable: true,
            },
            TableDef {
                name: "employees".into(),
                columns: vec![
                    col("name", ColType::Text, false),
                    col("salary", ColType::Int, false),
                    col("level", ColType::Int, false),
                    col("dept", ColType::Ref(DEPT), false),
                    col("manager", ColType::Ref(EMP), true),
                    col("score", ColType::Float, true),
                ],
                indexes: vec![
                    IndexDef {
                        columns: vec![3],
                        kind: IndexKind::Hash,
                    },
                    IndexDef {
                        columns: vec![3, 2],
                        kind: IndexKind::Hash,
                    },
                    IndexDef {
                        columns: vec![1],
                        kind: IndexKind::Sorted,
                    },
                ],
                durable: true,
            },
        ],
    }
}

fn t(s: &str) -> Cell {
    Cell::Text(Rc::from(s))
}

fn emp(name: &str, salary: i64, level: i64, dept: RowId) -> Vec<Cell> {
    vec![
        t(name),
        Cell::Int(salary),
        Cell::Int(level),
        Cell::Ref(dept),
        Cell::Nil,
        Cell::Nil,
    ]
}

fn db_with_depts() -> Db {
    let mut db = Db::new(schema()).unwrap();
    assert_eq!(db.insert(DEPT, vec![t("ops")]).unwrap(), 1);
    assert_eq!(db.insert(DEPT, vec![t("dev")]).unwrap(), 2);
    db
}

fn q(table: TableId, preds: Vec<Pred>) -> Query {
    Query {
        table,
        preds,
        order: vec![],
        skip: None,
        take: None,
    }
}

fn p(col: Col, op: CmpOp, arg: usize) -> Pred {
    Pred { col, op, arg }
}

fn run(db: &mut Db, q: &Query, args: &[Cell]) -> (Vec<RowId>, Plan) {
    let mut out = Vec::new();
    let plan = db.query(q, args, &mut out).unwrap();
    let mut scan = Vec::new();
    db.query_scan(q, args, &mut scan).unwrap();
    assert_eq!(out, scan, "planned and scanned results differ for {q:?}");
    (out, plan)
}

fn error(r: Result<impl std::fmt::Debug, DbError>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind, e.message)
}

#[test]
fn schema_validation() {
    let mut s = schema();
    s.tables[1].columns[3].ty = ColType::Ref(9);
    assert_eq!(
        error(Db::new(s)),
        (
            ErrorKind::Db,
            "employees.dept refers to table 9, which does not exist".into()
        )
    );
    let mut s = schema();
    s.tables[1].indexes.push(IndexDef {
        columns: vec![1, 2],
        kind: IndexKind::Sorted,
    });
    assert_eq!(
        error(Db::new(s)),
        (
            ErrorKind::Db,
            "sorted index 3 of employees must have exactly one column".into()
        )
    );
    let mut s = schema();
    s.tables[0].indexes[0].columns = vec![4];
    assert_eq!(
        error(Db::new(s)),
        (
            ErrorKind::Db,
            "index 0 of departments names column 4, but departments has 1 columns".into()
        )
    );
    let mut s = schema();
    s.tables[0].indexes[0].columns = vec![];
    assert_eq!(
        error(Db::new(s)),
        (
            ErrorKind::Db,
            "index 0 of departments has no columns".into()
        )
    );
}

#[test]
fn ids_are_dense_and_never_reused() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 10, 1, 1)).unwrap();
    let b = db.insert(EMP, emp("b", 20, 1, 1)).unwrap();
    assert_eq!((a, b), (1, 2));
    db.delete(EMP, b).unwrap();
    assert_eq!(db.insert(EMP, emp("c", 30, 1, 1)).unwrap(), 3);
    assert_eq!(db.len(EMP), 2);
    assert_eq!(db.next_id(EMP), 4);
}

#[test]
fn failed_inserts_consume_no_id() {
    let mut db = db_with_depts();
    assert_eq!(error(db.insert(DEPT, vec![t("ops")])).0, ErrorKind::Unique);
    assert_eq!(error(db.insert(EMP, emp("x", 1, 1, 7))).0, ErrorKind::Fk);
    assert_eq!(
        error(db.insert(
            EMP,
            vec![
                t("x"),
                Cell::Text("1".into()),
                Cell::Int(1),
                Cell::Ref(1),
                Cell::Nil,
                Cell::Nil
            ]
        ))
        .0,
        ErrorKind::Db
    );
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 3);
    assert_eq!(db.insert(EMP, emp("a", 1, 1, 1)).unwrap(), 1);
}

#[test]
fn rolled_back_inserts_consume_no_id() {
    let mut db = db_with_depts();
    let sp = db.savepoint();
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 3);
    assert_eq!(db.insert(DEPT, vec![t("hr")]).unwrap(), 4);
    db.rollback_to(sp);
    assert_eq!(db.len(DEPT), 2);
    assert!(!db.is_live(DEPT, 3));
    assert_eq!(db.next_id(DEPT), 3);
    assert_eq!(db.insert(DEPT, vec![t("hr")]).unwrap(), 3);
    // The unique index forgot "qa" and kept "hr".
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 4);
    assert_eq!(error(db.insert(DEPT, vec![t("hr")])).0, ErrorKind::Unique);
}

/// The ids an undone insert gives again are a new generation, so a handle to the
/// undone row can tell it from the row that holds the id now; other ids stay at 0.
#[test]
fn an_undone_insert_makes_its_id_a_new_generation() {
    let mut db = db_with_depts();
    assert_eq!(db.generation(DEPT, 1), 0);
    let sp = db.savepoint();
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 3);
    assert_eq!(db.insert(DEPT, vec![t("hr")]).unwrap(), 4);
    assert_eq!(db.generation(DEPT, 3), 0);
    db.rollback_to(sp);
    assert_eq!((db.generation(DEPT, 3), db.generation(DEPT, 4)), (1, 1));
    assert_eq!(db.generation(DEPT, 2), 0);
    assert_eq!(db.generation(EMP, 3), 0, "other tables keep theirs");
    let sp = db.savepoint();
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 3);
    db.rollback_to(sp);
    assert_eq!(db.generation(DEPT, 3), 2);
    assert_eq!(db.insert(DEPT, vec![t("qa")]).unwrap(), 3);
    assert_eq!(
        db.generation(DEPT, 3),
        2,
        "a kept insert does not change it"
    );
}

#[test]
fn type_errors_name_table_and_column() {
    let mut db = db_with_depts();
    assert_eq!(
        error(db.insert(
            EMP,
            vec![
                t("a"),
                t("x"),
                Cell::Int(1),
                Cell::Ref(1),
                Cell::Nil,
                Cell::Nil
            ]
        )),
        (
            ErrorKind::Db,
            "cannot store Text in employees.salary (it is Int)".into()
        )
    );
    assert_eq!(
        error(db.insert(
            EMP,
            vec![
                t("a"),
                Cell::Nil,
                Cell::Int(1),
                Cell::Ref(1),
                Cell::Nil,
                Cell::Nil
            ]
        )),
        (
            ErrorKind::Db,
            "cannot store nil in employees.salary (it is Int, not nullable)".into()
        )
    );
    assert_eq!(
        error(db.insert(
            EMP,
            vec![
                t("a"),
                Cell::Int(1),
                Cell::Int(1),
                Cell::Int(1),
                Cell::Nil,
                Cell::Nil
            ]
        )),
        (
            ErrorKind::Db,
            "cannot store Int in employees.dept (it is ref departments)".into()
        )
    );
    assert_eq!(
        error(db.insert(EMP, vec![t("a")])),
        (
            ErrorKind::Db,
            "insert into employees: expected 6 cells, got 1".into()
        )
    );
    let id = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    assert_eq!(
        error(db.update(EMP, id, 5, Cell::Int(3))),
        (
            ErrorKind::Db,
            "cannot store Int in employees.score (it is Float)".into()
        )
    );
    assert_eq!(
        error(db.update(EMP, id, 9, Cell::Int(3))),
        (ErrorKind::Db, "employees has no column 9".into())
    );
    assert_eq!(
        error(db.get(EMP, id, 9)),
        (ErrorKind::Db, "employees has no column 9".into())
    );
    db.update(EMP, id, 5, Cell::Float(2.5)).unwrap();
    db.update(EMP, id, 5, Cell::Nil).unwrap();
    assert_eq!(db.get(EMP, id, 5).unwrap(), Cell::Nil);
}

#[test]
fn unique_messages_quote_text_and_print_numbers_plainly() {
    let mut db = db_with_depts();
    assert_eq!(
        error(db.insert(DEPT, vec![t("ops")])),
        (
            ErrorKind::Unique,
            "duplicate value \"ops\" for unique column departments.name".into()
        )
    );
    db.insert(DEPT, vec![t("a \"b\"\n$")]).unwrap();
    assert_eq!(
        error(db.insert(DEPT, vec![t("a \"b\"\n$")])).1,
        "duplicate value \"a \\\"b\\\"\\n\\$\" for unique column departments.name"
    );
    let mut s = Schema::default();
    s.tables.push(TableDef {
        name: "t".into(),
        columns: vec![
            col("i", ColType::Int, true),
            col("f", ColType::Float, false),
            col("b", ColType::Bool, false),
        ],
        indexes: vec![
            IndexDef {
                columns: vec![0],
                kind: IndexKind::Unique,
            },
            IndexDef {
                columns: vec![1, 2],
                kind: IndexKind::Unique,
            },
        ],
        durable: false,
    });
    let mut db = Db::new(s).unwrap();
    db.insert(0, vec![Cell::Int(7), Cell::Float(1.0), Cell::Bool(true)])
        .unwrap();
    assert_eq!(
        error(db.insert(0, vec![Cell::Int(7), Cell::Float(2.0), Cell::Bool(true)])).1,
        "duplicate value 7 for unique column t.i"
    );
    assert_eq!(
        error(db.insert(0, vec![Cell::Int(8), Cell::Float(1.0), Cell::Bool(true)])).1,
        "duplicate value (1.0, true) for unique columns t.f, t.b"
    );
    // -0.0 == 0.0, so they collide; NaN equals nothing, so NaNs never collide.
    db.insert(0, vec![Cell::Int(9), Cell::Float(0.0), Cell::Bool(true)])
        .unwrap();
    assert_eq!(
        error(db.insert(0, vec![Cell::Int(10), Cell::Float(-0.0), Cell::Bool(true)])).0,
        ErrorKind::Unique
    );
    db.insert(
        0,
        vec![Cell::Int(11), Cell::Float(f64::NAN), Cell::Bool(true)],
    )
    .unwrap();
    db.insert(
        0,
        vec![Cell::Int(12), Cell::Float(f64::NAN), Cell::Bool(true)],
    )
    .unwrap();
    // nil keys never collide.
    db.insert(0, vec![Cell::Nil, Cell::Float(5.0), Cell::Bool(true)])
        .unwrap();
    db.insert(0, vec![Cell::Nil, Cell::Float(6.0), Cell::Bool(true)])
        .unwrap();
    assert_eq!(db.len(0), 6);
    // `== nil` on a unique column still finds the nil rows (by scanning).
    let (ids, plan) = run(
        &mut db,
        &q(0, vec![p(Col::At(0), CmpOp::Eq, 0)]),
        &[Cell::Nil],
    );
    assert_eq!(ids, vec![5, 6]);
    assert_eq!(plan, Plan::Scan);
}

#[test]
fn unique_on_update() {
    let mut db = db_with_depts();
    assert_eq!(
        error(db.update(DEPT, 2, 0, t("ops"))),
        (
            ErrorKind::Unique,
            "duplicate value \"ops\" for unique column departments.name".into()
        )
    );
    assert_eq!(db.get(DEPT, 2, 0).unwrap(), t("dev"));
    // Setting a row's own value is not a duplicate, and logs nothing.
    let sp = db.savepoint();
    db.update(DEPT, 1, 0, t("ops")).unwrap();
    assert!(db.changes_since(sp).is_empty());
    db.update(DEPT, 1, 0, t("sre")).unwrap();
    db.update(DEPT, 2, 0, t("ops")).unwrap();
    let (ids, plan) = run(
        &mut db,
        &q(DEPT, vec![p(Col::At(0), CmpOp::Eq, 0)]),
        &[t("ops")],
    );
    assert_eq!((ids, plan), (vec![2], Plan::HashProbe(0)));
}

#[test]
fn fk_on_insert_and_update() {
    let mut db = db_with_depts();
    assert_eq!(
        error(db.insert(EMP, emp("a", 1, 1, 7))),
        (
            ErrorKind::Fk,
            "employees.dept refers to departments row 7, which does not exist".into()
        )
    );
    db.insert(DEPT, vec![t("qa")]).unwrap();
    db.delete(DEPT, 3).unwrap();
    assert_eq!(
        error(db.insert(EMP, emp("a", 1, 1, 3))),
        (
            ErrorKind::Fk,
            "employees.dept refers to departments row 3, which does not exist".into()
        )
    );
    let e = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    assert_eq!(
        error(db.update(EMP, e, 4, Cell::Ref(2))),
        (
            ErrorKind::Fk,
            "employees.manager refers to employees row 2, which does not exist".into()
        )
    );
    assert_eq!(error(db.update(EMP, e, 3, Cell::Ref(0))).0, ErrorKind::Fk);
    assert_eq!(db.get(EMP, e, 4).unwrap(), Cell::Nil);
}

#[test]
fn restrict_delete() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 1, 1, 2)).unwrap();
    assert_eq!(
        error(db.delete(DEPT, 2)),
        (
            ErrorKind::Fk,
            "cannot delete departments row 2: employees.dept still refers to it".into()
        )
    );
    assert!(db.is_live(DEPT, 2));
    db.delete(DEPT, 1).unwrap();
    // Moving the reference releases the old target.
    db.insert(DEPT, vec![t("qa")]).unwrap();
    db.update(EMP, a, 3, Cell::Ref(3)).unwrap();
    db.delete(DEPT, 2).unwrap();
    assert_eq!(error(db.delete(DEPT, 3)).0, ErrorKind::Fk);
    // Deleting the referrer releases the target.
    db.delete(EMP, a).unwrap();
    db.delete(DEPT, 3).unwrap();
    assert_eq!(db.len(DEPT), 0);
}

#[test]
fn restrict_counts_each_reference() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    let b = db.insert(EMP, emp("b", 1, 1, 1)).unwrap();
    db.delete(EMP, a).unwrap();
    assert_eq!(error(db.delete(DEPT, 1)).0, ErrorKind::Fk);
    db.delete(EMP, b).unwrap();
    db.delete(DEPT, 1).unwrap();
}

#[test]
fn self_reference_does_not_block_delete() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    let b = db.insert(EMP, emp("b", 1, 1, 1)).unwrap();
    db.update(EMP, a, 4, Cell::Ref(a)).unwrap();
    db.update(EMP, b, 4, Cell::Ref(a)).unwrap();
    assert_eq!(
        error(db.delete(EMP, a)),
        (
            ErrorKind::Fk,
            "cannot delete employees row 1: employees.manager still refers to it".into()
        )
    );
    db.update(EMP, b, 4, Cell::Ref(b)).unwrap();
    let sp = db.savepoint();
    db.delete(EMP, a).unwrap();
    db.delete(EMP, b).unwrap();
    // Undo restores the counts: b refers to itself, a is referred to by nobody else.
    db.rollback_to(sp);
    assert_eq!(db.len(EMP), 2);
    db.update(EMP, b, 4, Cell::Ref(a)).unwrap();
    assert_eq!(error(db.delete(EMP, a)).0, ErrorKind::Fk);
    db.delete(EMP, b).unwrap();
    db.delete(EMP, a).unwrap();
}

#[test]
fn deleted_and_missing_rows() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    db.delete(EMP, a).unwrap();
    let deleted = (
        ErrorKind::Db,
        "row 1 of employees does not exist (it was deleted)".to_string(),
    );
    assert_eq!(error(db.get(EMP, a, 0)), deleted);
    assert_eq!(error(db.update(EMP, a, 1, Cell::Int(2))), deleted);
    assert_eq!(error(db.delete(EMP, a)), deleted);
    let missing = (
        ErrorKind::Db,
        "row 5 of employees does not exist (no such row)".to_string(),
    );
    assert_eq!(error(db.get(EMP, 5, 0)), missing);
    assert_eq!(error(db.update(EMP, 5, 0, t("x"))), missing);
    assert_eq!(error(db.delete(EMP, 5)), missing);
    assert_eq!(
        error(db.get(EMP, 0, 0)).1,
        "row 0 of employees does not exist (no such row)"
    );
    assert_eq!(
        error(db.get(EMP, -3, 0)).1,
        "row -3 of employees does not exist (no such row)"
    );
    assert!(!db.is_live(EMP, a) && !db.is_live(EMP, 0) && !db.is_live(9, 1));
    assert_eq!(error(db.get(9, 1, 0)), (ErrorKind::Db, "no table 9".into()));
}

#[test]
fn update_touches_only_its_indexes_and_keeps_them_right() {
    let mut db = db_with_depts();
    for i in 0..10 {
        db.insert(EMP, emp(&format!("e{i}"), 100 + i, i % 3, 1 + i % 2))
            .unwrap();
    }
    db.update(EMP, 4, 3, Cell::Ref(1)).unwrap(); // dept 2 → 1
    db.update(EMP, 4, 1, Cell::Int(5)).unwrap();
    let by_dept = q(EMP, vec![p(Col::At(3), CmpOp::Eq, 0)]);
    let (ids, plan) = run(&mut db, &by_dept, &[Cell::Ref(1)]);
    assert_eq!(plan, Plan::HashProbe(0));
    assert_eq!(ids, vec![1, 3, 4, 5, 7, 9]);
    let both = q(
        EMP,
        vec![p(Col::At(3), CmpOp::Eq, 0), p(Col::At(2), CmpOp::Eq, 1)],
    );
    let (ids, plan) = run(&mut db, &both, &[Cell::Ref(1), Cell::Int(0)]);
    assert_eq!(plan, Plan::HashProbe(1));
    assert_eq!(ids, vec![1, 4, 7]);
    let mut lowest = q(EMP, vec![]);
    lowest.order = vec![(Col::At(1), false)];
    lowest.take = Some(0);
    let (ids, plan) = run(&mut db, &lowest, &[Cell::Int(2)]);
    assert_eq!(plan, Plan::SortedWalk(2));
    assert_eq!(ids, vec![4, 1]);
}

#[test]
fn update_to_same_value_logs_nothing() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    db.update(EMP, a, 5, Cell::Float(0.0)).unwrap();
    let sp = db.savepoint();
    db.update(EMP, a, 1, Cell::Int(1)).unwrap();
    db.update(EMP, a, 0, t("a")).unwrap();
    db.update(EMP, a, 3, Cell::Ref(1)).unwrap();
    db.update(EMP, a, 5, Cell::Float(0.0)).unwrap();
    assert!(db.changes_since(sp).is_empty());
    // -0.0 is a different value (it prints differently).
    db.update(EMP, a, 5, Cell::Float(-0.0)).unwrap();
    assert_eq!(db.changes_since(sp).len(), 1);
}

#[test]
fn changes_carry_undo_and_redo() {
    let mut db = db_with_depts();
    let sp = db.savepoint();
    let a = db.insert(EMP, emp("a", 1, 1, 1)).unwrap();
    db.update(EMP, a, 1, Cell::Int(2)).unwrap();
    db.delete(EMP, a).unwrap();
    assert_eq!(
        db.changes_since(sp),
        &[
            Change::Insert {
                table: EMP,
                id: 1,
                cells: emp("a", 1, 1, 1)
            },
            Change::Update {
                table: EMP,
                id: 1,
                col: 1,
                old: Cell::Int(1),
                new: Cell::Int(2)
            },
            Change::Delete {
                table: EMP,
                id: 1,
                cells: emp("a", 2, 1, 1)
            },
        ]
    );
    db.truncate_undo(sp);
    assert!(db.changes_since(sp).is_empty());
    db.rollback_to(sp);
    assert_eq!(db.len(EMP), 0);
    assert_eq!(db.next_id(EMP), 2, "a truncated change stays");
}

#[test]
fn rollback_restores_everything() {
    let mut db = db_with_depts();
    let a = db.insert(EMP, emp("a", 10, 1, 1)).unwrap();
    let b = db.insert(EMP, emp("b", 20, 2, 2)).unwrap();
    let before: Vec<_> = db.rows(EMP).collect();
    let sp = db.savepoint();
    db.update(EMP, a, 3, Cell::Ref(2)).unwrap();
    db.update(EMP, b, 4, Cell::Ref(a)).unwrap();
    db.update(EMP, a, 1, Cell::Int(99)).unwrap();
    db.delete(EMP, b).unwrap();
    db.delete(DEPT, 1).unwrap(); // nothing refers to it any more
    db.insert(DEPT, vec![t("ops")]).unwrap();
    db.rollback_to(sp);
    assert_eq!(db.rows(EMP).collect::<Vec<_>>(), before);
    assert_eq!(
        db.rows(DEPT).map(|r| r.1[0].clone()).collect::<Vec<_>>(),
        vec![t("ops"), t("dev")]
    );
    assert_eq!(db.next_id(DEPT), 3);
    // Reference counts are back: dept 1 is referred to by a, and a by nobody.
    assert_eq!(error(db.delete(DEPT, 1)).0, ErrorKind::Fk);
    assert_eq!(error(db.insert(DEPT, vec![t("ops")])).0, ErrorKind::Unique);
    let mut top = q(EMP, vec![]);
    top.order = vec![(Col::At(1), true)];
    assert_eq!(run(&mut db, &top, &[]).0, vec![b, a]);
    db.delete(EMP, a).unwrap();
    db.delete(EMP, b).unwrap();
    db.delete(DEPT, 1).unwrap();
}

#[test]
fn nested_savepoints() {
    let mut db = db_with_depts();
    let outer = db.savepoint();
    db.insert(DEPT, vec![t("a")]).unwrap();
    let inner = db.savepoint();
    db.insert(DEPT, vec![t("b")]).unwrap();
    db.rollback_to(inner);
    assert_eq!(db.len(DEPT), 3);
    db.insert(DEPT, vec![t("c")]).unwrap();
    assert_eq!(db.get(DEPT, 4, 0).unwrap(), t("c"));
    db.rollback_to(outer);
    assert_eq!(db.len(DEPT), 2);
    assert_eq!(db.next_id(DEPT), 3);
}

#[test]
fn query_predicates_with_nil_nan_and_text() {
    let mut db = db_with_depts();
    let scores = [
        Some(1.5),
        None,
        Some(f64::NAN),
        Some(-0.0),
        Some(0.0),
        Some(-2.0),
    ];
    for (i, s) in scores.iter().enumerate() {
        let mut r = emp(["b", "a", "ab", "B", "", "é"][i], i as i64, 1, 1);
        r[5] = s.map_or(Cell::Nil, Cell::Float);
        db.insert(EMP, r).unwrap();
    }
    let one = |op| q(EMP, vec![p(Col::At(5), op, 0)]);
    assert_eq!(run(&mut db, &one(CmpOp::Eq), &[Cell::Nil]).0, vec![2]);
    assert_eq!(
        run(&mut db, &one(CmpOp::Ne), &[Cell::Nil]).0,
        vec![1, 3, 4, 5, 6]
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Eq), &[Cell::Float(0.0)]).0,
        vec![4, 5]
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Ne), &[Cell::Float(0.0)]).0,
        vec![1, 2, 3, 6]
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Lt), &[Cell::Float(1.0)]).0,
        vec![4, 5, 6]
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Ge), &[Cell::Float(f64::NAN)]).0,
        Vec::<RowId>::new()
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Lt), &[Cell::Nil]).0,
        Vec::<RowId>::new()
    );
    assert_eq!(
        run(&mut db, &one(CmpOp::Eq), &[Cell::Float(f64::NAN)]).0,
        Vec::<RowId>::new()
    );
    let name = |op| q(EMP, vec![p(Col::At(0), op, 0)]);
    assert_eq!(
        run(&mut db, &name(CmpOp::Lt), &[t("b")]).0,
        vec![2, 3, 4, 5]
    );
    assert_eq!(run(&mut db, &name(CmpOp::Gt), &[t("b")]).0, vec![6]);
    // Order by a nullable Float: nil first both ways, total_cmp, ties by id.
    let mut o = q(EMP, vec![]);
    o.order = vec![(Col::At(5), false)];
    assert_eq!(run(&mut db, &o, &[]).0, vec![2, 6, 4, 5, 1, 3]);
    o.order = vec![(Col::At(5), true)];
    assert_eq!(run(&mut db, &o, &[]).0, vec![2, 3, 1, 5, 4, 6]);
}

#[test]
fn query_by_id() {
    let mut db = db_with_depts();
    for i in 0..5 {
        db.insert(EMP, emp("x", i, 1, 1)).unwrap();
    }
    db.delete(EMP, 3).unwrap();
    let by_id = q(EMP, vec![p(Col::Id, CmpOp::Eq, 0)]);
    assert_eq!(run(&mut db, &by_id, &[Cell::Int(2)]), (vec![2], Plan::ById));
    assert_eq!(run(&mut db, &by_id, &[Cell::Int(3)]).0, Vec::<RowId>::new());
    assert_eq!(
        run(&mut db, &by_id, &[Cell::Int(77)]).0,
        Vec::<RowId>::new()
    );
    assert_eq!(db.plan(&by_id), Plan::ById);
    let range = q(
        EMP,
        vec![p(Col::Id, CmpOp::Gt, 0), p(Col::Id, CmpOp::Le, 1)],
    );
    assert_eq!(
        run(&mut db, &range, &[Cell::Int(1), Cell::Int(4)]),
        (vec![2, 4], Plan::Scan)
    );
    let mut desc = q(EMP, vec![]);
    desc.order = vec![(Col::Id, true), (Col::At(1), false)];
    assert_eq!(run(&mut db, &desc, &[]).0, vec![5, 4, 2, 1]);
}

#[test]
fn order_ties_ascending_id_both_ways_and_skip_take() {
    let mut db = db_with_depts();
    for (i, s) in [3, 1, 3, 2, 1, 3].iter().enumerate() {
        db.insert(EMP, emp(&format!("e{i}"), *s, 1, 1)).unwrap();
    }
    let mut o = q(EMP, vec![]);
    o.order = vec![(Col::At(1), true)];
    assert_eq!(
        run(&mut db, &o, &[]),
        (vec![1, 3, 6, 4, 2, 5], Plan::SortedWalk(2))
    );
    o.order = vec![(Col::At(1), false)];
    assert_eq!(run(&mut db, &o, &[]).0, vec![2, 5, 4, 1, 3, 6]);
    o.skip = Some(0);
    o.take = Some(1);
    assert_eq!(
        run(&mut db, &o, &[Cell::Int(1), Cell::Int(3)]).0,
        vec![5, 4, 1]
    );
    assert_eq!(
        run(&mut db, &o, &[Cell::Int(-5), Cell::Int(2)]).0,
        vec![2, 5]
    );
    assert_eq!(
        run(&mut db, &o, &[Cell::Int(2), Cell::Int(-1)]).0,
        Vec::<RowId>::new()
    );
    assert_eq!(
        run(&mut db, &o, &[Cell::Int(10), Cell::Int(3)]).0,
        Vec::<RowId>::new()
    );
    // Order by a non-indexed column, then by another.
    let mut o2 = q(EMP, vec![]);
    o2.order = vec![(Col::At(2), false), (Col::At(1), true)];
    assert_eq!(run(&mut db, &o2, &[]), (vec![1, 3, 6, 4, 2, 5], Plan::Scan));
}

#[test]
fn sorted_walk_ranges() {
    let mut db = db_with_depts();
    for s in [50, 10, 40, 20, 30, 20] {
        db.insert(EMP, emp("x", s, 1, 1)).unwrap();
    }
    let r = q(
        EMP,
        vec![p(Col::At(1), CmpOp::Ge, 0), p(Col::At(1), CmpOp::Lt, 1)],
    );
    assert_eq!(
        run(&mut db, &r, &[Cell::Int(20), Cell::Int(40)]),
        (vec![4, 5, 6], Plan::SortedWalk(2))
    );
    assert_eq!(
        run(&mut db, &r, &[Cell::Int(40), Cell::Int(20)]).0,
        Vec::<RowId>::new()
    );
    let mut r = q(EMP, vec![p(Col::At(1), CmpOp::Gt, 0)]);
    r.order = vec![(Col::At(1), true)];
    r.take = Some(1);
    assert_eq!(
        run(&mut db, &r, &[Cell::Int(10), Cell::Int(3)]).0,
        vec![1, 3, 5]
    );
    let eq = q(EMP, vec![p(Col::At(1), CmpOp::Eq, 0)]);
    assert_eq!(
        run(&mut db, &eq, &[Cell::Int(20)]),
        (vec![4, 6], Plan::SortedWalk(2))
    );
}

#[test]
fn query_argument_errors() {
    let mut db = db_with_depts();
    let mut out = Vec::new();
    let bad = q(EMP, vec![p(Col::At(1), CmpOp::Eq, 0)]);
    assert_eq!(
        error(db.query(&bad, &[t("x")], &mut out)),
        (
            ErrorKind::Db,
            "query argument 0 is Text, but employees.salary is Int".into()
        )
    );
    assert_eq!(
        error(db.query(&bad, &[], &mut out)).1,
        "query argument 0 is missing (0 given)"
    );
    let mut s = q(EMP, vec![]);
    s.take = Some(0);
    assert_eq!(
        error(db.query(&s, &[Cell::Float(1.0)], &mut out)).1,
        "take argument 0 must be an Int"
    );
}

#[test]
fn aggregates() {
    let mut db = db_with_depts();
    let all = q(EMP, vec![]);
    assert_eq!(db.aggregate(&all, Agg::Count, &[]).unwrap(), Cell::Int(0));
    assert_eq!(
        db.aggregate(&all, Agg::Exists, &[]).unwrap(),
        Cell::Bool(false)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Sum(Col::At(1)), &[]).unwrap(),
        Cell::Int(0)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Sum(Col::At(5)), &[]).unwrap(),
        Cell::Float(0.0)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Min(Col::At(1)), &[]).unwrap(),
        Cell::Nil
    );
    assert_eq!(
        db.aggregate(&all, Agg::Avg(Col::At(1)), &[]).unwrap(),
        Cell::Nil
    );
    for (s, f) in [(10, Some(1.5)), (30, None), (20, Some(0.5))] {
        let mut r = emp("x", s, 1, 1);
        r[5] = f.map_or(Cell::Nil, Cell::Float);
        db.insert(EMP, r).unwrap();
    }
    assert_eq!(db.aggregate(&all, Agg::Count, &[]).unwrap(), Cell::Int(3));
    assert_eq!(
        db.aggregate(&all, Agg::Sum(Col::At(1)), &[]).unwrap(),
        Cell::Int(60)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Sum(Col::At(5)), &[]).unwrap(),
        Cell::Float(2.0)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Avg(Col::At(5)), &[]).unwrap(),
        Cell::Float(1.0)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Avg(Col::At(1)), &[]).unwrap(),
        Cell::Float(20.0)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Min(Col::At(5)), &[]).unwrap(),
        Cell::Float(0.5)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Max(Col::At(1)), &[]).unwrap(),
        Cell::Int(30)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Max(Col::At(0)), &[]).unwrap(),
        t("x")
    );
    assert_eq!(
        db.aggregate(&all, Agg::Max(Col::Id), &[]).unwrap(),
        Cell::Int(3)
    );
    let mut top2 = q(EMP, vec![]);
    top2.order = vec![(Col::At(1), true)];
    top2.take = Some(0);
    assert_eq!(
        db.aggregate(&top2, Agg::Sum(Col::At(1)), &[Cell::Int(2)])
            .unwrap(),
        Cell::Int(50)
    );
    let big = q(EMP, vec![p(Col::At(1), CmpOp::Gt, 0)]);
    assert_eq!(
        db.aggregate(&big, Agg::Exists, &[Cell::Int(25)]).unwrap(),
        Cell::Bool(true)
    );
    assert_eq!(
        db.aggregate(&big, Agg::Count, &[Cell::Int(15)]).unwrap(),
        Cell::Int(2)
    );
    db.update(EMP, 1, 1, Cell::Int(i64::MAX)).unwrap();
    assert_eq!(
        error(db.aggregate(&all, Agg::Sum(Col::At(1)), &[])),
        (
            ErrorKind::Overflow,
            format!(
                "sum overflows Int: the total is {}",
                i128::from(i64::MAX) + 50
            )
        )
    );
    // Only the total must fit: with a negative salary (row 3 has 20) it does, whatever
    // comes first.
    db.update(EMP, 2, 1, Cell::Int(-60)).unwrap();
    assert_eq!(
        db.aggregate(&all, Agg::Sum(Col::At(1)), &[]).unwrap(),
        Cell::Int(i64::MAX - 60 + 20)
    );
    assert_eq!(
        db.aggregate(&all, Agg::Avg(Col::At(1)), &[]).unwrap(),
        Cell::Float((i64::MAX as f64 + 50.0) / 3.0)
    );
    assert_eq!(
        error(db.aggregate(&all, Agg::Sum(Col::At(0)), &[])),
        (
            ErrorKind::Db,
            "cannot sum employees.name: it is Text, not Int or Float".into()
        )
    );
}

#[test]
fn rows_and_memory() {
    let mut db = db_with_depts();
    db.delete(DEPT, 1).unwrap();
    assert_eq!(db.rows(DEPT).collect::<Vec<_>>(), vec![(2, vec![t("dev")])]);
    assert!(db.memory_bytes() > 0);
}

fn one_table(columns: Vec<Column>) -> Db {
    Db::new(Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns,
            indexes: vec![],
            durable: true,
        }],
    })
    .unwrap()
}

#[test]
fn memory_per_row_stays_small() {
    const N: usize = 100_000;
    let mut ints = one_table(vec![
        col("a", ColType::Int, false),
        col("b", ColType::Int, false),
        col("c", ColType::Int, false),
    ]);
    let base = ints.memory_bytes();
    for i in 0..N as i64 {
        ints.insert(0, vec![Cell::Int(i), Cell::Int(i), Cell::Int(i)])
            .unwrap();
    }
    ints.truncate_undo(Savepoint(0));
    let per_row = (ints.memory_bytes() - base) / N;
    assert!(per_row <= 26, "3 Int columns: {per_row} B/row");

    let mut texts = one_table(vec![col("name", ColType::Text, false)]);
    let base = texts.memory_bytes();
    for i in 0..N {
        texts
            .insert(0, vec![Cell::Text(Rc::from(format!("n{i:09}")))])
            .unwrap();
    }
    texts.truncate_undo(Savepoint(0));
    let per_row = (texts.memory_bytes() - base) / N;
    // 10 bytes: stored in the 16-byte slot, no heap block.
    assert!(per_row <= 18, "Text column: {per_row} B/row");
}

#[test]
fn query_arena_is_reset_after_each_query() {
    let mut db = one_table(vec![col("a", ColType::Int, false)]);
    for i in 0..20_000 {
        db.insert(0, vec![Cell::Int(i % 97)]).unwrap();
    }
    db.truncate_undo(Savepoint(0));
    let mut sorted = q(0, vec![]);
    sorted.order = vec![(Col::At(0), true)];
    let mut out = Vec::new();
    db.query(&sorted, &[], &mut out).unwrap();
    let after_one = db.memory_bytes();
    for _ in 0..20 {
        out.clear();
        db.query(&sorted, &[], &mut out).unwrap();
        db.aggregate(&sorted, Agg::Count, &[]).unwrap();
    }
    assert_eq!(db.memory_bytes(), after_one);
    assert_eq!(out.len(), 20_000);
    assert_eq!((out[0], out[1], out[19_999]), (97, 194, 19_983));
}

/// A hash probe skips re-checking its candidates only when its key is exactly the
/// predicates; a second equality on the key column (same value or not) is checked.
#[test]
fn a_probe_rechecks_what_its_key_does_not_cover() {
    let mut db = db_with_depts();
    for i in 0..10 {
        db.insert(EMP, emp(&format!("e{i}"), 100 + i, i % 3, 1 + i % 2))
            .unwrap();
    }
    let twice = q(
        EMP,
        vec![p(Col::At(3), CmpOp::Eq, 0), p(Col::At(3), CmpOp::Eq, 1)],
    );
    let (ids, plan) = run(&mut db, &twice, &[Cell::Ref(1), Cell::Ref(2)]);
    assert_eq!((ids, plan), (vec![], Plan::HashProbe(0)));
    let (ids, _) = run(&mut db, &twice, &[Cell::Ref(2), Cell::Ref(2)]);
    assert_eq!(ids, vec![2, 4, 6, 8, 10]);
    let and_more = q(
        EMP,
        vec![p(Col::At(3), CmpOp::Eq, 0), p(Col::At(1), CmpOp::Gt, 1)],
    );
    let (ids, plan) = run(&mut db, &and_more, &[Cell::Ref(2), Cell::Int(105)]);
    assert_eq!((ids, plan), (vec![8, 10], Plan::HashProbe(0)));
}

/// `min` and `max` of a column with a sorted index walk the index to its first value
/// (helper-106: they read every row, and the "next number" idiom was quadratic); the
/// answer is the scan's, bit for bit, whatever the column holds: nils (skipped),
/// NaNs of either sign, both zeros, repeated values, deleted rows.
#[test]
fn min_and_max_through_a_sorted_index_are_the_scans() {
    let table = |name: &str, indexes: Vec<IndexDef>| TableDef {
        name: name.into(),
        columns: vec![col("f", ColType::Float, true), col("n", ColType::Int, true)],
        indexes,
        durable: true,
    };
    let sorted = |c| IndexDef {
        columns: vec![c],
        kind: IndexKind::Sorted,
    };
    let s = Schema {
        tables: vec![
            table("plain", vec![]),
            table("sorted", vec![sorted(0), sorted(1)]),
        ],
    };
    let mut db = Db::new(s).unwrap();
    let bits = |c: &Cell| match c {
        Cell::Float(x) => format!("Float({:#x})", x.to_bits()),
        other => format!("{other:?}"),
    };
    let agree = |db: &mut Db, what: &str| {
        for agg in [
            Agg::Min(Col::At(0)),
            Agg::Max(Col::At(0)),
            Agg::Min(Col::At(1)),
            Agg::Max(Col::At(1)),
        ] {
            let a = db.aggregate(&q(0, vec![]), agg, &[]).unwrap();
            let b = db.aggregate(&q(1, vec![]), agg, &[]).unwrap();
            assert_eq!(bits(&a), bits(&b), "{what}: {agg:?}");
        }
    };
    agree(&mut db, "empty");
    let values = [
        (None, None),
        (Some(0.0), Some(3)),
        (Some(1.5), Some(3)),
        (Some(-0.0), Some(-7)),
        (Some(0.0), None),
        (Some(f64::NAN), Some(3)),
        (Some(-f64::NAN), Some(9)),
        (Some(1.5), Some(9)),
        (Some(f64::NEG_INFINITY), Some(-7)),
        (None, Some(0)),
    ];
    for (i, (f, n)) in values.iter().enumerate() {
        let row = vec![
            f.map_or(Cell::Nil, Cell::Float),
            n.map_or(Cell::Nil, Cell::Int),
        ];
        let a = db.insert(0, row.clone()).unwrap();
        let b = db.insert(1, row).unwrap();
        assert_eq!(a, b);
        agree(&mut db, &format!("after row {i}"));
    }
    for id in [5, 2, 8, 6] {
        db.delete(0, id).unwrap();
        db.delete(1, id).unwrap();
        agree(&mut db, &format!("after deleting {id}"));
    }
}

/// A sorted index counts its nil keys, and the count picks the path a plan's shape
/// cannot: a `!= nil` walks the few keys that are not nil (an optional column,
/// mostly unset) and scans when they are many; an `== nil` walks the nil keys when
/// they are few and scans when they are most of the table, unless the walk gives
/// the order. The counts follow inserts, updates, deletes, a rollback and a load.
#[test]
fn the_nil_count_of_a_sorted_index_chooses_walk_or_scan() {
    let s = Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns: vec![col("n", ColType::Int, true), col("k", ColType::Int, false)],
            indexes: vec![IndexDef {
                columns: vec![0],
                kind: IndexKind::Sorted,
            }],
            durable: true,
        }],
    };
    let n = Col::At(0);
    let not_nil = q(0, vec![p(n, CmpOp::Ne, 0)]);
    let nil = q(0, vec![p(n, CmpOp::Eq, 0)]);
    let mut nil_in_order = nil.clone();
    nil_in_order.order = vec![(n, false)];
    let mut not_nil_and_k = not_nil.clone();
    not_nil_and_k.preds.push(p(Col::At(1), CmpOp::Gt, 1));
    let paths = |db: &mut Db| {
        let args = [Cell::Nil, Cell::Int(5)];
        [&not_nil, &nil, &nil_in_order, &not_nil_and_k].map(|q| run(db, q, &args).1)
    };
    let (walk, scan) = (Plan::SortedWalk(0), Plan::Scan);

    let mut db = Db::new(s.clone()).unwrap();
    for i in 0..40i64 {
        let v = if i % 10 == 0 { Cell::Int(i) } else { Cell::Nil };
        db.insert(0, vec![v, Cell::Int(i)]).unwrap();
    }
    // 4 values, 36 nils.
    assert_eq!(
        paths(&mut db),
        [walk.clone(), scan.clone(), walk.clone(), walk.clone()]
    );
    let (ids, _) = run(&mut db, &not_nil_and_k, &[Cell::Nil, Cell::Int(5)]);
    assert_eq!(ids, vec![11, 21, 31]);
    // A scan that can stop early stays one (helper-113): with `take` in id order it
    // stops at the take-th match; and a scan narrowed to a few ids reads only them.
    let mut first = not_nil.clone();
    first.take = Some(1);
    let (ids, plan) = run(&mut db, &first, &[Cell::Nil, Cell::Int(1)]);
    assert_eq!((ids, plan), (vec![1], scan.clone()));
    first.order = vec![(Col::At(1), true)];
    let (ids, plan) = run(&mut db, &first, &[Cell::Nil, Cell::Int(1)]);
    assert_eq!((ids, plan), (vec![31], walk.clone()));
    let mut last_ids = not_nil.clone();
    last_ids.preds.push(p(Col::Id, CmpOp::Gt, 1));
    let (ids, plan) = run(&mut db, &last_ids, &[Cell::Nil, Cell::Int(35)]);
    assert_eq!((ids, plan), (vec![], scan.clone()));
    let (ids, plan) = run(&mut db, &last_ids, &[Cell::Nil, Cell::Int(5)]);
    assert_eq!((ids, plan), (vec![11, 21, 31], walk.clone()));
    assert_eq!(
        db.aggregate(&not_nil, Agg::Exists, &[Cell::Nil]).unwrap(),
        Cell::Bool(true)
    );

    // 35 values, 5 nils; then back, in a rollback.
    let sp = db.savepoint();
    for id in 1..=40 {
        if id % 10 != 1 && id > 6 {
            db.update(0, id, 0, Cell::Int(id)).unwrap();
        }
    }
    assert_eq!(
        paths(&mut db),
        [scan.clone(), walk.clone(), walk.clone(), scan.clone()]
    );
    db.rollback_to(sp);
    assert_eq!(
        paths(&mut db),
        [walk.clone(), scan.clone(), walk.clone(), walk.clone()]
    );

    // Deleting nils: 4 values, 2 nils left, of 6 rows.
    for id in 1..=40 {
        if id % 10 != 1 && id > 3 {
            db.delete(0, id).unwrap();
        }
    }
    assert_eq!(
        paths(&mut db),
        [scan.clone(), walk.clone(), walk.clone(), scan.clone()]
    );

    // A load builds the index in bulk and counts the same.
    let mut loaded = Db::new(s).unwrap();
    loaded
        .load_table(
            0,
            41,
            (1..=40).map(|id| {
                let v = if id % 10 == 1 {
                    Cell::Int(id)
                } else {
                    Cell::Nil
                };
                (id, vec![v, Cell::Int(id)])
            }),
        )
        .unwrap();
    assert_eq!(paths(&mut loaded), [walk.clone(), scan, walk.clone(), walk]);
}

/// `where x != nil` over a sorted index starts its walk past the nil keys (the bound
/// `min`/`max` use, so a mostly-nil column is not read through per call): the same
/// rows as the scan, in order either way, with `skip`/`take`, beside a range and
/// another `!=`.
#[test]
fn not_nil_over_a_sorted_index_walks_only_the_values() {
    let s = Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns: vec![col("n", ColType::Int, true)],
            indexes: vec![IndexDef {
                columns: vec![0],
                kind: IndexKind::Sorted,
            }],
            durable: true,
        }],
    };
    let mut db = Db::new(s).unwrap();
    for i in 0..40i64 {
        let v = if i % 3 == 0 {
            Cell::Int(i % 7)
        } else {
            Cell::Nil
        };
        db.insert(0, vec![v]).unwrap();
    }
    let n = Col::At(0);
    for desc in [false, true] {
        let mut walk = q(0, vec![p(n, CmpOp::Ne, 0)]);
        walk.order = vec![(n, desc)];
        let (ids, plan) = run(&mut db, &walk, &[Cell::Nil]);
        assert_eq!(plan, Plan::SortedWalk(0));
        assert_eq!(ids.len(), 14, "{ids:?}");
        walk.skip = Some(1);
        walk.take = Some(2);
        let (page, _) = run(&mut db, &walk, &[Cell::Nil, Cell::Int(3), Cell::Int(4)]);
        assert_eq!(page, ids[3..7].to_vec());
        walk.skip = None;
        walk.take = None;
        walk.preds.push(p(n, CmpOp::Gt, 1));
        walk.preds.push(p(n, CmpOp::Ne, 2));
        let (ids, _) = run(&mut db, &walk, &[Cell::Nil, Cell::Int(2), Cell::Int(4)]);
        assert_eq!(ids.len(), 6, "{ids:?}");
    }
    assert_eq!(
        db.aggregate(&q(0, vec![]), Agg::Min(n), &[]).unwrap(),
        Cell::Int(0)
    );
    assert_eq!(
        db.aggregate(&q(0, vec![]), Agg::Max(n), &[]).unwrap(),
        Cell::Int(6)
    );
}
