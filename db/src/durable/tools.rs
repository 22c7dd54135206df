//! Maintenance of a data directory without the program that wrote it: the schema the
//! directory itself records (the latest checkpoint's, plus the tables the log
//! introduces), and `wo db checkpoint DIR`, which opens the directory with that schema,
//! writes a checkpoint and starts a new log.

use std::path::Path;

use super::codec::{Item, Reader, StoredTable};
use super::wal::{self, WalHeader};
use super::{
    checkpoint, damaged, derived_schema, io_err, open, CheckpointStats, Failure, OpenError, Options,
};
use crate::Schema;

/// Why `wo db checkpoint` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointDirError {
    /// The directory could not be opened (damaged, locked, an I/O error).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Writing the checkpoint failed; the previous checkpoint and log stay in charge.
    #[error("{0}")]
    Write(Failure),
}

/// The schema a data directory records: the checkpoint's tables, then the tables the
/// log's schema items add, in order. Indexes are not stored, so there are none.
pub fn stored_schema(dir: &Path, options: &Options) -> Result<Schema, OpenError> {
    let storage = options.storage.as_ref();
    let read = |p: &Path| -> Result<Option<Vec<u8>>, OpenError> {
        if !storage.exists(p).map_err(|e| io_err("stat", p, &e))? {
            return Ok(None);
        }
        let f = storage.open_read(p).map_err(|e| io_err("open", p, &e))?;
        let len = f.len().map_err(|e| io_err("fstat", p, &e))?;
        let len = usize::try_from(len).map_err(|_| damaged(p, 0, "the file is too large"))?;
        f.read_vec(0, len)
            .map(Some)
            .map_err(|e| io_err("pread", p, &e))
    };
    let mut defs: Vec<StoredTable> = Vec::new();
    let ckpt_path = dir.join("checkpoint");
    if let Some(buf) = read(&ckpt_path)? {
        let snap = checkpoint::read(&buf).map_err(|(off, what)| damaged(&ckpt_path, off, what))?;
        defs = snap.schema;
    }
    let wal_path = dir.join("wal");
    if let Some(buf) = read(&wal_path)? {
        let hdr = WalHeader::decode(&buf).map_err(|(off, what)| damaged(&wal_path, off, what))?;
        // Only schema items matter here; damage is reported by `open`, which follows.
        let _ = wal::scan(&buf, &hdr, |_, payload| {
            let mut r = Reader::new(payload);
            while !r.at_end() {
                match r.item() {
                    Ok(Item::Schema(tables)) => {
                        for st in tables {
                            if !defs.iter().any(|d| d.name == st.name) {
                                defs.push(st);
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            Ok(())
        });
    }
    derived_schema(&defs).map_err(|message| OpenError::Schema { message })
}

/// `wo db checkpoint DIR`: opens the directory with the schema it records (replaying
/// the log), writes a checkpoint and starts a new, empty log generation.
pub fn checkpoint_dir(dir: &Path, options: Options) -> Result<CheckpointStats, CheckpointDirError> {
    if !options
        .storage
        .exists(dir)
        .map_err(|e| io_err("stat", dir, &e))?
    {
        return Err(io_err("stat", dir, &std::io::Error::from_raw_os_error(2)).into());
    }
    let schema = stored_schema(dir, &options)?;
    let (mut data, db) = open(dir, schema, options)?;
    data.checkpoint(&db).map_err(CheckpointDirError::Write)
}
