//! The size limit of LANGUAGE.md §10: no Text over 1 GiB of UTF-8 and no list whose
//! elements take over 1 GiB. Every way of building a Text or a list (`..`, `${…}`,
//! `text`, `print`, `repeat`, `join`, `replace`, `split`, `push`, query results, …)
//! checks the size it is about to build here, before allocating, and traps `LIMIT`;
//! the big buffers are reserved with `try_reserve`, so running out of memory there
//! is a `LIMIT` trap too, not an abort.
//!
//! The limit can be lowered on one thread ([`set_max_bytes`]) so tests reach it
//! without allocating gigabytes.

use std::cell::Cell;
use std::rc::Rc;

use crate::value::{Trap, TrapKind, Value};

/// The largest Text in bytes, and the most bytes a list's elements may take: 1 GiB.
pub const MAX_BYTES: usize = 1 << 30;

/// The most fibers alive at once besides `main` (LANGUAGE.md §10): past it, `spawn`
/// traps `LIMIT`. A parked fiber takes about 500 bytes, so about 500 MB at the limit.
pub const MAX_FIBERS: usize = 1_000_000;

thread_local! {
    static LIMIT: Cell<usize> = const { Cell::new(MAX_BYTES) };
    static FIBERS: Cell<usize> = const { Cell::new(MAX_FIBERS) };
}

/// The fiber limit in force on this thread: [`MAX_FIBERS`] unless a test lowered it.
#[inline]
pub fn max_fibers() -> usize {
    FIBERS.with(Cell::get)
}

/// Sets the fiber limit on this thread (at most [`MAX_FIBERS`]), for tests.
pub fn set_max_fibers(n: usize) {
    FIBERS.with(|l| l.set(n.min(MAX_FIBERS)));
}

/// The limit in force on this thread: [`MAX_BYTES`] unless a test lowered it.
#[inline]
pub fn max_bytes() -> usize {
    LIMIT.with(Cell::get)
}

/// Sets the limit on this thread (at most [`MAX_BYTES`]). For tests: it makes the
/// `LIMIT` paths reachable with small values.
pub fn set_max_bytes(n: usize) {
    LIMIT.with(|l| l.set(n.min(MAX_BYTES)));
}

/// The most elements a list may hold: [`max_bytes`] of 24-byte values.
#[inline]
pub fn max_list_len() -> usize {
    max_bytes() / std::mem::size_of::<Value>()
}

fn limit_text() -> String {
    match max_bytes() {
        MAX_BYTES => "1 GiB".to_string(),
        n => format!("{n} bytes"),
    }
}

/// `Ok` when a Text of `n` bytes (`None`: more than a `usize` counts) is within the
/// limit; otherwise the `LIMIT` trap, naming `what` built it.
#[inline]
pub fn check_text(what: &str, n: Option<usize>) -> Result<(), Trap> {
    match n {
        Some(n) if n <= max_bytes() => Ok(()),
        _ => Err(text_too_large(what, n)),
    }
}

#[cold]
fn text_too_large(what: &str, n: Option<usize>) -> Trap {
    let limit = limit_text();
    Trap::new(
        TrapKind::Limit,
        match n {
            Some(n) => format!("{what} would make a text of {n} bytes, over the limit of {limit}"),
            None => format!("{what} would make a text over the limit of {limit}"),
        },
    )
}

/// `Ok` when a list of `n` elements (`None`: more than a `usize` counts) is within
/// the limit; otherwise the `LIMIT` trap, naming `what` built it.
#[inline]
pub fn check_list(what: &str, n: Option<usize>) -> Result<(), Trap> {
    match n {
        Some(n) if n <= max_list_len() => Ok(()),
        _ => Err(list_too_large(what, n)),
    }
}

