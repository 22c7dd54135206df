//! The planner and the query executor.
//!
//! Whatever the access path, the executor re-checks every predicate on every candidate
//! row, so a path only has to produce a superset of the matching rows in a known order;
//! the result always equals a full scan + filter + stable sort.

use std::cmp::Ordering;
use std::ops::Bound;

use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;

use crate::db::{err, ty_name};
use crate::index::{Entry, Index};
use crate::table::Table;
use crate::value::{canon_bits, sort_cmp, val_eq, val_ord, KeyVal, ValRef};
use crate::{
    Cell, CmpOp, Col, ColType, DbError, ErrorKind, IndexKind, Plan, Pred, Query, RowId, Schema,
    TableDef,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Result order as the query says.
    Query,
    /// Any access path, result in the query's order (tests).
    Scan,
    /// Id order whatever `order` says (aggregates without skip/take).
    Unordered,
    /// [`Mode::Unordered`] for a caller that stops at the first row (`exists`).
    First,
}

fn is_range(op: CmpOp) -> bool {
    matches!(op, CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge)
}

/// The planner's rules, in priority order:
/// 1. an equality on `id` → [`Plan::ById`];
/// 2. equalities covering every column of a hash or unique index → [`Plan::HashProbe`]
///    of the index with the most columns (a unique one on a tie);
/// 3. a sorted index on a column with a range (or equality) predicate, or on the
///    first `order` key → [`Plan::SortedWalk`]; when both exist on different columns,
///    the `order` key wins if the query has `take` (it can stop early), else the range;
/// 4. otherwise [`Plan::Scan`].
pub(crate) fn choose(
    def: &TableDef,
    preds: &[Pred],
    order: &[(Col, bool)],
    has_take: bool,
) -> Plan {
    if preds.iter().any(|p| p.col == Col::Id && p.op == CmpOp::Eq) {
        return Plan::ById;
    }
    let eq_on = |c: usize| {
        preds
            .iter()
            .any(|p| p.col == Col::At(c) && p.op == CmpOp::Eq)
    };
    let mut best: Option<(usize, usize, bool)> = None;
    for (i, ix) in def.indexes.iter().enumerate() {
        if ix.kind == IndexKind::Sorted || !ix.columns.iter().all(|&c| eq_on(c)) {
            continue;
        }
        let unique = ix.kind == IndexKind::Unique;
        let better = match best {
            None => true,
            Some((_, n, u)) => ix.columns.len() > n || (ix.columns.len() == n && unique && !u),
        };
        if better {
            best = Some((i, ix.columns.len(), unique));
        }
    }
    if let Some((i, _, _)) = best {
        return Plan::HashProbe(i);
    }
    let sorted_on = |c: usize| {
        def.indexes
            .iter()
            .position(|ix| ix.kind == IndexKind::Sorted && ix.columns[0] == c)
    };
    let range = preds.iter().find_map(|p| match p.col {
        Col::At(c) if is_range(p.op) || p.op == CmpOp::Eq => sorted_on(c),
        _ => None,
    });
    let by_order = match order.first() {
        Some((Col::At(c), _)) => sorted_on(*c),
        _ => None,
    };
    let pick = match (range, by_order) {
        (Some(r), Some(o)) => Some(if has_take { o } else { r }),
        (r, o) => r.or(o),
    };
    match pick {
        Some(i) => Plan::SortedWalk(i),
        None => Plan::Scan,
    }
}

/// A walked entry of a sorted index costs one and a half to two scanned rows: a
/// B-tree step and a read of the row out of order, against a column read in order
/// (33 ns and 22 ns a row walking and scanning 200,000 rows for a `count`,
/// bench/queries/optional_column.wo). Two leans to the scan, the steadier of the two.
const WALK_COST: usize = 2;

