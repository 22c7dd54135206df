//! The cycle collector. Objects, lists, maps and tasks are reference counted (`Rc`),
//! which frees everything but reference cycles; this module finds the cycles nothing
//! outside them refers to and breaks them, so `Rc` frees them too.
//!
//! A cycle can only be closed by a write into a container that already exists: a new
//! container refers only to values older than itself. So the collector does not
//! register containers at birth (making and dropping them costs nothing extra); it
//! registers a container when a reference to an object, list, map or task is written
//! into it ([`wrote_obj`], [`wrote_list`], [`wrote_map`], [`wrote_task`]: field and
//! element stores, `push`, map stores, a task's result), as a `Weak` in a thread-local
//! registry. Every garbage cycle holds such a container. A collection takes the
//! registered containers (the young ones, or all of them), adds everything they reach,
//! and runs trial deletion over that set, as CPython's `gc` does: each container's
//! strong count minus the references it receives from containers of the set. A
//! container with references left over is referred to from outside the set (a
//! register, a global, a fiber, a native's local, a container outside the set): it and
//! everything it reaches survive. The rest is garbage held up by cycles: its contents
//! are moved out and dropped, which lets the counts reach zero. No root set is needed,
//! so a collection may run at any write, and whatever the collector cannot see (a
//! container it cannot borrow) only makes it keep more. Rows are ids into the
//! database, not heap values: they are never looked at. No `unsafe`.
//!
//! When: after [`YOUNG`] registrations (or as many as the last collection's work, when
//! that is more), or after [`ALLOCS`] new containers with at least one registration
//! since the last collection. Registered containers that survive become old and are
//! examined again only by a full collection, which runs once the work that survivors
//! added reaches half of what the last full collection examined. So the total cost is
//! linear in the work the program does, and a program that makes and drops cycles runs
//! in flat memory.
//!
//! [`children`] is the one place that knows what a container holds. An object keeps
//! its place in the registry (or `u32::MAX`) in `Object::gc` and frees the place when
//! dropped.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::{Rc, Weak};

use crate::value::{MapData, Object, TaskCell, TaskState, Value};

/// The least number of registrations between two collections.
pub const YOUNG: usize = 10_000;
/// The least number of new containers that make a collection due when some container
/// has been registered since the last one (a cycle may hold many that never are).
pub const ALLOCS: u32 = 100_000;
/// The least promoted work that makes a full collection due.
const FULL_MIN: usize = 20_000;
/// `Object::gc` of an object that is not registered.
pub(crate) const UNTRACKED: u32 = u32::MAX;

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
    /// The container `v` refers to, if it refers to one.
    fn of(v: &Value) -> Option<Node> {
        match v {
            Value::List(rc) => Some(Node::List(rc.clone())),
            Value::Map(rc) => Some(Node::Map(rc.clone())),
            Value::Obj(rc) => Some(Node::Obj(rc.clone())),
            Value::Task(rc) => Some(Node::Task(rc.clone())),
            _ => None,
        }
    }

    fn duplicate(&self) -> Node {
        match self {
            Node::List(rc) => Node::List(rc.clone()),
            Node::Map(rc) => Node::Map(rc.clone()),
            Node::Obj(rc) => Node::Obj(rc.clone()),
            Node::Task(rc) => Node::Task(rc.clone()),
        }
    }

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

/// Whether `v` refers to an object, list, map or task (writing it into a container
/// may close a cycle).
#[inline(always)]
pub fn is_ref(v: &Value) -> bool {
    matches!(
        v,
        Value::List(_) | Value::Map(_) | Value::Obj(_) | Value::Task(_)
    )
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
    /// Registrations that make a collection due.
    threshold: usize,
    /// The list or map registered last (a loop that pushes into one list registers
    /// it once).
    last: usize,
    /// Work (containers and values held) of the survivors of young collections since
    /// the last full collection.
    pending: usize,
    /// The work of the last full collection.
    old_work: usize,
    stats: Stats,
    scratch: Scratch,
}

/// The buffers of a collection, kept for their capacity.
struct Scratch {
    /// The set examined: the registered containers first, then what they reach.
    nodes: Vec<Node>,
    /// Per node: references from outside the set (then: non-zero when it survives).
    refs: Vec<usize>,
    /// Per node: its `Object::gc` before the collection (objects only).
    saved: Vec<u32>,
    stack: Vec<u32>,
    /// Addresses of the lists, maps and tasks in `nodes` (an object's place in
    /// `nodes` is in its `gc` during a collection).
    index: AddrMap,
}

