//! Secondary indexes: hash (equality, one or more columns), unique hash, and sorted
//! (one column, ordered by the `order by` order, ties by id).

use std::collections::btree_set::Range;
use std::collections::{BTreeSet, VecDeque};
use std::mem::size_of;
use std::ops::Bound;

use ahash::AHashMap;

use crate::value::KeyVal;
use crate::{IndexKind, RowId};

/// The ids of the rows with one key, ascending. A deque, so that both appending new
/// ids and removing the oldest are O(1); a removal in the middle shifts the shorter
/// side.
#[derive(Debug)]
pub(crate) enum Posting {
    One(RowId),
    Many(VecDeque<RowId>),
}

impl Posting {
    pub(crate) fn ids(&self) -> (&[RowId], &[RowId]) {
        match self {
            Posting::One(id) => (std::slice::from_ref(id), &[]),
            Posting::Many(v) => v.as_slices(),
        }
    }
    /// Appends `id`, larger than every id in the posting (a bulk build in id order).
    #[inline]
    pub(crate) fn push(&mut self, id: RowId) {
        match self {
            Posting::One(a) => *self = Posting::Many(VecDeque::from([*a, id])),
            Posting::Many(v) => v.push_back(id),
        }
    }
    fn add(&mut self, id: RowId) {
        match self {
            Posting::One(a) => {
                let a = *a;
                *self = Posting::Many(if a < id {
                    VecDeque::from([a, id])
                } else {
                    VecDeque::from([id, a])
                });
            }
            Posting::Many(v) => {
                if v.back().is_none_or(|&l| l < id) {
                    v.push_back(id);
                } else if let Err(p) = v.binary_search(&id) {
                    v.insert(p, id);
                }
            }
        }
    }
    /// Removes `id`; true when the posting became empty.
    fn remove(&mut self, id: RowId) -> bool {
        match self {
            Posting::One(a) => *a == id,
            Posting::Many(v) => {
                if let Ok(p) = v.binary_search(&id) {
                    v.remove(p);
                }
                match v.len() {
                    0 => true,
                    1 => {
                        let a = v[0];
                        *self = Posting::One(a);
                        false
                    }
                    _ => false,
                }
            }
        }
    }
}

#[derive(Debug)]
pub(crate) enum Index {
    /// Every row, `nil` keys included (they answer `== nil`).
    Hash(AHashMap<KeyVal, Posting>),
    /// Only rows whose key is not exempt (no `nil`, no NaN): those never collide.
    Unique(AHashMap<KeyVal, RowId>),
    /// Every row, by `(key, id)`.
    Sorted(Sorted),
}

/// A sorted index's entry: a key and the id of its row.
pub(crate) type Entry = (KeyVal, RowId);

/// A sorted index: every row by `(key, id)`, and how many of those keys are `nil`:
/// the planner's one statistic, the exact size of the part an `== nil` or a `!= nil`
/// walks (`query::nil_plan`).
#[derive(Debug, Default)]
pub(crate) struct Sorted {
    set: BTreeSet<Entry>,
    /// Kept exact by [`Sorted::of`], [`Sorted::insert`] and [`Sorted::remove`], the
    /// only ways to change `set`.
    nils: usize,
}

impl Sorted {
    /// The index of `entries` (a bulk build).
    pub(crate) fn of(entries: impl IntoIterator<Item = Entry>) -> Sorted {
        // `from_iter` sorts its input (one pass over a sorted run) and builds the
        // B-tree bottom-up. Ids are distinct, so every entry stays.
        let mut nils = 0;
        let set = entries
            .into_iter()
            .inspect(|(k, _)| nils += usize::from(*k == KeyVal::Nil))
            .collect();
        Sorted { set, nils }
    }

    /// Adds `(key, id)`; counts it if it is new and its key is `nil`.
    fn insert(&mut self, key: KeyVal, id: RowId) {
        let nil = key == KeyVal::Nil;
        if self.set.insert((key, id)) && nil {
            self.nils += 1;
        }
    }

    /// Removes `(key, id)`; uncounts it if it was there and its key is `nil`.
    fn remove(&mut self, key: KeyVal, id: RowId) {
        let nil = key == KeyVal::Nil;
        if self.set.remove(&(key, id)) && nil {
            self.nils -= 1;
        }
    }

    /// How many entries are not `nil`.
    pub(crate) fn not_nil(&self) -> usize {
        self.set.len() - self.nils
    }

    /// How many entries are `nil`.
    pub(crate) fn nils(&self) -> usize {
        self.nils
    }

    /// The entries within `bounds`, in order.
    pub(crate) fn range(&self, lo: Bound<Entry>, hi: Bound<Entry>) -> Range<'_, Entry> {
        self.set.range((lo, hi))
    }
}

impl Index {
    pub(crate) fn new(kind: IndexKind) -> Index {
        match kind {
            IndexKind::Hash => Index::Hash(AHashMap::default()),
            IndexKind::Unique => Index::Unique(AHashMap::default()),
            IndexKind::Sorted => Index::Sorted(Sorted::default()),
        }
    }

    /// Removes every entry.
    pub(crate) fn clear(&mut self) {
        match self {
            Index::Hash(m) => *m = AHashMap::default(),
            Index::Unique(m) => *m = AHashMap::default(),
            Index::Sorted(s) => *s = Sorted::default(),
        }
    }

    pub(crate) fn insert(&mut self, key: KeyVal, id: RowId) {
        match self {
            Index::Hash(m) => match m.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().add(id),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(Posting::One(id));
                }
            },
            Index::Unique(m) => {
                if !key.exempt() {
                    m.insert(key, id);
                }
            }
            Index::Sorted(s) => s.insert(key, id),
        }
    }

    pub(crate) fn remove(&mut self, key: KeyVal, id: RowId) {
        match self {
            Index::Hash(m) => {
                if let Some(p) = m.get_mut(&key) {
                    if p.remove(id) {
                        m.remove(&key);
                    }
                }
            }
            Index::Unique(m) => {
                if m.get(&key) == Some(&id) {
                    m.remove(&key);
                }
            }
            Index::Sorted(s) => s.remove(key, id),
        }
    }

    /// For a unique index: the row already holding `key`, if any.
    pub(crate) fn holder(&self, key: &KeyVal) -> Option<RowId> {
        match self {
            Index::Unique(m) if !key.exempt() => m.get(key).copied(),
            _ => None,
        }
    }

    /// Approximate heap bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Index::Hash(m) => {
                m.capacity() * (size_of::<(KeyVal, Posting)>() + 1)
                    + m.iter()
                        .map(|(k, p)| {
                            key_heap(k)
                                + match p {
                                    Posting::One(_) => 0,
                                    Posting::Many(v) => v.capacity() * 8,
                                }
                        })
                        .sum::<usize>()
            }
            Index::Unique(m) => {
                m.capacity() * (size_of::<(KeyVal, RowId)>() + 1)
                    + m.keys().map(key_heap).sum::<usize>()
            }
            // B-tree nodes hold up to 11 entries and are about 2/3 full on average.
            Index::Sorted(s) => {
                s.set.len() * size_of::<Entry>() * 3 / 2
                    + s.set.iter().map(|(k, _)| key_heap(k)).sum::<usize>()
            }
        }
    }
}

/// Heap owned by a key besides shared text (tuples only; texts are shared with the
/// row's column and counted there).
fn key_heap(k: &KeyVal) -> usize {
    match k {
        KeyVal::Tuple(ks) => ks.len() * size_of::<KeyVal>(),
        _ => 0,
    }
}
