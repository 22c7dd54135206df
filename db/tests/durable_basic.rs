//! The durable database's everyday contract: changes survive a reopen exactly (ids
//! and counters included), only durable tables are logged, a clean open issues no
//! write or sync, checkpoints restore holes and references, incompatible schemas are
//! refused with a message naming the table and column, the directory lock excludes a
//! second opener, and `verify` reads what `open` would.

mod durable_support;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{self, FaultKind, OpKind, OpenError, Options, SimStorage};
use wo_db::{Cell, ColType, Column, Db, Savepoint, TableDef};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn t(s: &str) -> Cell {
    Cell::Text(Rc::from(s))
}

fn emp(name: &str, dept: i64, manager: Option<i64>) -> Vec<Cell> {
    vec![
        t(name),
        Cell::Int(10),
        Cell::Ref(dept),
        manager.map_or(Cell::Nil, Cell::Ref),
        Cell::Float(-0.0),
        Cell::Bool(true),
    ]
}

fn commit(dd: &mut durable::DataDir, db: &mut Db) {
    dd.commit(db, Savepoint(0)).expect("commit");
}

#[test]
fn random_workload_survives_reopen_exactly() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let mut rng = Rng(7);
    let mut cand = state(&db);
    let mut acked = 0;
    for _ in 0..400 {
        if let Step::Committed(o) = step(&mut dd, &mut db, &mut rng, &mut cand) {
            acked += usize::from(o.lsn.is_some());
        }
    }
    assert!(
        acked > 150,
        "the workload commits most statements ({acked})"
    );
    let want = state(&db);
    drop(dd);
    let (_dd, db2) = open_sim(&sim.crash_image(durable::Fate::DropAll), &dir()).unwrap();
    assert_eq!(state(&db2), want);
}

#[test]
fn non_durable_changes_are_not_logged_and_need_no_io() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let before = sim.op_count();
    db.insert(SCRATCH, vec![Cell::Int(1)]).unwrap();
    let out = dd.commit(&mut db, Savepoint(0)).unwrap();
    assert_eq!(out.lsn, None);
    assert_eq!(sim.op_count(), before, "nothing durable changed: no I/O");
    assert_eq!(
        db.changes_since(Savepoint(0)).len(),
        0,
        "the undo entries are forgotten"
    );
    drop(dd);
    let (_dd, db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(
        db.len(SCRATCH),
        0,
        "durable: false tables are empty after a restart"
    );
}

#[test]
fn a_clean_open_writes_and_syncs_nothing() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    db.insert(DEPTS, vec![t("ops")]).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    let before = sim.op_count();
    let (dd, db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(db.len(DEPTS), 1);
    assert_eq!(
        sim.ops()[before..],
        [],
        "a directory that needs no repair is opened without any write or sync"
    );
    drop(dd);
    // With preallocation the log ends in zeros: still clean.
    let opts = |s: &SimStorage| Options {
        storage: Arc::new(s.clone()),
        preallocate: 1 << 20,
        ..Options::default()
    };
    let sim = SimStorage::new();
    let (mut dd, mut db) = durable::open(&dir(), schema(), opts(&sim)).unwrap();
    db.insert(DEPTS, vec![t("ops")]).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    assert!(
        sim.read_file(&dir().join("wal")).unwrap().len() >= 1 << 20,
        "the log was preallocated"
    );
    let before = sim.op_count();
    let (_dd, db) = durable::open(&dir(), schema(), opts(&sim)).unwrap();
    assert_eq!(db.len(DEPTS), 1);
    assert_eq!(sim.ops()[before..], []);
}

#[test]
fn a_torn_tail_is_cut_once_with_a_sync() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    db.insert(DEPTS, vec![t("ops")]).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    let wal = dir().join("wal");
    let mut bytes = sim.read_file(&wal).unwrap();
    let good = bytes.len();
    bytes.extend_from_slice(&[0x11, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 3]);
    sim.write_file(&wal, &bytes);
    let before = sim.op_count();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let kinds: Vec<OpKind> = sim.ops()[before..].iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        [OpKind::Truncate, OpKind::Sync],
        "the repair cuts the torn bytes and syncs"
    );
    assert_eq!(sim.read_file(&wal).unwrap().len(), good);
    db.insert(DEPTS, vec![t("dev")]).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    let before = sim.op_count();
    let (_dd, db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(db.len(DEPTS), 2);
    assert_eq!(sim.op_count(), before);
}

