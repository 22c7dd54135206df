//! The cycle collector. Objects, lists, maps and tasks are reference counted (`Rc`),
//! which frees everything but reference cycles; this module finds the cycles nothing
//! outside them refers to and breaks them, so `Rc` frees them too.
//!
//! It is CPython's `gc` without `unsafe`: every container is registered at birth
//! ([`track`]) in a thread-local list of `Weak` references. A collection looks at a set
//! of registered containers and computes, for each, its strong count minus the
//! references it receives from containers of the set (trial deletion). A container
//! with references left over is referred to from outside the set (a register, a global,
//! a fiber, an older container, a native's local): it and everything it reaches
//! survive. The rest is unreachable garbage held up by cycles: its contents are moved
//! out and dropped, which lets the counts reach zero. No root set is needed, so a
//! collection may run at any allocation, and anything the collector cannot see (a
//! container it cannot borrow, a holder of values that is not registered) only makes
//! it keep more. Rows are ids into the database, not heap values: they are never
//! looked at.
//!
//! Two generations keep the cost linear in the work the program does: every
//! [`YOUNG`] registrations the containers registered since the last collection are
//! examined (references from older ones count as outside references), and the
//! survivors become old. When the work the survivors added reaches half the size of
//! the old generation (counted in containers plus the values they hold, as measured by
//! the last full collection), the collection examines everything instead. Containers
//! that die by reference counting leave a dead `Weak` behind, dropped (with its small
//! allocation) at the next collection.
//!
//! [`children`] is the one place that knows what a container holds.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::{Rc, Weak};

use crate::value::{MapData, Object, TaskCell, TaskState, Value};

/// The least number of registrations between two collections; with a larger old
/// generation it is a quarter of that (so the young generation's short-lived
/// structures are mostly dead, and cheap to look at, when it is collected).
pub const YOUNG: usize = 10_000;
/// The least promoted work that makes a full collection due (with an empty or small
/// old generation, a full collection is not worth it before this).
const FULL_MIN: usize = 20_000;

/// A registered container.
enum Tracked {
    List(Weak<RefCell<Vec<Value>>>),
    Map(Weak<RefCell<MapData>>),
    Obj(Weak<Object>),
    Task(Weak<TaskCell>),
    /// The place of an object that has been dropped.
    Free,
}

/// A container held during a collection.
enum Node {
    List(Rc<RefCell<Vec<Value>>>),
    Map(Rc<RefCell<MapData>>),
    Obj(Rc<Object>),
    Task(Rc<TaskCell>),
}

impl Tracked {
    fn upgrade(&self) -> Option<Node> {
        match self {
            Tracked::List(w) => w.upgrade().map(Node::List),
            Tracked::Map(w) => w.upgrade().map(Node::Map),
            Tracked::Obj(w) => w.upgrade().map(Node::Obj),
            Tracked::Task(w) => w.upgrade().map(Node::Task),
            Tracked::Free => None,
        }
    }
}

impl Node {
    fn strong_count(&self) -> usize {
        match self {
            Node::List(rc) => Rc::strong_count(rc),
            Node::Map(rc) => Rc::strong_count(rc),
            Node::Obj(rc) => Rc::strong_count(rc),
            Node::Task(rc) => Rc::strong_count(rc),
        }
    }

    fn addr(&self) -> usize {
        match self {
            Node::List(rc) => addr_of(rc),
            Node::Map(rc) => addr_of(rc),
            Node::Obj(rc) => addr_of(rc),
            Node::Task(rc) => addr_of(rc),
        }
    }

    /// Moves out the values this container holds into `trash` (an object keeps its
    /// fields, as nil).
    fn clear(&self, trash: &mut Vec<Value>) {
        match self {
            Node::List(rc) => {
                if let Ok(mut items) = rc.try_borrow_mut() {
                    trash.append(&mut items);
                }
            }
            Node::Map(rc) => {
                if let Ok(mut m) = rc.try_borrow_mut() {
                    trash.extend(std::mem::take(&mut *m).into_values());
                }
            }
            Node::Obj(rc) => {
                if let Ok(mut fields) = rc.fields.try_borrow_mut() {
                    trash.extend(fields.iter_mut().map(std::mem::take));
                }
            }
            Node::Task(rc) => {
                if let Ok(mut state) = rc.state.try_borrow_mut() {
                    if let TaskState::Done(v) = &mut *state {
                        trash.push(std::mem::take(v));
                    }
                }
            }
        }
    }
}

fn addr_of<T>(rc: &Rc<T>) -> usize {
    Rc::as_ptr(rc).cast::<()>() as usize
}

