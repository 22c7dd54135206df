//! Text functions. Positions and lengths count characters (Unicode scalar values), as
//! `len` does, so they are computed by walking the UTF-8 (with a fast path for ASCII
//! text, where characters and bytes coincide). Comparisons are by content; case mapping
//! is Unicode's full mapping. Functions that can make a text much larger than their
//! input (`repeat`, `replace`, `join`, the case mappings, `split`'s list) refuse
//! results over the limit of `wo_vm::limit` (1 GiB) with a LIMIT trap instead of
//! exhausting memory.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wo_vm::{limit, Host, Stop, TrapKind, Value};

use crate::{args, float, int, list_ref, new_list, new_text, text, trap, Native};

pub(crate) const NATIVES: &[Native] = &[
    ("len_text", len_text),
    ("substr", substr),
    ("index_of", index_of),
    ("contains_text", contains_text),
    ("starts_with", starts_with),
    ("ends_with", ends_with),
    ("split", split),
    ("join", join),
    ("trim", trim),
    ("to_upper", to_upper),
    ("to_lower", to_lower),
    ("replace", replace),
    ("repeat", repeat),
    ("chars", chars),
    ("ord", ord),
    ("chr", chr),
    ("pad_left", pad_left),
    ("pad_right", pad_right),
    ("to_fixed", to_fixed),
];

/// The number of characters in `t`.
fn char_len(t: &str) -> usize {
    if t.is_ascii() {
        t.len()
    } else {
        t.chars().count()
    }
}

/// The byte offset of character `idx` in `t`; `t.len()` when `idx` is the length.
/// The caller has checked `idx <= char_len(t)`.
fn byte_offset(t: &str, idx: usize) -> usize {
    if t.is_ascii() {
        return idx.min(t.len());
    }
    t.char_indices().nth(idx).map_or(t.len(), |(b, _)| b)
}

/// Texts shorter than this are measured on each call (a walk of a few cache lines);
/// longer ones through [`Measured`].
const MEASURE_MIN: usize = 256;

/// Characters per mark of [`Measured::marks`].
const MARK_EVERY: usize = 64;

/// What `len` and `substr` need of a long text, kept for the last one measured, so
/// that a loop calling them on one text costs O(1) per call on ASCII text and
/// O(`MARK_EVERY`) on other text, not a walk of the whole text (LANGUAGE.md §11).
/// The cache holds the text itself (an `Rc` clone), so its address is never that of
/// another text while it is cached.
struct Measured {
    text: Rc<str>,
    chars: usize,
    /// The byte offset of every `MARK_EVERY`-th character; empty for ASCII text.
    marks: Vec<usize>,
    /// The last position asked for and its byte offset: a loop that walks the text
    /// goes on from there (a character or two) rather than from the mark before.
    last: Cell<(usize, usize)>,
}

thread_local! {
    static MEASURED: RefCell<Option<Measured>> = const { RefCell::new(None) };
}

/// Runs `f` on the measurement of `t` (made now unless `t` was the last one measured).
fn with_measured<R>(t: &Rc<str>, f: impl FnOnce(&Measured) -> R) -> R {
    MEASURED.with(|cell| {
        let mut cached = cell.borrow_mut();
        if !cached.as_ref().is_some_and(|m| Rc::ptr_eq(&m.text, t)) {
            let (chars, marks) = if t.is_ascii() {
                (t.len(), Vec::new())
            } else {
                let mut marks = Vec::new();
                let mut chars = 0;
                for (b, _) in t.char_indices() {
                    if chars % MARK_EVERY == 0 {
                        marks.push(b);
                    }
                    chars += 1;
                }
                (chars, marks)
            };
            *cached = Some(Measured {
                text: t.clone(),
                chars,
                marks,
                last: Cell::new((0, 0)),
            });
        }
        f(cached.as_ref().expect("measured just now"))
    })
}

