//! The recovery scan of a damaged log tail was quadratic. After an invalid record,
//! recovery looks for a later valid record whose "durable up to" LSN proves the invalid
//! one had been synced (then the log is damaged, not torn). It tried every later
//! offset and computed a checksum over the payload the bytes there claimed, so a tail
//! of 2 MiB whose offsets look like frames took seconds (3.8 s in release; far longer
//! here). The fix filters offsets by what a real record there would have to say (an
//! LSN after the invalid one but no further than the bytes in between allow, a durable
//! LSN below its own) and takes every survivor's payload checksum from one running CRC
//! over the tail (the CRC of `a..b` from the CRCs of `..a` and `..b`): linear. These
//! tests build such a tail, with and without a real proof at its end.

mod durable_support;

use std::path::PathBuf;
use std::time::Instant;

use durable_support::*;
use wo_db::durable::{self, OpenError, SimStorage};
use wo_db::{Cell, Savepoint};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

/// A log of three records followed by 2 MiB of bad frames every 25 bytes, each
/// claiming the next LSN, the bad record's LSN as durable, and a payload reaching the
/// end of the file. Returns the log, the bad record's offset and its LSN.
fn hostile_log() -> (SimStorage, Vec<u8>, usize, u64) {
    let sim = SimStorage::new();
    let (mut dd, mut db) = durable::open(&dir(), one_table_schema("t"), sim_options(&sim)).unwrap();
    for n in 0..2 {
        db.insert(0, vec![Cell::Int(n)]).unwrap();
        dd.commit(&mut db, Savepoint(0)).unwrap();
    }
    let expect = dd.durable_lsn() + 1;
    drop((dd, db));
    let mut wal = read(&sim, &dir().join("wal"));
    let pos = wal.len();
    let total = pos + (2 << 20);
    // The bad record: a length no record has.
    wal.extend_from_slice(&u32::MAX.to_le_bytes());
    wal.resize(pos + 25, 0xAB);
    while wal.len() + 25 <= total {
        let q = wal.len();
        let len = (total - q - 24) as u32;
        wal.extend_from_slice(&len.to_le_bytes());
        wal.extend_from_slice(&0u32.to_le_bytes()); // a wrong CRC
        wal.extend_from_slice(&(expect + 1).to_le_bytes());
        wal.extend_from_slice(&expect.to_le_bytes());
        wal.push(0xCD);
    }
    wal.resize(total, 0xEF);
    (sim, wal, pos, expect)
}

#[test]
fn a_hostile_damaged_tail_is_scanned_in_linear_time_and_cut_as_torn() {
    let (sim, wal, pos, _) = hostile_log();
    sim.write_file(&dir().join("wal"), &wal);
    let t0 = Instant::now();
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(rep.problem, None);
    assert_eq!(rep.torn_tail, Some(pos as u64));
    let (_, db) = durable::open(&dir(), one_table_schema("t"), sim_options(&sim)).unwrap();
    assert_eq!(db.len(0), 2);
    // Quadratic, this is hours in a debug build; linear, well under a second.
    let took = t0.elapsed();
    assert!(took.as_secs() < 30, "scanning a 2 MiB tail took {took:?}");
}

#[test]
fn a_real_proof_at_the_end_of_a_hostile_tail_is_found() {
    let (sim, mut wal, pos, expect) = hostile_log();
    // The last frame becomes a valid record of this generation proving `expect` synced.
    let q = wal.len() - 40;
    wal[q..q + 4].copy_from_slice(&16u32.to_le_bytes());
    wal[q + 8..q + 16].copy_from_slice(&(expect + 1).to_le_bytes());
    wal[q + 16..q + 24].copy_from_slice(&expect.to_le_bytes());
    reseal_record(&mut wal, q);
    sim.write_file(&dir().join("wal"), &wal);
    match durable::open(&dir(), one_table_schema("t"), sim_options(&sim)) {
        Err(OpenError::Damaged { offset, what, .. }) => {
            assert_eq!(offset, pos as u64);
            assert!(
                what.contains(&format!("the record at offset {q}")),
                "{what}"
            );
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("the proof was missed: an acknowledged record was dropped"),
    }
}
