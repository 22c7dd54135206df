//! The standard modules a program opts into with `use`: `time`, `math`, `env`, `fs`,
//! `random` and `io`. They are the natives that touch the world outside the VM (clocks,
//! the environment, files, standard input and output) or keep state in the host (the
//! random generator), which is why they sit apart from the pure functions of the other
//! modules.
//!
//! `random` is splitmix64 (Steele, Lea and Flood, 2014; the generator Java's
//! `SplittableRandom` uses): its whole state is the 64-bit `Host::rng`, every seed
//! (including 0) is good, and the sequence for a seed is fixed forever, so scripts that
//! call `random.seed(n)` are reproducible across runs and platforms.

use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wo_vm::{limit, Host, ReadError, Stop, TrapKind, Value};

use crate::{args, float, int, internal, new_text, text, trap, Native};

pub(crate) const NATIVES: &[Native] = &[
    ("time.ticks", time_ticks),
    ("time.now", time_now),
    ("time.sleep", time_sleep),
    ("math.sqrt", math_sqrt),
    ("math.floor", math_floor),
    ("math.ceil", math_ceil),
    ("math.round", math_round),
    ("math.pow", math_pow),
    ("env.get", env_get),
    ("fs.read_text", fs_read_text),
    ("fs.write_text", fs_write_text),
    ("fs.exists", fs_exists),
    ("random.seed", random_seed),
    ("random.int", random_int),
    ("random.float", random_float),
    ("io.read_line", io_read_line),
    ("io.read_all", io_read_all),
    ("io.write", io_write),
];

/// Flushes stdout (before `io.read_all`, and from `io.read_line`'s `before_wait`), so a
/// prompt written with `io.write` is visible while the program waits for its answer.
fn flush(host: &mut Host) -> Result<(), Stop> {
    host.out.flush().map_err(|e| write_failed(&e))
}

fn write_failed(e: &std::io::Error) -> Stop {
    trap(TrapKind::Io, format!("cannot write to stdout: {e}"))
}

fn read_failed(e: &std::io::Error) -> Stop {
    trap(TrapKind::Io, format!("cannot read standard input: {e}"))
}

/// Bytes read from standard input as a Text: IO when they are not UTF-8, LIMIT past the
/// size limit.
fn input_text(what: &str, part: &str, bytes: Vec<u8>) -> Result<Value, Stop> {
    limit::check_text(what, Some(bytes.len()))?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(new_text(s)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let byte = e.as_bytes().get(at).copied().unwrap_or_default();
            Err(trap(
                TrapKind::Io,
                format!(
                    "{what}: standard input is not UTF-8 (byte 0x{byte:02x} at offset {at} of {part})"
                ),
            ))
        }
    }
}

/// `io.read_line() -> ?Text`: the next line of standard input without its `\n` or
/// `\r\n` (a last line without a newline counts), or nil at the end of the input.
/// Flushes stdout first when it has to wait; blocks the whole program until a line (or
/// the end) arrives.
fn io_read_line(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("io.read_line", argv)?;
    // A line at the size limit may still end in `\r\n`; one byte more is over it.
    let max = u64::try_from(limit::max_bytes())
        .unwrap_or(u64::MAX)
        .saturating_add(3);
    let mut line = Vec::new();
    // Stdout is flushed each time the read is about to wait (LANGUAGE.md §11), so a
    // prompt is out before the program waits for its answer.
    let out = &mut host.out;
    let n = match host.input.read_line(&mut line, max, &mut || out.flush()) {
        Ok(n) => n,
        Err(ReadError::Read(e)) => return Err(read_failed(&e)),
        Err(ReadError::BeforeWait(e)) => return Err(write_failed(&e)),
    };
    if n == 0 {
        return Ok(Value::Nil);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    input_text("io.read_line", "the line", line)
}

/// `io.read_all() -> Text`: the rest of standard input ("" at the end). Flushes stdout
/// first; blocks the whole program until the input ends.
fn io_read_all(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("io.read_all", argv)?;
    // It waits for the end of the input, whatever has arrived so far.
    flush(host)?;
    // One byte past the limit is enough to know the rest is too long.
    let max = u64::try_from(limit::max_bytes())
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut all = Vec::new();
    host.input
        .read_all(&mut all, max)
        .map_err(|e| read_failed(&e))?;
    input_text("io.read_all", "the rest of the input", all)
}

/// `io.write(v)`: the value's text on stdout, like `print` without the newline. A write
/// error (a closed pipe) traps IO.
fn io_write(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [v] = args("io.write", argv)?;
    let io = |e: std::io::Error| write_failed(&e);
    // A Text is written as it is (no copy of a big text); anything else is rendered
    // within the size limit first.
    if let Value::Text(t) = v {
        host.out.write_all(t.as_bytes()).map_err(io)?;
    } else {
        let t = wo_vm::display::try_to_text(v, &host.classes)?;
        host.out.write_all(t.as_bytes()).map_err(io)?;
    }
    Ok(Value::Nil)
}

/// `time.ticks() -> Int`: microseconds since the program started, from a monotonic
/// clock (never goes back, unaffected by changes to the wall clock).
fn time_ticks(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("time.ticks", argv)?;
    let us = host.started.elapsed().as_micros();
    Ok(Value::Int(i64::try_from(us).unwrap_or(i64::MAX)))
}

/// `time.now() -> Int`: milliseconds since the Unix epoch by the wall clock (negative
/// if the clock is set before 1970).
fn time_now(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("time.now", argv)?;
    let ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    };
    Ok(Value::Int(ms))
}

