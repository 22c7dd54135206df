//! Core functions that need no `use`: printing and `text` (through the VM's printing
//! rules in `wo_vm::display`, so `print` and `${…}` can never disagree), parsing numbers,
//! `abs`/`min`/`max` on scalars, `fail`, `assert`, `exit` and `yield`. They share this
//! module because none of them works on a container.

use std::io::Write;
use std::str::FromStr;

use wo_vm::{display, Host, Stop, TrapKind, Value};

use crate::{args, boolean, float, float_order, int, internal, text, trap, Native};

pub(crate) const NATIVES: &[Native] = &[
    ("print", print),
    ("print_err", print_err),
    ("text", to_text),
    ("parse_int", parse_int),
    ("parse_float", parse_float),
    ("abs_int", abs_int),
    ("abs_float", abs_float),
    ("min_int", min_int),
    ("max_int", max_int),
    ("min_float", min_float),
    ("max_float", max_float),
    ("min_text", min_text),
    ("max_text", max_text),
    ("fail", fail),
    ("assert", assert),
    ("assert_msg", assert_msg),
    ("exit", exit),
    ("yield", yield_now),
];

/// Writes the value's text and a newline to `w`; a failed write traps IO.
fn write_line(w: &mut dyn Write, stream: &str, line: &str) -> Result<Value, Stop> {
    w.write_all(line.as_bytes())
        .and_then(|()| w.write_all(b"\n"))
        .map_err(|e| trap(TrapKind::Io, format!("cannot write to {stream}: {e}")))?;
    Ok(Value::Nil)
}

/// `print(v)`: the value's text and a newline on stdout. A write error (a closed pipe)
/// traps IO.
fn print(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [v] = args("print", argv)?;
    // A Text is written as it is (no copy of a big text); anything else is rendered
    // within the size limit first.
    if let Value::Text(t) = v {
        return write_line(&mut host.out, "stdout", t);
    }
    let line = display::try_to_text(v, &host.classes)?;
    write_line(&mut host.out, "stdout", &line)
}

/// `print_err(v)`: the value's text and a newline on stderr.
fn print_err(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [v] = args("print_err", argv)?;
    // A Text is written as it is (no copy of a big text); anything else is rendered
    // within the size limit first.
    if let Value::Text(t) = v {
        return write_line(&mut host.err, "stderr", t);
    }
    let line = display::try_to_text(v, &host.classes)?;
    write_line(&mut host.err, "stderr", &line)
}

/// `text(v)`: any value as Text by the printing rules (Text itself unchanged).
fn to_text(host: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [v] = args("text", argv)?;
    Ok(Value::Text(display::try_text_of(v, &host.classes)?))
}

/// `parse_int(t) -> ?Int`: an optional `+` or `-` and one or more ASCII decimal digits,
/// nothing else (no white space, no `_`, no `0x`). Nil when `t` is not of that form or
/// the number does not fit in an Int.
fn parse_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("parse_int", argv)?;
    let t = text(t)?;
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Value::Nil);
    }
    Ok(i64::from_str(t).map_or(Value::Nil, Value::Int))
}

/// `parse_float(t) -> ?Float`: what Rust's `f64::from_str` accepts — an optional sign,
/// decimal digits with an optional `.` and exponent (`1`, `.5`, `5.`, `1e-3`), or
/// `inf`, `infinity`, `nan` in any case. No white space. Nil otherwise (and on empty).
/// Out-of-range values round to `inf` or `0.0` as IEEE 754 says.
fn parse_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("parse_float", argv)?;
    Ok(f64::from_str(text(t)?).map_or(Value::Nil, Value::Float))
}

/// `abs(i)`; traps OVERFLOW on the minimum Int, whose absolute value is no Int.
fn abs_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [i] = args("abs_int", argv)?;
    let i = int(i)?;
    i.checked_abs()
        .map(Value::Int)
        .ok_or_else(|| trap(TrapKind::Overflow, format!("abs({i}) overflows Int")))
}

/// `abs(f)`: clears the sign (`abs(-0.0)` is `0.0`, `abs(NaN)` is NaN).
fn abs_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [f] = args("abs_float", argv)?;
    Ok(Value::Float(float(f)?.abs()))
}

fn min_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("min_int", argv)?;
    Ok(Value::Int(int(a)?.min(int(b)?)))
}

fn max_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("max_int", argv)?;
    Ok(Value::Int(int(a)?.max(int(b)?)))
}

/// The smaller Float by [`float_order`], the order of `sort` and `order by`: so
/// `min(-0.0, 0.0)` is `-0.0` and a NaN loses to every number (`min(NaN, 1.0)` is `1.0`).
fn fmin(a: f64, b: f64) -> f64 {
    if float_order(b, a).is_lt() {
        b
    } else {
        a
    }
}

/// The larger Float by [`float_order`]: `max(-0.0, 0.0)` is `0.0` and a NaN wins over
/// every number (every NaN sorts last).
fn fmax(a: f64, b: f64) -> f64 {
    if float_order(b, a).is_gt() {
        b
    } else {
        a
    }
}