thread_local! {
    static HEAP: RefCell<Heap> = const {
        RefCell::new(Heap {
            entries: Vec::new(),
            old: 0,
            threshold: YOUNG,
            last: 0,
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
                saved: Vec::new(),
                stack: Vec::new(),
                index: HashMap::with_hasher(BuildHasherDefault::new()),
            },
        })
    };
    /// Containers made since the last collection (no destructor: counting is a
    /// single add).
    static MADE: Cell<u32> = const { Cell::new(0) };
}

/// Counts a new container (every constructor of one calls this).
#[inline(always)]
pub fn made() {
    MADE.with(|m| m.set(m.get().wrapping_add(1)));
}

/// Garbage found by a collection, dropped once the heap is no longer borrowed: the
/// emptied containers first (what holds them is in `trash`), then their former
/// contents, which frees them.
struct Garbage {
    _nodes: Vec<Node>,
    _trash: Vec<Value>,
}

/// Where `v`'s container is in `nodes`, if it is there.
fn find(nodes: &[Node], index: &AddrMap, v: &Value) -> Option<usize> {
    match v {
        Value::Obj(o) => {
            let j = o.gc.get() as usize;
            match nodes.get(j) {
                Some(Node::Obj(n)) if Rc::ptr_eq(n, o) => Some(j),
                _ => None,
            }
        }
        Value::List(rc) => index.get(&addr_of(rc)).map(|&j| j as usize),
        Value::Map(rc) => index.get(&addr_of(rc)).map(|&j| j as usize),
        Value::Task(rc) => index.get(&addr_of(rc)).map(|&j| j as usize),
        _ => None,
    }
}

impl Scratch {
    fn find(&self, v: &Value) -> Option<usize> {
        find(&self.nodes, &self.index, v)
    }

    /// Adds `node` to the set: its place.
    fn add(&mut self, node: Node) -> usize {
        let j = self.nodes.len();
        match &node {
            Node::Obj(o) => {
                self.saved.push(o.gc.get());
                o.gc.set(j as u32);
            }
            _ => {
                self.saved.push(UNTRACKED);
                self.index.insert(node.addr(), j as u32);
            }
        }
        // Minus the collector's own reference.
        self.refs.push(node.strong_count() - 1);
        self.nodes.push(node);
        j
    }

    /// Where `node` is in the set, if it is there.
    fn find_node(&self, node: &Node) -> Option<usize> {
        match node {
            Node::Obj(o) => {
                let j = o.gc.get() as usize;
                match self.nodes.get(j) {
                    Some(Node::Obj(n)) if Rc::ptr_eq(n, o) => Some(j),
                    _ => None,
                }
            }
            _ => self.index.get(&node.addr()).map(|&j| j as usize),
        }
    }
}

impl Heap {
    /// Registers `t`: its place in `entries`.
    fn push(&mut self, t: Tracked) -> u32 {
        let slot = self.entries.len() as u32;
        self.entries.push(t);
        slot
    }

    /// A collection, when one is due.
    fn maybe_collect(&mut self) -> Option<Garbage> {
        let young = self.entries.len() - self.old;
        let made = MADE.with(Cell::get);
        if young < self.threshold && made < ALLOCS.max(self.threshold as u32) {
            return None;
        }
        let full = self.pending >= self.old_work / 2 + FULL_MIN;
        Some(self.collect(full))
    }

