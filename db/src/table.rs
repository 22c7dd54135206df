//! Row storage: one typed column vector per column, indexed by `id - 1`.
//!
//! Columns are chunked (4096 rows per chunk) so that growth never copies a whole
//! column and the slack is at most one chunk. Nullable Int and Float columns carry a
//! null bitmap; Bool uses the byte value 2 for `nil`; Ref uses id 0 for `nil` (ids
//! start at 1); Text uses `None` (the `Rc<str>` niche) for `nil` and for the text of
//! a deleted row, which is dropped at once.

use std::mem::size_of;
use std::rc::Rc;

use crate::index::Index;
use crate::value::{canon_bits, FloatOrd, KeyVal, ValRef};
use crate::{Cell, ColType, IndexKind, RowId, TableDef, TableId};

const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

/// A growable vector stored in fixed-size chunks.
#[derive(Debug, Clone)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    #[inline]
    pub(crate) fn push(&mut self, v: T) {
        if self.len & MASK == 0 {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let last = self.chunks.len() - 1;
        self.chunks[last].push(v);
        self.len += 1;
    }
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let v = last.pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        v
    }
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &T {
        &self.chunks[i >> CHUNK_BITS][i & MASK]
    }
    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> CHUNK_BITS][i & MASK]
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * size_of::<Vec<T>>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity() * size_of::<T>())
                .sum::<usize>()
    }
}

/// A bitmap indexed by row position.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.0.get(i >> 6).is_some_and(|w| w >> (i & 63) & 1 == 1)
    }
    #[inline]
    pub(crate) fn set(&mut self, i: usize, b: bool) {
        let w = i >> 6;
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        if b {
            self.0[w] |= 1 << (i & 63);
        } else {
            self.0[w] &= !(1 << (i & 63));
        }
    }
    /// Forgets positions `len..` (their bits become 0).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.0.truncate(len.div_ceil(64));
        if len & 63 != 0 {
            if let Some(w) = self.0.last_mut() {
                *w &= (1u64 << (len & 63)) - 1;
            }
        }
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        self.0.capacity() * 8
    }
    /// The set positions in `lo..hi`, ascending.
    pub(crate) fn ones(&self, lo: usize, hi: usize) -> impl Iterator<Item = usize> + '_ {
        let (wlo, whi) = (lo >> 6, hi.div_ceil(64).min(self.0.len()));
        (wlo..whi).flat_map(move |w| {
            let mut bits = self.0[w];
            if w == lo >> 6 {
                bits &= !0u64 << (lo & 63);
            }
            let end = (w + 1) * 64;
            if end > hi {
                bits &= (1u64 << (hi & 63)).wrapping_sub(1);
                if hi & 63 == 0 {
                    bits = 0;
                }
            }
            BitIter { bits, base: w * 64 }
        })
    }
    /// The set positions in `lo..hi`, descending.
    pub(crate) fn ones_rev(&self, lo: usize, hi: usize) -> impl Iterator<Item = usize> + '_ {
        (lo..hi).rev().filter(move |&i| self.get(i))
    }
}

struct BitIter {
    bits: u64,
    base: usize,
}
impl Iterator for BitIter {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.bits == 0 {
            return None;
        }
        let t = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(self.base + t)
    }
}

/// One column's values for every row position (live or not).
#[derive(Debug)]
pub(crate) enum ColData {
    Int(Chunked<i64>, Option<Bits>),
    Float(Chunked<f64>, Option<Bits>),
    /// 0 false, 1 true, 2 nil.
    Bool(Chunked<u8>),
    /// `None` is nil (and the text of a deleted row).
    Text(Chunked<Option<Rc<str>>>),
    /// 0 is nil.
    Ref(Chunked<RowId>),
}

impl ColData {
    fn new(ty: ColType, nullable: bool) -> ColData {
        let nulls = nullable.then(Bits::default);
        match ty {
            ColType::Int => ColData::Int(Chunked::default(), nulls),
            ColType::Float => ColData::Float(Chunked::default(), nulls),
            ColType::Bool => ColData::Bool(Chunked::default()),
            ColType::Text => ColData::Text(Chunked::default()),
            ColType::Ref(_) => ColData::Ref(Chunked::default()),
        }
    }