/// `time.sleep(ms)`: parks the calling fiber for `ms` milliseconds (a negative `ms` as
/// 0) while the others run; the scheduler does the waiting (inside a transaction it
/// blocks the whole program, LANGUAGE.md §9).
fn time_sleep(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [ms] = args("time.sleep", argv)?;
    let ms = u64::try_from(int(ms)?).unwrap_or(0);
    Err(Stop::Sleep(Duration::from_millis(ms)))
}

/// A Float → Float function of `math`.
fn math1(name: &str, argv: &[Value], f: fn(f64) -> f64) -> Result<Value, Stop> {
    let [x] = args(name, argv)?;
    Ok(Value::Float(f(float(x)?)))
}

/// `math.sqrt(x)`: NaN for a negative `x`, `-0.0` for `-0.0`.
fn math_sqrt(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    math1("math.sqrt", argv, f64::sqrt)
}

fn math_floor(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    math1("math.floor", argv, f64::floor)
}

fn math_ceil(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    math1("math.ceil", argv, f64::ceil)
}

/// `math.round(x)`: to the nearest integer, halves away from zero (`2.5` → `3.0`,
/// `-2.5` → `-3.0`).
fn math_round(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    math1("math.round", argv, f64::round)
}

/// `math.pow(x, y)`: IEEE `pow` (`pow(x, 0.0)` is 1.0 even for NaN; a negative `x` with
/// a non-integer `y` is NaN).
fn math_pow(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [x, y] = args("math.pow", argv)?;
    Ok(Value::Float(float(x)?.powf(float(y)?)))
}

/// `env.get(name) -> ?Text`: the environment variable, or nil when it is not set (or
/// `name` cannot be a variable name: empty, or containing `=` or NUL). A value that is
/// not valid UTF-8 has its bad bytes replaced by U+FFFD.
fn env_get(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [name] = args("env.get", argv)?;
    let name = text(name)?;
    if name.is_empty() || name.contains(['=', '\0']) {
        return Ok(Value::Nil);
    }
    Ok(std::env::var_os(&**name).map_or(Value::Nil, |v| new_text(v.to_string_lossy())))
}

/// `fs.read_text(path) -> Text`: the whole file, which must be UTF-8. Traps IO naming
/// the path and the OS error.
fn fs_read_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [path] = args("fs.read_text", argv)?;
    let path = text(path)?;
    let bytes = read_limited(path)?;
    let path = shown_path(path);
    // The first bad byte and where it is, as `io` and the compiler say it (helper-67).
    let content = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let byte = e.as_bytes()[at];
        trap(
            TrapKind::Io,
            format!(
                "cannot read `{path}`: it is not UTF-8 text (byte 0x{byte:02x} at offset {at})"
            ),
        )
    })?;
    Ok(Value::Text(limit::share_text("fs.read_text", &content)?))
}

/// A path as a message shows it: a control character (a NUL, a newline) escaped as
/// in a Text literal, so the message stays one readable line.
fn shown_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    wo_vm::display::write_escaping_controls(&mut out, path);
    out
}

