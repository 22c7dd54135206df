//! Maintenance of a data directory without the program that wrote it: the schema the
//! directory itself records (the latest checkpoint's, plus the tables the log
//! introduces), and `wo db checkpoint DIR`, which opens the directory with that schema,
//! writes a checkpoint and starts a new log.

use std::path::Path;

use super::codec::{Item, Reader, StoredTable};
use super::storage::Noted;
use super::wal;
use super::{
    checkpoint, damaged, derived_schema, io_err, open, read_all, read_header, CheckpointStats,
    Failure, Files, OpenError, Options,
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
/// log's schema items add, in order, with the indexes the directory stores (none for
/// a directory written before log format 2).
pub fn stored_schema(dir: &Path, options: &Options) -> Result<Schema, OpenError> {
    let files = Files::open(options.storage.as_ref(), dir)?;
    if files.ckpt.is_none() && files.wal.is_none() {
        return Err(OpenError::NotADataDirectory {
            dir: dir.to_path_buf(),
        });
    }
    let mut defs: Vec<StoredTable> = Vec::new();
    let mut snap_lsn = 0;
    let ckpt_path = dir.join("checkpoint");
    if let Some(f) = &files.ckpt {
        let buf = read_all(f.as_ref(), &ckpt_path, dir)?;
        let snap = checkpoint::read(&buf).map_err(|(off, what)| damaged(&ckpt_path, off, what))?;
        defs = snap.schema;
        snap_lsn = snap.lsn;
    }
    let ckpt_lsn = snap_lsn;
    let wal_path = dir.join("wal");
    if let Some((f, len)) = &files.wal {
        let hdr = read_header(f.as_ref(), &wal_path)?;
        // Only schema items matter here; damage is reported by `open`, which follows.
        // Those of records the checkpoint covers are older than its schema.
        let mut src = wal::LogSource::new(f.as_ref(), *len);
        let _ = wal::scan(&mut src, &hdr, Noted::default(), |fr, payload| {
            if fr.lsn <= ckpt_lsn {
                return Ok(());
            }
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
                    // A misplaced one is damage, which `open` reports.
                    Ok(Item::Migrate(m)) if fr.lsn == hdr.first_lsn => defs = m.schema,
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            Ok(())
        });
    }
    derived_schema(&defs, true).map_err(|message| OpenError::Schema { message })
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

/// The stored table name a name given on the command line (`--table`, `--drop`)
/// probably meant: one that differs only in case (`Items` for `items`), else one
/// that differs in case and an English plural (`Item`, `boxes` for `box`, `categories`
/// for `category`; the class name of a table stored under its plural). `None` when
/// none is that close (helper-102, helper-105).
pub fn near_table_name<'a>(name: &str, stored: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    if let Some(n) = stored.iter().find(|n| n.to_lowercase() == lower) {
        return Some(n);
    }
    let mine = singulars(&lower);
    stored
        .iter()
        .find(|n| {
            singulars(&n.to_lowercase())
                .iter()
                .any(|s| mine.contains(s))
        })
        .copied()
}

/// A lower-case name and what it would be without a plural ending: `notes` → `note`
/// (and `not`), `boxes` → `box`, `categories` → `category`.
fn singulars(lower: &str) -> Vec<String> {
    let mut all = vec![lower.to_string()];
    if let Some(s) = lower.strip_suffix("ies") {
        all.push(format!("{s}y"));
    }
    if let Some(s) = lower.strip_suffix("es") {
        all.push(s.to_string());
    }
    if let Some(s) = lower.strip_suffix('s') {
        all.push(s.to_string());
    }
    all
}

#[cfg(test)]
mod near_name_tests {
    use super::near_table_name;

    #[test]
    fn case_first_then_plurals() {
        let stored = [
            "item", "Items", "ITEM", "boxes", "Category", "notes", "data",
        ];
        assert_eq!(near_table_name("items", &stored), Some("Items"));
        assert_eq!(near_table_name("ITEMS", &stored), Some("Items"));
        assert_eq!(near_table_name("Item", &stored), Some("item"));
        assert_eq!(near_table_name("box", &stored), Some("boxes"));
        assert_eq!(near_table_name("categories", &stored), Some("Category"));
        assert_eq!(near_table_name("Note", &stored), Some("notes"));
        assert_eq!(near_table_name("Datum", &stored), None);
        assert_eq!(near_table_name("zebra", &stored), None);
    }
}
