//! The log thread: the one thread that issues the log's `fdatasync` calls, so that the
//! program's thread never waits for the disk while it has other fibers to run
//! (pipelined group commit, LANGUAGE.md §8 and §9).
//!
//! The program's thread frames each commit's record and `pwrite`s it into the log
//! itself (a write into the page cache costs microseconds), then asks this thread to
//! make everything written so far durable ([`Syncer::request`]). The thread takes
//! every request that has queued up, issues one `fdatasync` on its own handle of the
//! log file, and answers with the highest LSN that sync covers. While one sync runs,
//! the program goes on and writes the records of later commits behind it; they queue
//! as one request and share the next sync. A lone writer never waits for a timer: the
//! thread sleeps in a blocking receive and syncs as soon as a request arrives.
//!
//! Why the covering is right: a request is sent only after its record's `pwrite` has
//! returned, and the thread calls `fdatasync` only after receiving the request, so the
//! sync covers the record (POSIX: data written before the call is durable when it
//! returns).
//!
//! **Invariant:** after a failed sync this thread issues no other sync, ever, and says
//! so once ([`Done::Failed`]); the program fences the log (a failed sync is never
//! retried: LANGUAGE.md §8, fsyncgate). A new log generation (a checkpoint) reaches the
//! thread as [`Request::Switch`], only when no sync is outstanding.
//!
//! After each successful sync, before answering, the thread writes the LSN it covers
//! in the lock file's durable note (`storage::DurableNote`): readers beside the
//! program (`wo db export`, the mirror) learn from it that the last commits are final,
//! which no record in the log says until the next one is written.

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use super::storage::{DurableNote, StorageFile};
use super::switch::{Switch, SwitchError};
use super::wal::LogWriter;

/// What the program's thread asks of the log thread.
pub(crate) enum Request {
    /// Make the log durable up to record `lsn`, which ends at byte `end`, of the
    /// generation whose salt is `salt` (what the note says).
    Sync { lsn: u64, end: u64, salt: u64 },
    /// From now on sync this file (a new log generation).
    Switch(Box<dyn StorageFile>),
    /// Sync a written checkpoint, put it in charge and start the next log generation
    /// (whose file this thread syncs from then on).
    Checkpoint(Box<Switch>),
}

/// What the log thread answers.
#[derive(Debug)]
pub(crate) enum Done {
    /// Every record up to `lsn` (ending at byte `end`) is durable.
    Durable { lsn: u64, end: u64 },
    /// The sync failed; the thread has stopped syncing.
    Failed(io::Error),
    /// A checkpoint's switch ended: the next generation's writer, or why not.
    Checkpoint(Result<Box<LogWriter>, SwitchError>),
}

/// The handle the program's thread keeps: where to send requests and read answers.
#[derive(Debug)]
pub(crate) struct Syncer {
    requests: Option<Sender<Request>>,
    done: Receiver<Done>,
    thread: Option<JoinHandle<()>>,
    /// The highest LSN asked for so far.
    pub requested: u64,
}

