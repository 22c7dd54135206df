//! The simulated disk keeps the lock file's durable note as the real file system does
//! (`sim.rs`): the log thread writes it after each sync, unsynced, a power cut keeps,
//! drops or garbles it, and a new holder carries it into recovery, where it is evidence
//! that a damaged record of the last synced batch is damage, not a torn write
//! (`wal::check_unproven`). So the crash matrices and the `durable` fuzz target, which
//! run on this disk, run with the note too: what a power cut leaves must still open.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, Fate, FaultKind, Noted, OpKind, OpenError, SimStorage, Storage};
use wo_db::{Cell, Savepoint};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn lock() -> PathBuf {
    dir().join("lock")
}

/// The records of a log: (start, end) of each, in order.
fn records(wal: &[u8]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut at = 36;
    while at + 24 <= wal.len() {
        let n = le32(&wal[at..]) as usize;
        if n == 0 || at + 24 + n > wal.len() {
            break;
        }
        out.push((at, at + 24 + n));
        at += 24 + n;
    }
    out
}

/// Options whose holder writes `pid` in the lock file.
fn as_pid(sim: &SimStorage, pid: u32) -> durable::Options {
    durable::Options {
        pid,
        ..sim_options(sim)
    }
}

/// A directory of one table whose rows 0..n were each committed (and synced) alone;
/// returns the last durable LSN.
fn committed(sim: &SimStorage, n: i64) -> u64 {
    let (mut dd, mut db) = durable::open(&dir(), one_table_schema("t"), sim_options(sim)).unwrap();
    for k in 0..n {
        db.insert(0, vec![Cell::Int(k)]).unwrap();
        dd.commit(&mut db, Savepoint(0)).unwrap();
    }
    dd.durable_lsn()
}

fn open(sim: &SimStorage) -> Result<usize, OpenError> {
    durable::open(&dir(), one_table_schema("t"), sim_options(sim)).map(|(_, db)| db.len(0))
}

/// The pid and LSN of the note in the lock file (its salt aside).
fn note(sim: &SimStorage) -> Option<(u32, u64)> {
    sim.durable_note(&lock())
        .unwrap()
        .map(|(pid, noted)| (pid, noted.lsn))
}

/// The last two records made one batch (the last claims durable only what came before
/// the other, as when fibers' commits share a sync), and one bit of the first flipped.
/// Returns the damaged record's offset.
fn damage_last_batch(sim: &SimStorage) -> usize {
    let path = dir().join("wal");
    let mut wal = read(sim, &path);
    let recs = records(&wal);
    let (s1, e1) = recs[recs.len() - 2];
    let (s2, _) = recs[recs.len() - 1];
    let lsn1 = le64(&wal[s1 + 8..]);
    wal[s2 + 16..s2 + 24].copy_from_slice(&(lsn1 - 1).to_le_bytes());
    reseal_record(&mut wal, s2);
    wal[(s1 + e1) / 2] ^= 0x04;
    sim.write_file(&path, &wal);
    s1
}

#[test]
fn each_sync_is_noted_in_the_lock_file_and_a_power_cut_may_lose_the_note() {
    let sim = SimStorage::new();
    let mut durable_lsn = 0;
    {
        let (mut dd, mut db) =
            durable::open(&dir(), one_table_schema("t"), as_pid(&sim, 1111)).unwrap();
        for k in 0..3 {
            db.insert(0, vec![Cell::Int(k)]).unwrap();
            dd.commit(&mut db, Savepoint(0)).unwrap();
            assert!(dd.durable_lsn() > durable_lsn);
            durable_lsn = dd.durable_lsn();
            assert_eq!(note(&sim), Some((1111, durable_lsn)), "after commit {k}");
        }
    }
    // Unsynced: kept when the writes reach the disk, gone when they do not.
    let kept = sim.crash_image(Fate::KeepAll);
    assert_eq!(note(&kept), Some((1111, durable_lsn)));
    let dropped = sim.crash_image(Fate::DropAll);
    assert_eq!(note(&dropped), None);
    // Each write kept, dropped or garbled: the note left whole never says more than
    // was synced (an earlier rewrite may show through), or there is none.
    let (mut whole, mut none) = (0, 0);
    for seed in 0..64 {
        match note(&sim.crash_image(Fate::Random(seed))) {
            Some((pid, lsn)) => {
                assert!(
                    pid == 1111 && lsn <= durable_lsn,
                    "seed {seed}: {pid} {lsn}"
                );
                whole += 1;
            }
            None => none += 1,
        }
    }
    assert!(
        whole > 0 && none > 0,
        "{whole} whole, {none} lost or garbled"
    );
    // A new holder carries the former one's note over under its own pid.
    durable::open(&dir(), one_table_schema("t"), as_pid(&sim, 2222)).unwrap();
    assert_eq!(note(&sim), Some((2222, durable_lsn)));
}

#[test]
fn a_damaged_record_of_a_batch_the_note_says_synced_is_damage_on_the_simulated_disk() {
    let sim = SimStorage::new();
    committed(&sim, 4);
    let at = damage_last_batch(&sim);
    let before = read(&sim, &dir().join("wal"));
    match open(&sim) {
        Err(OpenError::Damaged { offset, what, .. }) => {
            assert_eq!(offset, at as u64);
            assert!(what.contains("the lock file's note says"), "{what}");
        }
        other => panic!("a noted batch with a damaged record opened: {other:?}"),
    }
    assert_eq!(read(&sim, &dir().join("wal")), before, "nothing was cut");
    // Without the note, nothing proves the batch synced: a torn write, cut.
    sim.remove(&lock()).unwrap();
    assert_eq!(
        open(&sim).unwrap(),
        2,
        "the last batch (rows 2 and 3) is cut"
    );
}