/// `s` as a text value, shared when it is one ASCII character.
fn piece(s: &str) -> Value {
    match s.as_bytes() {
        [b] if b.is_ascii() => Value::char_text(char::from(*b)),
        _ => new_text(s),
    }
}

impl Measured {
    /// [`byte_offset`] of character `idx` (at most `chars`): from the nearest mark.
    fn offset(&self, idx: usize) -> usize {
        if self.marks.is_empty() {
            return idx.min(self.text.len());
        }
        let k = (idx / MARK_EVERY).min(self.marks.len() - 1);
        let (mut at, mut from) = (k * MARK_EVERY, self.marks[k]);
        let (last, last_b) = self.last.get();
        if (at..=idx).contains(&last) {
            (at, from) = (last, last_b);
        }
        // Walk the window up to the next mark only, character by character: an ASCII
        // test over the rest of the text made a loop of `substr` quadratic on long
        // ASCII text with one other character far on (200,000 characters: 0.9 s
        // instead of 13 ms).
        let to = self.marks.get(k + 1).copied().unwrap_or(self.text.len());
        let window = &self.text[from..to];
        let b = from
            + window
                .char_indices()
                .nth(idx - at)
                .map_or(window.len(), |(b, _)| b);
        self.last.set((idx, b));
        b
    }
}

/// The number of characters of a text value and the byte offsets of characters
/// `lo` and `hi` in it, when `lo <= hi <= ` that number; `Err` with the number
/// otherwise. One walk at most, and none for a long text measured before.
fn text_span(t: &Rc<str>, lo: usize, hi: usize) -> Result<(usize, usize), usize> {
    if t.len() < MEASURE_MIN {
        let len = char_len(t);
        if lo > hi || hi > len {
            return Err(len);
        }
        let a = byte_offset(t, lo);
        return Ok((a, a + byte_offset(&t[a..], hi - lo)));
    }
    with_measured(t, |m| {
        if lo > hi || hi > m.chars {
            return Err(m.chars);
        }
        Ok((m.offset(lo), m.offset(hi)))
    })
}

/// [`char_len`] of a whole text value, without walking a long one twice.
fn text_len(t: &Rc<str>) -> usize {
    if t.len() < MEASURE_MIN {
        return char_len(t);
    }
    with_measured(t, |m| m.chars)
}

/// Traps LIMIT when a text of `n_bytes` (None: more than fits in memory) is too large.
fn check_size(what: &str, n_bytes: Option<usize>) -> Result<(), Stop> {
    Ok(limit::check_text(what, n_bytes)?)
}

/// An empty String with room for `n` bytes: LIMIT when `n` is over the limit or the
/// memory cannot be had (`try_reserve`, so never an abort).
fn text_with_room(what: &str, n: usize) -> Result<String, Stop> {
    let mut out = String::new();
    limit::text_buffer(&mut out, what, n)?;
    Ok(out)
}

/// `len(t)`: the number of characters.
fn len_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("len_text", argv)?;
    let n = text_len(text(t)?);
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// `substr(t, start, n)`: the `n` characters from character `start`. Traps BOUNDS
/// unless `0 <= start`, `0 <= n` and `start + n <= len(t)`; `substr(t, len(t), 0)` is
/// the empty text.
fn substr(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, start, n] = args("substr", argv)?;
    let (t, start, n) = (text(t)?, int(start)?, int(n)?);
    let span = usize::try_from(start)
        .ok()
        .zip(usize::try_from(n).ok())
        .and_then(|(lo, n)| Some((lo, lo.checked_add(n)?)));
    // An impossible span is checked against the length like any other out of range.
    let (lo, hi) = span.unwrap_or((1, 0));
    match text_span(t, lo, hi) {
        Ok((a, b)) => Ok(piece(&t[a..b])),
        Err(len) => Err(trap(
            TrapKind::Bounds,
            format!("substr(start {start}, n {n}) is out of range for a text of {len} characters"),
        )),
    }
}