/// The address of the container `v` refers to, if it refers to one.
fn container_addr(v: &Value) -> Option<usize> {
    match v {
        Value::List(rc) => Some(addr_of(rc)),
        Value::Map(rc) => Some(addr_of(rc)),
        Value::Obj(rc) => Some(addr_of(rc)),
        Value::Task(rc) => Some(addr_of(rc)),
        _ => None,
    }
}

/// Calls `f` on every value `node` holds. The one place that knows the layout of the
/// containers. A container that is borrowed right now (a native is changing it) is
/// skipped, which is safe: its children then look referred to from outside.
fn children(node: &Node, mut f: impl FnMut(&Value)) {
    match node {
        Node::List(rc) => {
            if let Ok(items) = rc.try_borrow() {
                items.iter().for_each(f);
            }
        }
        Node::Map(rc) => {
            if let Ok(m) = rc.try_borrow() {
                m.values().for_each(f);
            }
        }
        Node::Obj(rc) => {
            if let Ok(fields) = rc.fields.try_borrow() {
                fields.iter().for_each(f);
            }
        }
        Node::Task(rc) => {
            if let Ok(state) = rc.state.try_borrow() {
                if let TaskState::Done(v) = &*state {
                    f(v);
                }
            }
        }
    }
}

/// Hashes a container address (the low bits are alignment, the high bits constant).
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        let h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type AddrMap = HashMap<usize, u32, BuildHasherDefault<AddrHasher>>;

/// What the collector has done in this thread, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Registered containers, some of them possibly dead since the last collection.
    pub tracked: usize,
    /// The most `tracked` has been.
    pub peak_tracked: usize,
    /// Collections of the young generation alone.
    pub young_collections: u64,
    /// Collections of everything.
    pub full_collections: u64,
    /// Containers found in unreachable cycles and cleared.
    pub freed: u64,
}

struct Heap {
    /// Every registered container; `entries[..old]` is the old generation.
    entries: Vec<Tracked>,
    old: usize,
    /// Registrations since the last collection.
    allocs: usize,
    /// Registrations that make a collection due.
    threshold: usize,
    /// Work (containers and values held) promoted to the old generation since the last
    /// full collection.
    pending: usize,
    /// The old generation's work as the last full collection measured it.
    old_work: usize,
    stats: Stats,
    scratch: Scratch,
}

thread_local! {
    static HEAP: RefCell<Heap> = const {
        RefCell::new(Heap {
            entries: Vec::new(),
            old: 0,
            allocs: 0,
            threshold: YOUNG,
            pending: 0,
            old_work: 0,
            stats: Stats {
                tracked: 0,
                peak_tracked: 0,
                young_collections: 0,
                full_collections: 0,
                freed: 0,
            },
            scratch: Scratch {
                nodes: Vec::new(),
                refs: Vec::new(),
                stack: Vec::new(),
                index: HashMap::with_hasher(BuildHasherDefault::new()),
            },
        })
    };
}

/// Garbage found by a collection, dropped once the heap is no longer borrowed: the
/// emptied containers first (what holds them is in `trash`), then their former
/// contents, which frees them.
struct Garbage {
    _nodes: Vec<Node>,
    _trash: Vec<Value>,
}

impl Heap {
    /// Registers `t`: its place in `entries`.
    fn push(&mut self, t: Tracked) -> u32 {
        let slot = self.entries.len() as u32;
        self.entries.push(t);
        slot
    }

    /// Counts a registration; a collection when one is due.
    fn count(&mut self) -> Option<Garbage> {
        self.allocs += 1;
        if self.allocs < self.threshold {
            return None;
        }
        let full = self.pending >= self.old_work / 2 + FULL_MIN;
        Some(self.collect(full))
    }

