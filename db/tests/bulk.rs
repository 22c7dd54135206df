//! The engine's bulk and low-overhead paths, each checked against the row-by-row API:
//! `Db::load` (checkpoint loading: columns filled directly, holes for deleted ids,
//! indexes built in bulk, references checked and counted once), recovery with
//! deferred index maintenance, `Db::set_undo(false)` and `Db::insert_cells`, and the
//! Text column's two representations (short texts in the slot, long ones shared).

mod durable_support;

use std::path::PathBuf;
use std::rc::Rc;

use wo_db::durable::SimStorage;
use wo_db::*;

fn col(name: &str, ty: ColType, nullable: bool) -> Column {
    Column {
        name: name.into(),
        ty,
        nullable,
    }
}

fn text(s: &str) -> Cell {
    Cell::Text(Rc::from(s))
}

const DEPT: TableId = 0;
const EMP: TableId = 1;

/// `dept(name Text @unique, boss ?ref emp)`, `emp(name Text, salary Int, dept ref dept,
/// mentor ?ref emp, score ?Float)` with a hash index on emp.dept, a sorted one on
/// emp.salary, emp.name, emp.score and emp.mentor: references forward, backward, to itself and around
/// a cycle.
fn schema() -> Schema {
    Schema {
        tables: vec![
            TableDef {
                name: "dept".into(),
                columns: vec![
                    col("name", ColType::Text, false),
                    col("boss", ColType::Ref(EMP), true),
                ],
                indexes: vec![IndexDef {
                    columns: vec![0],
                    kind: IndexKind::Unique,
                }],
                durable: true,
            },
            TableDef {
                name: "emp".into(),
                columns: vec![
                    col("name", ColType::Text, false),
                    col("salary", ColType::Int, false),
                    col("dept", ColType::Ref(DEPT), false),
                    col("mentor", ColType::Ref(EMP), true),
                    col("score", ColType::Float, true),
                ],
                indexes: vec![
                    IndexDef {
                        columns: vec![2],
                        kind: IndexKind::Hash,
                    },
                    IndexDef {
                        columns: vec![1],
                        kind: IndexKind::Sorted,
                    },
                    IndexDef {
                        columns: vec![0],
                        kind: IndexKind::Sorted,
                    },
                    IndexDef {
                        columns: vec![4],
                        kind: IndexKind::Sorted,
                    },
                    IndexDef {
                        columns: vec![3],
                        kind: IndexKind::Sorted,
                    },
                ],
                durable: true,
            },
        ],
    }
}

/// Names around the 15-byte boundary of the Text slot, some sharing prefixes.
fn name(i: u64) -> String {
    match i % 5 {
        0 => format!("e{i}"),
        1 => format!("{:a<15}", i % 13),
        2 => format!("{:a<16}", i % 11),
        3 => format!("a much longer employee name {i}"),
        _ => format!("é{}", i % 17),
    }
}

/// A database built with the row API: inserts, updates (including texts crossing the
/// 15-byte boundary both ways) and deletes, leaving holes and references of every
/// kind.
fn built() -> Db {
    let mut db = Db::new(schema()).unwrap();
    let mut rng = durable_support::Rng(7);
    for d in 0..20 {
        db.insert(DEPT, vec![text(&format!("dept {d}")), Cell::Nil])
            .unwrap();
    }
    for i in 0..3000u64 {
        let n_emp = db.next_id(EMP);
        let mentor = if n_emp > 1 && rng.below(2) == 0 {
            let m = 1 + rng.below(n_emp as u64 - 1) as RowId;
            if db.is_live(EMP, m) {
                Cell::Ref(m)
            } else {
                Cell::Nil
            }
        } else {
            Cell::Nil
        };
        let score = match rng.below(4) {
            0 => Cell::Nil,
            1 => Cell::Float(-0.0),
            2 if rng.below(8) == 0 => Cell::Float(
                [0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY][rng.below(4) as usize],
            ),
            _ => Cell::Float(rng.below(1000) as f64 / 8.0 - 40.0),
        };
        db.insert(
            EMP,
            vec![
                text(&name(rng.below(400))),
                Cell::Int(rng.below(500) as i64 - 250),
                Cell::Ref(1 + rng.below(20) as RowId),
                mentor,
                score,
            ],
        )
        .unwrap();
        if i % 7 == 3 {
            let id = 1 + rng.below(db.next_id(EMP) as u64 - 1) as RowId;
            let _ = db.update(EMP, id, 0, text(&name(rng.below(400))));
        }
        if i % 5 == 0 {
            let id = 1 + rng.below(db.next_id(EMP) as u64 - 1) as RowId;
            let _ = db.delete(EMP, id);
        }
    }
    // A self-reference, a department boss (a reference back into emp, so dept and emp
    // refer to each other), and a deleted department.
    let live: Vec<RowId> = db.rows(EMP).map(|(id, _)| id).take(5).collect();
    db.update(EMP, live[0], 3, Cell::Ref(live[0])).unwrap();
    db.update(DEPT, 2, 1, Cell::Ref(live[1])).unwrap();
    db.update(DEPT, 3, 1, Cell::Ref(live[2])).unwrap();
    db.insert(DEPT, vec![text("gone"), Cell::Nil]).unwrap();
    db.delete(DEPT, 21).unwrap();
    db.truncate_undo(Savepoint(0));
    db
}

