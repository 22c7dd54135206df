//! Values inside the engine: index keys, borrowed column values, comparisons and the
//! way values are written in error messages.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::rc::Rc;

use crate::{Cell, ColType, RowId};

/// The one order of Floats (LANGUAGE.md §7): by value, `-0.0` before `0.0`, and every
/// NaN, whatever its sign bit and payload, after every other Float and equal to every
/// other NaN. `order by` (engine and bytecode paths), sorted indexes, `sort` and
/// `min`/`max` all use it.
pub fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// An `f64` by its bits: equality is bit equality and order is [`float_order`], which
/// agree because a key's bits come from [`key_bits`] (every NaN is one bit pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FloatOrd(pub u64);

impl Ord for FloatOrd {
    fn cmp(&self, other: &Self) -> Ordering {
        float_order(f64::from_bits(self.0), f64::from_bits(other.0))
    }
}
impl PartialOrd for FloatOrd {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The bits a Float has as a hash key: `-0.0` and `0.0` are one key (they are `==`),
/// and every NaN is one key (it never matches an equality anyway).
pub(crate) fn canon_bits(f: f64) -> u64 {
    if f == 0.0 {
        0
    } else if f.is_nan() {
        f64::NAN.to_bits()
    } else {
        f.to_bits()
    }
}

/// The bits of a Float as an index key: [`canon_bits`] for a hash key; for a sorted key
/// `-0.0` and `0.0` stay apart (they are ordered) but every NaN is still one key.
pub(crate) fn key_bits(f: f64, canonical: bool) -> u64 {
    if canonical || f.is_nan() {
        canon_bits(f)
    } else {
        f.to_bits()
    }
}

/// The longest text stored in place (in a column slot or an index key) instead of in
/// its own heap block.
pub(crate) const SHORT_MAX: usize = 15;

/// A text of at most [`SHORT_MAX`] bytes held in place: the bytes, zero padded, then
/// the length in the last byte. The padding is always zero, so the derived equality
/// and hash are the text's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Short(pub(crate) [u8; 16]);

impl Short {
    /// `None` when `b` is longer than [`SHORT_MAX`].
    #[inline]
    pub(crate) fn new(b: &[u8]) -> Option<Short> {
        if b.len() > SHORT_MAX {
            return None;
        }
        // Built in two registers (no variable-length copy, and no 16-byte load of
        // bytes just stored one by one): each half from overlapping fixed-size reads.
        let n = b.len();
        let le8 = |x: &[u8]| {
            let mut a = [0u8; 8];
            a.copy_from_slice(x);
            u64::from_le_bytes(a)
        };
        let le4 = |x: &[u8]| {
            let mut a = [0u8; 4];
            a.copy_from_slice(x);
            u64::from(u32::from_le_bytes(a))
        };
        let (lo, hi) = match n {
            8 => (le8(b), 0),
            9..=15 => (le8(&b[..8]), le8(&b[n - 8..]) >> (8 * (16 - n))),
            4..=7 => (le4(&b[..4]) | (le4(&b[n - 4..]) >> (8 * (8 - n))) << 32, 0),
            _ => (b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)), 0),
        };
        let hi = hi | (n as u64) << 56;
        Some(Short((u128::from(hi) << 64 | u128::from(lo)).to_le_bytes()))
    }
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0[..usize::from(self.0[15]) & 15]
    }
}

/// An index key. `Nil` orders first, which is the order of `order by`. In hash indexes
/// Floats are canonical ([`canon_bits`]); in sorted indexes they are the raw bits
/// (every NaN one pattern, [`key_bits`]), ordered by [`float_order`].
///
/// A text key is [`KeyVal::Short`] when it has at most [`SHORT_MAX`] bytes and
/// [`KeyVal::Text`] (sharing the column's allocation) otherwise — never the other way
/// round, so equality and hashing may compare the variants structurally; the order
/// compares both by bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyVal {
    Nil,
    Int(i64),
    Float(FloatOrd),
    Bool(bool),
    Short(Short),
    Text(Rc<str>),
    Ref(RowId),
    Tuple(Box<[KeyVal]>),
}

impl KeyVal {
    /// A text key in its canonical form.
    #[inline]
    pub(crate) fn text(t: &Rc<str>) -> KeyVal {
        match Short::new(t.as_bytes()) {
            Some(s) => KeyVal::Short(s),
            None => KeyVal::Text(t.clone()),
        }
    }
    fn rank(&self) -> u8 {
        match self {
            KeyVal::Nil => 0,
            KeyVal::Int(_) => 1,
            KeyVal::Float(_) => 2,
            KeyVal::Bool(_) => 3,
            KeyVal::Short(_) | KeyVal::Text(_) => 4,
            KeyVal::Ref(_) => 5,
            KeyVal::Tuple(_) => 6,
        }
    }
}