    /// Collects the young generation, or everything when `full`.
    fn collect(&mut self, full: bool) -> Garbage {
        self.allocs = 0;
        let start = if full { 0 } else { self.old };
        self.stats.peak_tracked = self.stats.peak_tracked.max(self.entries.len());
        let Scratch {
            nodes,
            refs,
            stack,
            index,
        } = &mut self.scratch;

        // The live containers of the set, their entries moved to match, and their
        // references from outside the set: first the count minus the collector's own…
        let mut w = start;
        for r in start..self.entries.len() {
            if let Some(node) = self.entries[r].upgrade() {
                self.entries.swap(w, r);
                match &node {
                    // An object's place says where it is in `nodes`.
                    Node::Obj(o) => o.gc.set(w as u32),
                    _ => {
                        index.insert(node.addr(), nodes.len() as u32);
                    }
                }
                refs.push(node.strong_count() - 1);
                nodes.push(node);
                w += 1;
            }
        }
        self.entries.truncate(w);
        // Where the container `v` refers to is in `nodes`, if it is there.
        let find = |v: &Value| -> Option<usize> {
            match v {
                Value::Obj(o) => {
                    let j = (o.gc.get() as usize).checked_sub(start)?;
                    match nodes.get(j) {
                        Some(Node::Obj(n)) if Rc::ptr_eq(n, o) => Some(j),
                        _ => None,
                    }
                }
                _ => index.get(&container_addr(v)?).map(|&j| j as usize),
            }
        };

        // …minus one per reference from a container of the set.
        for node in nodes.iter() {
            children(node, |v| {
                if let Some(j) = find(v) {
                    refs[j] = refs[j].saturating_sub(1);
                }
            });
        }
        // Everything reachable from a container referred to from outside survives
        // (its `refs` is not 0 afterwards).
        stack.extend((0..nodes.len() as u32).filter(|&i| refs[i as usize] > 0));
        let mut work = 0;
        while let Some(i) = stack.pop() {
            work += 1;
            children(&nodes[i as usize], |v| {
                work += 1;
                if let Some(j) = find(v) {
                    if refs[j] == 0 {
                        refs[j] = 1;
                        stack.push(j as u32);
                    }
                }
            });
        }
        index.clear();

        // The survivors keep their entries (and become old); the garbage is cleared.
        let mut trash = Vec::new();
        let mut garbage = Vec::new();
        let mut w = start;
        for (i, node) in nodes.drain(..).enumerate() {
            if refs[i] > 0 {
                if let Node::Obj(o) = &node {
                    o.gc.set(w as u32);
                }
                self.entries.swap(w, start + i);
                w += 1;
            } else {
                // It leaves the registry now; its drop must not free another's place.
                if let Node::Obj(o) = &node {
                    o.gc.set(u32::MAX);
                }
                node.clear(&mut trash);
                garbage.push(node);
            }
        }
        refs.clear();
        self.entries.truncate(w);
        self.stats.freed += garbage.len() as u64;
        self.old = self.entries.len();
        self.threshold = YOUNG.max(self.old / 4);
        if full {
            self.stats.full_collections += 1;
            self.old_work = work;
            self.pending = 0;
        } else {
            self.stats.young_collections += 1;
            self.pending += work;
        }
        self.stats.tracked = self.entries.len();
        Garbage {
            _nodes: garbage,
            _trash: trash,
        }
    }
}

/// The buffers of a collection, kept for their capacity.
struct Scratch {
    nodes: Vec<Node>,
    refs: Vec<usize>,
    stack: Vec<u32>,
    /// Container addresses to their place in `nodes`.
    index: AddrMap,
}

fn register(t: Tracked) {
    let garbage = HEAP.with(|h| {
        let mut h = h.borrow_mut();
        h.push(t);
        h.count()
    });
    // Dropped outside the borrow: freeing values runs no script code, but it must not
    // find the heap borrowed should it ever register or collect.
    drop(garbage);
}

/// Registers a new list.
pub fn track_list(rc: &Rc<RefCell<Vec<Value>>>) {
    register(Tracked::List(Rc::downgrade(rc)));
}

/// Registers a new map.
pub fn track_map(rc: &Rc<RefCell<MapData>>) {
    register(Tracked::Map(Rc::downgrade(rc)));
}

/// Registers a new object. An object knows its place in the registry (collections
/// keep it up to date), so that dropping it frees its place, and its memory, at once:
/// objects are the containers programs make and drop the most.
pub fn track_obj(rc: &Rc<Object>) {
    let garbage = HEAP.with(|h| {
        let mut h = h.borrow_mut();
        let slot = h.push(Tracked::Obj(Rc::downgrade(rc)));
        rc.gc.set(slot);
        h.count()
    });
    drop(garbage);
}

/// An object is being dropped: its place in the registry becomes free. (When the
/// registry is busy, the place keeps a dead `Weak`, which the next collection drops.)
pub(crate) fn untrack_obj(obj: &Object) {
    let slot = obj.gc.get() as usize;
    HEAP.with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            if let Some(e) = h.entries.get_mut(slot) {
                *e = Tracked::Free;
            }
        }
    });
}

/// Registers a new task.
pub fn track_task(rc: &Rc<TaskCell>) {
    register(Tracked::Task(Rc::downgrade(rc)));
}

/// Collects everything now; returns the number of containers freed.
pub fn collect() -> u64 {
    let (garbage, freed) = HEAP.with(|h| {
        let mut h = h.borrow_mut();
        let before = h.stats.freed;
        let g = h.collect(true);
        (g, h.stats.freed - before)
    });
    drop(garbage);
    freed
}

/// What the collector of this thread has done so far.
pub fn stats() -> Stats {
    HEAP.with(|h| {
        let h = h.borrow();
        Stats {
            tracked: h.entries.len(),
            peak_tracked: h.stats.peak_tracked.max(h.entries.len()),
            ..h.stats
        }
    })
}