/// Live rows with their cells, as `Db::rows` gives and `Db::load` takes them.
type Rows = Vec<(RowId, Vec<Cell>)>;
/// What `Db::load` takes: per table, its id counter and rows.
type Tables = Vec<(TableId, RowId, Rows)>;

fn loaded_from(db: &Db) -> Db {
    let mut out = Db::new(schema()).unwrap();
    let tables: Tables = [DEPT, EMP]
        .iter()
        .map(|&t| (t, db.next_id(t), db.rows(t).collect()))
        .collect();
    out.load(tables).unwrap();
    out
}

fn query(t: TableId, preds: Vec<Pred>, order: Vec<(Col, bool)>, take: Option<usize>) -> Query {
    Query {
        table: t,
        preds,
        order,
        skip: None,
        take,
    }
}

fn pred(c: usize, op: CmpOp, arg: usize) -> Pred {
    Pred {
        col: Col::At(c),
        op,
        arg,
    }
}

/// Queries that use each index (and a scan), with their arguments.
fn queries() -> Vec<(Query, Vec<Cell>)> {
    let mut out = Vec::new();
    for d in 1..=21 {
        out.push((
            query(EMP, vec![pred(2, CmpOp::Eq, 0)], vec![], None),
            vec![Cell::Ref(d)],
        ));
    }
    for (lo, hi) in [(-250, -200), (-3, 3), (100, 400)] {
        out.push((
            query(
                EMP,
                vec![pred(1, CmpOp::Ge, 0), pred(1, CmpOp::Lt, 1)],
                vec![],
                None,
            ),
            vec![Cell::Int(lo), Cell::Int(hi)],
        ));
    }
    out.push((
        query(EMP, vec![], vec![(Col::At(1), true)], Some(0)),
        vec![Cell::Int(50)],
    ));
    out.push((query(EMP, vec![], vec![(Col::At(0), false)], None), vec![]));
    out.push((query(EMP, vec![], vec![(Col::At(0), true)], None), vec![]));
    for n in ["aaaaaaaaaaaaaa0", "aaaaaaaaaaaaaaa1", "e10", "é3"] {
        out.push((
            query(EMP, vec![pred(0, CmpOp::Gt, 0)], vec![], None),
            vec![text(n)],
        ));
        out.push((
            query(EMP, vec![pred(0, CmpOp::Eq, 0)], vec![], None),
            vec![text(n)],
        ));
    }
    out.push((
        query(
            EMP,
            vec![pred(4, CmpOp::Eq, 0)],
            vec![(Col::At(4), false)],
            None,
        ),
        vec![Cell::Float(0.0)],
    ));
    out.push((
        query(DEPT, vec![pred(0, CmpOp::Eq, 0)], vec![], None),
        vec![text("dept 7")],
    ));
    // The Float and Ref sorted indexes: nil first, -0.0 before 0.0, NaN last.
    for desc in [false, true] {
        out.push((query(EMP, vec![], vec![(Col::At(4), desc)], None), vec![]));
        out.push((query(EMP, vec![], vec![(Col::At(3), desc)], None), vec![]));
    }
    out.push((
        query(EMP, vec![pred(4, CmpOp::Le, 0)], vec![], None),
        vec![Cell::Float(-10.5)],
    ));
    out.push((
        query(EMP, vec![pred(3, CmpOp::Gt, 0)], vec![], None),
        vec![Cell::Ref(1000)],
    ));
    out
}

