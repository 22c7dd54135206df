//! A data directory -> recovery, `wo db verify`, and the readers of `wo db export` and
//! `wo db mirror`. The input is `[u32 LE wal length][wal][checkpoint]`
//! (`wo_fuzz::split_datadir`); every CRC is re-sealed after mutation so the decoders
//! behind them are reached (but, in one input in four, one record's, so that damage in
//! the middle of the log is reached too). Beside them, a lock file with the durable
//! note a writer leaves, naming one of the log's records (or none, or one past them:
//! `wo_fuzz::lock_file_for`), which recovery, `verify` and the readers take as
//! evidence of what was synced. The files live in the in-memory `SimStorage`.
//!
//! What must hold, besides no panic and no unbounded allocation:
//! - the readers (the snapshot `export` streams, in each format, and the SQL the mirror
//!   would send for every record from the checkpoint on) run before recovery touches
//!   the files, and agree with it: when `open` accepts the directory, the snapshot
//!   was read too and holds exactly the rows recovery restored (no process holds the
//!   directory, so every valid record is final for a reader), every export of it
//!   succeeded, and the mirror's apply resumed at the checkpoint went through every
//!   record to the snapshot's LSN without an error or a `Gone`;
//! - whatever `open` accepts survives a checkpoint and opens again.
#![no_main]
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use wo_db::durable::read::{self, Event, Follower, Poll};
use wo_db::durable::{self, OpenError, Options, SimStorage, Storage};
use wo_db::{Cell, RowId};
use wo_fuzz::durable::comparable;
use wo_mirror::apply::next_batch;
use wo_mirror::export::{export_in, Format};
use wo_mirror::Error;

fn options(storage: &SimStorage) -> Options {
    Options {
        storage: Arc::new(storage.clone()),
        auto_checkpoint: false,
        preallocate: 0,
        pid: 1,
        ..Options::default()
    }
}

/// Rows by table name, in id order; a Float by its bits (so NaN equals itself).
type Rows = BTreeMap<String, Vec<(RowId, Vec<Cell>)>>;

/// What the readers made of the directory.
struct Read {
    /// The snapshot's rows.
    rows: Rows,
    /// Whether `export` succeeded in each format.
    exported: bool,
    /// Where the mirror's apply, resumed at the checkpoint, ended (the LSN of the last
    /// record it handed out), or why it stopped short.
    applied: Result<u64, String>,
    /// The LSN the snapshot stands at.
    snapshot_lsn: u64,
    /// The apply stopped at a value PostgreSQL cannot hold.
    refused_value: bool,
}

/// An export that went through, or refused a value its format cannot hold (a text
/// with U+0000 in SQL: PostgreSQL's text cannot store it). Anything else, after the
/// snapshot was read, is a reader bug.
fn acceptable<T>(r: Result<T, Error>) -> bool {
    match r {
        Ok(_) | Err(Error::Value(_)) => true,
        Err(e) => {
            if std::env::var_os("WO_FUZZ_PRINT").is_some() {
                eprintln!("export: {e}");
            }
            false
        }
    }
}

/// What a reader sees: the snapshot's rows, then `export` in each format, then the
/// mirror's SQL for every record after the checkpoint (bounded: a log of n records
/// needs n / `BATCH_RECORDS` + 1 batches).
fn readers(storage: &Arc<dyn Storage>, dir: &Path) -> Option<Read> {
    let mut rows = Rows::new();
    let mut current = None;
    let follower = read::snapshot_in::<OpenError>(storage.clone(), dir, |ev| {
        match ev {
            Event::Table(t) => {
                rows.entry(t.name.clone()).or_default();
                current = Some(t.name.clone());
            }
            Event::Row(id, cells) => {
                let t = current.as_ref().expect("a row outside a table");
                rows.get_mut(t).unwrap().push((id, comparable(cells)));
            }
            Event::EndTable => current = None,
        }
        Ok(())
    })
    .ok()?;
    let mut exported = true;
    for format in [Format::Jsonl, Format::Sql] {
        let r = export_in(storage.clone(), dir, None, format, &mut std::io::sink());
        exported &= acceptable(r);
    }
    if let Some(name) = rows.keys().next() {
        let csv = Format::Csv;
        let r = export_in(storage.clone(), dir, Some(name), csv, &mut std::io::sink());
        exported &= acceptable(r);
    }
    let from = follower.checkpoint_lsn();
    let mut refused_value = false;
    let applied = match Follower::resume_in(storage.clone(), dir, follower.salt(), from) {
        Ok(Ok(mut f)) => {
            let mut end = Ok(f.applied());
            for _ in 0..64 {
                match next_batch(&mut f) {
                    Ok(step) => match step.poll {
                        Poll::Gone(why) => {
                            end = Err(format!("gone: {}", why.0));
                            break;
                        }
                        Poll::Progress { applied, .. } => {
                            end = Ok(applied);
                            if step.records == 0 {
                                break;
                            }
                        }
                    },
                    // A value PostgreSQL cannot hold is refused, and said.
                    Err(Error::Value(_)) => {
                        refused_value = true;
                        break;
                    }
                    Err(e) => {
                        end = Err(e.to_string());
                        break;
                    }
                }
            }
            end
        }
        Ok(Err(why)) => Err(format!("gone at resume: {}", why.0)),
        Err(e) => Err(e.to_string()),
    };
    Some(Read {
        rows,
        exported,
        applied,
        snapshot_lsn: follower.applied(),
        refused_value,
    })
}

