//! The parts of a query the compiler could not push down to the engine, done in
//! bytecode over lists: `order_by` sorts values by computed key lists and `skip_take`
//! applies `skip` and `take`. Both build a new list, since a query's result is a new
//! `multi`. The ordering rules are the engine's (LANGUAGE.md §7): `nil` first in both
//! directions, Floats by `total_cmp`, Text by bytes, rows by id, ties in their original
//! order.

use std::cmp::Ordering;

use wo_vm::value::float_order;
use wo_vm::{Host, Stop, Value};

use crate::{args, expected, int, internal, kind_of, list_ref, new_list, Native};

pub(crate) const NATIVES: &[Native] = &[("order_by", order_by), ("skip_take", skip_take)];

/// `order_by(keys, values, desc_mask)`: `values` sorted stably by the key lists in
/// `keys` (one per value, compared lexicographically); key `i` descending when bit `i`
/// of `desc_mask` is set.
fn order_by(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [keys, values, mask] = args::<3>("order_by", argv)?;
    let mask = int(mask)?;
    let keys = list_ref(keys)?;
    let values = list_ref(values)?;
    if keys.len() != values.len() {
        return Err(internal(format_args!(
            "`order_by` has {} key lists for {} values",
            keys.len(),
            values.len()
        )));
    }
    let key_lists = keys
        .iter()
        .map(|k| list_ref(k).map(|l| l.clone()))
        .collect::<Result<Vec<Vec<Value>>, Stop>>()?;
    for key in key_lists.iter().flatten() {
        if !orderable(key) {
            return Err(expected("an Int, Float, Text, Bool, row or nil key", key));
        }
    }
    let mut order: Vec<usize> = (0..values.len()).collect();
    // `sort_by` is stable: equal keys keep their original (id or list) order.
    order.sort_by(|&a, &b| compare_keys(&key_lists[a], &key_lists[b], mask));
    Ok(new_list(
        order.into_iter().map(|i| values[i].clone()).collect(),
    ))
}

fn orderable(v: &Value) -> bool {
    matches!(
        v,
        Value::Nil
            | Value::Int(_)
            | Value::Float(_)
            | Value::Text(_)
            | Value::Bool(_)
            | Value::Row(_)
    )
}