/// Same rows, counters, query results (through the indexes and by scanning) and
/// restrict checks.
fn assert_same(a: &mut Db, b: &mut Db) {
    for t in [DEPT, EMP] {
        assert_eq!(a.next_id(t), b.next_id(t), "next id of {t}");
        assert_eq!(a.len(t), b.len(t), "live rows of {t}");
        // Compared as text: exact for Floats (NaN, -0.0), unlike `==`.
        let rows = |db: &Db| format!("{:?}", db.rows(t).collect::<Vec<_>>());
        assert_eq!(rows(a), rows(b), "rows of {t}");
    }
    for (q, args) in queries() {
        let (mut ra, mut rb, mut rs) = (Vec::new(), Vec::new(), Vec::new());
        let pa = a.query(&q, &args, &mut ra).unwrap();
        let pb = b.query(&q, &args, &mut rb).unwrap();
        b.query_scan(&q, &args, &mut rs).unwrap();
        assert_eq!(pa, pb, "{q:?}");
        assert_eq!(ra, rb, "{q:?} {args:?}");
        assert_eq!(rb, rs, "{q:?} {args:?} against a scan");
    }
    // Restrict deletes see the same inbound references (a row that refers only to
    // itself can be deleted); the deletes are rolled back.
    for t in [DEPT, EMP] {
        let ids: Vec<RowId> = a.rows(t).map(|(id, _)| id).collect();
        for id in ids {
            let sa = a.savepoint();
            let sb = b.savepoint();
            let ra = a.delete(t, id).map_err(|e| e.kind);
            let rb = b.delete(t, id).map_err(|e| e.kind);
            assert_eq!(ra, rb, "delete {t}/{id}");
            a.rollback_to(sa);
            b.rollback_to(sb);
            a.truncate_undo(sa);
            b.truncate_undo(sb);
        }
    }
}

#[test]
fn load_gives_the_database_the_row_api_built() {
    let mut a = built();
    let mut b = loaded_from(&a);
    assert!(
        b.changes_since(Savepoint(0)).is_empty(),
        "load logs nothing"
    );
    assert_same(&mut a, &mut b);
    // The loaded database goes on like the original: next ids, unique checks,
    // references.
    for db in [&mut a, &mut b] {
        assert_eq!(
            db.insert(DEPT, vec![text("dept 4"), Cell::Nil])
                .unwrap_err()
                .kind,
            ErrorKind::Unique
        );
        assert_eq!(db.insert(DEPT, vec![text("new"), Cell::Nil]), Ok(22));
        assert_eq!(
            db.insert(
                EMP,
                vec![text("x"), Cell::Int(1), Cell::Ref(21), Cell::Nil, Cell::Nil]
            )
            .unwrap_err()
            .kind,
            ErrorKind::Fk
        );
    }
    assert_same(&mut a, &mut b);
}

#[test]
fn load_accepts_tables_in_any_order() {
    let a = built();
    let mut b = Db::new(schema()).unwrap();
    // emp first: its references into dept are checked once both are filled.
    b.load([EMP, DEPT].map(|t| (t, a.next_id(t), a.rows(t).collect::<Vec<_>>())))
        .unwrap();
    let mut a = a;
    assert_same(&mut a, &mut b);
}

#[test]
fn load_keeps_holes_and_the_id_counter() {
    let mut db = Db::new(schema()).unwrap();
    db.load_table(DEPT, 10, [(3, vec![text("c"), Cell::Nil])])
        .unwrap();
    assert_eq!(db.next_id(DEPT), 10);
    assert_eq!(db.len(DEPT), 1);
    assert!(!db.is_live(DEPT, 1) && db.is_live(DEPT, 3) && !db.is_live(DEPT, 9));
    assert_eq!(
        db.get(DEPT, 2, 0).unwrap_err().message,
        "row 2 of dept does not exist (it was deleted)"
    );
    assert_eq!(db.insert(DEPT, vec![text("d"), Cell::Nil]), Ok(10));
}

