//! Values inside the engine: index keys, borrowed column values, comparisons and the
//! way values are written in error messages.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::rc::Rc;

use crate::{Cell, ColType, RowId};

/// An `f64` by its bits: equality is bit equality and order is `f64::total_cmp`, which
/// agree (total_cmp is `Equal` exactly when the bits are equal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FloatOrd(pub u64);

impl Ord for FloatOrd {
    fn cmp(&self, other: &Self) -> Ordering {
        f64::from_bits(self.0).total_cmp(&f64::from_bits(other.0))
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

/// An index key. The derived order puts `Nil` first, which is the order of `order by`.
/// In hash indexes Floats are canonical ([`canon_bits`]); in sorted indexes they are
/// the raw bits, ordered by `total_cmp`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum KeyVal {
    Nil,
    Int(i64),
    Float(FloatOrd),
    Bool(bool),
    Text(Rc<str>),
    Ref(RowId),
    Tuple(Box<[KeyVal]>),
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
            (_, Cell::Float(f)) => KeyVal::Float(FloatOrd(if canonical {
                canon_bits(*f)
            } else {
                f.to_bits()
            })),
            (_, Cell::Bool(b)) => KeyVal::Bool(*b),
            (_, Cell::Text(t)) => KeyVal::Text(t.clone()),
            (_, Cell::Ref(i)) => KeyVal::Ref(*i),
        }
    }
}

/// A column value borrowed from storage.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ValRef<'a> {
    Nil,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(&'a str),
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
        (ValRef::Text(a), Cell::Text(b)) => a == &**b,
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
        (ValRef::Text(a), Cell::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        _ => None,
    }
}

/// The order of `order by` for one ascending key: `nil` first, Floats by `total_cmp`,
/// Text by bytes.
#[inline]
pub(crate) fn sort_cmp(a: ValRef<'_>, b: ValRef<'_>) -> Ordering {
    match (a, b) {
        (ValRef::Nil, ValRef::Nil) => Ordering::Equal,
        (ValRef::Nil, _) => Ordering::Less,
        (_, ValRef::Nil) => Ordering::Greater,
        (ValRef::Int(x), ValRef::Int(y)) | (ValRef::Ref(x), ValRef::Ref(y)) => x.cmp(&y),
        (ValRef::Float(x), ValRef::Float(y)) => x.total_cmp(&y),
        (ValRef::Bool(x), ValRef::Bool(y)) => x.cmp(&y),
        (ValRef::Text(x), ValRef::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
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
