//! List functions and the aggregates over a list. Lists have reference semantics: the
//! mutating functions (`push`, `pop`, `insert_at`, `remove_at`, `sort`, `reverse`)
//! change the shared list every holder sees, while `slice` builds a new one. The
//! aggregates (`count`, `exists`, `sum`, `min`, `max`, `avg`, `first`) take any list,
//! which is also what a query produces, so they live here rather than with the database.

use std::cmp::Ordering;

use wo_vm::gc::wrote;
use wo_vm::{limit, FloatSum, Host, IntSum, Stop, TrapKind, Value};

use crate::{
    args, expected, float, float_order, int, internal, list_mut, list_ref, new_list, trap,
    values_equal, Native,
};

pub(crate) const NATIVES: &[Native] = &[
    ("len_list", len_list),
    ("push", push),
    ("pop", pop),
    ("remove_at", remove_at),
    ("insert_at", insert_at),
    ("slice", slice),
    ("sort", sort),
    ("reverse", reverse),
    ("contains_list", contains_list),
    ("count", len_list),
    ("exists", exists),
    ("sum_int", sum_int),
    ("sum_float", sum_float),
    ("min_list", min_list),
    ("max_list", max_list),
    ("avg_int", avg_int),
    ("avg_float", avg_float),
    ("first", first),
    ("range", range),
];

fn len_value(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// `i` as an index into a list of `len` elements when `0 <= i < len` (or `<= len` when
/// `one_past` allows the end position).
fn index(i: i64, len: usize, one_past: bool) -> Option<usize> {
    let i = usize::try_from(i).ok()?;
    (i < len || (one_past && i == len)).then_some(i)
}

/// `len(xs)`, and `count(xs)`: the number of elements.
fn len_list(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("len_list", argv)?;
    Ok(len_value(list_ref(xs)?.len()))
}

/// `exists(xs)`: whether `xs` has an element.
fn exists(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("exists", argv)?;
    Ok(Value::Bool(!list_ref(xs)?.is_empty()))
}

/// `range(start, stop, step)` outside a `for` header: a new list of the values a
/// counted loop would give `i`; traps BOUNDS on a step of 0 and LIMIT on a list too long.
fn range(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [start, stop, step] = args("range", argv)?;
    let (start, stop, step) = (int(start)?, int(stop)?, int(step)?);
    let Some(left) = wo_vm::interp::range_count(start, stop, step) else {
        return Err(trap(TrapKind::Bounds, "`range` step is 0"));
    };
    let mut out = Vec::new();
    if let Some(left) = left {
        let left = u64::from_ne_bytes(left.to_ne_bytes());
        let n = usize::try_from(left)
            .ok()
            .and_then(|n| n.checked_add(1))
            .unwrap_or(usize::MAX);
        limit::list_room(&mut out, "range", n)?;
        let mut i = start;
        out.push(Value::Int(i));
        for _ in 1..n {
            i = i.wrapping_add(step);
            out.push(Value::Int(i));
        }
    }
    Ok(new_list(out))
}

/// `push(xs, v)`: appends `v` (which may be `xs` itself: that makes a cycle).
fn push(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, v] = args("push", argv)?;
    let mut xs = list_mut(xs)?;
    if xs.len() == xs.capacity() || xs.len() >= limit::max_list_len() {
        limit::list_room(&mut xs, "push", 1)?;
    }
    xs.push(v.clone());
    drop(xs);
    wrote(&argv[0], v);
    Ok(Value::Nil)
}

/// `pop(xs) -> ?T`: removes and returns the last element; nil when `xs` is empty.
fn pop(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("pop", argv)?;
    Ok(list_mut(xs)?.pop().unwrap_or(Value::Nil))
}

/// `remove_at(xs, i) -> T`: removes element `i`, shifting the later ones down. Traps
/// BOUNDS unless `0 <= i < len(xs)`.
fn remove_at(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, i] = args("remove_at", argv)?;
    let (mut xs, i) = (list_mut(xs)?, int(i)?);
    let len = xs.len();
    let Some(i) = index(i, len, false) else {
        return Err(trap(
            TrapKind::Bounds,
            format!("remove_at index {i} is out of range for {}", a_list_of(len)),
        ));
    };
    Ok(xs.remove(i))
}

