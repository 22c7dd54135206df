//! Crash atomicity of a schema migration (LANGUAGE.md §8, docs/schema.md): on the
//! simulated disk, a migration is cut by a crash before each of its operations in
//! turn, and the disk a power cut would leave then (unsynced writes kept, dropped or
//! garbled) must hold either the old schema with the old rows or the new schema with
//! the migrated rows, never a mix; `verify` must find nothing wrong, and opening it
//! with the program that asked for the migration must end with the migrated data.

mod durable_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{
    self, ColumnEvolution, Evolution, Fate, MigrateRequest, Options, SimStorage, TableEvolution,
};
use wo_db::{Cell, ColType, Column, Db, IndexDef, IndexKind, RowId, Savepoint, Schema, TableId};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn options(sim: &SimStorage, evolution: Evolution) -> Options {
    Options {
        storage: Arc::new(sim.clone()),
        preallocate: 0,
        auto_checkpoint: false,
        evolution,
        ..Options::default()
    }
}

/// Rows by table name: `(id, cells)` in id order, cells as their Debug text.
type Rows = BTreeMap<String, Vec<(RowId, String)>>;

fn rows(db: &Db) -> Rows {
    let s = db.schema();
    (0..s.tables.len() as TableId)
        .filter(|&t| s.tables[t as usize].durable)
        .map(|t| {
            (
                s.tables[t as usize].name.clone(),
                db.rows(t)
                    .map(|(id, cells)| (id, format!("{cells:?}")))
                    .collect(),
            )
        })
        .collect()
}

fn col(name: &str, ty: ColType, nullable: bool) -> Column {
    Column {
        name: name.into(),
        ty,
        nullable,
    }
}

/// The program after the change: `emps` renamed `staff` (`@table(was: "emps")`),
/// `salary` renamed `pay` (`@was`), `score` and `manager` removed (needs `--apply`),
/// `active` now `?Bool`, a new `level Int = 1`, a new `?Text` `note`, the hash index
/// on `dept` dropped and a unique one on `name` added; `depts` gains `?Int` `floor`.
fn new_schema() -> (Schema, Evolution) {
    let mut s = schema();
    s.tables[0].columns.push(col("floor", ColType::Int, true));
    s.tables[1] = wo_db::TableDef {
        name: "staff".into(),
        columns: vec![
            col("name", ColType::Text, false),
            col("pay", ColType::Int, false),
            col("dept", ColType::Ref(DEPTS), false),
            col("active", ColType::Bool, true),
            col("level", ColType::Int, false),
            col("note", ColType::Text, true),
        ],
        indexes: vec![
            IndexDef {
                columns: vec![0],
                kind: IndexKind::Unique,
            },
            IndexDef {
                columns: vec![1],
                kind: IndexKind::Sorted,
            },
        ],
        durable: true,
    };
    let mut ev = Evolution::default();
    ev.tables.push(TableEvolution::default());
    ev.tables.push(TableEvolution {
        was: Some("emps".into()),
        columns: vec![
            ColumnEvolution::default(),
            ColumnEvolution {
                was: Some("salary".into()),
                default: None,
            },
            ColumnEvolution::default(),
            ColumnEvolution::default(),
            ColumnEvolution {
                was: None,
                default: Some(Cell::Int(1)),
            },
            ColumnEvolution::default(),
        ],
    });
    (s, ev)
}

/// A directory with a checkpoint and log records after it, on a fully durable disk.
fn populated() -> SimStorage {
    let sim = SimStorage::new();
    let (mut dd, mut db) =
        durable::open(&dir(), schema(), options(&sim, Evolution::default())).expect("create");
    for d in ["eng", "ops", "hr"] {
        db.insert(DEPTS, vec![Cell::Text(d.into())]).unwrap();
    }
    dd.commit(&mut db, Savepoint(0)).unwrap();
    for i in 0..40i64 {
        let sp = db.savepoint();
        db.insert(
            EMPS,
            vec![
                Cell::Text(format!("e{i}").into()),
                Cell::Int(100 + i),
                Cell::Ref(1 + i % 3),
                if i > 0 { Cell::Ref(i) } else { Cell::Nil },
                Cell::Float(i as f64 / 3.0),
                Cell::Bool(i % 2 == 0),
            ],
        )
        .unwrap();
        dd.commit(&mut db, sp).unwrap();
        if i == 20 {
            dd.checkpoint(&db).unwrap();
        }
    }
    let sp = db.savepoint();
    db.delete(EMPS, 40).unwrap();
    db.update(EMPS, 7, 1, Cell::Int(7)).unwrap();
    dd.commit(&mut db, sp).unwrap();
    drop(dd);
    sim.crash_image(Fate::DropAll)
}

