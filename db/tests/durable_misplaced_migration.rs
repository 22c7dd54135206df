//! W7 (issue 13; found by the `datadir` fuzz target in the campaign of December 2): a
//! log whose fourth record holds a migration to no tables, in the middle of its
//! generation, where wo never writes one (a migration is the first record of the
//! generation its checkpoint starts). It was read three ways: recovery kept the
//! tables and their rows, the export reader handed the rows out, and
//! `stored_schema` (what `wo db checkpoint` opens with) took the schema to be empty;
//! `verify` said ok. Now it is damage, named the same way by all of them.
//! `fixtures/w7-misplaced-migration.wal` is the fuzzer's log with its CRCs sealed.

mod durable_support;

use std::path::PathBuf;
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{self, read, OpenError, SimStorage};

const WAL: &[u8] = include_bytes!("fixtures/w7-misplaced-migration.wal");
const WHAT: &str =
    "record 4 holds a migration, which only the first record of a log generation (lsn 1) can";

fn directory() -> (SimStorage, PathBuf) {
    let sim = SimStorage::new();
    let dir = PathBuf::from("/data");
    sim.write_file(&dir.join("wal"), WAL);
    (sim, dir)
}

#[test]
fn a_migration_record_in_the_middle_of_a_log_is_damage_to_every_reader() {
    let (sim, dir) = directory();
    let report = durable::verify_with(&sim, &dir).expect("verify reads it");
    let problem = report.problem.expect("verify reports the damage");
    assert!(format!("{problem:?}").contains(WHAT), "{problem:?}");

    let schema = durable::stored_schema(&dir, &sim_options(&sim)).expect("a schema");
    match durable::open(&dir, schema, sim_options(&sim)) {
        Err(OpenError::Damaged { what, .. }) => assert_eq!(what, WHAT),
        other => panic!("recovery: {:?}", other.map(drop)),
    }

    let res = read::snapshot_in::<OpenError>(Arc::new(sim.clone()), &dir, |_| Ok(()));
    match res {
        Err(OpenError::Damaged { what, .. }) => assert_eq!(what, WHAT),
        other => panic!("the export reader: {:?}", other.map(drop)),
    }
}