/// `insert_at(xs, i, v)`: inserts `v` before element `i` (at the end when `i` is the
/// length). Traps BOUNDS unless `0 <= i <= len(xs)`.
fn insert_at(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, i, v] = args("insert_at", argv)?;
    let (mut xs, i) = (list_mut(xs)?, int(i)?);
    let len = xs.len();
    let Some(i) = index(i, len, true) else {
        return Err(trap(
            TrapKind::Bounds,
            format!("insert_at index {i} is out of range for {}", a_list_of(len)),
        ));
    };
    if xs.len() == xs.capacity() || xs.len() >= limit::max_list_len() {
        limit::list_room(&mut xs, "insert_at", 1)?;
    }
    xs.insert(i, v.clone());
    drop(xs);
    wrote(&argv[0], v);
    Ok(Value::Nil)
}

/// `slice(xs, lo, hi)`: a new list of the elements `lo <= i < hi`. Traps BOUNDS unless
/// `0 <= lo <= hi <= len(xs)`.
fn slice(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, lo, hi] = args("slice", argv)?;
    let (xs, lo, hi) = (list_ref(xs)?, int(lo)?, int(hi)?);
    let len = xs.len();
    match (index(lo, len, true), index(hi, len, true)) {
        (Some(l), Some(h)) if l <= h => Ok(new_list(xs[l..h].to_vec())),
        _ => Err(trap(
            TrapKind::Bounds,
            format!("slice({lo}, {hi}) is out of range for {}", a_list_of(len)),
        )),
    }
}

/// "a list of 3 elements", "a list of 1 element".
fn a_list_of(len: usize) -> String {
    let s = if len == 1 { "" } else { "s" };
    format!("a list of {len} element{s}")
}

/// The element kinds `sort`, `min` and `max` order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ordered {
    Int,
    Float,
    Text,
}

/// The one kind of the non-nil elements of `xs` (None when there are none).
fn ordered_kind(xs: &[Value]) -> Result<Option<Ordered>, Stop> {
    let mut kind = None;
    for v in xs {
        let k = match v {
            Value::Nil => continue,
            Value::Int(_) => Ordered::Int,
            Value::Float(_) => Ordered::Float,
            Value::Text(_) => Ordered::Text,
            _ => return Err(expected("Int, Float or Text elements", v)),
        };
        if kind.is_some_and(|kind| kind != k) {
            return Err(internal("a list with elements of different types"));
        }
        kind = Some(k);
    }
    Ok(kind)
}

/// The order of `sort`: nil first (as in `order by`), then Int by value, Float by
/// [`float_order`] (NaN last), Text in byte order. Elements of different kinds never
/// meet here: [`ordered_kind`] checks first.
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Nil, Value::Nil) => Ordering::Equal,
        (Value::Nil, _) => Ordering::Less,
        (_, Value::Nil) => Ordering::Greater,
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => float_order(*x, *y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

/// `sort(xs)`: in place, ascending, stable. Int by value; Float with `-0.0` before
/// `0.0` and every NaN last; Text in byte order (the order of `<`). Nil elements (a
/// `multi ?T`) come first, as in `order by`.
fn sort(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("sort", argv)?;
    let mut xs = list_mut(xs)?;
    ordered_kind(&xs)?;
    xs.sort_by(compare);
    Ok(Value::Nil)
}

/// `reverse(xs)`: in place.
fn reverse(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("reverse", argv)?;
    list_mut(xs)?.reverse();
    Ok(Value::Nil)
}

/// `contains(xs, v)`: whether an element `== v` by the language's `==` (so a NaN is
/// never found, and lists, maps and objects are found only by identity).
fn contains_list(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, v] = args("contains_list", argv)?;
    let found = list_ref(xs)?.iter().any(|x| values_equal(x, v));
    Ok(Value::Bool(found))
}