/// What the directory holds, by its stored schema: `Some(true)` new, `Some(false)` old.
fn which(sim: &SimStorage, old: &Rows, new: &Rows, new_schema: &Schema) -> bool {
    let stored = durable::stored_schema(&dir(), &options(sim, Evolution::default()))
        .expect("the stored schema reads");
    let report = durable::verify_with(sim, &dir()).expect("verify reads");
    assert!(report.problem.is_none(), "{report}");
    let is_new = stored.tables.iter().any(|t| t.name == "staff");
    let want_schema = if is_new { new_schema.clone() } else { schema() };
    let durable_only = |s: &Schema| -> Vec<wo_db::TableDef> {
        s.tables.iter().filter(|t| t.durable).cloned().collect()
    };
    assert_eq!(
        durable_only(&stored),
        durable_only(&want_schema),
        "the stored schema is exactly the old or the new one"
    );
    let (_dd, db) = durable::open(&dir(), want_schema, options(sim, Evolution::default()))
        .expect("the directory opens with the program of its schema");
    assert_eq!(&rows(&db), if is_new { new } else { old });
    is_new
}

#[test]
fn a_crash_at_any_operation_of_a_migration_leaves_the_old_or_the_new_schema() {
    let base = populated();
    let (new_s, ev) = new_schema();
    let old_rows = {
        let (_dd, db) =
            durable::open(&dir(), schema(), options(&base, Evolution::default())).expect("open");
        rows(&db)
    };
    let apply = MigrateRequest {
        apply: true,
        drop: Vec::new(),
    };
    // The migration without a crash.
    let done = base.crash_image(Fate::KeepAll);
    let plan = durable::migrate(&dir(), new_s.clone(), options(&done, ev.clone()), &apply)
        .expect("the migration applies");
    assert!(plan.steps.len() >= 8, "{plan}");
    let new_rows = {
        let (_dd, db) = durable::open(&dir(), new_s.clone(), options(&done, ev.clone()))
            .expect("open after the migration");
        rows(&db)
    };
    assert_eq!(new_rows["staff"].len(), 39);
    assert!(
        new_rows["staff"][6].1.contains("Int(7)") && new_rows["staff"][6].1.contains("Int(1)"),
        "{:?}",
        new_rows["staff"][6]
    );
    assert!(new_rows["depts"][0].1.contains("Nil"));

    let (mut olds, mut news) = (0, 0);
    let mut k = 0;
    loop {
        let img = base.crash_image(Fate::KeepAll);
        let n0 = img.op_count();
        img.crash_before(n0 + k);
        let res = durable::migrate(&dir(), new_s.clone(), options(&img, ev.clone()), &apply);
        if !img.crashed() {
            res.expect("no crash: the migration applies");
            break;
        }
        for fate in [Fate::KeepAll, Fate::DropAll, Fate::Random(k as u64)] {
            let c = img.crash_image(fate);
            if which(&c, &old_rows, &new_rows, &new_s) {
                news += 1;
            } else {
                olds += 1;
                // The migration can be run again after the crash.
                let again = c.crash_image(Fate::KeepAll);
                durable::migrate(&dir(), new_s.clone(), options(&again, ev.clone()), &apply)
                    .expect("the migration applies after a crash");
                assert!(which(&again, &old_rows, &new_rows, &new_s));
            }
            // The program that wants the new schema opens any of them (the additive
            // half applies on open; the rest needs `--apply`, and was refused with
            // nothing written).
            let c2 = c.crash_image(Fate::KeepAll);
            match durable::open(&dir(), new_s.clone(), options(&c2, ev.clone())) {
                Ok((_dd, db)) => assert_eq!(rows(&db), new_rows),
                Err(e) => {
                    assert_eq!(e.exit_status(), 65, "{e}");
                    assert!(e.to_string().contains("--apply"), "{e}");
                    assert!(!which(&c2, &old_rows, &new_rows, &new_s));
                }
            }
        }
        k += 1;
    }
    eprintln!("{k} crash points: {olds} images old, {news} new");
    assert!(k >= 8, "a migration makes several operations ({k})");
    assert!(olds > 0 && news > 0, "old {olds}, new {news}");
}

#[test]
fn additive_changes_apply_on_open_and_refusals_write_nothing() {
    let base = populated();
    let (new_s, ev) = new_schema();
    // Refused on open: `score` and `manager` would be dropped.
    let before = base.op_count();
    let err = durable::open(&dir(), new_s.clone(), options(&base, ev.clone()))
        .expect_err("a removed column is refused on open");
    assert_eq!(err.exit_status(), 65);
    let msg = err.to_string();
    assert!(msg.contains("`staff`: column `score`"), "{msg}");
    assert!(msg.contains("wo db migrate /data PROGRAM --apply"), "{msg}");
    let wrote = base.ops()[before..]
        .iter()
        .any(|o| !o.path.ends_with("lock"));
    assert!(!wrote, "{:?}", &base.ops()[before..]);

    // Only additive changes: applied on open, in one migration.
    let mut additive = schema();
    additive.tables[0]
        .columns
        .push(col("floor", ColType::Int, true));
    additive.tables[1]
        .columns
        .push(col("level", ColType::Int, false));
    let mut ev = Evolution::default();
    ev.tables.push(TableEvolution::default());
    ev.tables.push(TableEvolution {
        was: None,
        columns: (0..7)
            .map(|c| ColumnEvolution {
                was: None,
                default: (c == 6).then_some(Cell::Int(3)),
            })
            .collect(),
    });
    let sim = base.crash_image(Fate::KeepAll);
    let (dd, db) = durable::open(&dir(), additive.clone(), options(&sim, ev.clone())).unwrap();
    let notice = dd.migration_notice().expect("a notice").to_string();
    assert!(
        notice.contains("new column `level` Int, existing rows get 3"),
        "{notice}"
    );
    assert_eq!(db.get(EMPS, 5, 6), Ok(Cell::Int(3)));
    assert_eq!(db.get(DEPTS, 1, 1), Ok(Cell::Nil));
    drop(dd);
    let c = sim.crash_image(Fate::DropAll);
    let (dd, db2) = durable::open(&dir(), additive, options(&c, ev)).unwrap();
    assert!(dd.migration_notice().is_none(), "applied once");
    assert_eq!(rows(&db2), rows(&db));
}

