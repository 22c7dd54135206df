//! The script map: a hash map that keeps insertion order, in the design of CPython's
//! compact dict. The entries sit in one vector in insertion order; a separate index
//! (open addressing, linear probing, 4 bytes a slot) holds, per slot, the entry's
//! position and the high bits of its hash, so a lookup reads one slot of the index and
//! then the entry it names, and a probe that meets another key's slot is almost always
//! rejected on those bits without touching that entry. Keys are the checker's key
//! types (Int, Text, Bool); a Text of at most [`INLINE`] bytes is stored inside the
//! entry, so comparing it needs no pointer chase either. The entry keeps its 32-bit
//! hash in the key's spare bytes: an entry is 48 bytes (an `IndexMap<Key, Value>`
//! entry was 56, plus a separate `Rc<str>` per Text).
//!
//! Removal keeps the order of the others (LANGUAGE.md §3): the entry becomes a hole
//! and its index slot stays, so probes run past it. Holes are squeezed out when the
//! index is rebuilt to grow, or when a `for` loop asks for an entry by position
//! ([`MapData::compact`]). Maps of at most [`SMALL`] entries have no index at all: a
//! lookup scans the entries, which fit in a few cache lines.
//!
//! It is cut out of `value.rs` because it is a data structure with its own invariants
//! and property test; the interpreter and the standard library see only the methods.

use std::fmt;
use std::rc::Rc;

use crate::value::{Key, KeyRef, Value};

/// Texts of at most this many bytes are stored inside the entry (the most that fits
/// beside the tag, the length and the hash in the 24 bytes an `Rc<str>` key takes).
pub const INLINE: usize = 18;

/// Maps of at most this many entries have no index; a lookup scans the entries.
pub const SMALL: usize = 8;

/// The key of an entry, with its 32-bit hash in the bytes that would otherwise be
/// padding (the compiler packs variant fields next to the tag; the `layout` test
/// checks that this stays 24 bytes).
enum Stored {
    Int {
        hash: u32,
        i: i64,
    },
    Bool {
        hash: u32,
        b: bool,
    },
    /// A Text of at most [`INLINE`] bytes, zero-padded.
    Inline {
        hash: u32,
        len: u8,
        bytes: [u8; INLINE],
    },
    Text {
        hash: u32,
        t: Rc<str>,
    },
    /// A removed entry: a hole that keeps the others in place until the next rebuild.
    Removed,
}

/// A key being looked for, in the form its stored twin has, so that comparing one
/// against an entry is a tag test and a fixed-size compare.
enum Probe<'a> {
    Int(i64),
    Bool(bool),
    Inline(u8, [u8; INLINE]),
    Text(&'a str),
}

impl<'a> Probe<'a> {
    fn of(k: KeyRef<'a>) -> Probe<'a> {
        match k {
            KeyRef::Int(i) => Probe::Int(i),
            KeyRef::Bool(b) => Probe::Bool(b),
            KeyRef::Text(t) => match inline(t) {
                Some((len, bytes)) => Probe::Inline(len, bytes),
                None => Probe::Text(t),
            },
        }
    }
}

/// `t` zero-padded into an inline key, when it is short enough.
fn inline(t: &str) -> Option<(u8, [u8; INLINE])> {
    let len = u8::try_from(t.len())
        .ok()
        .filter(|&n| usize::from(n) <= INLINE)?;
    let mut bytes = [0; INLINE];
    bytes[..t.len()].copy_from_slice(t.as_bytes());
    Some((len, bytes))
}

impl Stored {
    fn new(hash: u32, key: Key) -> Stored {
        match key {
            Key::Int(i) => Stored::Int { hash, i },
            Key::Bool(b) => Stored::Bool { hash, b },
            Key::Text(t) => match inline(&t) {
                Some((len, bytes)) => Stored::Inline { hash, len, bytes },
                None => Stored::Text { hash, t },
            },
        }
    }

    fn hash(&self) -> u32 {
        match *self {
            Stored::Int { hash, .. }
            | Stored::Bool { hash, .. }
            | Stored::Inline { hash, .. }
            | Stored::Text { hash, .. } => hash,
            Stored::Removed => 0,
        }
    }

