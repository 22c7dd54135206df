//! The process's standard input as `io.read_line` and `io.read_all` read it.
//!
//! The bytes read ahead of the program sit in one buffer for the whole process, not one
//! per [`Stdin`]: the REPL makes a new host for each input that declares something, and
//! a line read ahead by one host must reach the next.
//!
//! Invariant: the buffer is the only place input read from fd 0 waits, so a read of fd
//! 0 happens only when the buffer is empty, and it waits exactly when `poll` finds
//! nothing. Before each such read [`Input::read_line`] calls its `before_wait`, where
//! the `io` natives flush stdout: a prompt is always on the screen (or in the driving
//! process's pipe) before the program waits for its answer, even when part of the
//! line had arrived, while a filter whose input is already there writes its output in
//! big pieces. Before this, stdout was flushed before every read, one `write` a line.

use std::io::Read as _;
use std::os::fd::AsFd as _;
use std::sync::Mutex;

use crate::value::{Input, ReadError};

/// How much one read of fd 0 asks for.
const CHUNK: usize = 64 * 1024;

/// Bytes read from fd 0 and not yet handed to the program: `buf[pos..]`.
struct Ahead {
    buf: Vec<u8>,
    pos: usize,
    /// A read of fd 0 failed (it is a directory, the terminal hung up): the error was
    /// reported once, and the input has ended. Read again, such an error comes back
    /// each time, and a program that catches `IO` to go on with the next line (as it
    /// may for a line that is not UTF-8) would never end (helper-62: 19 GB of output).
    broken: bool,
}

static AHEAD: Mutex<Ahead> = Mutex::new(Ahead {
    buf: Vec::new(),
    pos: 0,
    broken: false,
});

impl Ahead {
    fn pending(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Reads the next chunk of fd 0 once everything before it was handed out; returns
    /// how many bytes arrived (0 at the end of the input). Through the standard
    /// library's `Stdin`, whose own buffer (8 KiB) a read of [`CHUNK`] bytes passes by
    /// while it is empty, which it stays: nothing else in wo reads it while a program
    /// can (the REPL reads piped input only for programs that cannot read stdin).
    ///
    /// A descriptor left non-blocking by whoever started wo is waited on with `poll`,
    /// not reported. After an error, the input has ended (`broken`).
    fn fill(&mut self) -> std::io::Result<usize> {
        debug_assert!(self.pending().is_empty());
        self.buf.clear();
        self.pos = 0;
        if self.broken {
            return Ok(0);
        }
        self.buf.resize(CHUNK, 0);
        let got = loop {
            match std::io::stdin().lock().read(&mut self.buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_for_fd0(),
                other => break other,
            }
        };
        self.broken = got.is_err();
        let n = *got.as_ref().unwrap_or(&0);
        self.buf.truncate(n);
        got
    }

    /// Appends to `out` up to `max` bytes, stopping after the first `stop` byte when
    /// there is one; returns how many. Calls `before_wait` before each read of fd 0
    /// that would wait.
    fn take(
        &mut self,
        out: &mut Vec<u8>,
        max: u64,
        stop: Option<u8>,
        before_wait: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> Result<usize, ReadError> {
        let mut taken = 0usize;
        loop {
            let room = usize::try_from(max)
                .unwrap_or(usize::MAX)
                .saturating_sub(taken);
            if room == 0 {
                return Ok(taken);
            }
            if self.pending().is_empty() {
                if fd0_would_block() {
                    before_wait().map_err(ReadError::BeforeWait)?;
                }
                if self.fill().map_err(ReadError::Read)? == 0 {
                    return Ok(taken);
                }
            }
            let pending = self.pending();
            let window = &pending[..pending.len().min(room)];
            let (n, done) = match stop.and_then(|b| window.iter().position(|&x| x == b)) {
                Some(i) => (i + 1, true),
                None => (window.len(), false),
            };
            out.extend_from_slice(&window[..n]);
            self.pos += n;
            taken += n;
            if done {
                return Ok(taken);
            }
        }
    }
}

fn ahead() -> std::sync::MutexGuard<'static, Ahead> {
    // A panic while the lock was held cannot leave the buffer inconsistent (its two
    // fields change together, after the read), so a poisoned lock is still usable.
    AHEAD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The process's standard input (see the module comment).
pub struct Stdin;

impl Input for Stdin {
    fn read_line(
        &mut self,
        buf: &mut Vec<u8>,
        max: u64,
        before_wait: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> Result<usize, ReadError> {
        ahead().take(buf, max, Some(b'\n'), before_wait)
    }

    fn read_all(&mut self, buf: &mut Vec<u8>, max: u64) -> std::io::Result<usize> {
        // Nothing is called before a wait here, so only the read can fail.
        ahead()
            .take(buf, max, None, &mut || Ok(()))
            .map_err(|e| match e {
                ReadError::Read(e) | ReadError::BeforeWait(e) => e,
            })
    }
}

/// Waits until fd 0 has something to read (or its end, or an error).
fn wait_for_fd0() {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::IN,
    )];
    let _ = rustix::event::poll(&mut fds, None);
}

/// Whether a read of fd 0 would wait: `poll` finds nothing to read. Ready means a read
/// returns at once (data, the end of the input, or an error). When poll itself fails,
/// say it would wait, so that stdout is flushed.
fn fd0_would_block() -> bool {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::IN,
    )];
    let now = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    !matches!(rustix::event::poll(&mut fds, Some(&now)), Ok(n) if n > 0)
}