#[test]
fn load_refuses_what_the_row_api_refuses_and_changes_nothing() {
    let row = |n: &str| vec![text(n), Cell::Nil];
    let emp = |dept: RowId| {
        vec![
            text("e"),
            Cell::Int(1),
            Cell::Ref(dept),
            Cell::Nil,
            Cell::Nil,
        ]
    };
    let cases: Vec<(Tables, ErrorKind, &str)> = vec![
        (
            vec![(DEPT, 5, vec![(1, row("a")), (2, row("a"))])],
            ErrorKind::Unique,
            "duplicate value \"a\" for unique column dept.name (rows 1 and 2)",
        ),
        (
            vec![(DEPT, 5, vec![(2, row("a")), (2, row("b"))])],
            ErrorKind::Db,
            "load into dept: row 2 is out of order or not below next id 5",
        ),
        (
            vec![(DEPT, 2, vec![(2, row("a"))])],
            ErrorKind::Db,
            "load into dept: row 2 is out of order or not below next id 2",
        ),
        (
            vec![(DEPT, 2, vec![(1, vec![Cell::Int(1), Cell::Nil])])],
            ErrorKind::Db,
            "load into dept: row 1: cannot store Int in dept.name (it is Text)",
        ),
        (
            vec![(DEPT, 2, vec![(1, vec![text("a")])])],
            ErrorKind::Db,
            "load into dept: row 1 has 1 cells, expected 2",
        ),
        (
            vec![(DEPT, 3, vec![(1, row("a"))]), (EMP, 2, vec![(1, emp(2))])],
            ErrorKind::Fk,
            "emp.dept refers to dept row 2, which does not exist",
        ),
        (
            vec![(DEPT, 3, vec![(1, vec![text("a"), Cell::Ref(1)])])],
            ErrorKind::Fk,
            "dept.boss refers to emp row 1, which does not exist",
        ),
        (
            vec![(DEPT, 0, vec![])],
            ErrorKind::Db,
            "load into dept: next id 0 is not positive",
        ),
    ];
    for (tables, kind, message) in cases {
        let mut db = Db::new(schema()).unwrap();
        let e = db.load(tables).unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (kind, message));
        for t in [DEPT, EMP] {
            assert_eq!((db.next_id(t), db.len(t)), (1, 0), "{message}: left empty");
        }
        assert_eq!(db.insert(DEPT, vec![text("a"), Cell::Nil]), Ok(1));
    }
    // A table that is not empty is refused, and kept.
    let mut db = Db::new(schema()).unwrap();
    db.insert(DEPT, vec![text("a"), Cell::Nil]).unwrap();
    let e = db
        .load_table(DEPT, 3, [(2, vec![text("b"), Cell::Nil])])
        .unwrap_err();
    assert_eq!(
        e.message,
        "cannot load tables while the undo log holds changes"
    );
    db.truncate_undo(Savepoint(0));
    let e = db
        .load_table(DEPT, 3, [(2, vec![text("b"), Cell::Nil])])
        .unwrap_err();
    assert_eq!(e.message, "load into dept: the table is not empty");
    assert_eq!(db.len(DEPT), 1);
}

#[test]
fn recovery_with_deferred_indexes_answers_like_the_original() {
    use durable_support::{open_sim, step, Rng};
    let sim = SimStorage::new();
    let dir = PathBuf::from("/data");
    let (mut dd, mut db) = open_sim(&sim, &dir).unwrap();
    let mut rng = Rng(11);
    let mut cand = durable_support::state(&db);
    for i in 0..1500 {
        step(&mut dd, &mut db, &mut rng, &mut cand);
        if i == 700 {
            dd.checkpoint(&db).unwrap();
        }
    }
    drop(dd);
    let (_dd, mut back) = open_sim(&sim, &dir).unwrap();
    assert!(back.undo_enabled(), "recovery turns the undo log back on");
    assert!(back.changes_since(Savepoint(0)).is_empty());
    assert_eq!(durable_support::state(&back), durable_support::state(&db));
    let (depts, emps) = (durable_support::DEPTS, durable_support::EMPS);
    let mut qs: Vec<(Query, Vec<Cell>)> = (1..db.next_id(depts))
        .map(|d| {
            (
                query(emps, vec![pred(2, CmpOp::Eq, 0)], vec![], None),
                vec![Cell::Ref(d)],
            )
        })
        .collect();
    qs.push((
        query(
            emps,
            vec![pred(1, CmpOp::Gt, 0)],
            vec![(Col::At(1), true)],
            None,
        ),
        vec![Cell::Int(50_000)],
    ));
    qs.push((
        query(depts, vec![pred(0, CmpOp::Eq, 0)], vec![], None),
        vec![text("d7")],
    ));
    let mut found = 0;
    for (q, args) in qs {
        let (mut ra, mut rb, mut rs) = (Vec::new(), Vec::new(), Vec::new());
        assert_eq!(
            db.query(&q, &args, &mut ra).unwrap(),
            back.query(&q, &args, &mut rb).unwrap()
        );
        back.query_scan(&q, &args, &mut rs).unwrap();
        assert_eq!(ra, rb, "{q:?} {args:?}");
        assert_eq!(rb, rs, "{q:?} {args:?} against a scan");
        found += rb.len();
    }
    assert!(found > 100, "the queries find rows ({found})");
}