/// A log reader (`wo db export`, `wo db mirror`) sees a migration as one change that
/// says everything the schema before it does not: the new schema, the renames, the
/// drops and what existing rows got; and a snapshot after it has the new tables.
#[test]
fn a_follower_is_handed_the_migration_item() {
    use wo_db::durable::read::{self, Change, Event, Poll};
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("migration_follower");
    let _ = std::fs::remove_dir_all(&dir);
    let real = |evolution: Evolution| Options {
        preallocate: 0,
        auto_checkpoint: false,
        evolution,
        ..Options::default()
    };
    {
        let (mut dd, mut db) = durable::open(&dir, schema(), real(Evolution::default())).unwrap();
        db.insert(DEPTS, vec![Cell::Text("eng".into())]).unwrap();
        dd.commit(&mut db, Savepoint(0)).unwrap();
        let sp = db.savepoint();
        db.insert(
            EMPS,
            vec![
                Cell::Text("ada".into()),
                Cell::Int(10),
                Cell::Ref(1),
                Cell::Nil,
                Cell::Float(0.5),
                Cell::Bool(true),
            ],
        )
        .unwrap();
        dd.commit(&mut db, sp).unwrap();
    }
    let mut follower = read::snapshot(&dir, |_| Ok::<(), durable::OpenError>(())).unwrap();
    let (new_s, ev) = new_schema();
    let apply = MigrateRequest {
        apply: true,
        drop: Vec::new(),
    };
    durable::migrate(&dir, new_s.clone(), real(ev), &apply).unwrap();
    let mut seen = Vec::new();
    let res = follower
        .poll(100, |rec, tables| {
            seen.push((rec.clone(), tables.to_vec()));
            Ok::<bool, durable::OpenError>(true)
        })
        .unwrap();
    assert!(matches!(res, Poll::Progress { .. }), "{res:?}");
    let migrations: Vec<_> = seen
        .iter()
        .flat_map(|(r, _)| &r.changes)
        .filter_map(|c| match c {
            Change::Migrate(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(migrations.len(), 1, "{seen:?}");
    let m = migrations[0];
    assert_eq!(m.renamed_tables, vec![("emps".into(), "staff".into())]);
    assert_eq!(
        m.renamed_columns,
        vec![("staff".into(), "salary".into(), "pay".into())]
    );
    assert!(m.dropped_tables.is_empty());
    assert_eq!(
        m.dropped_columns,
        vec![
            ("staff".into(), "manager".into()),
            ("staff".into(), "score".into())
        ]
    );
    assert_eq!(
        m.filled,
        vec![
            ("depts".into(), "floor".into(), Cell::Nil),
            ("staff".into(), "level".into(), Cell::Int(1)),
            ("staff".into(), "note".into(), Cell::Nil),
        ]
    );
    let names: Vec<&str> = m.schema.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["depts", "staff"]);
    assert_eq!(m.previous[m.tables[1]].name, "emps");
    assert_eq!(m.previous[m.tables[1]].columns.len(), 6);
    assert_eq!(follower.tables()[m.tables[1]].name, "staff");
    assert!(m.schema[1]
        .indexes
        .iter()
        .any(|ix| ix.unique && ix.columns == [0]));
    // A snapshot taken now reads the new schema and the migrated rows.
    let mut rows = Vec::new();
    read::snapshot(&dir, |ev| {
        match ev {
            Event::Table(t) => rows.push(format!("table {}", t.name)),
            Event::Row(id, cells) => rows.push(format!("{id} {cells:?}")),
            Event::EndTable => {}
        }
        Ok::<(), durable::OpenError>(())
    })
    .unwrap();
    assert_eq!(
        rows,
        [
            "table depts".to_string(),
            "1 [Text(\"eng\"), Nil]".into(),
            "table staff".into(),
            "1 [Text(\"ada\"), Int(10), Ref(1), Bool(true), Int(1), Nil]".into(),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