impl Syncer {
    /// Starts the log thread on `file` (a handle of the log of its own); it publishes
    /// each sync's LSN in `note`, when given.
    pub(crate) fn start(
        file: Box<dyn StorageFile>,
        skip_sync: bool,
        note: Option<Box<dyn DurableNote>>,
    ) -> io::Result<Syncer> {
        let (req_tx, req_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("wo-log".into())
            .spawn(move || log_thread(file, &req_rx, &done_tx, skip_sync, note))?;
        Ok(Syncer {
            requests: Some(req_tx),
            done: done_rx,
            thread: Some(thread),
            requested: 0,
        })
    }

    /// Asks for a sync covering record `lsn` (ending at byte `end`) of the generation
    /// whose salt is `salt`. A request for an LSN already asked for sends nothing.
    pub(crate) fn request(&mut self, lsn: u64, end: u64, salt: u64) {
        if lsn <= self.requested {
            return;
        }
        self.requested = lsn;
        self.send(Request::Sync { lsn, end, salt });
    }

    /// Hands the thread a written checkpoint to put in charge ([`Done::Checkpoint`]).
    pub(crate) fn checkpoint(&mut self, switch: Switch) {
        self.send(Request::Checkpoint(Box::new(switch)));
    }

    /// Hands the thread the file of a new log generation.
    pub(crate) fn switch(&mut self, file: Box<dyn StorageFile>, first_lsn: u64) {
        self.requested = first_lsn;
        self.send(Request::Switch(file));
    }

    fn send(&self, r: Request) {
        // A send fails only when the thread has stopped after a failure, which the
        // program has already been told (or will be by `wait`).
        if let Some(tx) = &self.requests {
            let _ = tx.send(r);
        }
    }

    /// The next answer, waiting at most `timeout` (`None`: as long as it takes).
    /// `None` when nothing came in time, or the thread is gone.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Option<Done> {
        match timeout {
            None => self.done.recv().ok(),
            Some(t) if t.is_zero() => self.done.try_recv().ok(),
            Some(t) => self.done.recv_timeout(t).ok(),
        }
    }

    /// Stops the thread once it has answered every request already sent (a sync it
    /// is running is let finish, never cut short), and returns the answers not yet
    /// read, in order.
    pub(crate) fn finish(mut self) -> Vec<Done> {
        self.stop();
        self.done.try_iter().collect()
    }

    fn stop(&mut self) {
        // Closing the request channel ends the thread once it has taken the requests
        // queued before.
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the thread turns to after a round of syncs.
enum Next {
    File(Box<dyn StorageFile>),
    Checkpoint(Box<Switch>),
}

fn log_thread(
    mut file: Box<dyn StorageFile>,
    requests: &Receiver<Request>,
    done: &Sender<Done>,
    skip_sync: bool,
    mut note: Option<Box<dyn DurableNote>>,
) {
    loop {
        // Block for a request, then take every one that queued meanwhile: they all
        // share the next sync.
        let Ok(first) = requests.recv() else { return };
        let mut want: Option<(u64, u64, u64)> = None;
        let mut switch = None;
        for r in std::iter::once(first).chain(std::iter::from_fn(|| requests.try_recv().ok())) {
            match r {
                Request::Sync { lsn, end, salt } => {
                    if want.is_none_or(|(l, _, _)| lsn > l) {
                        want = Some((lsn, end, salt));
                    }
                }
                Request::Switch(f) => {
                    // Everything asked of the old file is synced before the switch;
                    // what queued behind it waits for the next round.
                    switch = Some(Next::File(f));
                    break;
                }
                Request::Checkpoint(c) => {
                    switch = Some(Next::Checkpoint(c));
                    break;
                }
            }
        }
        if let Some((lsn, end, salt)) = want {
            let res = if skip_sync { Ok(()) } else { file.fdatasync() };
            let answer = match res {
                Ok(()) => {
                    // Published before the program hears of it: an export started
                    // after an acknowledgement includes the acknowledged change.
                    if let Some(n) = note.as_mut() {
                        n.publish(lsn, salt);
                    }
                    Done::Durable { lsn, end }
                }
                Err(e) => {
                    let _ = done.send(Done::Failed(e));
                    return;
                }
            };
            if done.send(answer).is_err() {
                return;
            }
        }
        match switch {
            None => {}
            Some(Next::File(f)) => file = f,
            Some(Next::Checkpoint(c)) => {
                let res = c.run().and_then(|w| match w.file_handle() {
                    Ok(f) => {
                        file = f;
                        Ok(Box::new(w))
                    }
                    Err(failure) => Err(SwitchError {
                        failure,
                        fence: true,
                    }),
                });
                if done.send(Done::Checkpoint(res)).is_err() {
                    return;
                }
            }
        }
    }
}