/// `index_of(t, s)`: the character position of the first occurrence of `s` in `t`, -1
/// when there is none; the empty text occurs at 0.
fn index_of(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, s] = args("index_of", argv)?;
    let t = text(t)?;
    let pos = match t.find(&**text(s)?) {
        Some(b) => i64::try_from(char_len(&t[..b])).unwrap_or(i64::MAX),
        None => -1,
    };
    Ok(Value::Int(pos))
}

/// `contains(t, s)`: whether `s` occurs in `t` (always true for the empty text).
fn contains_text(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, s] = args("contains_text", argv)?;
    Ok(Value::Bool(text(t)?.contains(&**text(s)?)))
}

fn starts_with(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, s] = args("starts_with", argv)?;
    Ok(Value::Bool(text(t)?.starts_with(&**text(s)?)))
}

fn ends_with(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, s] = args("ends_with", argv)?;
    Ok(Value::Bool(text(t)?.ends_with(&**text(s)?)))
}

/// `split(t, sep)`: the pieces between occurrences of `sep`, empty ones included, so
/// there is always one more piece than there are separators (`split("", ",")` is
/// `[""]`). An empty `sep` traps FAIL.
fn split(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, sep] = args("split", argv)?;
    let (t, sep) = (text(t)?, text(sep)?);
    if sep.is_empty() {
        return Err(trap(TrapKind::Fail, "split with an empty separator"));
    }
    // A one-byte separator is an ASCII character: a byte count and a `char` split
    // (a plain byte search) instead of the general substring searcher, which cost
    // more than half of a word count's time on `split(line, " ")`.
    let one = match sep.as_bytes() {
        [c] => Some(*c),
        _ => None,
    };
    // One more piece than separators: count them first, so a huge result traps
    // before anything is built.
    let n_seps = match one {
        Some(c) => t.bytes().filter(|&b| b == c).count(),
        None => t.matches(&**sep).count(),
    };
    let n_pieces = n_seps.saturating_add(1);
    limit::check_list("split", Some(n_pieces))?;
    let mut pieces = Vec::new();
    limit::list_room(&mut pieces, "split", n_pieces)?;
    match one {
        Some(c) => pieces.extend(t.split(char::from(c)).map(new_text)),
        None => pieces.extend(t.split(&**sep).map(new_text)),
    }
    Ok(new_list(pieces))
}

/// `join(xs, sep)`: the texts of `xs` with `sep` between each two.
fn join(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, sep] = args("join", argv)?;
    let (xs, sep) = (list_ref(xs)?, text(sep)?);
    // Two passes over the list (types and size, then the bytes), so no vector of the
    // parts is built on the way.
    let mut n_bytes = Some(0usize);
    for x in xs.iter() {
        let len = text(x)?.len();
        n_bytes = n_bytes.and_then(|n| n.checked_add(len));
    }
    let n_seps = xs.len().saturating_sub(1);
    let n_bytes = n_bytes.and_then(|n| n.checked_add(sep.len().checked_mul(n_seps)?));
    check_size("join", n_bytes)?;
    let mut out = text_with_room("join", n_bytes.unwrap_or(0))?;
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(text(x)?);
    }
    Ok(Value::Text(limit::share_text("join", &out)?))
}

/// `trim(t)`: without leading and trailing white space (Unicode `White_Space`).
fn trim(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("trim", argv)?;
    let t = text(t)?;
    let trimmed = t.trim();
    if trimmed.len() == t.len() {
        return Ok(Value::Text(t.clone()));
    }
    Ok(new_text(trimmed))
}

/// The length in bytes of `t` after mapping each character with `f` (the mappings
/// are per character, apart from a final sigma, which keeps its length).
fn case_mapped_len<I: Iterator<Item = char>>(t: &str, f: fn(char) -> I) -> usize {
    t.chars()
        .map(|c| f(c).map(char::len_utf8).sum::<usize>())
        .fold(0usize, usize::saturating_add)
}