/// The part of the plan that needs the arguments: a plan's shape sees `!= x` and
/// `== x`, not whether `x` is nil. With the sorted indexes' nil counts, a `!= nil` on
/// a sorted column walks the keys that are not nil instead of scanning, when they are
/// few (an optional date, mostly unset: `where t.due != nil`); and a walk bounded by
/// nothing but an `== nil`, not serving the order, scans instead when the nil keys
/// are most of the table.
fn nil_plan(
    def: &TableDef,
    tab: &Table,
    (preds, args): (&[Pred], &[Cell]),
    order: &[(Col, bool)],
    stops_early: bool,
    plan: Plan,
) -> Plan {
    let sorted = |i: usize| match &tab.indexes[i] {
        Index::Sorted(s) => Some(s),
        _ => None,
    };
    let nil_test = |p: &Pred, op: CmpOp| p.op == op && args[p.arg] == Cell::Nil;
    match plan {
        Plan::Scan if stops_early => plan,
        Plan::Scan => {
            // The scan reads the rows of its id range (a `where t.id > n` narrows it).
            let Some((lo, hi)) = id_range(tab, preds, args) else {
                return plan;
            };
            let scanned = usize::try_from(hi - lo + 1).map_or(0, |n| n.min(tab.live_count));
            let mut best: Option<(usize, usize)> = None;
            for p in preds.iter().filter(|p| nil_test(p, CmpOp::Ne)) {
                for (i, ix) in def.indexes.iter().enumerate() {
                    if ix.kind != IndexKind::Sorted || Col::At(ix.columns[0]) != p.col {
                        continue;
                    }
                    let Some(walk) = sorted(i).map(|s| s.not_nil()) else {
                        continue;
                    };
                    if walk * WALK_COST < scanned && best.is_none_or(|(w, _)| walk < w) {
                        best = Some((walk, i));
                    }
                }
            }
            best.map_or(Plan::Scan, |(_, i)| Plan::SortedWalk(i))
        }
        Plan::SortedWalk(i) => {
            let c = Col::At(def.indexes[i].columns[0]);
            let on_c = || preds.iter().filter(|p| p.col == c);
            let serves_order = order.first().is_some_and(|(o, _)| *o == c);
            let nil_group = on_c().any(|p| nil_test(p, CmpOp::Eq))
                && on_c().all(|p| p.op == CmpOp::Ne || nil_test(p, CmpOp::Eq));
            let many = sorted(i).is_some_and(|s| s.nils() * WALK_COST > tab.live_count);
            if nil_group && many && !serves_order {
                Plan::Scan
            } else {
                plan
            }
        }
        other => other,
    }
}

/// Checks a query against the table and its arguments.
fn validate(schema: &Schema, def: &TableDef, q: &Query, args: &[Cell]) -> Result<(), DbError> {
    let arg = |a: usize| {
        args.get(a).ok_or_else(|| {
            err(
                ErrorKind::Db,
                format!("query argument {a} is missing ({} given)", args.len()),
            )
        })
    };
    let col_ok = |c: Col| match c {
        Col::At(i) if i >= def.columns.len() => Err(err(
            ErrorKind::Db,
            format!("{} has no column {i}", def.name),
        )),
        _ => Ok(()),
    };
    for p in &q.preds {
        col_ok(p.col)?;
        let a = arg(p.arg)?;
        let (ty, name) = match p.col {
            Col::Id => (ColType::Int, "id"),
            Col::At(c) => (def.columns[c].ty, def.columns[c].name.as_str()),
        };
        let ok = match (ty, a) {
            (_, Cell::Nil) => true,
            (ColType::Int, Cell::Int(_)) => true,
            (ColType::Int, Cell::Ref(_)) => p.col == Col::Id,
            (ColType::Float, Cell::Float(_))
            | (ColType::Bool, Cell::Bool(_))
            | (ColType::Text, Cell::Text(_)) => true,
            (ColType::Ref(_), Cell::Ref(_) | Cell::Int(_)) => true,
            _ => false,
        };
        if !ok {
            return Err(err(
                ErrorKind::Db,
                format!(
                    "query argument {} is {}, but {}.{name} is {}",
                    p.arg,
                    crate::value::cell_kind(a),
                    def.name,
                    ty_name(schema, ty)
                ),
            ));
        }
    }
    for &(c, _) in &q.order {
        col_ok(c)?;
    }
    for (what, a) in [("skip", q.skip), ("take", q.take)] {
        if let Some(a) = a {
            if !matches!(arg(a)?, Cell::Int(_)) {
                return Err(err(
                    ErrorKind::Db,
                    format!("{what} argument {a} must be an Int"),
                ));
            }
        }
    }
    Ok(())
}

