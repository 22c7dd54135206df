//! Row storage: one typed column vector per column, indexed by `id - 1`.
//!
//! Columns are chunked (4096 rows per chunk) so that growth never copies a whole
//! column and the slack is at most one chunk. Nullable Int and Float columns carry a
//! null bitmap; Bool uses the byte value 2 for `nil`; Ref uses id 0 for `nil` (ids
//! start at 1); Text uses a 16-byte slot per row ([`TextCol`]): a text of up to 15
//! bytes is stored in the slot itself, a longer one is an `Rc<str>` shared with the VM,
//! and a deleted row's text is dropped at once.

use std::mem::size_of;
use std::rc::Rc;

use crate::index::Index;
use crate::value::{key_bits, FloatOrd, KeyVal, Short, ValRef};
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
    /// Every value, in position order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.chunks.iter_mut().flatten()
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

/// Byte 15 of a text slot: `0..=15` is the length of a text stored in the slot (the
/// slot is then exactly a [`Short`]); these two values mark the other cases.
const SLOT_LONG: u8 = 0xfe;
const SLOT_NIL: u8 = 0xff;
const NIL_SLOT: [u8; 16] = {
    let mut s = [0u8; 16];
    s[15] = SLOT_NIL;
    s
};

/// A Text column: one 16-byte slot per row position. A text of at most
/// [`crate::value::SHORT_MAX`] bytes lives in its slot (no allocation, and a row of
/// `(Text, Int, Float)` costs 32 bytes); a longer one is the VM's `Rc<str>` kept in
/// `long`, the slot holding its index there (bytes 0..8) and [`SLOT_LONG`]. A nil
/// (or a deleted row's text) is [`SLOT_NIL`]. Freed `long` entries are reused.
#[derive(Debug, Default)]
pub(crate) struct TextCol {
    slots: Chunked<[u8; 16]>,
    long: Vec<Option<Rc<str>>>,
    free: Vec<usize>,
}

#[inline]
fn long_index(s: &[u8; 16]) -> usize {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[..8]);
    u64::from_le_bytes(b) as usize
}

impl TextCol {
    /// The slot for a type-checked cell (a long text takes a `long` entry).
    #[inline]
    fn encode(&mut self, c: &Cell) -> [u8; 16] {
        let Cell::Text(t) = c else {
            return NIL_SLOT;
        };
        if let Some(s) = Short::new(t.as_bytes()) {
            return s.0;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.long[i] = Some(t.clone());
                i
            }
            None => {
                self.long.push(Some(t.clone()));
                self.long.len() - 1
            }
        };
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&(i as u64).to_le_bytes());
        s[15] = SLOT_LONG;
        s
    }
    /// Frees what slot `s` owns (its `long` entry).
    #[inline]
    fn release(&mut self, s: [u8; 16]) {
        if s[15] == SLOT_LONG {
            let i = long_index(&s);
            self.long[i] = None;
            self.free.push(i);
        }
    }
    #[inline]
    fn long(&self, s: &[u8; 16]) -> &Rc<str> {
        self.long[long_index(s)]
            .as_ref()
            .expect("a long text slot names a live entry")
    }
    #[inline]
    fn push(&mut self, c: &Cell) {
        let s = self.encode(c);
        self.slots.push(s);
    }
    fn pop(&mut self) {
        if let Some(s) = self.slots.pop() {
            self.release(s);
        }
    }
    #[inline]
    fn set(&mut self, i: usize, c: &Cell) {
        let s = self.encode(c);
        let old = std::mem::replace(self.slots.get_mut(i), s);
        self.release(old);
    }
    #[inline]
    fn val(&self, i: usize) -> ValRef<'_> {
        let s = self.slots.get(i);
        match s[15] {
            SLOT_NIL => ValRef::Nil,
            SLOT_LONG => ValRef::Text(self.long(s).as_bytes()),
            n => ValRef::Text(&s[..usize::from(n)]),
        }
    }
    /// The cell at `i`: a short text is copied into a new `Rc<str>`, a long one shared.
    #[inline]
    fn cell(&self, i: usize) -> Cell {
        let s = self.slots.get(i);
        match s[15] {
            SLOT_NIL => Cell::Nil,
            SLOT_LONG => Cell::Text(self.long(s).clone()),
            n => Cell::Text(Rc::from(
                std::str::from_utf8(&s[..usize::from(n)]).expect("stored text is UTF-8"),
            )),
        }
    }
    #[inline]
    fn key(&self, i: usize) -> KeyVal {
        let s = self.slots.get(i);
        match s[15] {
            SLOT_NIL => KeyVal::Nil,
            SLOT_LONG => KeyVal::Text(self.long(s).clone()),
            _ => KeyVal::Short(Short(*s)),
        }
    }
    fn heap_bytes(&self) -> usize {
        let mut b = self.slots.heap_bytes()
            + self.long.capacity() * size_of::<Option<Rc<str>>>()
            + self.free.capacity() * size_of::<usize>();
        for t in self.long.iter().flatten() {
            // An `Rc<str>` allocation: two counters and the bytes, as malloc rounds it
            // (8 bytes of header, 16-byte granules, 32 minimum). Shared texts are
            // counted once per holder: an upper bound.
            b += (16 + t.len() + 8).div_ceil(16).max(2) * 16;
        }
        b
    }
}