/// `to_upper(t)`: Unicode's full upper-case mapping, so a character may become several
/// (`"ß"` becomes `"SS"`) and `len` may change.
fn to_upper(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("to_upper", argv)?;
    let t = text(t)?;
    // A character maps to at most 3 characters of at most 4 bytes (the output of a
    // mapping is never longer than 3 times its input in UTF-8).
    if limit::check_text("to_upper", Some(t.len().saturating_mul(3))).is_err() {
        check_size("to_upper", Some(case_mapped_len(t, char::to_uppercase)))?;
    }
    Ok(Value::Text(limit::share_text(
        "to_upper",
        &t.to_uppercase(),
    )?))
}

/// `to_lower(t)`: Unicode's full lower-case mapping (a final `Σ` becomes `ς`).
fn to_lower(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("to_lower", argv)?;
    let t = text(t)?;
    if limit::check_text("to_lower", Some(t.len().saturating_mul(3))).is_err() {
        check_size("to_lower", Some(case_mapped_len(t, char::to_lowercase)))?;
    }
    Ok(Value::Text(limit::share_text(
        "to_lower",
        &t.to_lowercase(),
    )?))
}

/// `replace(t, old, new)`: every non-overlapping occurrence of `old`, left to right,
/// replaced by `new`. An empty `old` occurs before each character and at the end, as
/// in Python, Go and Rust: `replace("ab", "", "-")` is `"-a-b-"` (it trapped FAIL
/// until December 3, which LANGUAGE.md §10 does not list). A result over 1 GiB traps
/// LIMIT.
fn replace(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, old, new] = args("replace", argv)?;
    let (t, old, new) = (text(t)?, text(old)?, text(new)?);
    // The result's length: `t`'s at most when `new` is not longer than `old`.
    let len = if new.len() > old.len() {
        let n_matches = t.matches(&**old).count();
        let growth = (new.len() - old.len()).checked_mul(n_matches);
        let len = growth.and_then(|g| g.checked_add(t.len()));
        check_size("replace", len)?;
        len.unwrap_or(0)
    } else {
        t.len()
    };
    let mut out = text_with_room("replace", len)?;
    let mut last = 0;
    for (at, _) in t.match_indices(&**old) {
        out.push_str(&t[last..at]);
        out.push_str(new);
        last = at + old.len();
    }
    out.push_str(&t[last..]);
    Ok(Value::Text(limit::share_text("replace", &out)?))
}

/// `repeat(t, n)`: `t` written `n` times; `repeat(t, 0)` is empty. A negative `n` traps
/// BOUNDS (like a negative length in `substr`); a result over 1 GiB traps LIMIT.
fn repeat(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t, n] = args("repeat", argv)?;
    let (t, n) = (text(t)?, int(n)?);
    let Ok(count) = usize::try_from(n) else {
        return Err(trap(
            TrapKind::Bounds,
            format!("repeat count {n} is negative"),
        ));
    };
    let n = t.len().checked_mul(count);
    check_size("repeat", n)?;
    let total = n.unwrap_or(0);
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(total)
        .map_err(|_| limit::out_of_memory("repeat", total))?;
    // Doubling copies: about log2(count) copies instead of count pushes.
    if total > 0 {
        out.extend_from_slice(t.as_bytes());
        while out.len() < total {
            let k = out.len().min(total - out.len());
            out.extend_from_within(..k);
        }
    }
    let out = String::from_utf8(out).expect("copies of a text are UTF-8");
    Ok(Value::Text(limit::share_text("repeat", &out)?))
}

/// `chars(t)`: each character of `t` as a one-character Text, in order (what
/// `for c in t` walks: one pass over the text).
fn chars(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [t] = args("chars", argv)?;
    let t = text(t)?;
    let n = char_len(t);
    limit::check_list("chars", Some(n))?;
    let mut out = Vec::new();
    limit::list_room(&mut out, "chars", n)?;
    out.extend(t.chars().map(Value::char_text));
    Ok(new_list(out))
}

