//! Exhaustive damage sweeps over one ~200-record log (REFERENCE.md §4): truncating it
//! at every byte offset must replay exactly the records fully written, and every
//! single-bit flip must be detected — a flip in the last record is a torn tail
//! (dropped), a flip anywhere before it makes `open` refuse with `Damaged` instead of
//! silently dropping the acknowledged records after it. Neither may panic.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, OpenError, SimStorage};

struct Log {
    bytes: Vec<u8>,
    /// `ends[j]`: offset just past record `j` (record 0 is the schema record).
    ends: Vec<usize>,
    /// `fps[j]`: fingerprint of the state after records `0..=j`.
    fps: Vec<u64>,
}

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

/// One record per acknowledged statement, 200 records in all.
fn build_log() -> Log {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let mut ends = vec![dd.log_bytes() as usize];
    let mut fps = vec![fingerprint(&db)];
    let mut rng = Rng(11);
    let mut cand = state(&db);
    while ends.len() < 200 {
        if let Step::Committed(o) = step(&mut dd, &mut db, &mut rng, &mut cand) {
            if o.lsn.is_some() {
                ends.push(dd.log_bytes() as usize);
                fps.push(fingerprint(&db));
            }
        }
    }
    drop(dd);
    let bytes = sim.read_file(&dir().join("wal")).unwrap();
    assert_eq!(bytes.len(), *ends.last().unwrap());
    Log { bytes, ends, fps }
}

fn open_bytes(bytes: &[u8]) -> (SimStorage, Result<u64, OpenError>) {
    let sim = SimStorage::new();
    sim.write_file(&dir().join("wal"), bytes);
    let res = open_sim(&sim, &dir()).map(|(_dd, db)| fingerprint(&db));
    (sim, res)
}

#[test]
fn every_truncation_replays_exactly_the_intact_prefix() {
    let log = build_log();
    let mut n_prefix = 0;
    let mut n_refused = 0;
    for len in 0..=log.bytes.len() {
        let (sim, res) = open_bytes(&log.bytes[..len]);
        if len < log.ends[0] {
            // Cut inside the header or the schema record, which the log is created
            // with before it gets its name: that is damage, not a torn write.
            assert!(
                matches!(res, Err(OpenError::Damaged { .. })),
                "cut at {len}: {res:?}"
            );
            n_refused += 1;
            continue;
        }
        let k = log.ends.partition_point(|&e| e <= len) - 1;
        assert_eq!(
            res.as_ref().ok(),
            Some(&log.fps[k]),
            "cut at {len}: expected the first {} records",
            k + 1
        );
        let repaired = sim.read_file(&dir().join("wal")).unwrap().len();
        assert_eq!(
            repaired, log.ends[k],
            "cut at {len}: the torn bytes are removed"
        );
        n_prefix += 1;
    }
    eprintln!(
        "truncation sweep: {} offsets ({n_prefix} replayed a prefix, {n_refused} refused)",
        log.bytes.len() + 1
    );
    assert_eq!(log.ends.len(), 200);
}

fn flip_sweep(part: usize, parts: usize) {
    let log = build_log();
    let last_start = log.ends[log.ends.len() - 2];
    let mut bytes = log.bytes.clone();
    let (mut torn, mut refused) = (0u64, 0u64);
    let lo = log.bytes.len() * part / parts;
    let hi = log.bytes.len() * (part + 1) / parts;
    for i in lo..hi {
        for bit in 0..8 {
            bytes[i] ^= 1 << bit;
            let (_sim, res) = open_bytes(&bytes);
            bytes[i] ^= 1 << bit;
            if i >= last_start {
                // The last record: indistinguishable from a torn write, dropped.
                assert_eq!(
                    res.as_ref().ok(),
                    Some(&log.fps[log.fps.len() - 2]),
                    "flip {i}.{bit}: {res:?}"
                );
                torn += 1;
            } else {
                assert!(
                    matches!(res, Err(OpenError::Damaged { .. })),
                    "flip {i}.{bit} went undetected: {res:?}"
                );
                refused += 1;
            }
        }
    }
    eprintln!("bit-flip sweep part {part}: {} flips ({refused} refused as damaged, {torn} dropped as a torn tail)", torn + refused);
}

#[test]
fn every_bit_flip_is_detected_part_0() {
    flip_sweep(0, 2);
}

#[test]
fn every_bit_flip_is_detected_part_1() {
    flip_sweep(1, 2);
}

#[test]
fn damage_messages_name_the_file_and_offset() {
    let log = build_log();
    let mut bytes = log.bytes.clone();
    let at = log.ends[100] + 30;
    bytes[at] ^= 4;
    match open_bytes(&bytes).1 {
        Err(e @ OpenError::Damaged { .. }) => {
            let OpenError::Damaged { file, offset, what } = &e else {
                unreachable!()
            };
            assert_eq!(file, &dir().join("wal"));
            assert_eq!(*offset, log.ends[100] as u64);
            assert!(what.contains("record 102 is damaged"), "{what}");
            assert_eq!(
                e.to_string(),
                format!("/data/wal: damaged at offset {}: {what}", log.ends[100])
            );
        }
        other => panic!("expected Damaged, got {other:?}"),
    }
    // The same damage seen by verify, which writes nothing.
    let sim = SimStorage::new();
    sim.write_file(&dir().join("wal"), &bytes);
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(rep.problem.map(|p| p.offset), Some(log.ends[100] as u64));
    assert_eq!(sim.op_count(), 0);
}