    /// Whether this is the key `p` stands for (a hole matches nothing). A Text is
    /// inline exactly when it is short, so an inline key never equals a shared one.
    fn matches(&self, p: &Probe<'_>) -> bool {
        match (self, p) {
            (Stored::Int { i, .. }, Probe::Int(j)) => i == j,
            (Stored::Bool { b, .. }, Probe::Bool(c)) => b == c,
            (Stored::Inline { len, bytes, .. }, Probe::Inline(l, b)) => len == l && bytes == b,
            (Stored::Text { t, .. }, Probe::Text(s)) => **t == **s,
            _ => false,
        }
    }
}

/// One key and its value, as iteration and positional access hand them out (never a
/// hole).
pub struct Entry {
    key: Stored,
    value: Value,
}

// 24 bytes of key (hash included) and 24 of value; growing it costs the maps
// benchmark its cache lines.
const _: () = assert!(std::mem::size_of::<Entry>() == 48);

impl Entry {
    /// The key, borrowed.
    pub fn key(&self) -> KeyRef<'_> {
        match &self.key {
            Stored::Int { i, .. } => KeyRef::Int(*i),
            Stored::Bool { b, .. } => KeyRef::Bool(*b),
            Stored::Inline { len, bytes, .. } => KeyRef::Text(
                std::str::from_utf8(&bytes[..usize::from(*len)])
                    .expect("an inline key is a copy of a whole str"),
            ),
            Stored::Text { t, .. } => KeyRef::Text(t),
            Stored::Removed => unreachable!("holes are never handed out"),
        }
    }

    /// The key as a script value (a long Text is shared, a short one is copied).
    pub fn key_value(&self) -> Value {
        match &self.key {
            Stored::Text { t, .. } => Value::Text(t.clone()),
            _ => match self.key() {
                KeyRef::Int(i) => Value::Int(i),
                KeyRef::Bool(b) => Value::Bool(b),
                KeyRef::Text(t) => Value::Text(Rc::from(t)),
            },
        }
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    fn is_hole(&self) -> bool {
        matches!(self.key, Stored::Removed)
    }
}

/// The index slot of entry `pos` with `hash` in an index of `mask + 1` slots: 0 when
/// empty, else the entry's position + 1 in the low bits (those `mask` covers; there are
/// more slots than entries, so it fits) and the hash's remaining high bits above them.
/// A probe compares those high bits before it reads the entry: with 2^21 slots (a
/// million keys) that is an 11-bit filter, in 4 bytes a slot.
fn slot(hash: u32, pos: usize, mask: u32) -> u32 {
    let pos = u32::try_from(pos + 1).expect("a map holds fewer entries than index slots");
    debug_assert!(pos <= mask);
    (hash & !mask) | pos
}

/// `index.len() - 1` as the slot arithmetic uses it.
fn mask_of(index: &[u32]) -> u32 {
    u32::try_from(index.len() - 1).expect("an index has at most 2^32 slots")
}

/// An insertion-ordered map from [`Key`] to [`Value`] (see the module comment).
pub struct MapData {
    /// In insertion order, with holes where keys were removed.
    entries: Vec<Entry>,
    /// A power of two number of slots (see [`slot`]), at most 2/3 full counting the
    /// holes' slots; empty while the map is small.
    index: Vec<u32>,
    /// The number of entries that are not holes.
    live: usize,
    hasher: ahash::RandomState,
}

impl Default for MapData {
    fn default() -> MapData {
        MapData::new()
    }
}

impl fmt::Debug for MapData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|e| (e.key(), &e.value)))
            .finish()
    }
}

impl MapData {
    pub fn new() -> MapData {
        MapData {
            entries: Vec::new(),
            index: Vec::new(),
            live: 0,
            hasher: ahash::RandomState::new(),
        }
    }