/// Lexicographic comparison of two key lists; key `i` is reversed when bit `i` of
/// `mask` is set, except that nil sorts first either way.
fn compare_keys(a: &[Value], b: &[Value], mask: i64) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let desc = u32::try_from(i)
            .ok()
            .and_then(|i| mask.checked_shr(i))
            .is_some_and(|m| m & 1 == 1);
        let o = match (x, y) {
            (Value::Nil, Value::Nil) => Ordering::Equal,
            (Value::Nil, _) => Ordering::Less,
            (_, Value::Nil) => Ordering::Greater,
            _ if desc => compare_values(y, x),
            _ => compare_values(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The order of two non-nil key values of one type. Keys of one position have one
/// static type, so mixed kinds cannot meet; they compare equal.
fn compare_values(x: &Value, y: &Value) -> Ordering {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.cmp(b),
        (Value::Float(a), Value::Float(b)) => float_order(*a, *b),
        (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        (Value::Row(a), Value::Row(b)) => a.id.cmp(&b.id),
        _ => Ordering::Equal,
    }
}

/// `skip_take(xs, skip, take)`: a new list without the first `skip` elements and with at
/// most `take` of the rest; nil means absent, a negative count counts as 0.
fn skip_take(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [xs, skip, take] = args::<3>("skip_take", argv)?;
    let count = |v: &Value| -> Result<Option<usize>, Stop> {
        match v {
            Value::Nil => Ok(None),
            Value::Int(n) => Ok(Some(usize::try_from((*n).max(0)).unwrap_or(usize::MAX))),
            other => Err(internal(format_args!(
                "`skip_take` expected an Int or nil count, got {}",
                kind_of(other)
            ))),
        }
    };
    let skip = count(skip)?.unwrap_or(0);
    let take = count(take)?;
    let xs = list_ref(xs)?;
    let rest = xs.get(skip..).unwrap_or(&[]);
    let kept = match take {
        Some(n) => &rest[..n.min(rest.len())],
        None => rest,
    };
    Ok(new_list(kept.to_vec()))
}

#[cfg(test)]
mod tests {
    use wo_vm::RowRef;

    use super::*;
    use crate::testing::*;

    fn keys(rows: Vec<Vec<Value>>) -> Value {
        list(rows.into_iter().map(list).collect())
    }

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    fn row(id: i64) -> Value {
        Value::Row(RowRef::new(0, id))
    }

    #[test]
    fn order_by_one_key_ascending_and_descending() {
        let k = keys(vec![vec![i(3)], vec![i(1)], vec![i(2)]]);
        let vs = texts(&["c", "a", "b"]);
        assert_shows(
            call("order_by", &[k.clone(), vs.clone(), i(0)]),
            "[\"a\", \"b\", \"c\"]",
        );
        assert_shows(call("order_by", &[k, vs, i(1)]), "[\"c\", \"b\", \"a\"]");
    }

    #[test]
    fn order_by_is_stable_for_equal_keys_in_both_directions() {
        let k = keys(vec![vec![i(1)], vec![i(0)], vec![i(1)], vec![i(0)]]);
        let vs = ints(&[10, 20, 30, 40]);
        assert_shows(
            call("order_by", &[k.clone(), vs.clone(), i(0)]),
            "[20, 40, 10, 30]",
        );
        assert_shows(call("order_by", &[k, vs, i(1)]), "[10, 30, 20, 40]");
    }

    #[test]
    fn nil_sorts_first_in_both_directions() {
        let k = keys(vec![vec![i(2)], vec![Value::Nil], vec![i(5)]]);
        let vs = ints(&[1, 2, 3]);
        assert_shows(
            call("order_by", &[k.clone(), vs.clone(), i(0)]),
            "[2, 1, 3]",
        );
        assert_shows(call("order_by", &[k, vs, i(1)]), "[2, 3, 1]");
    }

    #[test]
    fn later_keys_break_ties_with_their_own_direction() {
        // order by dept asc, salary desc
        let k = keys(vec![
            vec![t("ops"), i(100)],
            vec![t("dev"), i(50)],
            vec![t("ops"), i(300)],
            vec![t("dev"), i(70)],
        ]);
        let vs = ints(&[1, 2, 3, 4]);
        assert_shows(call("order_by", &[k, vs, i(0b10)]), "[4, 2, 3, 1]");
    }

    #[test]
    fn floats_text_bools_and_rows_have_their_orders() {
        let k = keys(vec![
            vec![Value::Float(0.0)],
            vec![Value::Float(-0.0)],
            vec![Value::Float(f64::NAN)],
            vec![Value::Float(-1.5)],
        ]);
        assert_shows(
            call("order_by", &[k, ints(&[1, 2, 3, 4]), i(0)]),
            "[4, 2, 1, 3]",
        );
        // Text by bytes: "Z" < "a" < "é".
        let k = keys(vec![vec![t("é")], vec![t("a")], vec![t("Z")]]);
        assert_shows(call("order_by", &[k, ints(&[1, 2, 3]), i(0)]), "[3, 2, 1]");
        let k = keys(vec![vec![Value::Bool(true)], vec![Value::Bool(false)]]);
        assert_shows(call("order_by", &[k, ints(&[1, 2]), i(0)]), "[2, 1]");
        let k = keys(vec![vec![row(9)], vec![row(2)], vec![row(5)]]);
        assert_shows(call("order_by", &[k, ints(&[1, 2, 3]), i(1)]), "[1, 3, 2]");
    }

    #[test]
    fn order_by_returns_a_new_list() {
        let vs = ints(&[2, 1]);
        let k = keys(vec![vec![i(2)], vec![i(1)]]);
        let out = call("order_by", &[k, vs.clone(), i(0)]).expect("sorted");
        assert_shows(out, "[1, 2]");
        assert_shows(vs, "[2, 1]");
    }

    #[test]
    fn order_by_refuses_mismatched_lengths_and_unorderable_keys() {
        let res = call("order_by", &[keys(vec![vec![i(1)]]), ints(&[1, 2]), i(0)]);
        assert_fault(res, "`order_by` has 1 key lists for 2 values");
        let res = call(
            "order_by",
            &[keys(vec![vec![ints(&[1])]]), ints(&[1]), i(0)],
        );
        assert_fault(res, "expected an Int, Float");
    }

    #[test]
    fn skip_take_applies_skip_then_take() {
        let xs = ints(&[1, 2, 3, 4, 5]);
        assert_shows(call("skip_take", &[xs.clone(), i(1), i(2)]), "[2, 3]");
        assert_shows(call("skip_take", &[xs.clone(), Value::Nil, i(2)]), "[1, 2]");
        assert_shows(call("skip_take", &[xs.clone(), i(3), Value::Nil]), "[4, 5]");
        assert_shows(
            call("skip_take", &[xs.clone(), Value::Nil, Value::Nil]),
            "[1, 2, 3, 4, 5]",
        );
        assert_shows(call("skip_take", &[xs.clone(), i(9), i(1)]), "[]");
        assert_shows(call("skip_take", &[xs.clone(), i(4), i(9)]), "[5]");
        assert_shows(call("skip_take", &[xs.clone(), i(-3), i(-1)]), "[]");
        assert_shows(call("skip_take", &[xs.clone(), i(-3), i(1)]), "[1]");
        assert_shows(
            call("skip_take", &[xs.clone(), i(i64::MAX), i(i64::MAX)]),
            "[]",
        );
        // A new list: the argument is unchanged.
        assert_shows(xs, "[1, 2, 3, 4, 5]");
    }

    #[test]
    fn skip_take_refuses_a_non_count() {
        let res = call("skip_take", &[ints(&[1]), t("1"), Value::Nil]);
        assert_fault(res, "`skip_take` expected an Int or nil count");
    }
}