    /// Appends a type-checked cell at position `i` (= the current length).
    #[inline]
    pub(crate) fn push(&mut self, i: usize, c: &Cell) {
        match self {
            ColData::Int(v, nulls) => {
                v.push(if let Cell::Int(x) = c { *x } else { 0 });
                if let Some(n) = nulls {
                    n.set(i, c == &Cell::Nil);
                }
            }
            ColData::Float(v, nulls) => {
                v.push(if let Cell::Float(x) = c { *x } else { 0.0 });
                if let Some(n) = nulls {
                    n.set(i, c == &Cell::Nil);
                }
            }
            ColData::Bool(v) => v.push(match c {
                Cell::Bool(b) => u8::from(*b),
                _ => 2,
            }),
            ColData::Text(v) => v.push(match c {
                Cell::Text(t) => Some(t.clone()),
                _ => None,
            }),
            ColData::Ref(v) => v.push(match c {
                Cell::Ref(r) | Cell::Int(r) => *r,
                _ => 0,
            }),
        }
    }

    pub(crate) fn pop(&mut self, i: usize) {
        match self {
            ColData::Int(v, nulls) => {
                v.pop();
                if let Some(n) = nulls {
                    n.truncate(i);
                }
            }
            ColData::Float(v, nulls) => {
                v.pop();
                if let Some(n) = nulls {
                    n.truncate(i);
                }
            }
            ColData::Bool(v) => {
                v.pop();
            }
            ColData::Text(v) => {
                v.pop();
            }
            ColData::Ref(v) => {
                v.pop();
            }
        }
    }

    /// Overwrites position `i` with a type-checked cell.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, c: &Cell) {
        match self {
            ColData::Int(v, nulls) => {
                *v.get_mut(i) = if let Cell::Int(x) = c { *x } else { 0 };
                if let Some(n) = nulls {
                    n.set(i, c == &Cell::Nil);
                }
            }
            ColData::Float(v, nulls) => {
                *v.get_mut(i) = if let Cell::Float(x) = c { *x } else { 0.0 };
                if let Some(n) = nulls {
                    n.set(i, c == &Cell::Nil);
                }
            }
            ColData::Bool(v) => {
                *v.get_mut(i) = match c {
                    Cell::Bool(b) => u8::from(*b),
                    _ => 2,
                }
            }
            ColData::Text(v) => {
                *v.get_mut(i) = match c {
                    Cell::Text(t) => Some(t.clone()),
                    _ => None,
                }
            }
            ColData::Ref(v) => {
                *v.get_mut(i) = match c {
                    Cell::Ref(r) | Cell::Int(r) => *r,
                    _ => 0,
                }
            }
        }
    }

    /// Drops what a deleted row no longer needs (its text).
    pub(crate) fn clear(&mut self, i: usize) {
        if let ColData::Text(v) = self {
            *v.get_mut(i) = None;
        }
    }

    #[inline]
    pub(crate) fn val(&self, i: usize) -> ValRef<'_> {
        match self {
            ColData::Int(v, nulls) => match nulls {
                Some(n) if n.get(i) => ValRef::Nil,
                _ => ValRef::Int(*v.get(i)),
            },
            ColData::Float(v, nulls) => match nulls {
                Some(n) if n.get(i) => ValRef::Nil,
                _ => ValRef::Float(*v.get(i)),
            },
            ColData::Bool(v) => match *v.get(i) {
                2 => ValRef::Nil,
                b => ValRef::Bool(b == 1),
            },
            ColData::Text(v) => match v.get(i) {
                Some(t) => ValRef::Text(t),
                None => ValRef::Nil,
            },
            ColData::Ref(v) => match *v.get(i) {
                0 => ValRef::Nil,
                r => ValRef::Ref(r),
            },
        }
    }

    #[inline]
    pub(crate) fn cell(&self, i: usize) -> Cell {
        match self {
            ColData::Text(v) => match v.get(i) {
                Some(t) => Cell::Text(t.clone()),
                None => Cell::Nil,
            },
            _ => match self.val(i) {
                ValRef::Nil => Cell::Nil,
                ValRef::Int(x) => Cell::Int(x),
                ValRef::Float(x) => Cell::Float(x),
                ValRef::Bool(x) => Cell::Bool(x),
                ValRef::Ref(x) => Cell::Ref(x),
                ValRef::Text(t) => Cell::Text(t.into()),
            },
        }
    }

    /// Whether position `i` holds exactly `c` (Floats by bits: `-0.0` is a change).
    #[inline]
    pub(crate) fn same(&self, i: usize, c: &Cell) -> bool {
        match (self.val(i), c) {
            (ValRef::Nil, Cell::Nil) => true,
            (ValRef::Int(a), Cell::Int(b)) => a == *b,
            (ValRef::Ref(a), Cell::Ref(b) | Cell::Int(b)) => a == *b,
            (ValRef::Float(a), Cell::Float(b)) => a.to_bits() == b.to_bits(),
            (ValRef::Bool(a), Cell::Bool(b)) => a == *b,
            (ValRef::Text(a), Cell::Text(b)) => a == &**b,
            _ => false,
        }
    }

    /// The index key of position `i`.
    #[inline]
    pub(crate) fn key(&self, i: usize, canonical: bool) -> KeyVal {
        match self {
            ColData::Text(v) => match v.get(i) {
                Some(t) => KeyVal::Text(t.clone()),
                None => KeyVal::Nil,
            },
            _ => match self.val(i) {
                ValRef::Nil => KeyVal::Nil,
                ValRef::Int(x) => KeyVal::Int(x),
                ValRef::Float(x) => KeyVal::Float(FloatOrd(if canonical {
                    canon_bits(x)
                } else {
                    x.to_bits()
                })),
                ValRef::Bool(x) => KeyVal::Bool(x),
                ValRef::Ref(x) => KeyVal::Ref(x),
                ValRef::Text(t) => KeyVal::Text(t.into()),
            },
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            ColData::Int(v, n) => v.heap_bytes() + n.as_ref().map_or(0, Bits::heap_bytes),
            ColData::Float(v, n) => v.heap_bytes() + n.as_ref().map_or(0, Bits::heap_bytes),
            ColData::Bool(v) => v.heap_bytes(),
            ColData::Ref(v) => v.heap_bytes(),
            ColData::Text(v) => {
                let mut b = v.heap_bytes();
                for c in &v.chunks {
                    for t in c.iter().flatten() {
                        // An `Rc<str>` allocation: two counters and the bytes, as malloc
                        // rounds it (8 bytes of header, 16-byte granules, 32 minimum).
                        // Shared texts are counted once per holder: an upper bound.
                        b += (16 + t.len() + 8).div_ceil(16).max(2) * 16;
                    }
                }
                b
            }
        }
    }
}

