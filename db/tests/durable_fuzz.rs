//! No panics on data read from disk. Random damage never gets past a CRC, so these
//! sweeps damage a record's payload (or a checkpoint's body) and then *re-seal* it
//! with a valid CRC, which drives garbage into the decoders and the replay: `open`
//! must return a result (usually `Damaged`) and never panic; `verify` likewise. Also:
//! every single-bit flip of a checkpoint is refused.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, OpenError, SimStorage};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Record offsets of a log image (valid records only).
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 36;
    while pos + 24 <= bytes.len() {
        let end = pos + 24 + le32(&bytes[pos..]) as usize;
        if end > bytes.len() {
            break;
        }
        out.push((pos, end));
        pos = end;
    }
    out
}

/// Recomputes the CRC of the record at `pos` (format: docs/wal-format.md).
fn reseal(bytes: &mut [u8], pos: usize) {
    let salt = &bytes[16..24];
    let mut h = crc32fast::Hasher::new();
    h.update(salt);
    h.update(&bytes[pos..pos + 4]);
    h.update(&bytes[pos + 8..pos + 24]);
    let len = le32(&bytes[pos..]) as usize;
    h.update(&bytes[pos + 24..pos + 24 + len]);
    let crc = h.finalize().to_le_bytes();
    bytes[pos + 4..pos + 8].copy_from_slice(&crc);
}

fn build(steps: usize, checkpoint_at: Option<usize>) -> SimStorage {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let mut rng = Rng(5);
    let mut cand = state(&db);
    for i in 0..steps {
        step(&mut dd, &mut db, &mut rng, &mut cand);
        if Some(i) == checkpoint_at {
            dd.checkpoint(&db).unwrap();
        }
    }
    sim
}

fn try_open(wal: &[u8], ckpt: Option<&[u8]>) -> Result<(), OpenError> {
    let sim = SimStorage::new();
    sim.write_file(&dir().join("wal"), wal);
    if let Some(c) = ckpt {
        sim.write_file(&dir().join("checkpoint"), c);
    }
    let rep = durable::verify_with(&sim, &dir()).expect("verify reads");
    let res = open_sim(&sim, &dir()).map(drop);
    // verify finds no more than open refuses (it cannot see unique violations, having
    // no indexes, nor a mismatch with a program's schema).
    if let Some(p) = &rep.problem {
        assert!(
            res.is_err(),
            "verify found {p:?} but open accepted the directory"
        );
    }
    res
}

#[test]
fn resealed_garbage_in_log_records_never_panics() {
    let sim = build(120, None);
    let wal = sim.read_file(&dir().join("wal")).unwrap();
    let recs = records(&wal);
    assert!(recs.len() > 50);
    let mut rng = Rng(77);
    let (mut damaged, mut ok) = (0, 0);
    for case in 0..6000 {
        let mut bytes = wal.clone();
        let (pos, end) = recs[rng.below(recs.len() as u64) as usize];
        // Damage 1..4 payload bytes (tags, varints, lengths, UTF-8, ids, counts).
        for _ in 0..1 + rng.below(4) {
            let i = pos + 24 + rng.below((end - pos - 24) as u64) as usize;
            bytes[i] = match rng.below(4) {
                0 => rng.next() as u8,
                1 => bytes[i] ^ (1 << rng.below(8)),
                2 => 0xff,
                _ => 0,
            };
        }
        reseal(&mut bytes, pos);
        match try_open(&bytes, None) {
            Ok(()) => ok += 1,
            Err(OpenError::Damaged { .. } | OpenError::Schema { .. }) => damaged += 1,
            Err(e) => panic!("case {case}: unexpected {e}"),
        }
    }
    eprintln!(
        "resealed log damage: {damaged} refused, {ok} still consistent (e.g. a changed value)"
    );
    assert!(damaged > 3000);
}

#[test]
fn resealed_garbage_in_checkpoints_never_panics() {
    let sim = build(150, Some(140));
    let wal = sim.read_file(&dir().join("wal")).unwrap();
    let ck = sim.read_file(&dir().join("checkpoint")).unwrap();
    let mut rng = Rng(78);
    let mut damaged = 0;
    for _ in 0..4000 {
        let mut bytes = ck.clone();
        let body = 36..bytes.len() - 4;
        for _ in 0..1 + rng.below(3) {
            let i = body.start + rng.below(body.len() as u64) as usize;
            bytes[i] = if rng.below(2) == 0 {
                rng.next() as u8
            } else {
                bytes[i] ^ (1 << rng.below(8))
            };
        }
        if rng.below(8) == 0 {
            // Also a shorter body with a consistent length field.
            let cut = rng.below(body.len() as u64) as usize;
            bytes.drain(body.start + cut..body.end);
            let blen = (bytes.len() - 40) as u64;
            bytes[24..32].copy_from_slice(&blen.to_le_bytes());
            let hcrc = crc32fast::hash(&bytes[0..32]).to_le_bytes();
            bytes[32..36].copy_from_slice(&hcrc);
        }
        let n = bytes.len();
        let crc = crc32fast::hash(&bytes[36..n - 4]).to_le_bytes();
        bytes[n - 4..].copy_from_slice(&crc);
        match try_open(&wal, Some(&bytes)) {
            Ok(()) => {}
            Err(OpenError::Damaged { .. } | OpenError::Schema { .. }) => damaged += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(damaged > 1000, "{damaged}");
}

#[test]
fn every_bit_flip_of_a_checkpoint_is_refused() {
    let sim = build(60, Some(59));
    let wal = sim.read_file(&dir().join("wal")).unwrap();
    let ck = sim.read_file(&dir().join("checkpoint")).unwrap();
    assert!(try_open(&wal, Some(&ck)).is_ok());
    let mut bytes = ck.clone();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            bytes[i] ^= 1 << bit;
            match try_open(&wal, Some(&bytes)) {
                Err(OpenError::Damaged { file, .. }) => assert_eq!(file, dir().join("checkpoint")),
                other => panic!("flip {i}.{bit}: {other:?}"),
            }
            bytes[i] ^= 1 << bit;
        }
    }
    eprintln!("checkpoint bit flips: {} refused", ck.len() * 8);
}