    /// Collects the young generation, or everything when `full`.
    fn collect(&mut self, full: bool) -> Garbage {
        MADE.with(|m| m.set(0));
        self.last = 0;
        let start = if full { 0 } else { self.old };
        self.stats.peak_tracked = self.stats.peak_tracked.max(self.entries.len());
        let sc = &mut self.scratch;

        // The registered containers, alive and once each, their entries moved to match.
        let mut w = start;
        for r in start..self.entries.len() {
            if let Some(node) = self.entries[r].upgrade() {
                if sc.find_node(&node).is_none() {
                    self.entries.swap(w, r);
                    sc.add(node);
                    w += 1;
                }
            }
        }
        self.entries.truncate(w);
        let registered = sc.nodes.len();

        // Everything they reach joins the set; every reference from inside the set
        // is taken off its target's count.
        let mut i = 0;
        while i < sc.nodes.len() {
            let node = sc.nodes[i].duplicate();
            children(&node, |v| {
                let j = match sc.find(v) {
                    Some(j) => j,
                    None => match Node::of(v) {
                        Some(n) => sc.add(n),
                        None => return,
                    },
                };
                sc.refs[j] = sc.refs[j].saturating_sub(1);
            });
            i += 1;
        }

        // Everything reachable from a container referred to from outside survives
        // (its `refs` is not 0 afterwards).
        let Scratch {
            nodes,
            refs,
            stack,
            index,
            ..
        } = sc;
        stack.extend((0..nodes.len() as u32).filter(|&i| refs[i as usize] > 0));
        let mut work = 0;
        while let Some(i) = stack.pop() {
            work += 1;
            children(&nodes[i as usize], |v| {
                work += 1;
                if let Some(j) = find(nodes, index, v) {
                    if refs[j] == 0 {
                        refs[j] = 1;
                        stack.push(j as u32);
                    }
                }
            });
        }
        index.clear();

        // Registered survivors keep their entries (and become old); objects get their
        // place back; the garbage is cleared.
        let mut trash = Vec::new();
        let mut garbage = Vec::new();
        let mut w = start;
        for (i, node) in sc.nodes.drain(..).enumerate() {
            let alive = sc.refs[i] > 0;
            if i < registered {
                if alive {
                    if let Node::Obj(o) = &node {
                        o.gc.set(w as u32);
                    }
                    self.entries.swap(w, start + i);
                    w += 1;
                }
            } else if let Node::Obj(o) = &node {
                let saved = sc.saved[i];
                if alive {
                    o.gc.set(saved);
                } else if let Some(e) = self.entries.get_mut(saved as usize) {
                    // An old registered object (a young collection reached it).
                    *e = Tracked::Free;
                }
            }
            if !alive {
                if let Node::Obj(o) = &node {
                    o.gc.set(UNTRACKED);
                }
                node.clear(&mut trash);
                garbage.push(node);
            }
        }
        sc.refs.clear();
        sc.saved.clear();
        self.entries.truncate(w);
        self.stats.freed += garbage.len() as u64;
        self.old = self.entries.len();
        self.threshold = YOUNG.max(work);
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

/// Registers a list or map `t` at `addr` (unless it was the last one registered).
fn register(addr: usize, t: impl FnOnce() -> Tracked) {
    let garbage = HEAP.with(|h| {
        let mut h = h.borrow_mut();
        if h.last == addr {
            return None;
        }
        h.last = addr;
        h.push(t());
        h.maybe_collect()
    });
    // Dropped outside the borrow: freeing values runs no script code, but it must not
    // find the heap borrowed should it ever register or collect.
    drop(garbage);
}

/// `v` was written into `container` (an object, list, map or task): call after the
/// write, with no borrow of the container held. Nothing to do unless `v` is a
/// reference.
#[inline]
pub fn wrote(container: &Value, v: &Value) {
    if is_ref(v) {
        match container {
            Value::List(rc) => wrote_list(rc),
            Value::Map(rc) => wrote_map(rc),
            Value::Obj(rc) => wrote_obj(rc),
            Value::Task(rc) => wrote_task(rc),
            _ => {}
        }
    }
}

/// A reference was written into list `rc` (call after the write, with no borrow held).
#[cold]
pub fn wrote_list(rc: &Rc<RefCell<Vec<Value>>>) {
    register(addr_of(rc), || Tracked::List(Rc::downgrade(rc)));
}

/// A reference was written into map `rc`.
#[cold]
pub fn wrote_map(rc: &Rc<RefCell<MapData>>) {
    register(addr_of(rc), || Tracked::Map(Rc::downgrade(rc)));
}

/// A reference was written into task `rc` (its result).
#[cold]
pub fn wrote_task(rc: &Rc<TaskCell>) {
    register(addr_of(rc), || Tracked::Task(Rc::downgrade(rc)));
}

/// A reference was written into object `rc`: registered once (until a collection
/// finds it is garbage).
#[inline]
pub fn wrote_obj(rc: &Rc<Object>) {
    if rc.gc.get() == UNTRACKED {
        track_obj(rc);
    }
}

#[cold]
fn track_obj(rc: &Rc<Object>) {
    let garbage = HEAP.with(|h| {
        let mut h = h.borrow_mut();
        let slot = h.push(Tracked::Obj(Rc::downgrade(rc)));
        rc.gc.set(slot);
        h.maybe_collect()
    });
    drop(garbage);
}

/// A registered object is being dropped: its place in the registry becomes free.
/// (When the registry is busy, the place keeps a dead `Weak`, which the next
/// collection drops.)
#[cold]
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

    /// A field store as SET_FIELD does it.
    fn set(o: &Rc<Object>, i: usize, v: Value) {
        let is_ref = is_ref(&v);
        o.fields.borrow_mut()[i] = v;
        if is_ref {
            wrote_obj(o);
        }
    }

    fn new_list() -> Rc<RefCell<Vec<Value>>> {
        match Value::new_list(vec![]) {
            Value::List(l) => l,
            _ => unreachable!(),
        }
    }

    fn push(l: &Rc<RefCell<Vec<Value>>>, v: Value) {
        l.borrow_mut().push(v.clone());
        wrote(&Value::List(l.clone()), &v);
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
        assert_eq!(collect(), 2);
        assert!(wa.upgrade().is_none() && wb.upgrade().is_none());
        // The kept cycle is intact, and stays so.
        collect();
        let Value::Obj(o) = kept.fields.borrow()[1].clone() else {
            panic!("the field was cleared");
        };
        assert!(matches!(o.fields.borrow()[0], Value::Int(4)));
        assert!(matches!(&o.fields.borrow()[1], Value::Obj(k) if Rc::ptr_eq(k, &kept)));
    }

    #[test]
    fn cycles_through_lists_maps_and_tasks_are_freed() {
        // A list that holds itself.
        let l = new_list();
        push(&l, Value::List(l.clone()));
        let wl = Rc::downgrade(&l);
        // A map whose value is an object that holds the map.
        let Value::Map(m) = Value::new_map(MapData::new()) else {
            unreachable!()
        };
        let o = obj(vec![Value::Map(m.clone())]);
        m.borrow_mut()
            .insert(crate::value::Key::Int(1), Value::Obj(o.clone()));
        wrote_map(&m);
        let wm = Rc::downgrade(&m);
        // A task whose result is an object that holds the task.
        let t = Rc::new(TaskCell {
            fiber: 0,
            state: RefCell::new(TaskState::Running),
            waiters: RefCell::new(Vec::new()),
        });
        let h = obj(vec![Value::Task(t.clone())]);
        *t.state.borrow_mut() = TaskState::Done(Value::Obj(h.clone()));
        wrote_task(&t);
        let wt = Rc::downgrade(&t);
        drop((l, m, o, t, h));
        assert_eq!(collect(), 5);
        assert!(wl.upgrade().is_none());
        assert!(wm.upgrade().is_none());
        assert!(wt.upgrade().is_none());
    }

    #[test]
    fn a_borrowed_container_is_kept_and_the_rest_collected() {
        let l = new_list();
        let o = obj(vec![Value::List(l.clone())]);
        push(&l, Value::Obj(o.clone()));
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
        let mut objs: Vec<Rc<Object>> = (0..200).map(|_| obj(vec![Value::Nil])).collect();
        for o in &objs {
            set(o, 0, Value::List(new_list()));
        }
        assert_eq!(live(), live_before + 200);
        // Drop every other one, then collect: the survivors' places move.
        let mut i = 0;
        objs.retain(|_| {
            i += 1;
            i % 2 == 0
        });
        assert_eq!(live(), live_before + 100);
        collect();
        assert_eq!(live(), live_before + 100);
        for n in (0..100).rev() {
            objs.pop();
            assert_eq!(live(), live_before + n);
        }
    }

    #[test]
    fn an_old_cycle_dropped_later_is_freed_by_a_full_collection() {
        let a = obj(vec![Value::Nil]);
        set(&a, 0, Value::Obj(a.clone()));
        let wa = Rc::downgrade(&a);
        // It survives young collections and becomes old.
        for _ in 0..2 * YOUNG {
            let b = obj(vec![Value::Nil]);
            set(&b, 0, Value::Obj(b.clone()));
        }
        drop(a);
        collect();
        assert!(wa.upgrade().is_none());
    }

    #[test]
    fn collections_run_as_cycles_are_made() {
        let before = stats();
        for _ in 0..3 * YOUNG {
            let a = obj(vec![Value::Nil]);
            set(&a, 0, Value::Obj(a.clone()));
        }
        let after = stats();
        assert!(after.young_collections + after.full_collections >= before.young_collections + 2);
        assert!(after.freed >= before.freed + 2 * YOUNG as u64);
        assert!(after.peak_tracked < 2 * YOUNG + 10);
    }

    #[test]
    fn made_and_dropped_containers_are_not_registered() {
        for i in 0..3 * YOUNG {
            let a = obj(vec![Value::Int(i as i64)]);
            let _b = obj(vec![Value::Obj(a)]);
            let _l = Value::new_list(vec![Value::Int(1)]);
        }
        assert_eq!(stats().tracked, 0);
    }
}
