//! Putting a written checkpoint in charge: `fsync` it, rename it over `checkpoint`,
//! sync the directory, and start the next log generation. Cut out of `mod.rs` because
//! two threads run it: the program's thread for `wo db checkpoint` and synchronous
//! checkpoints, and the log thread for the automatic checkpoints of a running
//! program (so that the program's fibers go on reading during the syncs).
//!
//! A failure up to the rename leaves the old checkpoint and log in charge (the new
//! file is removed, the log is not fenced); a failure from the rename on fences it.

use std::path::PathBuf;
use std::sync::Arc;

use super::storage::{Storage, StorageFile};
use super::wal::{failure, LogWriter};
use super::Failure;

/// A checkpoint written to `dir/checkpoint.tmp` (not yet synced), with what the next
/// log generation needs.
pub(crate) struct Switch {
    pub storage: Arc<dyn Storage>,
    pub dir: PathBuf,
    /// What `dir` named when its lock was taken (`super::same_dir`).
    pub dir_id: Option<(u64, u64)>,
    pub file: Box<dyn StorageFile>,
    /// The LSN the checkpoint covers; the new log starts after it.
    pub lsn: u64,
    /// The salt of the new log generation (named in the checkpoint's header).
    pub salt: u64,
    /// The new log's first record (the stored schema).
    pub first: Vec<u8>,
    pub prealloc: u64,
}

/// Why a switch failed, and whether the log is to be fenced.
#[derive(Debug)]
pub(crate) struct SwitchError {
    pub failure: Failure,
    pub fence: bool,
}

impl Switch {
    /// Syncs the checkpoint and makes it and a new log generation current. Returns
    /// the new generation's writer.
    pub(crate) fn run(mut self) -> Result<LogWriter, SwitchError> {
        let tmp = self.dir.join("checkpoint.tmp");
        let path = self.dir.join("checkpoint");
        // Moved away under the program (checked after the sync, just before the
        // rename): nothing is renamed or created by name, and the `checkpoint.tmp`
        // the path names now is not this program's to remove.
        let fsynced = self.file.fsync();
        if let Err(failure) = super::same_dir(self.storage.as_ref(), &self.dir, self.dir_id) {
            return Err(SwitchError {
                failure,
                fence: false,
            });
        }
        if let Err(e) = fsynced {
            let _ = self.storage.remove(&tmp);
            return Err(SwitchError {
                failure: failure("fsync", &tmp, &e),
                fence: false,
            });
        }
        let switched = (|| {
            self.storage
                .rename(&tmp, &path)
                .map_err(|e| failure("rename", &tmp, &e))?;
            self.storage
                .sync_dir(&self.dir)
                .map_err(|e| failure("fsync", &self.dir, &e))?;
            // Moved between the rename and here: the next log is not made by name
            // in what the path names now (the log is fenced).
            super::same_dir(self.storage.as_ref(), &self.dir, self.dir_id)?;
            LogWriter::create(
                &self.storage,
                &self.dir,
                self.lsn + 1,
                self.salt,
                std::mem::take(&mut self.first),
                self.prealloc,
            )
        })();
        switched.map_err(|failure| SwitchError {
            failure,
            fence: true,
        })
    }
}
