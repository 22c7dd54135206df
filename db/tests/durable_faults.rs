//! The I/O-error sweep of the failure contract (LANGUAGE.md §8): fail the k-th
//! operation of a workload, for every k, with EIO, ENOSPC, EFBIG and a short write
//! (half written, then ENOSPC). The commit must return the failure with the state in
//! memory exactly as before the failed statement; the log must be fenced (the next
//! commit fails at once with the same failure, and the disk sees no further write or
//! sync); and reopening — with unsynced writes kept, dropped or garbled — must recover
//! the acknowledged state, or it plus the failed batch. Failures while creating or
//! repairing a directory must be `Io` errors (exit 74).

mod durable_support;

use std::path::PathBuf;
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{self, Fate, FaultKind, OpKind, OpenError, Options, SimStorage};
use wo_db::{Cell, Savepoint};

const EIO: i32 = 5;
const ENOSPC: i32 = 28;
const EFBIG: i32 = 27;
const FAULTS: [FaultKind; 4] = [
    FaultKind::Errno(EIO),
    FaultKind::Errno(ENOSPC),
    FaultKind::Errno(EFBIG),
    FaultKind::ShortWrite,
];

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn options(sim: &SimStorage, prealloc: u64) -> Options {
    Options {
        storage: Arc::new(sim.clone()),
        preallocate: prealloc,
        auto_checkpoint: true,
        checkpoint_min: 1 << 10,
        ..Options::default()
    }
}

#[derive(Default, Debug)]
struct Tally {
    runs: usize,
    commit_failures: usize,
    checkpoint_failures: usize,
    absorbed: usize,
}

/// Runs the workload with operation `k` (counted after open) failing. Returns false
/// when the workload makes fewer than `k` operations.
fn run(seed: u64, k: u64, fault: FaultKind, prealloc: u64, tally: &mut Tally) -> bool {
    let sim = SimStorage::new();
    let (mut dd, mut db) = durable::open(&dir(), schema(), options(&sim, prealloc)).unwrap();
    sim.fail_nth(&OpKind::ALL, k, fault);
    let mut rng = Rng(seed);
    let mut acked = state(&db);
    let mut inflight = None;
    let mut cand = acked.clone();
    let what = format!("seed {seed}, {fault:?} on op {k} (prealloc {prealloc})");
    for _ in 0..80 {
        let fired_before = sim.fault_fired().is_some();
        match step(&mut dd, &mut db, &mut rng, &mut cand) {
            Step::Refused => {}
            Step::Committed(o) => {
                acked = cand.clone();
                if let Some(f) = &o.checkpoint_error {
                    tally.checkpoint_failures += 1;
                    assert!(sim.fault_fired().is_some(), "{what}: {f}");
                } else if sim.fault_fired().is_some() && !fired_before {
                    // Only preallocation absorbs a full disk or the size limit.
                    assert!(
                        prealloc > 0 && fault != FaultKind::Errno(EIO),
                        "{what}: the fault was ignored"
                    );
                    tally.absorbed += 1;
                }
            }
            Step::Failed(f) => {
                tally.commit_failures += 1;
                let idx = sim.fault_fired().expect("a failure without a fault");
                assert_eq!(
                    state(&db),
                    acked,
                    "{what}: memory is back to before the failed statement"
                );
                assert!(f.changes_undone > 0, "{what}");
                if !fired_before {
                    let want = match fault {
                        FaultKind::Errno(e) => e,
                        FaultKind::ShortWrite if sim.ops()[idx].kind == OpKind::Write => ENOSPC,
                        FaultKind::ShortWrite => EIO,
                    };
                    assert_eq!(f.os_error, Some(want), "{what}: {f}");
                    assert!(f.to_string().contains(" failed on /data/"), "{f}");
                    inflight = Some(cand.clone());
                }
                // Fenced: the next change fails at once, with the same failure, and
                // nothing more reaches the disk.
                let ops = sim.op_count();
                let sp = db.savepoint();
                let n_scratch = db.len(SCRATCH);
                db.insert(SCRATCH, vec![Cell::Int(1)]).unwrap();
                let again = dd.commit(&mut db, sp).unwrap_err();
                assert_eq!(
                    (again.op, &again.path, &again.message),
                    (f.op, &f.path, &f.message),
                    "{what}"
                );
                assert_eq!(again.changes_undone, 1);
                assert_eq!(
                    db.len(SCRATCH),
                    n_scratch,
                    "{what}: the fenced change was undone"
                );
                assert!(
                    dd.checkpoint(&db).is_err(),
                    "{what}: no checkpoint after the fence"
                );
                assert_eq!(
                    sim.op_count(),
                    ops,
                    "{what}: no write or sync after the fence"
                );
                assert_eq!(dd.fence().map(|f| f.op), Some(f.op));
                break;
            }
        }
    }
    let fired = sim.fault_fired().is_some();
    tally.runs += 1;
    drop(dd);
    for fate in [
        Fate::KeepAll,
        Fate::DropAll,
        Fate::Random(k),
        Fate::Random(k + 1000),
    ] {
        let img = sim.crash_image(fate);
        let (_dd, db) = match durable::open(&dir(), schema(), options(&img, 0)) {
            Ok(x) => x,
            Err(e) => panic!("{what} {fate:?}: recovery refused: {e}"),
        };
        let got = state(&db);
        assert!(
            got == acked || Some(&got) == inflight.as_ref(),
            "{what} {fate:?}: acked ⊆ recovered ⊆ acked ∪ failed batch"
        );
    }
    fired
}