/// The bytes of the file at `path`, refusing (LIMIT) a file over the text limit
/// before reading it, and reading at most one byte past the limit in case it grows.
fn read_limited(path: &str) -> Result<Vec<u8>, Stop> {
    use std::io::Read as _;
    let shown = shown_path(path);
    let io = |e: std::io::Error| trap(TrapKind::Io, format!("cannot read `{shown}`: {e}"));
    let what = format!("fs.read_text of `{shown}`");
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    limit::check_text(&what, usize::try_from(size).ok())?;
    let max = limit::max_bytes();
    let mut bytes = Vec::new();
    let want = usize::try_from(size).unwrap_or(max);
    bytes
        .try_reserve_exact(want)
        .map_err(|_| limit::out_of_memory(&what, want))?;
    let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    file.take(cap).read_to_end(&mut bytes).map_err(io)?;
    limit::check_text(&what, Some(bytes.len()))?;
    Ok(bytes)
}

/// `fs.write_text(path, t)`: creates or truncates the file and writes `t`. Traps IO
/// naming the path and the OS error. Not synced: use the database for durable data.
fn fs_write_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [path, t] = args("fs.write_text", argv)?;
    let (path, t) = (text(path)?, text(t)?);
    std::fs::write(&**path, t.as_bytes()).map_err(|e| {
        trap(
            TrapKind::Io,
            format!("cannot write `{}`: {e}", shown_path(path)),
        )
    })?;
    Ok(Value::Nil)
}

/// `fs.exists(path) -> Bool`: whether something (a file, a directory) is at `path`,
/// following symbolic links; false also when it cannot be looked at.
fn fs_exists(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [path] = args("fs.exists", argv)?;
    Ok(Value::Bool(std::fs::metadata(&**text(path)?).is_ok()))
}

/// The next output of splitmix64, advancing `state`.
fn next_u64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `random.seed(n)`: sets the generator state to `n` (as 64 bits), so the numbers that
/// follow are the same on every run.
fn random_seed(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [n] = args("random.seed", argv)?;
    host.rng = u64::from_ne_bytes(int(n)?.to_ne_bytes());
    Ok(Value::Nil)
}

/// `random.int(lo, hi)`: uniform in `lo..=hi`, without modulo bias (Lemire's
/// multiply-and-reject). Traps FAIL when `lo > hi`.
fn random_int(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [lo, hi] = args("random.int", argv)?;
    let (lo, hi) = (int(lo)?, int(hi)?);
    if lo > hi {
        return Err(trap(
            TrapKind::Fail,
            format!("random.int: lo {lo} is greater than hi {hi}"),
        ));
    }
    // The number of possible results, 1 ..= 2^64.
    let span = i128::from(hi) - i128::from(lo) + 1;
    let Ok(span) = u64::try_from(span) else {
        // Every Int is possible: any 64 bits will do.
        return Ok(Value::Int(i64::from_ne_bytes(
            next_u64(&mut host.rng).to_ne_bytes(),
        )));
    };
    let threshold = span.wrapping_neg() % span;
    loop {
        let m = u128::from(next_u64(&mut host.rng)) * u128::from(span);
        // The low half decides rejection; the high half is the offset, below `span`.
        if (m as u64) >= threshold {
            let offset = i128::from((m >> 64) as u64);
            let v = i64::try_from(i128::from(lo) + offset)
                .map_err(|_| internal("random.int out of range"))?;
            return Ok(Value::Int(v));
        }
    }
}