#[test]
fn ids_are_never_reused_across_restarts_and_checkpoints() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    for name in ["a", "b", "c"] {
        db.insert(DEPTS, vec![t(name)]).unwrap();
        commit(&mut dd, &mut db);
    }
    db.delete(DEPTS, 3).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(
        db.next_id(DEPTS),
        4,
        "the counter, not the max id, is restored"
    );
    dd.checkpoint(&db).unwrap();
    drop(dd);
    let (mut dd, mut db2) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(db2.next_id(DEPTS), 4, "also from a checkpoint");
    assert_eq!(db2.insert(DEPTS, vec![t("d")]).unwrap(), 4);
    commit(&mut dd, &mut db2);
    let _ = &mut db;
}

/// A state that cannot be rebuilt by inserting rows in id order: deleted rows
/// (holes, a table whose rows are all deleted), references forward and around a
/// cycle, unique values, `-0.0` and NaN.
fn tricky(dd: &mut durable::DataDir, db: &mut Db) {
    let mut c = |db: &mut Db| commit(dd, db);
    db.insert(DEPTS, vec![t("d1")]).unwrap(); // 1
    db.insert(DEPTS, vec![t("d2")]).unwrap(); // 2
    db.insert(DEPTS, vec![t("d3")]).unwrap(); // 3
    c(db);
    db.insert(EMPS, emp("e1", 1, None)).unwrap(); // 1
    db.insert(EMPS, emp("e2", 3, None)).unwrap(); // 2
    db.insert(EMPS, emp("e3", 1, Some(1))).unwrap(); // 3
    c(db);
    db.update(EMPS, 2, 3, Cell::Ref(3)).unwrap(); // forward reference
    db.update(EMPS, 3, 3, Cell::Ref(2)).unwrap(); // a cycle e2 <-> e3
    db.update(EMPS, 3, 4, Cell::Float(f64::NAN)).unwrap();
    c(db);
    db.delete(EMPS, 1).unwrap();
    db.delete(DEPTS, 2).unwrap();
    c(db);
    db.insert(DEPTS, vec![t("d4")]).unwrap(); // 4
    db.insert(EMPS, emp("e4", 4, None)).unwrap(); // 4
    db.insert(EMPS, emp("e5", 4, Some(4))).unwrap(); // 5
    c(db);
    db.delete(EMPS, 5).unwrap();
    db.delete(EMPS, 4).unwrap();
    db.delete(DEPTS, 4).unwrap();
    db.insert(DEPTS, vec![t("d2")]).unwrap(); // 5, reusing a freed unique value
    c(db);
}

#[test]
fn checkpoints_restore_holes_references_and_counters() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    tricky(&mut dd, &mut db);
    let want = state(&db);
    let ck = dd.checkpoint(&db).unwrap();
    assert_eq!(ck.rows, 5);
    drop(dd);
    let wal_len = sim.read_file(&dir().join("wal")).unwrap().len();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(state(&db), want);
    assert!(
        wal_len < 200,
        "the new log generation holds only its schema record ({wal_len} bytes)"
    );
    // The restored database behaves: unique index, reference counts, counters.
    assert!(
        db.insert(DEPTS, vec![t("d3")]).is_err(),
        "unique index rebuilt"
    );
    assert!(db.delete(EMPS, 3).is_err(), "e3 is still referenced by e2");
    assert!(db.delete(DEPTS, 3).is_err(), "d3 is still referenced by e2");
    assert_eq!(db.insert(EMPS, emp("e6", 5, Some(2))).unwrap(), 6);
    commit(&mut dd, &mut db);
    let want = state(&db);
    drop(dd);
    let (_dd, db) = open_sim(&sim, &dir()).unwrap();
    assert_eq!(state(&db), want);
}