/// `min(a, b)` on Float; see [`fmin`].
fn min_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("min_float", argv)?;
    Ok(Value::Float(fmin(float(a)?, float(b)?)))
}

/// `max(a, b)` on Float; see [`fmax`].
fn max_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("max_float", argv)?;
    Ok(Value::Float(fmax(float(a)?, float(b)?)))
}

/// `min(a, b)` on Text in byte order (the order of `<`); `a` when they are equal.
fn min_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("min_text", argv)?;
    Ok(if text(b)? < text(a)? { b } else { a }.clone())
}

/// `max(a, b)` on Text in byte order; `a` when they are equal.
fn max_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [a, b] = args("max_text", argv)?;
    Ok(if text(b)? > text(a)? { b } else { a }.clone())
}

/// `fail(msg)`: traps FAIL with `msg`.
fn fail(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [msg] = args("fail", argv)?;
    Err(trap(TrapKind::Fail, text(msg)?.to_string()))
}

/// `assert(cond)`: traps ASSERT with `assertion failed` when `cond` is false.
fn assert(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [cond] = args("assert", argv)?;
    if boolean(cond)? {
        Ok(Value::Nil)
    } else {
        Err(trap(TrapKind::Assert, "assertion failed"))
    }
}

/// `assert(cond, msg)`: traps ASSERT with `msg` when `cond` is false.
fn assert_msg(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [cond, msg] = args("assert_msg", argv)?;
    let msg = text(msg)?;
    if boolean(cond)? {
        Ok(Value::Nil)
    } else {
        Err(trap(TrapKind::Assert, msg.to_string()))
    }
}

/// `exit(code)`: ends the program with the low 8 bits of `code` as its status, like
/// `main`'s return value (`exit(-1)` exits 255, `exit(256)` exits 0). Not catchable.
fn exit(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [code] = args("exit", argv)?;
    let status = i32::try_from(int(code)? & 0xff).map_err(internal)?;
    Err(Stop::Exit(status))
}