/// The number of registered containers still alive (a full walk of the registry).
pub fn live() -> usize {
    HEAP.with(|h| {
        h.borrow()
            .entries
            .iter()
            .filter(|t| t.upgrade().is_some())
            .count()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(fields: Vec<Value>) -> Rc<Object> {
        match Value::new_object(0, fields) {
            Value::Obj(o) => o,
            _ => unreachable!(),
        }
    }

    fn set(o: &Rc<Object>, i: usize, v: Value) {
        o.fields.borrow_mut()[i] = v;
    }

    #[test]
    fn a_two_object_cycle_is_freed_and_a_referred_one_kept() {
        let a = obj(vec![Value::Int(1), Value::Nil]);
        let b = obj(vec![Value::Int(2), Value::Obj(a.clone())]);
        set(&a, 1, Value::Obj(b.clone()));
        let (wa, wb) = (Rc::downgrade(&a), Rc::downgrade(&b));
        let kept = obj(vec![Value::Int(3), Value::Nil]);
        let other = obj(vec![Value::Int(4), Value::Obj(kept.clone())]);
        set(&kept, 1, Value::Obj(other));
        drop((a, b));
        assert!(wa.upgrade().is_some(), "only the cycle refers to it");
        assert!(collect() >= 2);
        assert!(wa.upgrade().is_none() && wb.upgrade().is_none());
        // The kept cycle is intact.
        let Value::Obj(o) = kept.fields.borrow()[1].clone() else {
            panic!("the field was cleared");
        };
        assert!(matches!(o.fields.borrow()[0], Value::Int(4)));
        assert!(matches!(&o.fields.borrow()[1], Value::Obj(k) if Rc::ptr_eq(k, &kept)));
    }

    #[test]
    fn cycles_through_lists_maps_and_tasks_are_freed() {
        // A list that holds itself.
        let Value::List(l) = Value::new_list(vec![]) else {
            unreachable!()
        };
        l.borrow_mut().push(Value::List(l.clone()));
        let wl = Rc::downgrade(&l);
        // A map whose value is an object that holds the map.
        let Value::Map(m) = Value::new_map(MapData::new()) else {
            unreachable!()
        };
        let o = obj(vec![Value::Map(m.clone())]);
        m.borrow_mut()
            .insert(crate::value::Key::Int(1), Value::Obj(o.clone()));
        let wm = Rc::downgrade(&m);
        // A task whose result is an object that holds the task.
        let t = Rc::new(TaskCell {
            fiber: 0,
            state: RefCell::new(TaskState::Running),
            waiters: RefCell::new(Vec::new()),
        });
        track_task(&t);
        let h = obj(vec![Value::Task(t.clone())]);
        *t.state.borrow_mut() = TaskState::Done(Value::Obj(h.clone()));
        let wt = Rc::downgrade(&t);
        drop((l, m, o, t, h));
        collect();
        assert!(wl.upgrade().is_none());
        assert!(wm.upgrade().is_none());
        assert!(wt.upgrade().is_none());
    }

    #[test]
    fn a_borrowed_container_is_kept_and_the_rest_collected() {
        let Value::List(l) = Value::new_list(vec![]) else {
            unreachable!()
        };
        let o = obj(vec![Value::List(l.clone())]);
        l.borrow_mut().push(Value::Obj(o.clone()));
        let wo = Rc::downgrade(&o);
        let a = obj(vec![Value::Nil]);
        set(&a, 0, Value::Obj(a.clone()));
        let wa = Rc::downgrade(&a);
        drop((o, a));
        let items = l.borrow_mut();
        collect();
        assert!(wa.upgrade().is_none());
        assert!(wo.upgrade().is_some(), "reachable from the borrowed list");
        drop(items);
        drop(l);
        collect();
        assert!(wo.upgrade().is_none());
    }

    #[test]
    fn an_object_frees_its_own_place_after_collections_move_it() {
        let live_before = live();
        let mut objs: Vec<Rc<Object>> = (0..200).map(|i| obj(vec![Value::Int(i)])).collect();
        // Drop every other one, then collect: the survivors' places move.
        let mut i = 0;
        objs.retain(|_| {
            i += 1;
            i % 2 == 0
        });
        collect();
        assert_eq!(live(), live_before + 100);
        for n in (0..100).rev() {
            objs.pop();
            assert_eq!(live(), live_before + n);
        }
    }

    #[test]
    fn collections_run_as_containers_are_made() {
        let before = stats();
        for _ in 0..3 * YOUNG {
            let a = obj(vec![Value::Nil]);
            set(&a, 0, Value::Obj(a.clone()));
        }
        let after = stats();
        assert!(after.young_collections + after.full_collections > before.young_collections);
        assert!(after.freed >= before.freed + 2 * YOUNG as u64);
        assert!(after.peak_tracked < 3 * YOUNG);
    }
}