#[test]
fn automatic_checkpoints_keep_the_log_short() {
    let sim = SimStorage::new();
    let opts = Options {
        checkpoint_min: 8 << 10,
        auto_checkpoint: true,
        ..sim_options(&sim)
    };
    let (mut dd, mut db) = durable::open(&dir(), schema(), opts).unwrap();
    let mut rng = Rng(3);
    let mut cand = state(&db);
    let mut checkpoints = 0;
    for _ in 0..1500 {
        if let Step::Committed(o) = step(&mut dd, &mut db, &mut rng, &mut cand) {
            assert_eq!(o.checkpoint_error, None);
            checkpoints += usize::from(o.checkpoint.is_some());
        }
        assert!(dd.log_bytes() < (8 << 10) + 4096);
    }
    assert!(checkpoints >= 3, "{checkpoints} checkpoints");
    let want = state(&db);
    drop(dd);
    let (_dd, db) = open_sim(&sim.crash_image(durable::Fate::DropAll), &dir()).unwrap();
    assert_eq!(state(&db), want);
}

fn schema_error(s: wo_db::Schema, sim: &SimStorage) -> String {
    match durable::open(&dir(), s, sim_options(sim)) {
        Err(OpenError::Schema { message }) => message,
        other => panic!("expected a schema error, got {other:?}"),
    }
}