#[test]
fn without_undo_writes_log_nothing_and_failures_still_change_nothing() {
    let mut db = Db::new(schema()).unwrap();
    db.set_undo(false);
    assert!(!db.undo_enabled());
    db.insert(DEPT, vec![text("a"), Cell::Nil]).unwrap();
    let e = vec![text("e"), Cell::Int(1), Cell::Ref(1), Cell::Nil, Cell::Nil];
    assert_eq!(db.insert_cells(EMP, &e), Ok(1));
    db.update(EMP, 1, 1, Cell::Int(5)).unwrap();
    assert!(db.changes_since(Savepoint(0)).is_empty());
    // Refused operations leave everything as it was.
    assert_eq!(
        db.insert(DEPT, vec![text("a"), Cell::Nil])
            .unwrap_err()
            .kind,
        ErrorKind::Unique
    );
    assert_eq!(db.delete(DEPT, 1).unwrap_err().kind, ErrorKind::Fk);
    assert_eq!(db.next_id(DEPT), 2);
    db.delete(EMP, 1).unwrap();
    db.delete(DEPT, 1).unwrap();
    assert_eq!((db.len(DEPT), db.len(EMP)), (0, 0));
    assert!(db.changes_since(Savepoint(0)).is_empty());
    // Back on: entries again, and a rollback undoes only those.
    db.set_undo(true);
    let sp = db.savepoint();
    db.insert(DEPT, vec![text("b"), Cell::Nil]).unwrap();
    assert_eq!(db.changes_since(sp).len(), 1);
    db.rollback_to(sp);
    assert_eq!((db.next_id(DEPT), db.len(DEPT)), (2, 0));
}

#[test]
fn insert_cells_is_insert() {
    let mut a = Db::new(schema()).unwrap();
    let mut b = Db::new(schema()).unwrap();
    for db in [&mut a, &mut b] {
        db.insert(DEPT, vec![text("a"), Cell::Nil]).unwrap();
    }
    let cells = vec![
        text("a long name of more than fifteen bytes"),
        Cell::Int(3),
        Cell::Ref(1),
        Cell::Nil,
        Cell::Float(1.5),
    ];
    let sa = a.savepoint();
    let sb = b.savepoint();
    assert_eq!(a.insert(EMP, cells.clone()), b.insert_cells(EMP, &cells));
    assert_eq!(a.changes_since(sa), b.changes_since(sb));
    assert!(a.rows(EMP).eq(b.rows(EMP)));
    let bad = [text("x")];
    assert_eq!(
        b.insert_cells(EMP, &bad).unwrap_err().message,
        "insert into emp: expected 5 cells, got 1"
    );
}

