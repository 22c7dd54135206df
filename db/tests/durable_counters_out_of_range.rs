//! Counters at the edge of their range in a data directory crashed or hung recovery
//! (found by fuzzing, issue 13 W1–W4): a checkpoint whose table has next id 2^40 made
//! loading allocate a row slot per id until the kernel killed the process (24 GB); a
//! checkpoint LSN of `u64::MAX`, a log whose first LSN is `u64::MAX`, and a row id of
//! `i64::MAX` overflowed the arithmetic around them (a panic with overflow checks, a
//! silent wrap in release). The fix: LSNs above 2^62 are damage, an id counter whose
//! row slots could not fit in this machine's memory is refused before anything is
//! allocated (out of memory, exit 74, naming the table and the counter), and the id
//! arithmetic is checked. Every case must end in a clear error, quickly, from both
//! `open` and `verify`.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, OpenError, SimStorage};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn open(sim: &SimStorage) -> Result<(), OpenError> {
    durable::open(&dir(), one_table_schema("t"), sim_options(sim)).map(drop)
}

const SALT: u64 = 0x5eed;

/// A directory with `ckpt` as its checkpoint and a log of one schema record after it.
fn with_checkpoint(ckpt: Vec<u8>, lsn: u64, next_id: i64) -> SimStorage {
    let sim = SimStorage::new();
    sim.write_file(&dir().join("checkpoint"), &ckpt);
    let first = lsn.wrapping_add(1).max(1);
    sim.write_file(
        &dir().join("wal"),
        &wal_file(SALT, first, &[schema_item("t", next_id)]),
    );
    sim
}

#[test]
fn a_huge_next_id_in_a_checkpoint_is_refused_before_anything_is_allocated() {
    for next_id in [1i64 << 40, i64::MAX] {
        let body = one_table_body("t", next_id, &[(1, 7)]);
        let sim = with_checkpoint(checkpoint_file(5, 1, SALT, &body), 5, next_id);
        match open(&sim) {
            Err(e @ OpenError::OutOfMemory { .. }) => {
                assert_eq!(e.exit_status(), 74);
                let m = e.to_string();
                assert!(
                    m.contains(&format!("table `t` has next id {next_id}")),
                    "{m}"
                );
            }
            other => panic!("next id {next_id}: {other:?}"),
        }
        match durable::verify_with(&sim, &dir()) {
            Err(OpenError::OutOfMemory { .. }) => {}
            other => panic!("verify, next id {next_id}: {other:?}"),
        }
    }
}

/// The bound is the storage's memory (`Storage::memory_limit`): the simulated disk's
/// machine has 256 MiB, so a counter whose slots need 512 MiB is refused there too —
/// the fuzz target (`fuzz/fuzz_targets/datadir.rs`, under libFuzzer's 2 GB limit) hit
/// such counters, which fit the real machine's 24 GB but not the fuzzer's limit.
#[test]
fn the_bound_is_the_storage_memory() {
    let next_id = (1i64 << 26) + 1;
    let body = one_table_body("t", next_id, &[(1, 7)]);
    let sim = with_checkpoint(checkpoint_file(5, 1, SALT, &body), 5, next_id);
    match open(&sim) {
        Err(e @ OpenError::OutOfMemory { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("more than the 256 MiB this process may use"),
                "{m}"
            );
        }
        other => panic!("next id {next_id}: {other:?}"),
    }
    // A counter that fits is loaded.
    let next_id = 1i64 << 20;
    let body = one_table_body("t", next_id, &[(1, 7)]);
    let sim = with_checkpoint(checkpoint_file(5, 1, SALT, &body), 5, next_id);
    open(&sim).expect("a counter of 2^20 fits in 256 MiB");
}

#[test]
fn a_checkpoint_lsn_of_u64_max_is_damage() {
    let body = one_table_body("t", 2, &[(1, 7)]);
    let sim = with_checkpoint(checkpoint_file(u64::MAX, 1, SALT, &body), u64::MAX, 2);
    match open(&sim) {
        Err(OpenError::Damaged { file, offset, what }) => {
            assert_eq!((file, offset), (dir().join("checkpoint"), 16));
            assert!(what.contains("out of range"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(rep.problem.unwrap().offset, 16);
}

#[test]
fn a_first_log_lsn_of_u64_max_is_damage() {
    let sim = SimStorage::new();
    sim.write_file(
        &dir().join("wal"),
        &wal_file(SALT, u64::MAX, &[schema_item("t", 1)]),
    );
    match open(&sim) {
        Err(OpenError::Damaged { file, offset, what }) => {
            assert_eq!((file, offset), (dir().join("wal"), 24));
            assert!(what.contains("out of range"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(rep.problem.unwrap().offset, 24);
}

#[test]
fn a_row_id_of_i64_max_in_the_log_is_damage() {
    let sim = SimStorage::new();
    let mut ins = schema_item("t", i64::MAX);
    ins.extend(insert_item(i64::MAX, 1));
    sim.write_file(
        &dir().join("wal"),
        &wal_file(
            SALT,
            1,
            &[schema_item("t", i64::MAX), insert_item(i64::MAX, 1), ins],
        ),
    );
    match open(&sim) {
        Err(OpenError::Damaged { .. }) => {}
        other => panic!("{other:?}"),
    }
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    let p = rep.problem.expect("a problem");
    assert!(
        p.what.contains("largest") || p.what.contains("next id"),
        "{}",
        p.what
    );
}