#[test]
fn incompatible_schemas_are_refused_by_name() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    tricky(&mut dd, &mut db);
    drop(dd);

    let mut s = schema();
    s.tables[1].columns[1].ty = ColType::Float;
    let m = schema_error(s, &sim);
    assert!(
        m.contains("`salary`") && m.contains("`emps`") && m.contains("Int") && m.contains("Float"),
        "{m}"
    );

    let mut s = schema();
    s.tables[1].columns[3].nullable = false;
    let m = schema_error(s, &sim);
    assert!(m.contains("`manager`") && m.contains("?ref emps"), "{m}");

    let mut s = schema();
    s.tables[1].columns.push(Column {
        name: "level".into(),
        ty: ColType::Int,
        nullable: false,
    });
    let m = schema_error(s, &sim);
    assert!(m.contains("`level`") && m.contains("`emps`"), "{m}");

    let mut s = schema();
    s.tables[1].columns[0].name = "nom".into();
    let m = schema_error(s, &sim);
    assert!(m.contains("`nom`") && m.contains("`name`"), "{m}");

    let mut s = schema();
    s.tables[0].durable = false;
    s.tables[1].columns[2].ty = ColType::Int;
    let m = schema_error(s, &sim);
    assert!(m.contains("`depts`") && m.contains("durable: false"), "{m}");

    let mut s = schema();
    s.tables[0].durable = false;
    let m = schema_error(s, &sim);
    assert!(
        m.contains("`emps`") && m.contains("`depts`") && m.contains("not durable"),
        "{m}"
    );

    // A new durable table (declared first, so every table id moves) is fine, and its
    // rows survive the next restart.
    let mut s = schema();
    s.tables.insert(
        0,
        TableDef {
            name: "audit".into(),
            columns: vec![Column {
                name: "what".into(),
                ty: ColType::Text,
                nullable: false,
            }],
            indexes: vec![],
            durable: true,
        },
    );
    for td in &mut s.tables {
        for c in &mut td.columns {
            if let ColType::Ref(r) = &mut c.ty {
                *r += 1;
            }
        }
    }
    let opts = sim_options(&sim);
    let (mut dd, mut db) = durable::open(&dir(), s.clone(), opts).unwrap();
    assert_eq!(db.len(1), 3, "depts moved to table 1 and kept its rows");
    db.insert(0, vec![t("hello")]).unwrap();
    commit(&mut dd, &mut db);
    drop(dd);
    let (_dd, db) = durable::open(&dir(), s, sim_options(&sim)).unwrap();
    assert_eq!(db.len(0), 1);
    assert_eq!(db.get(0, 1, 0).unwrap(), t("hello"));
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wo-durable-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_second_open_of_a_directory_is_locked_out() {
    let d = temp_dir("lock");
    let (dd, _db) = durable::open(&d, schema(), Options::default()).unwrap();
    match durable::open(&d, schema(), Options::default()) {
        Err(e @ OpenError::Locked { .. }) => {
            assert_eq!(
                e,
                OpenError::Locked {
                    dir: d.clone(),
                    pid: Some(std::process::id())
                }
            );
            assert_eq!(e.exit_status(), 75);
            assert!(
                e.to_string()
                    .contains(&format!("process {}", std::process::id())),
                "{e}"
            );
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let rep = durable::verify(&d).unwrap();
    assert_eq!(rep.locked_by, Some(Some(std::process::id())));
    drop(dd);
    let (_dd, _db) =
        durable::open(&d, schema(), Options::default()).expect("the lock is released on drop");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn real_files_round_trip_with_preallocation_and_verify() {
    let d = temp_dir("real");
    let (mut dd, mut db) = durable::open(&d, schema(), Options::default()).unwrap();
    tricky(&mut dd, &mut db);
    let want = state(&db);
    drop(dd);
    let rep = durable::verify(&d).unwrap();
    assert_eq!(rep.problem, None, "{rep}");
    assert_eq!(rep.locked_by, None);
    let counts: Vec<(String, u64, i64)> = rep
        .tables
        .iter()
        .map(|t| (t.name.clone(), t.rows, t.next_id))
        .collect();
    assert_eq!(
        counts,
        [("depts".to_string(), 3, 6), ("emps".to_string(), 2, 6)]
    );
    let (mut dd, db) = durable::open(&d, schema(), Options::default()).unwrap();
    assert_eq!(state(&db), want);
    dd.checkpoint(&db).unwrap();
    drop(dd);
    let rep = durable::verify(&d).unwrap();
    assert_eq!(rep.problem, None, "{rep}");
    assert!(rep.checkpoint_bytes.is_some());
    let counts: Vec<(String, u64, i64)> = rep
        .tables
        .iter()
        .map(|t| (t.name.clone(), t.rows, t.next_id))
        .collect();
    assert_eq!(
        counts,
        [("depts".to_string(), 3, 6), ("emps".to_string(), 2, 6)]
    );
    let (_dd, db) = durable::open(&d, schema(), Options::default()).unwrap();
    assert_eq!(state(&db), want);
    let mut names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["checkpoint", "lock", "wal"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn failures_read_like_the_contract_says() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    sim.fail_nth(&[OpKind::Sync], 1, FaultKind::Errno(5));
    db.insert(DEPTS, vec![t("ops")]).unwrap();
    let f = dd.commit(&mut db, Savepoint(0)).unwrap_err();
    assert_eq!(
        f.to_string(),
        "fdatasync failed on /data/wal: Input/output error (os error 5)"
    );
    assert_eq!(
        (f.op, f.os_error, f.changes_undone),
        ("fdatasync", Some(5), 1)
    );
    assert_eq!(db.len(DEPTS), 0);
    assert_eq!(db.next_id(DEPTS), 1, "the failed insert consumed no id");
}

#[test]
fn verify_reports_the_first_problem_without_writing() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    for i in 0..5 {
        db.insert(DEPTS, vec![t(&format!("d{i}"))]).unwrap();
        commit(&mut dd, &mut db);
    }
    drop(dd);
    let wal = dir().join("wal");
    let mut bytes = sim.read_file(&wal).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0x10; // inside the fourth record
    sim.write_file(&wal, &bytes);
    let before = sim.op_count();
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(sim.op_count(), before);
    let p = rep.problem.clone().expect("damage found");
    assert_eq!(p.file, wal);
    assert!(p.what.contains("shows it had been synced"), "{rep}");
    match open_sim(&sim, &dir()) {
        Err(e @ OpenError::Damaged { .. }) => {
            assert_eq!(e.exit_status(), 65);
            assert!(
                e.to_string().starts_with("/data/wal: damaged at offset "),
                "{e}"
            );
        }
        other => panic!("expected Damaged, got {other:?}"),
    }
    assert!(Path::new("/data").is_absolute());
}