/// An older copy of the log put back under a note of the same log is refused (the
/// records the note says were synced are gone: below); under a note of an earlier
/// version, which names no log, it opens, and the note, which names records this log
/// does not hold, is lowered with one write and one sync of the lock file, counted: a
/// fault plan can fail them, and the open fails with them.
#[test]
fn a_note_the_log_does_not_bear_out_is_lowered_by_a_counted_sync() {
    let sim = SimStorage::new();
    committed(&sim, 1);
    let older = read(&sim, &dir().join("wal"));
    let (_, older_lsn) = note(&sim).unwrap();
    // Reopened (the note carried over), three more rows; then the older log put back.
    {
        let (mut dd, mut db) =
            durable::open(&dir(), one_table_schema("t"), sim_options(&sim)).unwrap();
        for k in 1..4 {
            db.insert(0, vec![Cell::Int(k)]).unwrap();
            dd.commit(&mut db, Savepoint(0)).unwrap();
        }
    }
    let (_, newer_lsn) = note(&sim).unwrap();
    assert!(newer_lsn > older_lsn);
    sim.write_file(&dir().join("wal"), &older);
    match open(&sim) {
        Err(OpenError::Damaged { what, .. }) => assert!(
            what.contains(&format!("synced records up to lsn {newer_lsn}")),
            "{what}"
        ),
        other => panic!("an older copy of the log under its note opened: {other:?}"),
    }
    // An earlier version's note (no salt) names no log: it proves nothing here.
    let crc = crc32fast::hash(format!("9 {newer_lsn}").as_bytes());
    let earlier = format!("9\ndurable {newer_lsn:020} {crc:08x}\n");
    sim.write_file(&lock(), earlier.as_bytes());

    let failing = sim.crash_image(Fate::KeepAll);
    let ops = sim.op_count();
    assert_eq!(open(&sim).unwrap(), 1);
    assert_eq!(note(&sim).map(|(_, l)| l), Some(older_lsn), "lowered");
    let settle: Vec<_> = sim.ops()[ops..]
        .iter()
        .filter(|o| o.path == lock())
        .map(|o| o.kind)
        .collect();
    assert_eq!(settle, [OpKind::Write, OpKind::Sync]);

    // The same open with the lock file's sync failing fails, and says where.
    let syncs_before = sim.ops()[ops..]
        .iter()
        .take_while(|o| o.path != lock())
        .filter(|o| o.kind == OpKind::Sync)
        .count() as u64;
    failing.fail_nth(&[OpKind::Sync], syncs_before + 1, FaultKind::Errno(5));
    match open(&failing) {
        Err(OpenError::Io { op, path, .. }) => assert_eq!((op, path), ("fdatasync", lock())),
        other => panic!("the open went on past a note it could not lower: {other:?}"),
    }
    let fired = failing.fault_fired().expect("the planned fault fired");
    let op = &failing.ops()[fired];
    assert_eq!((op.kind, &op.path), (OpKind::Sync, &lock()));
}

/// A log that ends before the last record its own note says was synced is damage:
/// cut at a record's start (a clean end), in the middle of a record (a torn end), or
/// its last record damaged (helper-102: a truncated log lost acknowledged records
/// with exit 0, `verify` said ok, and the next start lowered the note). Nothing is
/// cut. Without the note, or under a note of another log generation, the same log is
/// a torn write, cut.
#[test]
fn a_log_cut_short_of_its_note_is_damage() {
    let sim = SimStorage::new();
    let last = committed(&sim, 4);
    let wal = read(&sim, &dir().join("wal"));
    let recs = records(&wal);
    let (s, e) = recs[recs.len() - 1];
    assert_eq!(le64(&wal[s + 8..]), last);
    let mut flipped = wal[..e].to_vec();
    flipped[(s + e) / 2] ^= 0x10;
    for (how, bytes) in [
        ("cut at a record's start", wal[..s].to_vec()),
        ("cut in a record", wal[..e - 3].to_vec()),
        ("its last record damaged", flipped),
    ] {
        let copy = sim.crash_image(Fate::KeepAll);
        copy.write_file(&dir().join("wal"), &bytes);
        match open(&copy) {
            Err(OpenError::Damaged { what, offset, .. }) => {
                assert_eq!(offset, s as u64, "{how}");
                assert!(
                    what.contains(&format!(
                        "the log's records end with lsn {}, but the lock file's note says this log had synced records up to lsn {last}",
                        last - 1
                    )),
                    "{how}: {what}"
                );
            }
            other => panic!("{how}: opened: {other:?}"),
        }
        assert_eq!(read(&copy, &dir().join("wal")), bytes, "{how}: nothing cut");
        assert_eq!(note(&copy).map(|(_, l)| l), Some(last), "{how}: note kept");
        let rep = durable::verify_with(&copy, &dir()).unwrap();
        assert!(rep.problem.is_some(), "{how}: verify says ok");
        // Under a note of another generation: a torn write, cut.
        let (pid, noted) = copy.durable_note(&lock()).unwrap().unwrap();
        let other = Noted {
            salt: noted.salt.map(|s| s ^ 1),
            ..noted
        };
        let text = format!("{pid}\n{}", durable::note_line(pid, other));
        copy.write_file(&lock(), text.as_bytes());
        assert_eq!(copy.durable_note(&lock()).unwrap(), Some((pid, other)));
        assert_eq!(open(&copy).unwrap(), 3, "{how}: another log's note");
    }
    // Without the lock file: a torn write, cut.
    let copy = sim.crash_image(Fate::KeepAll);
    copy.write_file(&dir().join("wal"), &wal[..e - 3]);
    copy.remove(&lock()).unwrap();
    assert_eq!(open(&copy).unwrap(), 3);
}
