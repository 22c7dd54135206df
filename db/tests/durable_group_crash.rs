//! The simulated-crash matrix for group commit: each round, several writers (as the
//! VM's fibers do) each write their statement's record with `stage`, then one sync
//! covers them all, and the next round starts only after it. A power cut before every
//! operation the data directory makes (writes, the log thread's syncs, checkpoint
//! steps), with each unsynced write kept, dropped or garbled: recovery must bring back
//! every acknowledged record and, of the batch in flight, a prefix in log order, each
//! record whole (LANGUAGE.md §8: acked ⊆ recovered ⊆ acked ∪ in-doubt batch). A failed
//! write or sync must have undone the whole batch in memory.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, Fate, OpKind, SimStorage};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

/// One writer's statement (a single write, or a transaction of a few) made in memory;
/// false when the engine refused it (then nothing changed).
fn statement(db: &mut wo_db::Db, rng: &mut Rng) -> bool {
    let sp = db.savepoint();
    let n = if rng.below(4) == 0 {
        2 + rng.below(4)
    } else {
        1
    };
    for _ in 0..n {
        if random_op(db, rng).is_err() {
            db.rollback_to(sp);
            return false;
        }
    }
    true
}

struct Run {
    sim: SimStorage,
    /// The acknowledged state, then after each record of the batch in flight.
    prefixes: Vec<State>,
    ops: usize,
    batches: usize,
}

fn run(seed: u64, rounds: usize, crash: Option<usize>) -> Run {
    let sim = SimStorage::new();
    if let Some(k) = crash {
        sim.crash_before(k);
    }
    let (mut dd, mut db) = match durable::open(&dir(), schema(), crash_options(&sim, false)) {
        Ok(x) => x,
        Err(e) => {
            assert!(sim.crashed(), "open failed without a crash: {e}");
            return Run {
                sim,
                prefixes: vec![State(vec![(1, vec![]), (1, vec![])])],
                ops: 0,
                batches: 0,
            };
        }
    };
    let mut rng = Rng(seed);
    let mut acked = state(&db);
    let mut batches = 0;
    for _ in 0..rounds {
        let writers = 1 + rng.below(8);
        let first = db.savepoint();
        let mut prefixes = vec![acked.clone()];
        let mut failed = false;
        for _ in 0..writers {
            let sp = db.savepoint();
            if !statement(&mut db, &mut rng) {
                continue;
            }
            match dd.stage(&db, sp) {
                Ok(Some(_)) => prefixes.push(state(&db)),
                Ok(None) => {}
                Err(f) => {
                    assert!(sim.crashed(), "a write failed without a crash: {f}");
                    failed = true;
                    break;
                }
            }
        }
        let synced = !failed && dd.sync().is_ok();
        if !synced {
            assert!(sim.crashed(), "a sync failed without a crash");
            db.rollback_to(first);
            assert_eq!(state(&db), acked, "the failed batch was undone in memory");
            return Run {
                sim: sim.clone(),
                prefixes,
                ops: sim.op_count(),
                batches,
            };
        }
        db.truncate_undo(first);
        acked = state(&db);
        batches += usize::from(prefixes.len() > 2);
        if let Some(Err(_)) = dd.maybe_checkpoint(&db) {
            assert!(sim.crashed(), "a checkpoint failed without a crash");
        }
    }
    Run {
        ops: sim.op_count(),
        sim,
        prefixes: vec![acked],
        batches,
    }
}

#[test]
fn crash_anywhere_in_group_commit_recovers_acked_and_a_prefix_of_the_batch() {
    let mut cases = 0;
    let mut partial = 0;
    let mut batches = 0;
    for seed in [11, 12, 13, 14] {
        let full = run(seed, 60, None);
        batches += full.batches;
        let ops = full.sim.ops();
        assert!(
            ops.iter()
                .any(|o| o.kind == OpKind::Rename && o.path.ends_with("checkpoint")),
            "the workload checkpoints"
        );
        for k in 0..=full.ops {
            let r = run(seed, 60, Some(k));
            for fate in [
                Fate::KeepAll,
                Fate::DropAll,
                Fate::Random(seed * 31 + k as u64),
            ] {
                let img = r.sim.crash_image(fate);
                let what = format!("seed {seed}, crash before op {k}, {fate:?}");
                let (_dd, db) = durable::open(&dir(), schema(), crash_options(&img, false))
                    .unwrap_or_else(|e| panic!("{what}: recovery refused: {e}"));
                let got = state(&db);
                let at = r.prefixes.iter().position(|p| *p == got);
                assert!(
                    at.is_some(),
                    "{what}: the recovered state is not the acknowledged one plus a prefix of the batch in flight"
                );
                partial += usize::from(at.is_some_and(|i| i > 0 && i + 1 < r.prefixes.len()));
                cases += 1;
            }
        }
    }
    eprintln!(
        "group-commit crash matrix: {cases} recoveries, {partial} with part of a batch, {batches} batches of several records"
    );
    assert!(
        batches > 20,
        "the workloads make batches of several records"
    );
}

/// Pipelined group commit: a record is written and its sync asked for; while that
/// sync is still running, the next record's write fails. The sync in flight is let
/// finish, and what it made durable stays acknowledged: the failure undoes only the
/// later change, and the log is cut after the first record, not before it. (Were the
/// first change undone too, a power cut would bring back a row the program had been
/// told was never written.)
#[test]
fn a_sync_in_flight_when_a_write_fails_keeps_what_it_made_durable() {
    const EIO: i32 = 5;
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let before = dd.durable_lsn();
    // The first record: written, its sync asked for and slow.
    sim.set_sync_delay(std::time::Duration::from_millis(200));
    let sp = db.savepoint();
    db.insert(DEPTS, vec![wo_db::Cell::Text("kept".into())])
        .unwrap();
    let first = dd.stage(&db, sp).unwrap().expect("a record");
    dd.request_sync().unwrap();
    let kept = state(&db);
    // The second record's write fails while that sync sleeps.
    sim.fail_nth(&[OpKind::Write], 1, wo_db::durable::FaultKind::Errno(EIO));
    let sp2 = db.savepoint();
    db.insert(DEPTS, vec![wo_db::Cell::Text("undone".into())])
        .unwrap();
    let f = dd.stage(&db, sp2).unwrap_err();
    assert_eq!(f.os_error, Some(EIO), "{f}");
    assert!(first > before);
    assert_eq!(
        dd.durable_lsn(),
        first,
        "the sync under way when the write failed made the first record durable"
    );
    db.rollback_to(sp2);
    assert_eq!(state(&db), kept);
    drop(dd);
    // Whatever the power cut leaves, and with the cut log kept, the first change is
    // there and the second is not.
    for fate in [Fate::DropAll, Fate::KeepAll] {
        let img = sim.crash_image(fate);
        let (_dd, db) = open_sim(&img, &dir()).unwrap();
        assert_eq!(state(&db), kept, "{fate:?}");
    }
}