/// `ord(c)`: the Unicode scalar value of a one-character Text; BOUNDS otherwise.
fn ord(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [c] = args("ord", argv)?;
    let c = text(c)?;
    let mut it = c.chars();
    match (it.next(), it.next()) {
        (Some(ch), None) => Ok(Value::Int(i64::from(u32::from(ch)))),
        _ => Err(trap(
            TrapKind::Bounds,
            format!("ord takes one character, found a text of {}", char_len(c)),
        )),
    }
}

/// `chr(i)`: the character with scalar value `i`; BOUNDS for a value that is not one
/// (negative, over U+10FFFF, or a surrogate).
fn chr(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [i] = args("chr", argv)?;
    let i = int(i)?;
    match u32::try_from(i).ok().and_then(char::from_u32) {
        Some(c) => Ok(new_text(c.encode_utf8(&mut [0u8; 4]))),
        None => Err(trap(
            TrapKind::Bounds,
            format!("chr({i}) is not a Unicode scalar value"),
        )),
    }
}

/// Spaces added to `t` (before it with `left`) up to `width` characters; a longer
/// text is returned whole.
fn pad(name: &str, argv: &[Value], left: bool) -> Result<Value, Stop> {
    let [t, w] = args(name, argv)?;
    let (t, w) = (text(t)?, int(w)?);
    let len = char_len(t);
    let want = usize::try_from(w).unwrap_or(0);
    if want <= len {
        return Ok(Value::Text(t.clone()));
    }
    let n = want - len;
    check_size(name, t.len().checked_add(n))?;
    let mut out = text_with_room(name, t.len() + n)?;
    if !left {
        out.push_str(t);
    }
    out.extend(std::iter::repeat_n(' ', n));
    if left {
        out.push_str(t);
    }
    Ok(Value::Text(limit::share_text(name, &out)?))
}

fn pad_left(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    pad("pad_left", argv, true)
}

fn pad_right(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    pad("pad_right", argv, false)
}