/// One table: columns, the live bitmap, inbound reference counts and indexes.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) cols: Vec<ColData>,
    pub(crate) live: Bits,
    /// Row positions ever allocated: the next id is `n + 1`.
    pub(crate) n: usize,
    pub(crate) live_count: usize,
    /// Per row, how many Ref cells of OTHER live rows point at it (present when some
    /// Ref column targets this table). Makes the restrict check of `delete` O(1).
    pub(crate) inbound: Option<Chunked<u32>>,
    pub(crate) indexes: Vec<Index>,
    /// For each column, the indexes that contain it (each once).
    pub(crate) col_indexes: Vec<Vec<usize>>,
    /// `(column, target table)` of every Ref column.
    pub(crate) ref_cols: Vec<(usize, TableId)>,
}

impl Table {
    pub(crate) fn new(def: &TableDef, referenced: bool) -> Table {
        let mut col_indexes = vec![Vec::new(); def.columns.len()];
        for (i, ix) in def.indexes.iter().enumerate() {
            for &c in &ix.columns {
                if !col_indexes[c].contains(&i) {
                    col_indexes[c].push(i);
                }
            }
        }
        Table {
            cols: def
                .columns
                .iter()
                .map(|c| ColData::new(c.ty, c.nullable))
                .collect(),
            live: Bits::default(),
            n: 0,
            live_count: 0,
            inbound: referenced.then(Chunked::default),
            indexes: def.indexes.iter().map(|ix| Index::new(ix.kind)).collect(),
            col_indexes,
            ref_cols: def
                .columns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match c.ty {
                    ColType::Ref(t) => Some((i, t)),
                    _ => None,
                })
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn is_live(&self, id: RowId) -> bool {
        id >= 1 && (id as u64) <= self.n as u64 && self.live.get(id as usize - 1)
    }

    /// The key of index `ix` (over `columns`) for row position `i`.
    pub(crate) fn index_key(&self, columns: &[usize], kind: IndexKind, i: usize) -> KeyVal {
        let canonical = kind != IndexKind::Sorted;
        if let [c] = columns {
            self.cols[*c].key(i, canonical)
        } else {
            KeyVal::Tuple(
                columns
                    .iter()
                    .map(|&c| self.cols[c].key(i, canonical))
                    .collect(),
            )
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.cols.capacity() * size_of::<ColData>()
            + self.cols.iter().map(ColData::heap_bytes).sum::<usize>()
            + self.live.heap_bytes()
            + self.inbound.as_ref().map_or(0, Chunked::heap_bytes)
            + self.indexes.iter().map(Index::heap_bytes).sum::<usize>()
    }
}