fn sweep(seed: u64, prealloc: u64) -> Tally {
    let mut tally = Tally::default();
    for fault in FAULTS {
        let mut k = 1;
        while run(seed, k, fault, prealloc, &mut tally) {
            k += 1;
        }
        assert!(k > 50, "the workload makes enough operations ({k})");
    }
    tally
}

#[test]
fn every_operation_failing_with_every_error_keeps_the_contract() {
    let t = sweep(21, 0);
    eprintln!("fault sweep (no preallocation): {t:?}");
    assert!(t.commit_failures > 0 && t.checkpoint_failures > 0);
}

#[test]
fn fault_sweep_with_preallocation() {
    let t = sweep(22, 4 << 10);
    eprintln!("fault sweep (preallocation): {t:?}");
    assert!(t.commit_failures > 0 && t.absorbed > 0);
}

#[test]
fn long_fault_sweep() {
    if std::env::var_os("WO_LONG_TESTS").is_none() {
        return;
    }
    for seed in 100..110 {
        sweep(seed, 0);
        sweep(seed, 2 << 10);
    }
}

#[test]
fn failures_while_creating_a_directory_are_io_errors() {
    let mut k = 1;
    loop {
        let sim = SimStorage::new();
        sim.fail_nth(&OpKind::ALL, k, FaultKind::Errno(EIO));
        let res = durable::open(&dir(), schema(), options(&sim, 0));
        if sim.fault_fired().is_none() {
            assert!(res.is_ok());
            break;
        }
        match res {
            Err(e @ OpenError::Io { .. }) => assert_eq!(e.exit_status(), 74),
            other => panic!("op {k}: expected an Io error, got {other:?}"),
        }
        for fate in [Fate::KeepAll, Fate::DropAll, Fate::Random(k)] {
            let (_dd, db) =
                durable::open(&dir(), schema(), options(&sim.crash_image(fate), 0)).unwrap();
            assert_eq!(db.len(DEPTS) + db.len(EMPS), 0);
        }
        k += 1;
    }
    assert!(
        k >= 6,
        "creating a directory makes several operations ({k})"
    );
}

#[test]
fn failures_while_repairing_a_torn_tail_are_io_errors() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = durable::open(&dir(), schema(), options(&sim, 0)).unwrap();
    db.insert(DEPTS, vec![Cell::Text("ops".into())]).unwrap();
    dd.commit(&mut db, Savepoint(0)).unwrap();
    drop(dd);
    let wal = dir().join("wal");
    let mut bytes = sim.read_file(&wal).unwrap();
    bytes.extend_from_slice(&[9; 30]);
    for kind in [OpKind::Truncate, OpKind::Sync] {
        sim.write_file(&wal, &bytes);
        sim.fail_nth(&[kind], 1, FaultKind::Errno(EIO));
        match durable::open(&dir(), schema(), options(&sim, 0)) {
            Err(e @ OpenError::Io { .. }) => assert!(e.to_string().contains("/data/wal"), "{e}"),
            other => panic!("{kind:?}: expected an Io error, got {other:?}"),
        }
    }
}