/// `yield()`: lets the other runnable fibers take their turn first (the scheduler
/// does it; inside a transaction it does nothing).
fn yield_now(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [] = args("yield", argv)?;
    Err(Stop::Yield)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn print_writes_the_text_and_a_newline() {
        let mut h = host();
        assert_shows(h.call("print", &[t("héllo")]), "nil");
        assert_shows(h.call("print", &[Value::Int(42)]), "nil");
        assert_shows(h.call("print", &[texts(&["a\"b"])]), "nil");
        assert_shows(h.call("print", &[Value::Float(1.0)]), "nil");
        assert_eq!(h.out.contents(), "héllo\n42\n[\"a\\\"b\"]\n1.0\n");
        assert_eq!(h.err.contents(), "");
    }

    #[test]
    fn print_err_writes_to_stderr() {
        let mut h = host();
        assert_shows(h.call("print_err", &[Value::Nil]), "nil");
        assert_shows(h.call("print_err", &[Value::Bool(false)]), "nil");
        assert_eq!(h.err.contents(), "nil\nfalse\n");
        assert_eq!(h.out.contents(), "");
    }

    #[test]
    fn a_failed_write_traps_io() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut h = host();
        h.host.out = Box::new(Closed);
        h.host.err = Box::new(Closed);
        assert_trap(
            h.call("print", &[t("x")]),
            TrapKind::Io,
            "cannot write to stdout: ",
        );
        assert_trap(
            h.call("print_err", &[t("x")]),
            TrapKind::Io,
            "cannot write to stderr: ",
        );
    }

    #[test]
    fn text_converts_by_the_printing_rules() {
        assert_shows(call("text", &[Value::Int(-7)]), "-7");
        assert_shows(call("text", &[Value::Float(0.1)]), "0.1");
        assert_shows(call("text", &[Value::Float(1e16)]), "1e16");
        assert_shows(call("text", &[t("as is")]), "as is");
        assert_shows(call("text", &[texts(&["q"])]), "[\"q\"]");
        assert!(matches!(call("text", &[Value::Nil]), Ok(Value::Text(s)) if &*s == "nil"));
    }

    #[test]
    fn parse_int_accepts_a_sign_and_digits_only() {
        assert_shows(call("parse_int", &[t("42")]), "42");
        assert_shows(call("parse_int", &[t("-42")]), "-42");
        assert_shows(call("parse_int", &[t("+7")]), "7");
        assert_shows(call("parse_int", &[t("007")]), "7");
        assert_shows(call("parse_int", &[t("-0")]), "0");
        assert_shows(
            call("parse_int", &[t("-9223372036854775808")]),
            "-9223372036854775808",
        );
        assert_shows(
            call("parse_int", &[t("9223372036854775807")]),
            "9223372036854775807",
        );
        for bad in [
            "",
            "+",
            "-",
            " 1",
            "1 ",
            "1_000",
            "0x10",
            "1.0",
            "--1",
            "+-1",
            "١",
            "9223372036854775808",
            "-9223372036854775809",
        ] {
            assert_shows(call("parse_int", &[t(bad)]), "nil");
        }
    }

    #[test]
    fn parse_float_accepts_what_rust_accepts() {
        assert_shows(call("parse_float", &[t("1.5")]), "1.5");
        assert_shows(call("parse_float", &[t("-2")]), "-2.0");
        assert_shows(call("parse_float", &[t(".5")]), "0.5");
        assert_shows(call("parse_float", &[t("1e3")]), "1000.0");
        assert_shows(call("parse_float", &[t("inf")]), "inf");
        assert_shows(call("parse_float", &[t("-infinity")]), "-inf");
        assert_shows(call("parse_float", &[t("NaN")]), "NaN");
        assert_shows(call("parse_float", &[t("1e400")]), "inf");
        for bad in ["", " 1", "1 ", "1,5", "e5", "1_0", "0x1p3", "."] {
            assert_shows(call("parse_float", &[t(bad)]), "nil");
        }
    }

    #[test]
    fn abs_traps_on_the_minimum_int() {
        assert_shows(call("abs_int", &[Value::Int(-5)]), "5");
        assert_shows(
            call("abs_int", &[Value::Int(i64::MAX)]),
            "9223372036854775807",
        );
        assert_shows(
            call("abs_int", &[Value::Int(-i64::MAX)]),
            "9223372036854775807",
        );
        assert_trap(
            call("abs_int", &[Value::Int(i64::MIN)]),
            TrapKind::Overflow,
            "abs(-9223372036854775808) overflows Int",
        );
        assert_shows(call("abs_float", &[Value::Float(-2.5)]), "2.5");
        assert_shows(call("abs_float", &[Value::Float(-0.0)]), "0.0");
        assert_shows(call("abs_float", &[Value::Float(f64::NEG_INFINITY)]), "inf");
    }

    #[test]
    fn min_and_max_on_scalars() {
        let (i, f) = (Value::Int, Value::Float);
        assert_shows(call("min_int", &[i(3), i(-4)]), "-4");
        assert_shows(call("max_int", &[i(3), i(-4)]), "3");
        assert_shows(call("min_float", &[f(1.5), f(0.5)]), "0.5");
        assert_shows(call("max_float", &[f(1.5), f(0.5)]), "1.5");
        assert_shows(call("min_float", &[f(0.0), f(-0.0)]), "-0.0");
        assert_shows(call("max_float", &[f(-0.0), f(0.0)]), "0.0");
        // Every NaN sorts last (LANGUAGE.md §7), whatever its sign bit.
        assert_shows(call("min_float", &[f(f64::NAN), f(1.0)]), "1.0");
        assert_shows(call("min_float", &[f(1.0), f(f64::NAN)]), "1.0");
        assert_shows(call("min_float", &[f(-f64::NAN), f(f64::INFINITY)]), "inf");
        assert_shows(call("max_float", &[f(f64::NAN), f(1.0)]), "NaN");
        assert_shows(call("max_float", &[f(1.0), f(f64::NAN)]), "NaN");
        assert_shows(call("min_float", &[f(f64::NEG_INFINITY), f(1.0)]), "-inf");
        assert_shows(call("min_text", &[t("b"), t("ab")]), "ab");
        assert_shows(call("max_text", &[t("b"), t("ab")]), "b");
        // Byte order: upper case before lower case, ASCII before other letters.
        assert_shows(call("min_text", &[t("a"), t("Z")]), "Z");
        assert_shows(call("max_text", &[t("z"), t("é")]), "é");
    }

    #[test]
    fn fail_and_assert_trap() {
        assert_trap(call("fail", &[t("boom 42")]), TrapKind::Fail, "boom 42");
        assert_shows(call("assert", &[Value::Bool(true)]), "nil");
        assert_trap(
            call("assert", &[Value::Bool(false)]),
            TrapKind::Assert,
            "assertion failed",
        );
        assert_shows(call("assert_msg", &[Value::Bool(true), t("no")]), "nil");
        assert_trap(
            call("assert_msg", &[Value::Bool(false), t("x must be positive")]),
            TrapKind::Assert,
            "x must be positive",
        );
    }

    #[test]
    fn exit_keeps_the_low_eight_bits() {
        let exit_with = |code: i64| call("exit", &[Value::Int(code)]).err();
        assert_eq!(exit_with(0), Some(Stop::Exit(0)));
        assert_eq!(exit_with(3), Some(Stop::Exit(3)));
        assert_eq!(exit_with(255), Some(Stop::Exit(255)));
        assert_eq!(exit_with(256), Some(Stop::Exit(0)));
        assert_eq!(exit_with(-1), Some(Stop::Exit(255)));
        assert_eq!(exit_with(i64::MIN), Some(Stop::Exit(0)));
    }

    #[test]
    fn yield_asks_the_scheduler_to_switch() {
        assert_eq!(call("yield", &[]).err(), Some(Stop::Yield));
    }

    #[test]
    fn mismatched_values_are_internal_traps() {
        assert_fault(call("abs_int", &[t("1")]), "expected an Int, got a Text");
        assert_fault(call("fail", &[Value::Nil]), "expected a Text, got nil");
        assert_fault(call("assert", &[Value::Int(1)]), "");
        assert_fault(call("print", &[]), "`print` takes 1 argument, got 0");
    }
}