/// `sum(xs)` on Int: 0 on empty; the exact total (kept in 128 bits), so it traps
/// OVERFLOW only when the total does not fit, whatever the order of the elements.
fn sum_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("sum_int", argv)?;
    let total = int_total(xs)?.0.total();
    Ok(Value::Int(total.map_err(|m| trap(TrapKind::Overflow, m))?))
}

/// The exact sum of a list's Ints and how many there were. nil elements (a list of
/// `?Int`) are skipped, as SQL's SUM skips NULL.
fn int_total(xs: &Value) -> Result<(IntSum, usize), Stop> {
    let mut total = IntSum::default();
    let mut n = 0usize;
    for x in list_ref(xs)?.iter().filter(|v| !matches!(v, Value::Nil)) {
        total.add(int(x)?);
        n += 1;
    }
    Ok((total, n))
}

/// The exact sum of a list's Floats (nil elements skipped) and how many there were.
fn float_total(xs: &Value) -> Result<(f64, usize), Stop> {
    let mut total = FloatSum::new();
    let mut n = 0usize;
    for x in list_ref(xs)?.iter().filter(|v| !matches!(v, Value::Nil)) {
        total.add(float(x)?);
        n += 1;
    }
    Ok((total.value(), n))
}

/// `sum(xs)` on Float: the exact sum rounded once (so the order of the elements does
/// not change it, as it does not for a query the engine sums), 0.0 on empty.
fn sum_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("sum_float", argv)?;
    Ok(Value::Float(float_total(xs)?.0))
}

/// The least (`want` Less) or greatest (`want` Greater) element, the first of equals;
/// nil on empty. The order is [`compare`]'s, the order of `sort` and `order by`: a NaN
/// is the greatest Float (so `max` is NaN when there is one, `min` only when all are).
fn extreme(xs: &Value, want: Ordering) -> Result<Value, Stop> {
    let list = list_ref(xs)?;
    // nil elements (a list of `?T`) are skipped; all nil is like empty.
    let xs: Vec<Value> = list
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .cloned()
        .collect();
    ordered_kind(&xs)?;
    let mut rest = xs.iter();
    let Some(mut best) = rest.next().cloned() else {
        return Ok(Value::Nil);
    };
    for x in rest {
        if compare(x, &best) == want {
            best = x.clone();
        }
    }
    Ok(best)
}

/// `min(xs) -> ?T` on Int, Float or Text; nil on empty.
fn min_list(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("min_list", argv)?;
    extreme(xs, Ordering::Less)
}

/// `max(xs) -> ?T` on Int, Float or Text; nil on empty.
fn max_list(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("max_list", argv)?;
    extreme(xs, Ordering::Greater)
}

/// `avg(xs) -> ?Float` over Int elements: the exact sum (kept in 128 bits, no
/// overflow) converted to a Float, then divided by the count; nil on empty.
fn avg_int(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("avg_int", argv)?;
    match int_total(xs)? {
        (_, 0) => Ok(Value::Nil),
        (total, n) => Ok(Value::Float(total.mean(n))),
    }
}

/// `avg(xs) -> ?Float` over Float elements: the exact sum rounded to a Float, then
/// divided by the count (so the order of the elements does not change it); nil on
/// empty.
fn avg_float(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("avg_float", argv)?;
    match float_total(xs)? {
        (_, 0) => Ok(Value::Nil),
        (total, n) => Ok(Value::Float(total / n as f64)),
    }
}