    /// An empty map with room for `n` keys before it grows.
    pub fn with_capacity(n: usize) -> MapData {
        let mut m = MapData::new();
        m.entries.reserve(n);
        if n > SMALL {
            m.rebuild(n);
        }
        m
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The key's hash, folded to the 32 bits an entry and a slot keep.
    fn hash(&self, k: KeyRef<'_>) -> u32 {
        let h = self.hasher.hash_one(k);
        (h ^ (h >> 32)) as u32
    }

    /// The position in `entries` of the key `p` (with hash `hash`).
    fn find(&self, hash: u32, p: &Probe<'_>) -> Option<usize> {
        if self.index.is_empty() {
            return self
                .entries
                .iter()
                .position(|e| e.key.hash() == hash && e.key.matches(p));
        }
        let mask = mask_of(&self.index);
        let mut at = hash & mask;
        loop {
            let s = self.index[at as usize];
            if s == 0 {
                return None;
            }
            if (s ^ hash) & !mask == 0 {
                let pos = ((s & mask) - 1) as usize;
                if self.entries[pos].key.matches(p) {
                    return Some(pos);
                }
            }
            at = (at + 1) & mask;
        }
    }

    pub fn get(&self, k: KeyRef<'_>) -> Option<&Value> {
        let pos = self.find(self.hash(k), &Probe::of(k))?;
        Some(&self.entries[pos].value)
    }

    pub fn contains_key(&self, k: KeyRef<'_>) -> bool {
        self.find(self.hash(k), &Probe::of(k)).is_some()
    }

    /// Sets `key` to `value`: a new key goes last, an existing one keeps its position.
    /// Returns the value it replaced.
    pub fn insert(&mut self, key: Key, value: Value) -> Option<Value> {
        let hash = self.hash(key.as_key_ref());
        if let Some(pos) = self.find(hash, &Probe::of(key.as_key_ref())) {
            return Some(std::mem::replace(&mut self.entries[pos].value, value));
        }
        let limit = if self.index.is_empty() {
            SMALL
        } else {
            self.index.len() / 3 * 2
        };
        if self.entries.len() >= limit {
            self.rebuild(self.live + 1);
        }
        let pos = self.entries.len();
        self.entries.push(Entry {
            key: Stored::new(hash, key),
            value,
        });
        self.live += 1;
        if !self.index.is_empty() {
            place(&mut self.index, hash, pos);
        }
        None
    }

    /// Removes `k` if present, keeping the order of the others; returns its value.
    pub fn remove(&mut self, k: KeyRef<'_>) -> Option<Value> {
        let pos = self.find(self.hash(k), &Probe::of(k))?;
        let e = &mut self.entries[pos];
        e.key = Stored::Removed;
        let v = std::mem::take(&mut e.value);
        self.live -= 1;
        if self.live == 0 {
            self.entries.clear();
            self.index = Vec::new();
        }
        Some(v)
    }

    /// Squeezes out the holes removals left, so that [`MapData::get_index`] is direct.
    pub fn compact(&mut self) {
        if self.live < self.entries.len() {
            self.rebuild(self.live);
        }
    }

    /// The entry at position `i` in insertion order: direct when the map has no holes
    /// (see [`MapData::compact`]), a scan otherwise.
    pub fn get_index(&self, i: usize) -> Option<&Entry> {
        if self.live == self.entries.len() {
            self.entries.get(i)
        } else {
            self.iter().nth(i)
        }
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| !e.is_hole())
    }

    /// The values in insertion order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|e| &e.value)
    }

    /// The values, moved out, in insertion order.
    pub fn into_values(self) -> impl Iterator<Item = Value> {
        self.entries
            .into_iter()
            .filter(|e| !e.is_hole())
            .map(|e| e.value)
    }

    /// Drops the holes and rebuilds the index for `want` keys: none while that is
    /// [`SMALL`] or fewer, else a power of two of at least twice `want` slots, so that
    /// at least a third of the slots fill before the next rebuild (which keeps
    /// inserting amortised O(1) under any mix of removals).
    fn rebuild(&mut self, want: usize) {
        if self.live < self.entries.len() {
            self.entries.retain(|e| !e.is_hole());
        }
        // The old index goes first: it is rebuilt from the entries' stored hashes, so
        // the two never need to be in memory at once.
        self.index = Vec::new();
        if want <= SMALL {
            return;
        }
        let mut index = vec![0; (want * 2).next_power_of_two()];
        for (pos, e) in self.entries.iter().enumerate() {
            place(&mut index, e.key.hash(), pos);
        }
        self.index = index;
    }
}