/// `to_fixed(x, digits)`: `digits` (0–17) decimals, no exponent, the exact binary
/// value rounded half to even (Rust's `{:.N}` formats the exact value so); NaN and
/// the infinities as `print` writes them.
fn to_fixed(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [x, d] = args("to_fixed", argv)?;
    let (x, d) = (float(x)?, int(d)?);
    if !(0..=17).contains(&d) {
        return Err(trap(
            TrapKind::Bounds,
            format!("to_fixed takes 0 to 17 digits, found {d}"),
        ));
    }
    let out = if x.is_finite() {
        format!("{x:.*}", d as usize)
    } else {
        let mut s = String::new();
        wo_vm::display::write_float(&mut s, x);
        s
    };
    Ok(new_text(out.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    /// `len` and `substr` of long texts (measured once and cached, with marks every
    /// 64 characters for non-ASCII text) agree with a plain walk of the characters,
    /// at every position and across texts of one length, one after the other.
    #[test]
    fn long_texts_measure_like_a_walk_of_their_characters() {
        let ascii = "abcdefghij".repeat(40);
        let mixed: String = (0..700)
            .map(|k| ['a', 'é', '😀', 'z', 'ß'][k % 5])
            .collect();
        let other: String = (0..700).map(|k| ['é', 'b'][k % 2]).collect();
        for src in [&ascii, &mixed, &other, &ascii] {
            let v = t(src);
            let chars: Vec<char> = src.chars().collect();
            let n = chars.len() as i64;
            assert_shows(call1("len_text", &v), &n.to_string());
            for start in (0..=n).step_by(7).chain([n - 1, n]) {
                for len in [0, 1, 2, 63, 64, 65, 200] {
                    let res = call("substr", &[v.clone(), i(start), i(len)]);
                    if start + len > n {
                        assert_trap(res, TrapKind::Bounds, "out of range");
                        continue;
                    }
                    let want: String = chars[start as usize..(start + len) as usize]
                        .iter()
                        .collect();
                    assert_shows(res, &want);
                }
            }
            assert_trap(
                call("substr", &[v.clone(), i(-1), i(1)]),
                TrapKind::Bounds,
                "out of range",
            );
            assert_trap(
                call("substr", &[v.clone(), i(1), i(i64::MAX)]),
                TrapKind::Bounds,
                &format!("a text of {n} characters"),
            );
        }
        // Two texts of the same length and content are two values: each is measured
        // as itself (the cache holds the text it measured).
        let a = t(&mixed);
        let b = t(&"x".repeat(mixed.len()));
        assert_shows(call1("len_text", &a), "700");
        assert_shows(call("len_text", &[b]), &mixed.len().to_string());
        assert_shows(call("len_text", &[a]), "700");
    }

    #[test]
    fn text_walking_and_padding() {
        assert_shows(call("chars", &[t("hé😀")]), "[\"h\", \"é\", \"😀\"]");
        assert_shows(call("chars", &[t("")]), "[]");
        assert_shows(call("ord", &[t("é")]), "233");
        assert_trap(call("ord", &[t("ab")]), TrapKind::Bounds, "one character");
        assert_trap(call("ord", &[t("")]), TrapKind::Bounds, "one character");
        assert_shows(call("chr", &[i(128512)]), "😀");
        assert_trap(call("chr", &[i(0xD800)]), TrapKind::Bounds, "scalar");
        assert_trap(call("chr", &[i(-1)]), TrapKind::Bounds, "scalar");
        assert_shows(call("pad_left", &[t("é"), i(3)]), "  é");
        assert_shows(call("pad_right", &[t("ab"), i(3)]), "ab ");
        assert_shows(call("pad_left", &[t("abcd"), i(2)]), "abcd");
        assert_shows(call("pad_left", &[t("x"), i(-5)]), "x");
    }

    #[test]
    fn to_fixed_rounds_the_exact_value_half_to_even() {
        let f = Value::Float;
        assert_shows(call("to_fixed", &[f(2.0 / 3.0), i(2)]), "0.67");
        assert_shows(call("to_fixed", &[f(0.5), i(0)]), "0");
        assert_shows(call("to_fixed", &[f(2.5), i(0)]), "2");
        assert_shows(call("to_fixed", &[f(1.5), i(0)]), "2");
        // 0.125 is exact: a tie, to even; 0.1 is a little over 0.1 in binary.
        assert_shows(call("to_fixed", &[f(0.125), i(2)]), "0.12");
        assert_shows(
            call("to_fixed", &[f(1e21), i(1)]),
            "1000000000000000000000.0",
        );
        assert_shows(call("to_fixed", &[f(-1.0 / 0.0), i(2)]), "-inf");
        assert_trap(
            call("to_fixed", &[f(1.0), i(18)]),
            TrapKind::Bounds,
            "0 to 17",
        );
        assert_trap(
            call("to_fixed", &[f(1.0), i(-1)]),
            TrapKind::Bounds,
            "0 to 17",
        );
    }

    #[test]
    fn len_counts_characters() {
        assert_shows(call("len_text", &[t("")]), "0");
        assert_shows(call("len_text", &[t("abc")]), "3");
        assert_shows(call("len_text", &[t("héllo")]), "5");
        assert_shows(call("len_text", &[t("😀x")]), "2");
    }

    #[test]
    fn substr_counts_characters() {
        assert_shows(call("substr", &[t("hello"), i(1), i(3)]), "ell");
        assert_shows(call("substr", &[t("héllo"), i(1), i(3)]), "éll");
        assert_shows(call("substr", &[t("😀a😀b"), i(2), i(2)]), "😀b");
        assert_shows(call("substr", &[t("abc"), i(0), i(3)]), "abc");
        assert_shows(call("substr", &[t("abc"), i(3), i(0)]), "");
        assert_shows(call("substr", &[t(""), i(0), i(0)]), "");
    }

    /// A long text is measured once (marks every 64 characters, and the last position
    /// asked for): every character is found whatever the order of the calls, for ASCII
    /// runs of any length between the other characters.
    #[test]
    fn substr_of_a_long_text_in_any_order() {
        for text in [
            format!("{}é", "a".repeat(1000)),
            format!("é{}", "ab".repeat(700)),
            "x😀yéz".repeat(300),
            format!("{}ß{}", "q".repeat(130), "r".repeat(200)),
        ] {
            let chars: Vec<char> = text.chars().collect();
            let n = chars.len();
            let value = t(&text);
            let forward: Vec<usize> = (0..n).collect();
            let backward: Vec<usize> = (0..n).rev().collect();
            let jumps: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
            for order in [forward, backward, jumps] {
                for k in order {
                    let got = call("substr", &[value.clone(), i(k as i64), i(1)]);
                    assert_shows(got, &chars[k].to_string());
                }
            }
            assert_shows(call("substr", &[value.clone(), i(n as i64), i(0)]), "");
        }
    }

    #[test]
    fn substr_out_of_range_traps_bounds() {
        assert_trap(
            call("substr", &[t("abcd"), i(2), i(3)]),
            TrapKind::Bounds,
            "substr(start 2, n 3) is out of range for a text of 4 characters",
        );
        assert_trap(
            call("substr", &[t("abc"), i(-1), i(1)]),
            TrapKind::Bounds,
            "start -1",
        );
        assert_trap(
            call("substr", &[t("abc"), i(0), i(-1)]),
            TrapKind::Bounds,
            "n -1",
        );
        assert_trap(
            call("substr", &[t("abc"), i(4), i(0)]),
            TrapKind::Bounds,
            "start 4",
        );
        assert_trap(
            call("substr", &[t("é"), i(0), i(2)]),
            TrapKind::Bounds,
            "1 characters",
        );
        assert_trap(
            call("substr", &[t("abc"), i(1), i(i64::MAX)]),
            TrapKind::Bounds,
            "",
        );
        assert_trap(
            call("substr", &[t("abc"), i(i64::MAX), i(i64::MAX)]),
            TrapKind::Bounds,
            "",
        );
    }

    #[test]
    fn index_of_is_a_character_position() {
        assert_shows(call("index_of", &[t("hello"), t("l")]), "2");
        assert_shows(call("index_of", &[t("héllo"), t("llo")]), "2");
        assert_shows(call("index_of", &[t("hello"), t("z")]), "-1");
        assert_shows(call("index_of", &[t("hello"), t("")]), "0");
        assert_shows(call("index_of", &[t(""), t("")]), "0");
        assert_shows(call("index_of", &[t(""), t("a")]), "-1");
    }

    #[test]
    fn contains_starts_and_ends() {
        assert_shows(call("contains_text", &[t("hello"), t("ell")]), "true");
        assert_shows(call("contains_text", &[t("hello"), t("")]), "true");
        assert_shows(call("contains_text", &[t("hello"), t("elo")]), "false");
        assert_shows(call("starts_with", &[t("hello"), t("he")]), "true");
        assert_shows(call("starts_with", &[t("hello"), t("lo")]), "false");
        assert_shows(call("starts_with", &[t("hi"), t("")]), "true");
        assert_shows(call("ends_with", &[t("hello"), t("lo")]), "true");
        assert_shows(call("ends_with", &[t("hello"), t("he")]), "false");
        assert_shows(call("ends_with", &[t("é"), t("é")]), "true");
    }

    #[test]
    fn split_keeps_empty_fields() {
        assert_shows(call("split", &[t("a,b,c"), t(",")]), r#"["a", "b", "c"]"#);
        assert_shows(call("split", &[t("a,,b"), t(",")]), r#"["a", "", "b"]"#);
        assert_shows(call("split", &[t(""), t(",")]), r#"[""]"#);
        assert_shows(call("split", &[t(",a,"), t(",")]), r#"["", "a", ""]"#);
        assert_shows(call("split", &[t("a=>b"), t("=>")]), r#"["a", "b"]"#);
        assert_shows(call("split", &[t("abc"), t(",")]), r#"["abc"]"#);
        assert_trap(
            call("split", &[t("abc"), t("")]),
            TrapKind::Fail,
            "split with an empty separator",
        );
    }

    #[test]
    fn join_puts_the_separator_between() {
        assert_shows(call("join", &[texts(&["a", "b", "c"]), t(", ")]), "a, b, c");
        assert_shows(call("join", &[texts(&["a"]), t(", ")]), "a");
        assert_shows(call("join", &[texts(&[]), t(", ")]), "");
        assert_shows(call("join", &[texts(&["", ""]), t("-")]), "-");
        assert_fault(
            call("join", &[ints(&[1]), t(",")]),
            "expected a Text, got an Int",
        );
    }

    #[test]
    fn join_refuses_huge_results() {
        let many = list(vec![t(""); 2048]);
        let sep = t(&"x".repeat(1 << 20));
        assert_trap(
            call("join", &[many, sep]),
            TrapKind::Limit,
            "over the limit of 1 GiB",
        );
    }

    #[test]
    fn trim_and_case() {
        assert_shows(call("trim", &[t("  a b \t\n")]), "a b");
        assert_shows(call("trim", &[t("\u{3000}x\u{a0}")]), "x");
        assert_shows(call("trim", &[t("   ")]), "");
        assert_shows(call("trim", &[t("ab")]), "ab");
        assert_shows(call("to_upper", &[t("héllo ß")]), "HÉLLO SS");
        assert_shows(call("to_lower", &[t("HÉLLO")]), "héllo");
        assert_shows(call("to_lower", &[t("ΟΔΟΣ")]), "οδος");
    }

    #[test]
    fn replace_every_occurrence() {
        assert_shows(call("replace", &[t("a-b-c"), t("-"), t("+")]), "a+b+c");
        assert_shows(call("replace", &[t("aaa"), t("aa"), t("b")]), "ba");
        assert_shows(call("replace", &[t("héhé"), t("é"), t("")]), "hh");
        assert_shows(call("replace", &[t("abc"), t("x"), t("y")]), "abc");
        assert_shows(call("replace", &[t(""), t("x"), t("y")]), "");
        assert_shows(call("replace", &[t("abc"), t(""), t("-")]), "-a-b-c-");
        assert_shows(call("replace", &[t("hé"), t(""), t("|")]), "|h|é|");
        assert_shows(call("replace", &[t(""), t(""), t("x")]), "x");
        assert_shows(call("replace", &[t("ab"), t(""), t("")]), "ab");
        assert_trap(
            call(
                "replace",
                &[t(&"a".repeat(1 << 20)), t(""), t(&"b".repeat(2048))],
            ),
            TrapKind::Limit,
            "replace would make",
        );
        let big = t(&"a".repeat(1 << 20));
        let long = t(&"b".repeat(2048));
        assert_trap(
            call("replace", &[big, t("a"), long]),
            TrapKind::Limit,
            "replace would make",
        );
    }

    #[test]
    fn repeat_guards_negative_and_huge_counts() {
        assert_shows(call("repeat", &[t("ab"), i(3)]), "ababab");
        assert_shows(call("repeat", &[t("ab"), i(0)]), "");
        assert_shows(call("repeat", &[t(""), i(i64::MAX)]), "");
        assert_trap(
            call("repeat", &[t("ab"), i(-1)]),
            TrapKind::Bounds,
            "repeat count -1 is negative",
        );
        assert_trap(
            call("repeat", &[t("ab"), i(1 << 30)]),
            TrapKind::Limit,
            "repeat would make a text of 2147483648 bytes, over the limit of 1 GiB",
        );
        assert_trap(
            call("repeat", &[t("ab"), i(i64::MAX)]),
            TrapKind::Limit,
            "over the limit",
        );
    }
}