#[test]
fn texts_round_trip_at_every_length_around_the_slot_size() {
    let mut db = Db::new(Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns: vec![col("s", ColType::Text, true)],
            indexes: vec![IndexDef {
                columns: vec![0],
                kind: IndexKind::Unique,
            }],
            durable: true,
        }],
    })
    .unwrap();
    let texts: Vec<String> = (0..40)
        .map(|n| "x".repeat(n))
        .chain(["ééééééé", "éééééééé", "ééééééééé", "\0", "a\0b"].map(String::from))
        .collect();
    for s in &texts {
        db.insert(0, vec![text(s)]).unwrap();
    }
    let back: Vec<String> = (1..=texts.len() as RowId)
        .map(|id| match db.get(0, id, 0).unwrap() {
            Cell::Text(t) => t.to_string(),
            c => panic!("{c:?}"),
        })
        .collect();
    assert_eq!(back, texts);
    // Short <-> long updates, a nil, deletes and rollbacks keep every text and the
    // unique index exact.
    let sp = db.savepoint();
    for id in 1..=40 {
        let s = format!("{}!", "y".repeat((41 - id) as usize));
        db.update(0, id, 0, text(&s)).unwrap();
    }
    db.update(0, 41, 0, Cell::Nil).unwrap();
    db.delete(0, 42).unwrap();
    assert_eq!(
        db.insert(0, vec![text("yyyyyyyyyyyyyyy!")])
            .unwrap_err()
            .kind,
        ErrorKind::Unique
    );
    db.rollback_to(sp);
    let again: Vec<(RowId, Vec<Cell>)> = db.rows(0).collect();
    assert_eq!(again.len(), texts.len());
    for ((_, cells), s) in again.iter().zip(&texts) {
        assert_eq!(cells[0], text(s));
    }
    assert_eq!(
        db.insert(0, vec![text(&"x".repeat(16))]).unwrap_err().kind,
        ErrorKind::Unique
    );
    // Freed long texts are reused: churning them does not grow the table. (Without
    // the unique index, whose hash table's capacity moves with its tombstones.)
    let mut db = Db::new(Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns: vec![col("s", ColType::Text, true)],
            indexes: vec![],
            durable: true,
        }],
    })
    .unwrap();
    db.set_undo(false);
    for s in &texts {
        db.insert(0, vec![text(s)]).unwrap();
    }
    let churn = |db: &mut Db, round: u32| {
        for id in 17..=40 {
            let s = format!("{round} {}", "z".repeat(id as usize));
            db.update(0, id, 0, text(&s)).unwrap();
        }
    };
    churn(&mut db, 10);
    let before = db.memory_bytes();
    for round in 11..60 {
        churn(&mut db, round);
    }
    assert_eq!(db.memory_bytes(), before);
}

#[test]
fn a_row_of_a_short_text_and_two_numbers_costs_32_bytes() {
    const N: usize = 100_000;
    let mut db = Db::new(Schema {
        tables: vec![TableDef {
            name: "person".into(),
            columns: vec![
                col("name", ColType::Text, false),
                col("age", ColType::Int, false),
                col("score", ColType::Float, false),
            ],
            indexes: vec![],
            durable: true,
        }],
    })
    .unwrap();
    db.set_undo(false);
    let base = db.memory_bytes();
    for i in 0..N {
        db.insert(
            0,
            vec![
                text(&format!("person{i}")),
                Cell::Int(i as i64 % 100),
                Cell::Float(i as f64 * 0.5),
            ],
        )
        .unwrap();
    }
    let per_row = (db.memory_bytes() - base) / N;
    assert!(per_row <= 34, "(Text, Int, Float): {per_row} B/row");
}

#[test]
fn short_text_keys_are_canonical_at_every_length() {
    // Two texts equal as index keys exactly when their bytes are equal, at every
    // length up to the slot size (the padding of a short key is always zero).
    let mut db = Db::new(Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns: vec![col("s", ColType::Text, false)],
            indexes: vec![IndexDef {
                columns: vec![0],
                kind: IndexKind::Unique,
            }],
            durable: true,
        }],
    })
    .unwrap();
    let all: Vec<String> = (0..=16)
        .flat_map(|n| ["a", "b", "é"].map(|c| c.repeat(n)))
        .collect();
    for s in &all {
        if s.is_empty() && db.len(0) > 0 {
            continue;
        }
        db.insert(0, vec![text(s)]).unwrap();
    }
    for s in all.iter().filter(|s| !s.is_empty()) {
        assert_eq!(
            db.insert(0, vec![text(s)]).unwrap_err().kind,
            ErrorKind::Unique,
            "{s:?}"
        );
        let mut out = Vec::new();
        let q = Query {
            table: 0,
            preds: vec![pred(0, CmpOp::Eq, 0)],
            order: vec![],
            skip: None,
            take: None,
        };
        db.query(&q, &[text(s)], &mut out).unwrap();
        assert_eq!(out.len(), 1, "{s:?}");
    }
}
