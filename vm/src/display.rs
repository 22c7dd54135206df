//! The printing rules of LANGUAGE.md §11: how `print`, `text`, `${…}` and the
//! `TO_TEXT` instruction turn any value into Text. Kept in one module so the
//! interpreter and the standard library cannot disagree about a value's text.
//!
//! Text is written as is at the top level and quoted with the §2 escapes inside a
//! list, map or object; Floats follow Rust's `{:?}`; a list, map or object that is
//! already being printed (a cycle) is written as `…`. A row prints as its class and id,
//! `Employee(3)`, in every context. A list, map or object nested deeper than
//! [`MAX_DEPTH`] is written as [`DEEP_MARKER`] (not `…`: it is no cycle), so printing
//! never overflows the Rust stack.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

use wo_bytecode::Class;

use crate::limit;
use crate::value::{KeyRef, Trap, Value};

/// How deep lists, maps and objects are printed before the rest is written as
/// [`DEEP_MARKER`].
pub const MAX_DEPTH: usize = 512;

/// What stands for a list, map or object nested deeper than [`MAX_DEPTH`] levels.
pub const DEEP_MARKER: &str = "<too deep>";

/// How many small Ints (`0`, `1`, … ) have their Text made once per thread and shared.
const N_SMALL_INTS: i64 = 256;

thread_local! {
    /// The Texts of `0 … N_SMALL_INTS - 1`: `text(i % 10)` and friends allocate nothing
    /// (CPython does the same for one-character strings). Text is immutable and
    /// compared by content, so sharing is invisible to scripts.
    static SMALL_INT_TEXTS: Box<[Rc<str>]> = (0..N_SMALL_INTS)
        .map(|i| {
            let mut out = String::new();
            write_int(&mut out, i);
            Rc::from(out)
        })
        .collect();
    /// Where [`int_text`] writes the digits before they become a Text.
    static INT_BUF: RefCell<String> = RefCell::new(String::with_capacity(20));
}

/// `v` as a Text value by the printing rules: Text itself (shared, not copied), an Int
/// with one allocation (none for a small one), anything else through the printer.
/// `text(v)`, `TO_TEXT` and interpolation go through here.
pub fn text_of(v: &Value, classes: &[Class]) -> Rc<str> {
    match v {
        Value::Text(t) => t.clone(),
        Value::Int(i) => int_text(*i),
        Value::Bool(b) => Rc::from(if *b { "true" } else { "false" }),
        Value::Nil => Rc::from("nil"),
        _ => {
            let mut out = String::new();
            write_value(&mut out, v, classes, false);
            Rc::from(out)
        }
    }
}

/// [`text_of`] within the size limit: a rendering over [`limit::max_bytes`] traps
/// `LIMIT` (it is cut off as soon as it passes the limit, never built whole).
/// `TO_TEXT` (interpolation) and `text(v)` use it.
pub fn try_text_of(v: &Value, classes: &[Class]) -> Result<Rc<str>, Trap> {
    match v {
        Value::List(_) | Value::Map(_) | Value::Obj(_) => {
            let out = try_to_text(v, classes)?;
            limit::share_text("printing a value", &out)
        }
        _ => Ok(text_of(v, classes)),
    }
}

/// [`to_text`] within the size limit, as [`try_text_of`]. `print` uses it.
pub fn try_to_text(v: &Value, classes: &[Class]) -> Result<String, Trap> {
    if let Value::Text(t) = v {
        return Ok(t.to_string());
    }
    let mut out = String::new();
    let mut p = Printer {
        out: &mut out,
        classes,
        open: Vec::new(),
        limit: limit::max_bytes(),
        over: false,
    };
    p.value(v, false);
    if p.over {
        return Err(limit::check_text("printing a value", None).expect_err("over the limit"));
    }
    Ok(out)
}

/// An Int's decimal Text.
pub fn int_text(i: i64) -> Rc<str> {
    match usize::try_from(i) {
        Ok(small) if i < N_SMALL_INTS => SMALL_INT_TEXTS.with(|t| t[small].clone()),
        _ => INT_BUF.with(|buf| match buf.try_borrow_mut() {
            Ok(mut buf) => {
                buf.clear();
                write_int(&mut buf, i);
                Rc::from(buf.as_str())
            }
            Err(_) => {
                let mut out = String::new();
                write_int(&mut out, i);
                Rc::from(out)
            }
        }),
    }
}

/// Appends an Int's decimal digits (and sign) to `out`, without the formatter: the
/// number is cut into base-100 digits, each written as two characters of a table.
pub fn write_int(out: &mut String, i: i64) {
    const PAIRS: &str = "0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let pair = |d: u64| {
        let at = d as usize * 2;
        &PAIRS[at..at + 2]
    };
    // Base-100 digits below the leading one, least significant first (an i64 has at
    // most 19 decimal digits: a leading one or two and up to 9 pairs).
    let mut low = [0u64; 9];
    let mut n_low = 0;
    let mut n = i.unsigned_abs();
    while n >= 100 {
        low[n_low] = n % 100;
        n /= 100;
        n_low += 1;
    }
    out.reserve(20);
    if i < 0 {
        out.push('-');
    }
    out.push_str(if n >= 10 { pair(n) } else { &pair(n)[1..] });
    for &d in low[..n_low].iter().rev() {
        out.push_str(pair(d));
    }
}

/// `v` as Text by the printing rules (Text itself unquoted).
pub fn to_text(v: &Value, classes: &[Class]) -> String {
    if let Value::Text(t) = v {
        return t.to_string();
    }
    let mut out = String::new();
    write_value(&mut out, v, classes, false);
    out
}

