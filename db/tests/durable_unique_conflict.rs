//! Adding `@unique` over stored data that repeats a value was reported as damage:
//! `DIR/checkpoint: damaged at offset 0: cannot load the checkpoint: duplicate value …`
//! or `DIR/wal: damaged at offset N: record K: insert does not apply: …`, although
//! nothing is damaged: the stored schema has no indexes, the rows were valid when
//! written, and the program added the index. The fix reports it as the schema
//! conflict it is (exit 65), naming the repeated value and the column, from the
//! checkpoint and from the log alike.

mod durable_support;

use durable_support::sim_options;
use std::path::PathBuf;
use std::rc::Rc;

use wo_db::durable::{self, OpenError, SimStorage};
use wo_db::{Cell, ColType, Column, IndexDef, IndexKind, Savepoint, Schema, TableDef};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn users(unique: bool) -> Schema {
    Schema {
        tables: vec![TableDef {
            name: "users".into(),
            columns: vec![Column {
                name: "email".into(),
                ty: ColType::Text,
                nullable: false,
            }],
            indexes: if unique {
                vec![IndexDef {
                    columns: vec![0],
                    kind: IndexKind::Unique,
                }]
            } else {
                vec![]
            },
            durable: true,
        }],
    }
}

fn conflict(checkpointed: bool) {
    let sim = SimStorage::new();
    let (mut dd, mut db) = durable::open(&dir(), users(false), sim_options(&sim)).unwrap();
    for e in ["a@x", "b@x", "a@x"] {
        db.insert(0, vec![Cell::Text(Rc::from(e))]).unwrap();
        dd.commit(&mut db, Savepoint(0)).unwrap();
    }
    if checkpointed {
        dd.checkpoint(&db).unwrap();
    }
    drop((dd, db));
    match durable::open(&dir(), users(true), sim_options(&sim)) {
        Err(e @ OpenError::Schema { .. }) => {
            assert_eq!(e.exit_status(), 65);
            let m = e.to_string();
            assert!(
                m.contains("duplicate value \"a@x\" for unique column users.email"),
                "{m}"
            );
            assert!(!m.contains("damaged"), "{m}");
        }
        other => panic!("{:?}", other.map(drop)),
    }
    // Without the index the directory still opens as it was.
    let (_, db) = durable::open(&dir(), users(false), sim_options(&sim)).unwrap();
    assert_eq!(db.len(0), 3);
}

#[test]
fn unique_over_repeated_values_in_the_log_is_a_schema_conflict_naming_the_value() {
    conflict(false);
}

#[test]
fn unique_over_repeated_values_in_a_checkpoint_is_a_schema_conflict_naming_the_value() {
    conflict(true);
}