/// Puts entry `pos` with `hash` in the first free slot from its home slot.
fn place(index: &mut [u32], hash: u32, pos: usize) {
    let mask = mask_of(index);
    let mut at = hash & mask;
    while index[at as usize] != 0 {
        at = (at + 1) & mask;
    }
    index[at as usize] = slot(hash, pos, mask);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<Stored>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 48);
    }

    fn text(s: &str) -> Key {
        Key::Text(Rc::from(s))
    }

    fn order(m: &MapData) -> Vec<(Key, i64)> {
        m.iter()
            .map(|e| {
                let k = match e.key() {
                    KeyRef::Int(i) => Key::Int(i),
                    KeyRef::Bool(b) => Key::Bool(b),
                    KeyRef::Text(t) => text(t),
                };
                match e.value() {
                    Value::Int(v) => (k, *v),
                    other => panic!("values in these tests are Ints, got {other:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn short_and_long_texts_are_different_keys_by_content() {
        let mut m = MapData::new();
        let long = "x".repeat(INLINE + 1);
        let edge = "y".repeat(INLINE);
        for (i, k) in ["", "a", "a\0", &edge, &long].iter().enumerate() {
            assert!(m.insert(text(k), Value::Int(i as i64)).is_none());
        }
        assert_eq!(m.len(), 5);
        assert!(m.contains_key(KeyRef::Text("a")));
        assert!(m.contains_key(KeyRef::Text("a\0")));
        assert!(m.contains_key(KeyRef::Text(&long)));
        assert!(!m.contains_key(KeyRef::Text(&long[1..])));
        assert!(!m.contains_key(KeyRef::Text("a\0\0")));
        assert!(matches!(m.get(KeyRef::Text(&edge)), Some(Value::Int(3))));
        // A long key is shared with the value it came from; a short one is a copy.
        let e = m.get_index(4).expect("five entries");
        assert!(matches!(e.key_value(), Value::Text(t) if *t == *long));
    }

    #[test]
    fn a_for_loop_position_counts_only_live_entries() {
        let mut m = MapData::new();
        for i in 0..100 {
            m.insert(Key::Int(i), Value::Int(i));
        }
        for i in (0..100).step_by(3) {
            m.remove(KeyRef::Int(i));
        }
        assert!(matches!(
            m.get_index(0).map(Entry::key),
            Some(KeyRef::Int(1))
        ));
        assert!(matches!(
            m.get_index(2).map(Entry::key),
            Some(KeyRef::Int(4))
        ));
        m.compact();
        assert_eq!(m.entries.len(), m.len());
        assert!(matches!(
            m.get_index(2).map(Entry::key),
            Some(KeyRef::Int(4))
        ));
        assert!(m.get_index(m.len()).is_none());
    }

    #[test]
    fn churn_keeps_the_table_bounded() {
        // Remove-then-insert at a steady size must not grow the index without bound.
        let mut m = MapData::new();
        for i in 0..1000 {
            m.insert(Key::Int(i), Value::Int(i));
        }
        for i in 1000..100_000 {
            m.remove(KeyRef::Int(i - 1000));
            m.insert(Key::Int(i), Value::Int(i));
        }
        assert_eq!(m.len(), 1000);
        assert!(m.index.len() <= 4096, "index of {} slots", m.index.len());
        assert!(m.entries.len() < 4096);
        assert!(matches!(
            m.get(KeyRef::Int(99_000)),
            Some(Value::Int(99_000))
        ));
        assert!(m.get(KeyRef::Int(98_999)).is_none());
    }

    #[derive(Debug, Clone)]
    enum Step {
        Insert(Key, i64),
        Remove(Key),
        Get(Key),
        Compact,
    }

    /// Keys from a small pool, so that overwrites, removals and misses are common; the
    /// Texts straddle the inline limit.
    fn key() -> impl Strategy<Value = Key> {
        prop_oneof![
            (0i64..40).prop_map(Key::Int),
            any::<bool>().prop_map(Key::Bool),
            (0usize..40, 0usize..3).prop_map(|(n, w)| {
                let pad = ["", "-padding-to-16-b", "-padding-past-the-inline-limit"][w];
                text(&format!("k{n}{pad}"))
            }),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            5 => (key(), any::<i64>()).prop_map(|(k, v)| Step::Insert(k, v)),
            3 => key().prop_map(Step::Remove),
            2 => key().prop_map(Step::Get),
            1 => Just(Step::Compact),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The map against a `Vec` of pairs searched linearly: every answer, the
        /// length and the iteration order agree after every step, through growth,
        /// overwrites and many removals.
        #[test]
        fn agrees_with_a_vec_model(steps in proptest::collection::vec(step(), 0..400)) {
            let mut m = MapData::new();
            let mut model: Vec<(Key, i64)> = Vec::new();
            for s in steps {
                match s {
                    Step::Insert(k, v) => {
                        let old = m.insert(k.clone(), Value::Int(v));
                        match model.iter_mut().find(|(mk, _)| *mk == k) {
                            Some((_, mv)) => {
                                prop_assert!(matches!(old, Some(Value::Int(o)) if o == *mv));
                                *mv = v;
                            }
                            None => {
                                prop_assert!(old.is_none());
                                model.push((k, v));
                            }
                        }
                    }
                    Step::Remove(k) => {
                        let old = m.remove(k.as_key_ref());
                        match model.iter().position(|(mk, _)| *mk == k) {
                            Some(at) => {
                                let (_, mv) = model.remove(at);
                                prop_assert!(matches!(old, Some(Value::Int(o)) if o == mv));
                            }
                            None => prop_assert!(old.is_none()),
                        }
                    }
                    Step::Get(k) => {
                        let want = model.iter().find(|(mk, _)| *mk == k).map(|(_, v)| *v);
                        let got = m.get(k.as_key_ref()).map(|v| match v {
                            Value::Int(i) => *i,
                            _ => i64::MIN,
                        });
                        prop_assert_eq!(got, want);
                        prop_assert_eq!(m.contains_key(k.as_key_ref()), want.is_some());
                    }
                    Step::Compact => m.compact(),
                }
                prop_assert_eq!(m.len(), model.len());
                prop_assert_eq!(order(&m), model.clone());
            }
            for (i, (k, v)) in model.iter().enumerate() {
                let e = m.get_index(i).expect("as many entries as the model");
                prop_assert_eq!(e.key(), k.as_key_ref());
                prop_assert!(matches!(e.value(), Value::Int(x) if x == v));
            }
            prop_assert!(m.get_index(model.len()).is_none());
        }

        /// Many distinct keys, then most of them removed: growth and the rebuilds
        /// that drop holes keep every survivor findable and in order.
        #[test]
        fn grows_and_sheds_holes(n in 0usize..3000, keep_every in 1usize..7) {
            let mut m = MapData::new();
            for i in 0..n {
                m.insert(text(&format!("key number {i}")), Value::Int(i as i64));
            }
            for i in 0..n {
                if i % keep_every != 0 {
                    let k = format!("key number {i}");
                    prop_assert!(m.remove(KeyRef::Text(&k)).is_some());
                }
            }
            for i in n..n + 100 {
                m.insert(Key::Int(i as i64), Value::Int(i as i64));
            }
            let want: Vec<i64> = (0..n).filter(|i| i % keep_every == 0)
                .chain(n..n + 100).map(|i| i as i64).collect();
            let got: Vec<i64> = m.values().map(|v| match v {
                Value::Int(i) => *i,
                _ => i64::MIN,
            }).collect();
            prop_assert_eq!(got, want);
            for i in 0..n {
                let k = format!("key number {i}");
                prop_assert_eq!(m.contains_key(KeyRef::Text(&k)), i % keep_every == 0);
            }
        }
    }
}