#[cold]
fn list_too_large(what: &str, n: Option<usize>) -> Trap {
    let (limit, max) = (limit_text(), max_list_len());
    Trap::new(
        TrapKind::Limit,
        match n {
            Some(n) => format!(
                "{what} would make a list of {n} elements, over the limit of {limit} \
                 ({max} elements)"
            ),
            None => format!("{what} would make a list over the limit of {limit}"),
        },
    )
}

/// The `LIMIT` trap for an allocation the system refused.
#[cold]
pub fn out_of_memory(what: &str, bytes: usize) -> Trap {
    Trap::new(
        TrapKind::Limit,
        format!("{what}: out of memory allocating {bytes} bytes"),
    )
}

/// Empties `buf` and makes room for a Text of `n` bytes: checks the limit, then
/// reserves with `try_reserve`, so a refused allocation traps instead of aborting.
pub fn text_buffer(buf: &mut String, what: &str, n: usize) -> Result<(), Trap> {
    check_text(what, Some(n))?;
    buf.clear();
    buf.try_reserve(n).map_err(|_| out_of_memory(what, n))
}

/// Makes room for `extra` more elements in `list`: checks the limit on the new length,
/// then reserves with `try_reserve`.
pub fn list_room(list: &mut Vec<Value>, what: &str, extra: usize) -> Result<(), Trap> {
    check_list(what, list.len().checked_add(extra))?;
    list.try_reserve(extra)
        .map_err(|_| out_of_memory(what, extra.saturating_mul(std::mem::size_of::<Value>())))
}

/// Texts at least this long are shared through [`share_text`]'s probe.
const PROBE_FROM: usize = 1 << 20;

/// `s` as a shared Text. Making an `Rc<str>` copies `s` into a new allocation that
/// cannot be tried, so for a big text the same amount is first reserved (and given
/// back) with `try_reserve`: when the system refuses it, that is a `LIMIT` trap here
/// instead of an abort in the copy.
pub fn share_text(what: &str, s: &str) -> Result<Rc<str>, Trap> {
    if s.len() >= PROBE_FROM {
        let bytes = s.len().saturating_add(2 * std::mem::size_of::<usize>());
        let mut probe: Vec<u8> = Vec::new();
        probe
            .try_reserve_exact(bytes)
            .map_err(|_| out_of_memory(what, bytes))?;
    }
    Ok(Rc::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_one_gib_and_can_be_lowered_per_thread() {
        assert_eq!(max_bytes(), MAX_BYTES);
        assert!(check_text("x", Some(MAX_BYTES)).is_ok());
        let e = check_text("`..`", Some(MAX_BYTES + 1)).expect_err("over");
        assert_eq!(e.kind, TrapKind::Limit);
        assert_eq!(
            e.message,
            "`..` would make a text of 1073741825 bytes, over the limit of 1 GiB"
        );
        assert!(check_text("x", None).is_err());
        assert_eq!(max_list_len(), MAX_BYTES / 24);
        assert!(check_list("push", Some(MAX_BYTES / 24)).is_ok());
        assert!(check_list("push", Some(MAX_BYTES / 24 + 1)).is_err());
        std::thread::spawn(|| {
            set_max_bytes(100);
            assert_eq!(
                check_text("t", Some(101)).expect_err("over").message,
                "t would make a text of 101 bytes, over the limit of 100 bytes"
            );
            assert_eq!(max_list_len(), 4);
        })
        .join()
        .expect("the thread ran");
        assert_eq!(max_bytes(), MAX_BYTES, "other threads keep the real limit");
    }

    #[test]
    fn buffers_are_reserved_or_refused() {
        let mut s = String::from("old");
        text_buffer(&mut s, "t", 10).expect("room");
        assert!(s.is_empty() && s.capacity() >= 10);
        assert!(text_buffer(&mut s, "t", MAX_BYTES + 1).is_err());
        let mut l = vec![Value::Nil];
        list_room(&mut l, "push", 1).expect("room");
        assert!(list_room(&mut l, "push", usize::MAX).is_err());
    }
}