/// `random.float()`: uniform in `[0, 1)`, a multiple of 2^-53 (the top 53 bits of
/// the next output).
fn random_float(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("random.float", argv)?;
    let bits = next_u64(&mut host.rng) >> 11;
    // Exact: `bits` < 2^53 and the scale is a power of two.
    Ok(Value::Float(bits as f64 / (1u64 << 53) as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// A host whose standard input holds `input`.
    fn host_reading(input: &[u8]) -> TestHost {
        let mut h = host();
        h.host.input = Box::new(std::io::Cursor::new(input.to_vec()));
        h
    }

    #[test]
    fn read_line_strips_newlines_and_ends_with_nil() {
        let mut h = host_reading(b"a\nb\r\n\r\nc\rd\nlast");
        for want in ["a", "b", "", "c\rd", "last"] {
            assert_shows(h.call("io.read_line", &[]), want);
        }
        assert_shows(h.call("io.read_line", &[]), "nil");
        assert_shows(h.call("io.read_all", &[]), "");
        assert_shows(h.call("io.read_line", &[]), "nil");
    }

    #[test]
    fn read_all_takes_the_rest() {
        let mut h = host_reading(b"first\r\nsecond\r\nthird");
        assert_shows(h.call("io.read_line", &[]), "first");
        assert_shows(h.call("io.read_all", &[]), "second\r\nthird");
        assert_shows(h.call("io.read_all", &[]), "");
    }

    #[test]
    fn input_that_is_not_utf8_traps_io() {
        let mut h = host_reading(b"ok\nbad \xff\nnext\n\xc3");
        assert_shows(h.call("io.read_line", &[]), "ok");
        assert_trap(
            h.call("io.read_line", &[]),
            TrapKind::Io,
            "io.read_line: standard input is not UTF-8 (byte 0xff at offset 4 of the line)",
        );
        assert_shows(h.call("io.read_line", &[]), "next");
        assert_trap(
            h.call("io.read_all", &[]),
            TrapKind::Io,
            "io.read_all: standard input is not UTF-8 (byte 0xc3 at offset 0 of the rest of the input)",
        );
    }

    #[test]
    fn input_past_the_size_limit_traps_limit() {
        limit::set_max_bytes(8);
        let mut h = host_reading(b"12345678\r\n123456789\n");
        assert_shows(h.call("io.read_line", &[]), "12345678");
        assert_trap(
            h.call("io.read_line", &[]),
            TrapKind::Limit,
            "io.read_line would make a text of 9 bytes, over the limit of 8 bytes",
        );
        let mut h = host_reading(b"123456789");
        assert_trap(
            h.call("io.read_all", &[]),
            TrapKind::Limit,
            "io.read_all would make a text of 9 bytes, over the limit of 8 bytes",
        );
        limit::set_max_bytes(usize::MAX);
    }

    /// Stdout that keeps what is written until it is flushed.
    struct Held {
        pending: Vec<u8>,
        shown: std::rc::Rc<std::cell::RefCell<Vec<u8>>>,
    }

    impl std::io::Write for Held {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.pending.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.shown.borrow_mut().append(&mut self.pending);
            Ok(())
        }
    }

    /// Input whose reads wait (as a pipe with nothing in it would) while `waits` is set.
    struct Waiting {
        bytes: std::io::Cursor<Vec<u8>>,
        waits: std::rc::Rc<std::cell::Cell<bool>>,
    }

    impl wo_vm::Input for Waiting {
        fn read_line(
            &mut self,
            buf: &mut Vec<u8>,
            max: u64,
            before_wait: &mut dyn FnMut() -> std::io::Result<()>,
        ) -> Result<usize, wo_vm::ReadError> {
            if self.waits.get() {
                before_wait().map_err(wo_vm::ReadError::BeforeWait)?;
            }
            wo_vm::Input::read_line(&mut self.bytes, buf, max, before_wait)
        }

        fn read_all(&mut self, buf: &mut Vec<u8>, max: u64) -> std::io::Result<usize> {
            wo_vm::Input::read_all(&mut self.bytes, buf, max)
        }
    }

    #[test]
    fn reading_flushes_stdout_when_it_would_wait() {
        let shown = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let waits = std::rc::Rc::new(std::cell::Cell::new(true));
        let mut h = host();
        h.host.input = Box::new(Waiting {
            bytes: std::io::Cursor::new(b"answer\nready\nrest".to_vec()),
            waits: waits.clone(),
        });
        h.host.out = Box::new(Held {
            pending: Vec::new(),
            shown: shown.clone(),
        });
        assert_shows(h.call("io.write", &[t("name? ")]), "nil");
        assert_shows(h.call("io.write", &[i(42)]), "nil");
        assert!(shown.borrow().is_empty(), "io.write itself does not flush");
        assert_shows(h.call("io.read_line", &[]), "answer");
        assert_eq!(
            &*shown.borrow(),
            b"name? 42",
            "a read that waits flushes first"
        );
        waits.set(false);
        assert_shows(h.call("io.write", &[t("more")]), "nil");
        assert_shows(h.call("io.read_line", &[]), "ready");
        assert_eq!(&*shown.borrow(), b"name? 42", "input at hand: no flush");
        assert_shows(h.call("io.write", &[ints(&[1, 2])]), "nil");
        assert_shows(h.call("io.read_all", &[]), "rest");
        assert_eq!(
            &*shown.borrow(),
            b"name? 42more[1, 2]",
            "read_all waits for the end: it always flushes"
        );
    }

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    fn f(x: f64) -> Value {
        Value::Float(x)
    }

    fn as_int(v: Result<Value, Stop>) -> i64 {
        match v {
            Ok(Value::Int(n)) => n,
            other => panic!("expected an Int, got {other:?}"),
        }
    }

    fn as_float(v: Result<Value, Stop>) -> f64 {
        match v {
            Ok(Value::Float(x)) => x,
            other => panic!("expected a Float, got {other:?}"),
        }
    }

    /// A fresh path under the system temporary directory, unique to this process.
    fn temp_path(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("wo-stdlib-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
        dir.join(name).to_string_lossy().into_owned()
    }

    #[test]
    fn ticks_are_monotonic_microseconds() {
        let mut h = host();
        let a = as_int(h.call("time.ticks", &[]));
        std::thread::sleep(Duration::from_millis(2));
        let b = as_int(h.call("time.ticks", &[]));
        assert!(a >= 0);
        assert!(b - a >= 2000, "slept 2 ms but ticks went from {a} to {b}");
    }

    #[test]
    fn now_is_milliseconds_since_the_epoch() {
        let now = as_int(call("time.now", &[]));
        // After 2020-01-01 and before 2200-01-01.
        assert!(
            now > 1_577_836_800_000 && now < 7_258_118_400_000,
            "now = {now}"
        );
    }

    #[test]
    fn sleep_asks_the_scheduler_to_park_treating_negative_as_zero() {
        let sleep = |ms| call("time.sleep", &[i(ms)]).err();
        assert_eq!(sleep(-5), Some(Stop::Sleep(Duration::ZERO)));
        assert_eq!(sleep(i64::MIN), Some(Stop::Sleep(Duration::ZERO)));
        assert_eq!(sleep(0), Some(Stop::Sleep(Duration::ZERO)));
        assert_eq!(sleep(1500), Some(Stop::Sleep(Duration::from_millis(1500))));
    }

    #[test]
    fn math_functions() {
        assert_shows(call("math.sqrt", &[f(2.25)]), "1.5");
        assert_shows(call("math.sqrt", &[f(-1.0)]), "NaN");
        assert_shows(call("math.floor", &[f(-1.5)]), "-2.0");
        assert_shows(call("math.ceil", &[f(-1.5)]), "-1.0");
        assert_shows(call("math.ceil", &[f(1.2)]), "2.0");
        assert_shows(call("math.round", &[f(2.5)]), "3.0");
        assert_shows(call("math.round", &[f(-2.5)]), "-3.0");
        assert_shows(call("math.round", &[f(0.49999999999999994)]), "0.0");
        assert_shows(call("math.round", &[f(-0.4)]), "-0.0");
        assert_shows(call("math.pow", &[f(2.0), f(10.0)]), "1024.0");
        assert_shows(call("math.pow", &[f(f64::NAN), f(0.0)]), "1.0");
        assert_shows(call("math.pow", &[f(-8.0), f(1.0 / 3.0)]), "NaN");
        assert_fault(call("math.sqrt", &[i(4)]), "expected a Float");
    }

    #[test]
    fn env_get_reads_the_environment() {
        // PATH is set in every environment the tests run in; the rest never are.
        assert!(matches!(call("env.get", &[t("PATH")]), Ok(Value::Text(_))));
        assert_shows(call("env.get", &[t("WO_STDLIB_SURELY_UNSET_42")]), "nil");
        assert_shows(call("env.get", &[t("")]), "nil");
        assert_shows(call("env.get", &[t("A=B")]), "nil");
        assert_shows(call("env.get", &[t("A\0B")]), "nil");
    }

    #[test]
    fn fs_round_trip() {
        let path = temp_path("round-trip.txt");
        assert_shows(call("fs.write_text", &[t(&path), t("héllo\nwo")]), "nil");
        assert_shows(call("fs.exists", &[t(&path)]), "true");
        assert_shows(call("fs.read_text", &[t(&path)]), "héllo\nwo");
        assert_shows(call("fs.write_text", &[t(&path), t("")]), "nil");
        assert_shows(call("fs.read_text", &[t(&path)]), "");
        std::fs::remove_file(&path).expect("the test file exists");
        assert_shows(call("fs.exists", &[t(&path)]), "false");
    }

    #[test]
    fn fs_errors_trap_io_naming_the_path() {
        let missing = temp_path("missing.txt");
        assert_trap(
            call("fs.read_text", &[t(&missing)]),
            TrapKind::Io,
            &format!("cannot read `{missing}`: No such file or directory (os error 2)"),
        );
        let no_dir = temp_path("no-such-dir/x.txt");
        assert_trap(
            call("fs.write_text", &[t(&no_dir), t("x")]),
            TrapKind::Io,
            &format!("cannot write `{no_dir}`: "),
        );
        let dir = temp_path("");
        assert_trap(
            call("fs.read_text", &[t(&dir)]),
            TrapKind::Io,
            "cannot read",
        );
        assert_shows(call("fs.exists", &[t(&dir)]), "true");
        assert_shows(call("fs.exists", &[t("a\0b")]), "false");
        assert_trap(
            call("fs.read_text", &[t("a\0b")]),
            TrapKind::Io,
            "cannot read `a\\u{0}b`",
        );
        assert_trap(
            call("fs.read_text", &[t("a\nb\tc")]),
            TrapKind::Io,
            "cannot read `a\\nb\\tc`",
        );
    }

    #[test]
    fn fs_read_text_refuses_invalid_utf8() {
        let path = temp_path("latin1.txt");
        std::fs::write(&path, b"caf\xe9").expect("the temporary directory is writable");
        assert_trap(
            call("fs.read_text", &[t(&path)]),
            TrapKind::Io,
            &format!("cannot read `{path}`: it is not UTF-8 text (byte 0xe9 at offset 3)"),
        );
        std::fs::remove_file(&path).expect("the test file exists");
    }

    #[test]
    fn splitmix64_matches_the_reference() {
        // The first outputs for seed 0 of the reference implementation (Vigna).
        let mut s = 0;
        assert_eq!(next_u64(&mut s), 0xe220_a839_7b1d_cdaf);
        assert_eq!(next_u64(&mut s), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(next_u64(&mut s), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let draw = |seed: i64| {
            let mut h = host();
            h.host.rng = 12345;
            assert_shows(h.call("random.seed", &[i(seed)]), "nil");
            let ints: Vec<i64> = (0..20)
                .map(|_| as_int(h.call("random.int", &[i(-10), i(10)])))
                .collect();
            let floats: Vec<u64> = (0..20)
                .map(|_| as_float(h.call("random.float", &[])).to_bits())
                .collect();
            (ints, floats)
        };
        assert_eq!(draw(42), draw(42));
        assert_eq!(draw(-1), draw(-1));
        assert_ne!(draw(42), draw(43));
    }

    #[test]
    fn random_int_is_inclusive_and_unbiased_enough() {
        let mut h = host();
        let mut seen = [0u32; 6];
        for _ in 0..6000 {
            let n = as_int(h.call("random.int", &[i(1), i(6)]));
            assert!((1..=6).contains(&n), "{n} is not in 1..=6");
            seen[usize::try_from(n - 1).expect("checked in range")] += 1;
        }
        for (face, n) in seen.iter().enumerate() {
            assert!(
                (800..1200).contains(n),
                "face {} came {n} times in 6000",
                face + 1
            );
        }
        assert_shows(h.call("random.int", &[i(7), i(7)]), "7");
        for _ in 0..100 {
            let n = as_int(h.call("random.int", &[i(i64::MAX - 1), i(i64::MAX)]));
            assert!(n >= i64::MAX - 1);
            let n = as_int(h.call("random.int", &[i(i64::MIN), i(i64::MIN + 1)]));
            assert!(n <= i64::MIN + 1);
        }
        // The full range takes any 64 bits.
        let mut negative = false;
        for _ in 0..64 {
            negative |= as_int(h.call("random.int", &[i(i64::MIN), i(i64::MAX)])) < 0;
        }
        assert!(negative);
    }

    #[test]
    fn random_int_traps_when_lo_is_above_hi() {
        assert_trap(
            call("random.int", &[i(5), i(3)]),
            TrapKind::Fail,
            "random.int: lo 5 is greater than hi 3",
        );
    }

    #[test]
    fn random_float_is_in_the_unit_interval() {
        let mut h = host();
        let mut total = 0.0;
        for _ in 0..10_000 {
            let x = as_float(h.call("random.float", &[]));
            assert!((0.0..1.0).contains(&x), "{x} is not in [0, 1)");
            total += x;
        }
        let mean = total / 10_000.0;
        assert!((0.45..0.55).contains(&mean), "mean {mean}");
    }
}