/// One column's values for every row position (live or not).
#[derive(Debug)]
pub(crate) enum ColData {
    Int(Chunked<i64>, Option<Bits>),
    Float(Chunked<f64>, Option<Bits>),
    /// 0 false, 1 true, 2 nil.
    Bool(Chunked<u8>),
    /// Inline short texts, shared long ones.
    Text(TextCol),
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
            ColType::Text => ColData::Text(TextCol::default()),
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
            ColData::Text(v) => v.push(c),
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
            ColData::Text(v) => v.pop(),
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
            ColData::Text(v) => v.set(i, c),
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
            v.set(i, &Cell::Nil);
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
            ColData::Text(v) => v.val(i),
            ColData::Ref(v) => match *v.get(i) {
                0 => ValRef::Nil,
                r => ValRef::Ref(r),
            },
        }
    }

    #[inline]
    pub(crate) fn cell(&self, i: usize) -> Cell {
        match self {
            ColData::Text(v) => v.cell(i),
            _ => match self.val(i) {
                ValRef::Nil | ValRef::Text(_) => Cell::Nil,
                ValRef::Int(x) => Cell::Int(x),
                ValRef::Float(x) => Cell::Float(x),
                ValRef::Bool(x) => Cell::Bool(x),
                ValRef::Ref(x) => Cell::Ref(x),
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
            (ValRef::Text(a), Cell::Text(b)) => a == b.as_bytes(),
            _ => false,
        }
    }

    pub(crate) fn is_text(&self) -> bool {
        matches!(self, ColData::Text(_))
    }

    /// An integer whose order is the `order by` order of the non-nil values of a
    /// non-Text column (Floats by `total_cmp`); `None` for nil (and for Text).
    #[inline]
    pub(crate) fn order_bits(&self, i: usize) -> Option<u64> {
        const SIGN: u64 = 1 << 63;
        match self.val(i) {
            ValRef::Int(x) | ValRef::Ref(x) => Some(x as u64 ^ SIGN),
            ValRef::Float(x) => {
                let b = x.to_bits();
                Some(if b & SIGN != 0 { !b } else { b | SIGN })
            }
            ValRef::Bool(b) => Some(u64::from(b)),
            ValRef::Nil | ValRef::Text(_) => None,
        }
    }

    /// The index key of position `i`.
    #[inline]
    pub(crate) fn key(&self, i: usize, canonical: bool) -> KeyVal {
        match self {
            ColData::Text(v) => v.key(i),
            _ => match self.val(i) {
                ValRef::Nil | ValRef::Text(_) => KeyVal::Nil,
                ValRef::Int(x) => KeyVal::Int(x),
                ValRef::Float(x) => KeyVal::Float(FloatOrd(key_bits(x, canonical))),
                ValRef::Bool(x) => KeyVal::Bool(x),
                ValRef::Ref(x) => KeyVal::Ref(x),
            },
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            ColData::Int(v, n) => v.heap_bytes() + n.as_ref().map_or(0, Bits::heap_bytes),
            ColData::Float(v, n) => v.heap_bytes() + n.as_ref().map_or(0, Bits::heap_bytes),
            ColData::Bool(v) => v.heap_bytes(),
            ColData::Ref(v) => v.heap_bytes(),
            ColData::Text(v) => v.heap_bytes(),
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
    /// The hash and sorted indexes are empty and not maintained until rebuilt
    /// (deferred index maintenance during recovery; unique indexes stay live).
    pub(crate) stale: bool,
    /// The ids whose insert was undone (and may be given again): see [`Generations`].
    pub(crate) reborn: Generations,
}

/// The generations of row ids. An undone insert consumes no id (LANGUAGE.md §7), so
/// the next insert is given the same id again; a handle to the undone row must not
/// then reach the new one. Every id starts at generation 0, and each undo of its
/// insert adds one; a handle carries the generation of its id when it was made
/// ([`crate::Db::generation`]) and is stale once they differ. Only ids at or above
/// `floor`, the least id ever undone, have a generation other than 0, so a table
/// whose inserts were never undone answers with one comparison.
#[derive(Debug, Clone)]
pub struct Generations {
    floor: RowId,
    gens: ahash::AHashMap<RowId, u32>,
}

impl Default for Generations {
    fn default() -> Generations {
        Generations {
            floor: RowId::MAX,
            gens: ahash::AHashMap::new(),
        }
    }
}

impl Generations {
    /// The generation of `id`.
    #[inline]
    pub(crate) fn of(&self, id: RowId) -> u32 {
        if id < self.floor {
            0
        } else {
            self.gens.get(&id).copied().unwrap_or(0)
        }
    }

    /// The insert of `id` was undone: its next row is a new generation.
    pub(crate) fn undone(&mut self, id: RowId) {
        self.floor = self.floor.min(id);
        let g = self.gens.entry(id).or_insert(0);
        *g = g.wrapping_add(1);
    }
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
            stale: false,
            reborn: Generations::default(),
        }
    }

    #[inline]
    pub(crate) fn is_live(&self, id: RowId) -> bool {
        id >= 1 && (id as u64) <= self.n as u64 && self.live.get(id as usize - 1)
    }

    /// Whether row `id` is live and its id still at generation `gen` (`Db::is_current`).
    #[inline]
    pub(crate) fn is_current(&self, id: RowId, gen: u32) -> bool {
        self.is_live(id) && self.reborn.of(id) == gen
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