fuzz_target!(|data: &[u8]| {
    let (wal, ckpt) = wo_fuzz::split_datadir(data);
    let (mut wal, mut ckpt) = (wal.to_vec(), ckpt.to_vec());
    // One input in four keeps one record's CRC as the mutation left it (damage in
    // the middle of the log); every input gets a lock file, with a note or none.
    let pick = crc32fast::hash(data);
    let records = wo_fuzz::record_count(&wal);
    let skip = (pick.is_multiple_of(4) && records > 0).then(|| (pick >> 2) as usize % records);
    wo_fuzz::reseal_wal_but(&mut wal, skip);
    wo_fuzz::reseal_checkpoint(&mut ckpt);
    let storage = SimStorage::new();
    storage.set_memory_limit(wo_fuzz::SIM_MEMORY);
    let dir = Path::new("/d");
    storage.write_file(&dir.join("lock"), &wo_fuzz::lock_file_for(&wal, pick >> 6));
    if !wal.is_empty() {
        storage.write_file(&dir.join("wal"), &wal);
    }
    if !ckpt.is_empty() {
        storage.write_file(&dir.join("checkpoint"), &ckpt);
    }
    let _ = durable::verify_with(&storage, dir);
    let shared: Arc<dyn Storage> = Arc::new(storage.clone());
    let read = readers(&shared, dir);
    let Ok(schema) = durable::stored_schema(dir, &options(&storage)) else {
        return;
    };
    let Ok((mut data_dir, db)) = durable::open(dir, schema.clone(), options(&storage)) else {
        return;
    };
    let Some(read) = read else {
        panic!("recovery opened the directory, but the reader of export and mirror refused it");
    };
    assert!(
        read.exported,
        "the snapshot was read, but an export of it failed"
    );
    // What the mirror applies from the checkpoint on ends where the snapshot stands
    // (or short of it, at a value PostgreSQL cannot hold: said, not an error here).
    assert!(
        read.applied.as_ref().is_ok_and(|&a| a <= read.snapshot_lsn)
            && (read.applied == Ok(read.snapshot_lsn) || read.refused_value),
        "the mirror's apply from the checkpoint ended at {:?}, the snapshot stands at lsn {}",
        read.applied,
        read.snapshot_lsn
    );
    let read = read.rows;
    let mut restored = Rows::new();
    for (t, def) in schema.tables.iter().enumerate() {
        let rows = db
            .rows(t as u32)
            .map(|(id, cells)| (id, comparable(&cells)))
            .collect();
        restored.insert(def.name.clone(), rows);
    }
    let nonempty = |r: &Rows| -> Rows {
        r.iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert!(
        nonempty(&read) == nonempty(&restored),
        "the reader's snapshot differs from what recovery restored:\nread {read:?}\nrestored {restored:?}"
    );
    let checkpointed = data_dir.checkpoint(&db).is_ok();
    drop(data_dir);
    if checkpointed {
        if let Err(e) = durable::open(dir, schema, options(&storage)) {
            panic!("a checkpoint of a recovered directory does not open: {e}");
        }
        let rep = durable::verify_with(&storage, dir).expect("verify after checkpoint");
        let _ = rep;
    }
});