impl Ord for KeyVal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (KeyVal::Int(a), KeyVal::Int(b)) | (KeyVal::Ref(a), KeyVal::Ref(b)) => a.cmp(b),
            (KeyVal::Float(a), KeyVal::Float(b)) => a.cmp(b),
            (KeyVal::Bool(a), KeyVal::Bool(b)) => a.cmp(b),
            (KeyVal::Short(a), KeyVal::Short(b)) => a.bytes().cmp(b.bytes()),
            (KeyVal::Short(a), KeyVal::Text(b)) => a.bytes().cmp(b.as_bytes()),
            (KeyVal::Text(a), KeyVal::Short(b)) => a.as_bytes().cmp(b.bytes()),
            (KeyVal::Text(a), KeyVal::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (KeyVal::Tuple(a), KeyVal::Tuple(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}
impl PartialOrd for KeyVal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl KeyVal {
    /// Keys that never collide in a unique index and never match an equality:
    /// a `nil` or a NaN anywhere in the key.
    pub(crate) fn exempt(&self) -> bool {
        match self {
            KeyVal::Nil => true,
            KeyVal::Float(f) => f64::from_bits(f.0).is_nan(),
            KeyVal::Tuple(ks) => ks.iter().any(KeyVal::exempt),
            _ => false,
        }
    }

    /// The key a cell of a column of type `ty` has (the cell has been type-checked,
    /// an Int is accepted for a Ref column).
    pub(crate) fn from_cell(ty: ColType, cell: &Cell, canonical: bool) -> KeyVal {
        match (ty, cell) {
            (_, Cell::Nil) => KeyVal::Nil,
            (ColType::Ref(_), Cell::Ref(i) | Cell::Int(i)) => KeyVal::Ref(*i),
            (_, Cell::Int(i)) => KeyVal::Int(*i),
            (_, Cell::Float(f)) => KeyVal::Float(FloatOrd(key_bits(*f, canonical))),
            (_, Cell::Bool(b)) => KeyVal::Bool(*b),
            (_, Cell::Text(t)) => KeyVal::text(t),
            (_, Cell::Ref(i)) => KeyVal::Ref(*i),
        }
    }
}

/// A column value borrowed from storage. Text is its UTF-8 bytes (every comparison
/// is by bytes; only a conversion to a [`Cell`] needs a `str`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ValRef<'a> {
    Nil,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(&'a [u8]),
    Ref(RowId),
}

impl ValRef<'_> {
    pub(crate) fn is_nil(&self) -> bool {
        matches!(self, ValRef::Nil)
    }
}

/// `v == arg` as the language defines it: `nil` equals only `nil`, Floats by IEEE
/// (NaN equals nothing, `-0.0 == 0.0`), Text by content.
#[inline]
pub(crate) fn val_eq(v: ValRef<'_>, arg: &Cell) -> bool {
    match (v, arg) {
        (ValRef::Nil, Cell::Nil) => true,
        (ValRef::Int(a), Cell::Int(b) | Cell::Ref(b)) => a == *b,
        (ValRef::Ref(a), Cell::Ref(b) | Cell::Int(b)) => a == *b,
        (ValRef::Float(a), Cell::Float(b)) => a == *b,
        (ValRef::Bool(a), Cell::Bool(b)) => a == *b,
        (ValRef::Text(a), Cell::Text(b)) => a == b.as_bytes(),
        _ => false,
    }
}

/// `v <=> arg` for the ordering operators: `None` when either side is `nil` or a
/// comparison of Floats involves NaN (every ordering comparison is then false).
#[inline]
pub(crate) fn val_ord(v: ValRef<'_>, arg: &Cell) -> Option<Ordering> {
    match (v, arg) {
        (ValRef::Int(a), Cell::Int(b) | Cell::Ref(b)) => Some(a.cmp(b)),
        (ValRef::Ref(a), Cell::Ref(b) | Cell::Int(b)) => Some(a.cmp(b)),
        (ValRef::Float(a), Cell::Float(b)) => a.partial_cmp(b),
        (ValRef::Bool(a), Cell::Bool(b)) => Some(a.cmp(b)),
        (ValRef::Text(a), Cell::Text(b)) => Some(a.cmp(b.as_bytes())),
        _ => None,
    }
}

/// The order of `order by` for one ascending key: `nil` first, Floats by
/// [`float_order`], Text by bytes.
#[inline]
pub(crate) fn sort_cmp(a: ValRef<'_>, b: ValRef<'_>) -> Ordering {
    match (a, b) {
        (ValRef::Nil, ValRef::Nil) => Ordering::Equal,
        (ValRef::Nil, _) => Ordering::Less,
        (_, ValRef::Nil) => Ordering::Greater,
        (ValRef::Int(x), ValRef::Int(y)) | (ValRef::Ref(x), ValRef::Ref(y)) => x.cmp(&y),
        (ValRef::Float(x), ValRef::Float(y)) => float_order(x, y),
        (ValRef::Bool(x), ValRef::Bool(y)) => x.cmp(&y),
        (ValRef::Text(x), ValRef::Text(y)) => x.cmp(y),
        // A column is homogeneous; mixed kinds cannot meet.
        _ => Ordering::Equal,
    }
}

/// Appends `t` as a quoted Text literal with the language's escapes (§2), the same
/// way the VM prints Text inside lists and objects.
pub(crate) fn write_quoted(out: &mut String, t: &str) {
    out.push('"');
    for c in t.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A value as error messages show it: Text quoted, Floats as `{:?}`, others plain.
pub(crate) fn write_cell(out: &mut String, c: &Cell) {
    match c {
        Cell::Nil => out.push_str("nil"),
        Cell::Int(i) | Cell::Ref(i) => {
            let _ = write!(out, "{i}");
        }
        Cell::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        Cell::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Cell::Text(t) => write_quoted(out, t),
    }
}

/// What a cell is, for type-mismatch messages.
pub(crate) fn cell_kind(c: &Cell) -> &'static str {
    match c {
        Cell::Nil => "nil",
        Cell::Int(_) => "Int",
        Cell::Float(_) => "Float",
        Cell::Bool(_) => "Bool",
        Cell::Text(_) => "Text",
        Cell::Ref(_) => "a row reference",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_hold_their_bytes_zero_padded_with_the_length_last() {
        let src: Vec<u8> = (1..=16).collect();
        for n in 0..=SHORT_MAX {
            let s = Short::new(&src[..n]).expect("short");
            assert_eq!(s.bytes(), &src[..n]);
            assert!(s.0[n..15].iter().all(|&b| b == 0), "padding of {n}");
            assert_eq!(usize::from(s.0[15]), n);
        }
        assert_eq!(Short::new(&src), None);
    }
}