/// `first(xs) -> ?T`: the first element; nil on empty.
fn first(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs] = args("first", argv)?;
    Ok(list_ref(xs)?.first().cloned().unwrap_or(Value::Nil))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::testing::*;

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    #[test]
    fn len_count_and_exists() {
        assert_shows(call("len_list", &[ints(&[1, 2, 3])]), "3");
        assert_shows(call("len_list", &[ints(&[])]), "0");
        assert_shows(call("count", &[texts(&["a"])]), "1");
        assert_shows(call("count", &[ints(&[])]), "0");
        assert_shows(call("exists", &[ints(&[0])]), "true");
        assert_shows(call("exists", &[ints(&[])]), "false");
    }

    #[test]
    fn push_and_pop_change_the_shared_list() {
        let xs = ints(&[1]);
        let alias = xs.clone();
        assert_shows(call("push", &[xs.clone(), i(2)]), "nil");
        assert_shows(alias.clone(), "[1, 2]");
        assert_shows(call1("pop", &xs), "2");
        assert_shows(call1("pop", &xs), "1");
        assert_shows(call1("pop", &xs), "nil");
        assert_shows(alias, "[]");
    }

    #[test]
    fn push_a_list_into_itself() {
        let xs = ints(&[1]);
        assert_shows(call("push", &[xs.clone(), xs.clone()]), "nil");
        assert_shows(call1("len_list", &xs), "2");
        assert_shows(call("contains_list", &[xs.clone(), xs.clone()]), "true");
        assert_shows(xs.clone(), "[1, …]");
        // Popping breaks the cycle (so the test does not leak); the popped value is
        // the list itself, now without the cycle.
        assert_shows(call("pop", &[xs]), "[1]");
    }

    #[test]
    fn remove_at_shifts_and_traps_bounds() {
        let xs = ints(&[10, 20, 30]);
        assert_shows(call("remove_at", &[xs.clone(), i(1)]), "20");
        assert_shows(xs.clone(), "[10, 30]");
        assert_trap(
            call("remove_at", &[xs.clone(), i(2)]),
            TrapKind::Bounds,
            "remove_at index 2 is out of range for a list of 2 elements",
        );
        assert_trap(
            call("remove_at", &[xs.clone(), i(-1)]),
            TrapKind::Bounds,
            "index -1",
        );
        assert_trap(
            call("remove_at", &[ints(&[]), i(0)]),
            TrapKind::Bounds,
            "0 elements",
        );
        assert_trap(
            call("remove_at", &[ints(&[7]), i(1)]),
            TrapKind::Bounds,
            "remove_at index 1 is out of range for a list of 1 element",
        );
        assert_shows(xs, "[10, 30]");
    }

    #[test]
    fn insert_at_allows_the_end_and_traps_bounds() {
        let xs = ints(&[1, 3]);
        assert_shows(call("insert_at", &[xs.clone(), i(1), i(2)]), "nil");
        assert_shows(call("insert_at", &[xs.clone(), i(3), i(4)]), "nil");
        assert_shows(call("insert_at", &[xs.clone(), i(0), i(0)]), "nil");
        assert_shows(xs.clone(), "[0, 1, 2, 3, 4]");
        assert_trap(
            call("insert_at", &[xs.clone(), i(6), i(9)]),
            TrapKind::Bounds,
            "insert_at index 6 is out of range for a list of 5 elements",
        );
        assert_trap(
            call("insert_at", &[xs.clone(), i(-1), i(9)]),
            TrapKind::Bounds,
            "-1",
        );
        assert_shows(call("insert_at", &[ints(&[]), i(0), i(9)]), "nil");
    }

    #[test]
    fn slice_makes_a_new_list() {
        let xs = ints(&[1, 2, 3, 4]);
        let part = call("slice", &[xs.clone(), i(1), i(3)]);
        assert_shows(part.clone(), "[2, 3]");
        if let Ok(part) = part {
            assert_shows(call("push", &[part, i(9)]), "nil");
        }
        assert_shows(xs.clone(), "[1, 2, 3, 4]");
        assert_shows(call("slice", &[xs.clone(), i(0), i(4)]), "[1, 2, 3, 4]");
        assert_shows(call("slice", &[xs.clone(), i(2), i(2)]), "[]");
        assert_shows(call("slice", &[xs.clone(), i(4), i(4)]), "[]");
        for (lo, hi) in [(3, 2), (-1, 2), (0, 5), (5, 5), (i64::MIN, i64::MAX)] {
            assert_trap(
                call("slice", &[xs.clone(), i(lo), i(hi)]),
                TrapKind::Bounds,
                &format!("slice({lo}, {hi}) is out of range for a list of 4 elements"),
            );
        }
    }

    #[test]
    fn sort_ints_texts_and_floats() {
        let xs = ints(&[3, -1, 2, i64::MIN, 2]);
        assert_shows(call1("sort", &xs), "nil");
        assert_shows(xs, "[-9223372036854775808, -1, 2, 2, 3]");
        let xs = texts(&["b", "a", "B", "é", ""]);
        assert_shows(call1("sort", &xs), "nil");
        assert_shows(xs, r#"["", "B", "a", "b", "é"]"#);
        let xs = floats(&[2.5, f64::NAN, -0.0, 0.0, f64::NEG_INFINITY, -f64::NAN, 1.0]);
        assert_shows(call1("sort", &xs), "nil");
        assert_shows(xs, "[-inf, -0.0, 0.0, 1.0, 2.5, NaN, NaN]");
        let xs = ints(&[]);
        assert_shows(call1("sort", &xs), "nil");
        assert_shows(xs, "[]");
    }

    #[test]
    fn sort_is_stable_and_puts_nil_first() {
        // Equal Texts in distinct allocations keep their order.
        let (a1, a2): (Rc<str>, Rc<str>) = (Rc::from("a"), Rc::from("a"));
        let xs = list(vec![
            t("b"),
            Value::Text(a1.clone()),
            Value::Nil,
            Value::Text(a2.clone()),
        ]);
        assert_shows(call1("sort", &xs), "nil");
        assert_shows(xs.clone(), r#"[nil, "a", "a", "b"]"#);
        if let Value::List(l) = &xs {
            let l = l.borrow();
            assert!(matches!(&l[1], Value::Text(s) if Rc::ptr_eq(s, &a1)));
            assert!(matches!(&l[2], Value::Text(s) if Rc::ptr_eq(s, &a2)));
        }
    }

    #[test]
    fn sort_refuses_unorderable_elements() {
        assert_fault(
            call("sort", &[list(vec![i(1), t("a")])]),
            "a list with elements of different types",
        );
        assert_fault(
            call("sort", &[list(vec![ints(&[1]), ints(&[2])])]),
            "expected Int, Float or Text elements, got a list",
        );
    }

    #[test]
    fn reverse_in_place() {
        let xs = ints(&[1, 2, 3]);
        assert_shows(call1("reverse", &xs), "nil");
        assert_shows(xs, "[3, 2, 1]");
        let xs = ints(&[]);
        assert_shows(call1("reverse", &xs), "nil");
        assert_shows(xs, "[]");
    }

    #[test]
    fn contains_uses_the_language_equality() {
        assert_shows(call("contains_list", &[ints(&[1, 2]), i(2)]), "true");
        assert_shows(call("contains_list", &[ints(&[1, 2]), i(3)]), "false");
        assert_shows(call("contains_list", &[texts(&["a"]), t("a")]), "true");
        assert_shows(
            call("contains_list", &[floats(&[-0.0]), Value::Float(0.0)]),
            "true",
        );
        assert_shows(
            call(
                "contains_list",
                &[floats(&[f64::NAN]), Value::Float(f64::NAN)],
            ),
            "false",
        );
        assert_shows(
            call("contains_list", &[list(vec![Value::Nil]), Value::Nil]),
            "true",
        );
        assert_shows(call("contains_list", &[ints(&[0]), Value::Nil]), "false");
        let inner = ints(&[1]);
        let outer = list(vec![inner.clone()]);
        assert_shows(call("contains_list", &[outer.clone(), inner]), "true");
        assert_shows(call("contains_list", &[outer, ints(&[1])]), "false");
    }

    #[test]
    fn sums() {
        assert_shows(call("sum_int", &[ints(&[])]), "0");
        assert_shows(call("sum_int", &[ints(&[1, 2, -4])]), "-1");
        assert_shows(
            call("sum_int", &[ints(&[i64::MAX, 0])]),
            "9223372036854775807",
        );
        // Only the total must fit: a partial sum past the end of Int is no trap.
        assert_shows(
            call("sum_int", &[ints(&[i64::MAX, 1, -5])]),
            "9223372036854775803",
        );
        assert_trap(
            call("sum_int", &[ints(&[i64::MAX, 1, -5, 6])]),
            TrapKind::Overflow,
            "sum overflows Int: the total is 9223372036854775809",
        );
        assert_trap(
            call("sum_int", &[ints(&[i64::MIN, -1])]),
            TrapKind::Overflow,
            "sum overflows",
        );
        assert_shows(call("sum_float", &[floats(&[])]), "0.0");
        assert_shows(call("sum_float", &[floats(&[0.5, 0.25])]), "0.75");
        assert_shows(call("sum_float", &[floats(&[1.0, f64::NAN])]), "NaN");
        // Exact, so the order does not matter.
        assert_shows(
            call("sum_float", &[floats(&[1e16, 1.0, 1.0])]),
            "1.0000000000000002e16",
        );
        assert_shows(
            call("sum_float", &[floats(&[1.0, 1.0, 1e16])]),
            "1.0000000000000002e16",
        );
        assert_shows(
            call("sum_float", &[floats(&[1e308, 1e308, -1e308])]),
            "1e308",
        );
        assert_shows(
            call("avg_float", &[floats(&[1e308, 1e308, -1e308])]),
            "3.333333333333333e307",
        );
    }

    #[test]
    fn min_and_max_of_a_list() {
        assert_shows(call("min_list", &[ints(&[])]), "nil");
        assert_shows(call("max_list", &[ints(&[])]), "nil");
        assert_shows(call("min_list", &[ints(&[3, -2, 5])]), "-2");
        assert_shows(call("max_list", &[ints(&[3, -2, 5])]), "5");
        assert_shows(call("min_list", &[texts(&["b", "a", "c"])]), "a");
        assert_shows(call("max_list", &[texts(&["b", "a", "c"])]), "c");
        assert_shows(call("min_list", &[floats(&[1.5, -0.5])]), "-0.5");
        assert_shows(call("max_list", &[floats(&[1.5, -0.5])]), "1.5");
        assert_shows(call("min_list", &[floats(&[0.0, -0.0])]), "-0.0");
        assert_shows(call("min_list", &[floats(&[1.0, f64::NAN, 0.0])]), "0.0");
        assert_shows(call("min_list", &[floats(&[1.0, -f64::NAN, 0.0])]), "0.0");
        assert_shows(call("min_list", &[floats(&[f64::NAN, -f64::NAN])]), "NaN");
        assert_shows(call("max_list", &[floats(&[1.0, -f64::NAN, 0.0])]), "NaN");
        assert_shows(call("max_list", &[floats(&[f64::NAN, 1.0])]), "NaN");
        assert_shows(call("max_list", &[floats(&[7.0])]), "7.0");
        // nil elements (a `multi ?T`) are skipped; only nils is like empty.
        assert_shows(call("min_list", &[list(vec![Value::Nil, i(1)])]), "1");
        assert_shows(call("max_list", &[list(vec![Value::Nil])]), "nil");
        assert_shows(call("max_list", &[list(vec![i(1), Value::Nil, i(4)])]), "4");
        assert_shows(call("sum_int", &[list(vec![Value::Nil, i(2), i(3)])]), "5");
        assert_shows(
            call("avg_int", &[list(vec![Value::Nil, i(2), i(4)])]),
            "3.0",
        );
        assert_shows(call("avg_float", &[list(vec![Value::Nil])]), "nil");
    }

    #[test]
    fn averages() {
        assert_shows(call("avg_int", &[ints(&[])]), "nil");
        assert_shows(call("avg_int", &[ints(&[1, 2])]), "1.5");
        assert_shows(
            call("avg_int", &[ints(&[i64::MAX, i64::MAX])]),
            "9.223372036854776e18",
        );
        assert_shows(call("avg_float", &[floats(&[])]), "nil");
        assert_shows(call("avg_float", &[floats(&[1.0, 2.0, 4.5])]), "2.5");
    }

    #[test]
    fn first_element() {
        assert_shows(call("first", &[ints(&[])]), "nil");
        assert_shows(call("first", &[ints(&[7, 8])]), "7");
        assert_shows(call("first", &[texts(&["x"])]), "x");
    }
}