/// Appends `v`'s text to `out`; `quoted` writes a Text value as a quoted literal (as it
/// appears inside a list, map or object).
pub fn write_value(out: &mut String, v: &Value, classes: &[Class], quoted: bool) {
    let mut p = Printer {
        out,
        classes,
        open: Vec::new(),
        limit: usize::MAX,
        over: false,
    };
    p.value(v, quoted);
}

/// Appends `f` exactly as Rust's `{:?}` formats it (`1.0`, `1e16`, `NaN`, `-inf`).
pub fn write_float(out: &mut String, f: f64) {
    let _ = write!(out, "{f:?}");
}

/// Appends `t` as a quoted Text literal with the §2 escapes.
pub fn write_quoted(out: &mut String, t: &str) {
    out.push('"');
    for c in t.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            c => push_escaping_control(out, c),
        }
    }
    out.push('"');
}

/// Appends `t` with its control characters escaped as in a Text literal (`\n`,
/// `\u{0}`) and nothing else: a name in a message (a path) stays one readable line.
pub fn write_escaping_controls(out: &mut String, t: &str) {
    for c in t.chars() {
        push_escaping_control(out, c);
    }
}

fn push_escaping_control(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if c.is_control() => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

struct Printer<'a> {
    out: &'a mut String,
    classes: &'a [Class],
    /// Addresses of the lists, maps and objects being printed (outermost first).
    open: Vec<usize>,
    /// The most bytes `out` may reach; past it printing stops and `over` is set.
    limit: usize,
    over: bool,
}

impl Printer<'_> {
    /// Marks a container as open; false when it already is (a cycle, written `…`) or
    /// is too deep (written [`DEEP_MARKER`]).
    fn enter(&mut self, addr: usize) -> bool {
        if self.open.contains(&addr) {
            self.out.push('…');
            return false;
        }
        if self.open.len() >= MAX_DEPTH {
            self.out.push_str(DEEP_MARKER);
            return false;
        }
        self.open.push(addr);
        true
    }

    /// Whether `n` more bytes would pass the limit (then `over` is set: stop).
    fn full(&mut self, n: usize) -> bool {
        if self.over || self.out.len().saturating_add(n) > self.limit {
            self.over = true;
        }
        self.over
    }

    fn value(&mut self, v: &Value, quoted: bool) {
        // Scalars add a few bytes each; a Text is checked with its own length.
        let n = match v {
            Value::Text(t) => t.len(),
            Value::Error(e) => e.message.len(),
            _ => 0,
        };
        if self.full(n) {
            return;
        }
        match v {
            Value::Nil => self.out.push_str("nil"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => write_int(self.out, *i),
            Value::Float(f) => write_float(self.out, *f),
            Value::Text(t) => {
                if quoted {
                    write_quoted(self.out, t);
                } else {
                    self.out.push_str(t);
                }
            }
            // `KIND: message`; inside a container the message is quoted and escaped
            // like any other Text, so a message with a newline or `, ` stays one item.
            Value::Error(e) => {
                self.out.push_str(e.kind.name());
                self.out.push_str(": ");
                if quoted {
                    write_quoted(self.out, &e.message);
                } else {
                    self.out.push_str(&e.message);
                }
            }
            Value::Task(_) => self.out.push_str("task"),
            Value::Row(row) => {
                let class = usize::try_from(row.class)
                    .ok()
                    .and_then(|c| self.classes.get(c));
                let id = row.id;
                let _ = write!(self.out, "{}({id})", class.map_or("?", |c| c.name.as_str()));
            }
            Value::List(list) => {
                if !self.enter(Rc::as_ptr(list) as *const u8 as usize) {
                    return;
                }
                self.out.push('[');
                // A native cannot run during printing, so the borrow cannot conflict;
                // still, a list that is mutably borrowed prints as `…` instead of panicking.
                if let Ok(items) = list.try_borrow() {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.value(item, true);
                    }
                } else {
                    self.out.push('…');
                }
                self.out.push(']');
                self.open.pop();
            }
            Value::Map(map) => {
                if !self.enter(Rc::as_ptr(map) as *const u8 as usize) {
                    return;
                }
                self.out.push('{');
                if let Ok(entries) = map.try_borrow() {
                    for (i, e) in entries.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        match e.key() {
                            KeyRef::Int(n) => write_int(self.out, n),
                            KeyRef::Bool(b) => self.out.push_str(if b { "true" } else { "false" }),
                            KeyRef::Text(t) if self.full(t.len()) => return,
                            KeyRef::Text(t) => write_quoted(self.out, t),
                        }
                        self.out.push_str(": ");
                        self.value(e.value(), true);
                    }
                } else {
                    self.out.push('…');
                }
                self.out.push('}');
                self.open.pop();
            }
            Value::Obj(obj) => {
                if !self.enter(Rc::as_ptr(obj) as *const u8 as usize) {
                    return;
                }
                let class = usize::try_from(obj.class)
                    .ok()
                    .and_then(|c| self.classes.get(c));
                let name = class.map_or("?", |c| c.name.as_str());
                self.out.push_str(name);
                self.out.push_str(" {");
                if let Ok(fields) = obj.fields.try_borrow() {
                    for (i, v) in fields.iter().enumerate() {
                        self.out.push_str(if i > 0 { ", " } else { " " });
                        let field = class.and_then(|c| c.fields.get(i));
                        match field {
                            Some(f) => self.out.push_str(f),
                            None => {
                                let _ = write!(self.out, "_{i}");
                            }
                        }
                        self.out.push_str(": ");
                        self.value(v, true);
                    }
                    if !fields.is_empty() {
                        self.out.push(' ');
                    }
                } else {
                    self.out.push_str(" … ");
                }
                self.out.push('}');
                self.open.pop();
            }
        }
    }
}