#[inline]
fn col_val(tab: &Table, c: Col, pos: usize) -> ValRef<'_> {
    match c {
        Col::Id => ValRef::Int(pos as RowId + 1),
        Col::At(i) => tab.cols[i].val(pos),
    }
}

#[inline]
fn holds(v: ValRef<'_>, op: CmpOp, arg: &Cell) -> bool {
    match op {
        CmpOp::Eq => val_eq(v, arg),
        CmpOp::Ne => !val_eq(v, arg),
        CmpOp::Lt => val_ord(v, arg) == Some(Ordering::Less),
        CmpOp::Le => matches!(val_ord(v, arg), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => val_ord(v, arg) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(val_ord(v, arg), Some(Ordering::Greater | Ordering::Equal)),
    }
}

fn int_arg(args: &[Cell], a: Option<usize>) -> Option<usize> {
    a.map(|a| match args[a] {
        Cell::Int(n) => n.max(0) as usize,
        _ => 0,
    })
}

/// Runs `q` and calls `emit` with each result id in result order until it returns
/// false. Returns the access path used.
#[allow(clippy::too_many_arguments)]
pub(crate) fn exec(
    schema: &Schema,
    def: &TableDef,
    tab: &Table,
    q: &Query,
    args: &[Cell],
    bump: &Bump,
    mode: Mode,
    emit: &mut dyn FnMut(RowId) -> bool,
) -> Result<Plan, DbError> {
    validate(schema, def, q, args)?;
    let skip = int_arg(args, q.skip).unwrap_or(0);
    let take = int_arg(args, q.take);

    // Normalize the order: keys after `id` cannot matter; a trailing `id asc` is the
    // tie-break every order has anyway.
    let mut order: &[(Col, bool)] = if matches!(mode, Mode::Unordered | Mode::First) {
        &[]
    } else {
        &q.order
    };
    if let Some(p) = order.iter().position(|(c, _)| *c == Col::Id) {
        order = &order[..=p];
    }
    if let Some((Col::Id, false)) = order.last() {
        order = &order[..order.len() - 1];
    }

    let mut plan = match mode {
        Mode::Scan => Plan::Scan,
        _ => choose(def, &q.preds, order, take.is_some()),
    };
    // A unique index holds no nil keys: an equality with nil on one of its columns scans.
    if let Plan::HashProbe(i) = plan {
        if matches!(tab.indexes[i], Index::Unique(_)) {
            let nil = def.indexes[i].columns.iter().any(|&c| {
                q.preds
                    .iter()
                    .any(|p| p.col == Col::At(c) && p.op == CmpOp::Eq && args[p.arg] == Cell::Nil)
            });
            if nil {
                plan = Plan::Scan;
            }
        }
    }
    if mode != Mode::Scan {
        // A scan in id order stops at the `take`-th match, or at the first for
        // `exists`: a walk would collect and sort all its rows first.
        let streams = matches!(order, [] | [(Col::Id, true)]);
        let stops_early = streams && (take.is_some() || mode == Mode::First);
        plan = nil_plan(def, tab, (&q.preds, args), order, stops_early, plan);
    }
    if take == Some(0) {
        return Ok(plan);
    }

    let walk_col = match plan {
        Plan::SortedWalk(i) => Some(def.indexes[i].columns[0]),
        _ => None,
    };
    // Does the path itself produce the result order?
    let (in_order, desc) = match plan {
        Plan::ById => (true, false),
        Plan::HashProbe(_) => (order.is_empty(), false),
        Plan::Scan => match order {
            [] => (true, false),
            [(Col::Id, true)] => (true, true),
            _ => (false, false),
        },
        Plan::SortedWalk(_) => match order {
            [(Col::At(c), d)] if Some(*c) == walk_col => (true, *d),
            [(Col::At(c), d), ..] if Some(*c) == walk_col => (false, *d),
            _ => (false, false),
        },
    };

    let preds = &q.preds;
    // A hash probe whose key is exactly the predicates (one equality per column of
    // the index, nothing else) yields only rows that hold: the check would read each
    // candidate's key columns again, a cache miss a row. Not for Float columns,
    // whose key (one NaN, one zero) is coarser than `==`.
    let covered = match plan {
        Plan::HashProbe(i) => {
            let cols = &def.indexes[i].columns;
            preds.len() == cols.len()
                && cols.iter().all(|&c| {
                    def.columns[c].ty != ColType::Float
                        && preds
                            .iter()
                            .filter(|p| p.col == Col::At(c) && p.op == CmpOp::Eq)
                            .count()
                            == 1
                })
        }
        _ => false,
    };
    let matches = |pos: usize| {
        covered
            || preds
                .iter()
                .all(|p| holds(col_val(tab, p.col, pos), p.op, &args[p.arg]))
    };

    if in_order && covered && skip == 0 && take.is_none() {
        // Every candidate is a result, in order, and all of them are wanted (an
        // equality probe such as `where it.k == x`): straight to `emit`, with no
        // per-row check or count between.
        candidates(def, tab, plan.clone(), preds, args, desc, bump, emit);
    } else if in_order {
        let mut skipped = 0usize;
        let mut taken = 0usize;
        candidates(def, tab, plan.clone(), preds, args, desc, bump, &mut |id| {
            if !matches(id as usize - 1) {
                return true;
            }
            if skipped < skip {
                skipped += 1;
                return true;
            }
            taken += 1;
            emit(id) && take.is_none_or(|t| taken < t)
        });
    } else {
        let mut ids: BumpVec<'_, RowId> = BumpVec::new_in(bump);
        candidates(def, tab, plan.clone(), preds, args, desc, bump, &mut |id| {
            if matches(id as usize - 1) {
                ids.push(id);
            }
            true
        });
        if order.is_empty() {
            ids.sort_unstable();
        } else {
            ids.sort_unstable_by(|&a, &b| {
                let (pa, pb) = (a as usize - 1, b as usize - 1);
                for &(c, d) in order {
                    let (va, vb) = (col_val(tab, c, pa), col_val(tab, c, pb));
                    let o = match (va.is_nil(), vb.is_nil()) {
                        (false, false) if d => sort_cmp(vb, va),
                        _ => sort_cmp(va, vb),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.cmp(&b)
            });
        }
        let end = take.map_or(ids.len(), |t| skip.saturating_add(t).min(ids.len()));
        for &id in ids.get(skip..end).unwrap_or(&[]) {
            if !emit(id) {
                break;
            }
        }
    }
    Ok(plan)
}

/// Calls `f` with candidate row ids from the access path (a superset of the matches;
/// in id order for ById/HashProbe/Scan, `desc` reverses a Scan; in key order, `nil`
/// first and ties by ascending id, for a SortedWalk) until it returns false.
#[allow(clippy::too_many_arguments)]
fn candidates(
    def: &TableDef,
    tab: &Table,
    plan: Plan,
    preds: &[Pred],
    args: &[Cell],
    desc: bool,
    bump: &Bump,
    f: &mut dyn FnMut(RowId) -> bool,
) {
    match plan {
        Plan::ById => {
            let Some(p) = preds.iter().find(|p| p.col == Col::Id && p.op == CmpOp::Eq) else {
                return;
            };
            if let Cell::Int(id) | Cell::Ref(id) = args[p.arg] {
                if tab.is_live(id) {
                    f(id);
                }
            }
        }
        Plan::HashProbe(i) => {
            let ix = &def.indexes[i];
            let mut nan = false;
            let mut key_for = |c: usize| {
                let p = preds
                    .iter()
                    .find(|p| p.col == Col::At(c) && p.op == CmpOp::Eq)
                    .expect("planner: eq pred");
                let a = &args[p.arg];
                if matches!(a, Cell::Float(x) if x.is_nan()) {
                    nan = true;
                }
                KeyVal::from_cell(def.columns[c].ty, a, true)
            };
            let key = if let [c] = ix.columns[..] {
                key_for(c)
            } else {
                KeyVal::Tuple(ix.columns.iter().map(|&c| key_for(c)).collect())
            };
            if nan {
                return;
            }
            match &tab.indexes[i] {
                Index::Hash(m) => {
                    if let Some(p) = m.get(&key) {
                        let (a, b) = p.ids();
                        for &id in a.iter().chain(b) {
                            if !f(id) {
                                return;
                            }
                        }
                    }
                }
                Index::Unique(m) => {
                    if let Some(&id) = m.get(&key) {
                        f(id);
                    }
                }
                Index::Sorted(_) => unreachable!("planner: hash probe of a sorted index"),
            }
        }
        Plan::SortedWalk(i) => {
            let c = def.indexes[i].columns[0];
            let Index::Sorted(sorted) = &tab.indexes[i] else {
                unreachable!("planner: sorted walk")
            };
            let Some((lo, hi)) = sorted_bounds(def.columns[c].ty, c, preds, args) else {
                return;
            };
            let range = |lo: &Entry, hi: &Option<Entry>| {
                let upper = match hi {
                    Some(h) => Bound::Included(h.clone()),
                    None => Bound::Unbounded,
                };
                sorted.range(Bound::Included(lo.clone()), upper)
            };
            if !desc {
                for (_, id) in range(&lo, &hi) {
                    if !f(*id) {
                        return;
                    }
                }
                return;
            }
            // Descending: the nil group first (ascending ids), then the other keys from
            // the largest down, each key's ids ascending.
            let nil_end = (KeyVal::Nil, RowId::MAX);
            let nil_hi = match &hi {
                Some(h) if *h < nil_end => h.clone(),
                _ => nil_end.clone(),
            };
            if lo <= nil_hi {
                for (_, id) in range(&lo, &Some(nil_hi)) {
                    if !f(*id) {
                        return;
                    }
                }
            }
            let lo2 = if lo > nil_end { lo } else { nil_end };
            if hi.as_ref().is_some_and(|h| lo2 > *h) {
                return;
            }
            let mut group: BumpVec<'_, RowId> = BumpVec::new_in(bump);
            let mut cur: Option<&KeyVal> = None;
            for (k, id) in range(&lo2, &hi).rev() {
                if cur != Some(k) {
                    for &g in group.iter().rev() {
                        if !f(g) {
                            return;
                        }
                    }
                    group.clear();
                    cur = Some(k);
                }
                group.push(*id);
            }
            for &g in group.iter().rev() {
                if !f(g) {
                    return;
                }
            }
        }
        Plan::Scan => {
            let Some((lo, hi)) = id_range(tab, preds, args) else {
                return;
            };
            let (lo, hi) = (lo as usize - 1, hi as usize);
            if desc {
                for p in tab.live.ones_rev(lo, hi) {
                    if !f(p as RowId + 1) {
                        return;
                    }
                }
            } else {
                for p in tab.live.ones(lo, hi) {
                    if !f(p as RowId + 1) {
                        return;
                    }
                }
            }
        }
    }
}

/// The ids `lo..=hi` a scan reads: all of them, narrowed by the predicates on `id`
/// (`None`: no row can match).
fn id_range(tab: &Table, preds: &[Pred], args: &[Cell]) -> Option<(i64, i64)> {
    let (mut lo, mut hi): (i64, i64) = (1, tab.n as i64);
    for p in preds.iter().filter(|p| p.col == Col::Id) {
        let a = match args[p.arg] {
            Cell::Int(a) | Cell::Ref(a) => a,
            Cell::Nil if p.op == CmpOp::Ne => continue,
            _ => return None,
        };
        match p.op {
            CmpOp::Eq => {
                lo = lo.max(a);
                hi = hi.min(a);
            }
            CmpOp::Gt => lo = lo.max(a.saturating_add(1)),
            CmpOp::Ge => lo = lo.max(a),
            CmpOp::Lt => hi = hi.min(a.saturating_sub(1)),
            CmpOp::Le => hi = hi.min(a),
            CmpOp::Ne => {}
        }
    }
    (lo <= hi).then_some((lo, hi))
}

/// The `(key, id)` range of a sorted index on column `c` that contains every row the
/// predicates on `c` can match (`None`: no row can match). Bounds are inclusive, with
/// the id sentinels `MIN`/`MAX` standing for "before/after every row with this key".
fn sorted_bounds(
    ty: ColType,
    c: usize,
    preds: &[Pred],
    args: &[Cell],
) -> Option<(Entry, Option<Entry>)> {
    let mut lo = (KeyVal::Nil, RowId::MIN);
    let mut hi: Option<Entry> = None;
    let mut lower = |b: Entry| {
        if b > lo {
            lo = b;
        }
    };
    let mut uppers: Vec<Entry> = Vec::new();
    for p in preds.iter().filter(|p| p.col == Col::At(c)) {
        let a = &args[p.arg];
        match (p.op, a) {
            // `!= nil` starts past the nil keys; another `!=` bounds nothing.
            (CmpOp::Ne, Cell::Nil) => {
                lower((KeyVal::Nil, RowId::MAX));
                continue;
            }
            (CmpOp::Ne, _) => continue,
            _ => {}
        }
        match a {
            Cell::Nil if p.op == CmpOp::Eq => {
                uppers.push((KeyVal::Nil, RowId::MAX));
                continue;
            }
            Cell::Nil => return None,
            Cell::Float(x) if x.is_nan() => return None,
            _ => {}
        }
        // Floats: `-0.0 == 0.0`, but total order separates them; widen to both.
        let (klo, khi) = match a {
            Cell::Float(x) if *x == 0.0 => (
                KeyVal::Float(crate::value::FloatOrd((-0.0f64).to_bits())),
                KeyVal::Float(crate::value::FloatOrd(canon_bits(0.0))),
            ),
            _ => {
                let k = KeyVal::from_cell(ty, a, false);
                (k.clone(), k)
            }
        };
        // Any range predicate excludes nil.
        lower((KeyVal::Nil, RowId::MAX));
        match p.op {
            CmpOp::Eq => {
                lower((klo, RowId::MIN));
                uppers.push((khi, RowId::MAX));
            }
            CmpOp::Gt => lower((klo, RowId::MAX)),
            CmpOp::Ge => lower((klo, RowId::MIN)),
            CmpOp::Lt => uppers.push((khi, RowId::MIN)),
            CmpOp::Le => uppers.push((khi, RowId::MAX)),
            CmpOp::Ne => {}
        }
    }
    for u in uppers {
        if hi.as_ref().is_none_or(|h| u < *h) {
            hi = Some(u);
        }
    }
    if hi.as_ref().is_some_and(|h| lo > *h) {
        return None;
    }
    Some((lo, hi))
}
