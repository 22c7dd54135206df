//! Map functions. Maps have reference semantics and keep insertion order: `set` on a
//! new key appends it, `set` on an existing key replaces the value in place (the key
//! keeps its position), and `remove` closes the gap without reordering the others.
//! `keys` and `values` return new lists in that order.

use std::fmt::Write as _;

use wo_vm::map::Entry;
use wo_vm::value::KeyRef;
use wo_vm::{display, limit, Host, Stop, TrapKind, Value};

use crate::{args, key, key_ref, map_mut, map_ref, new_list, trap, Native};

pub(crate) const NATIVES: &[Native] = &[
    ("len_map", len_map),
    ("has", has),
    ("get", get),
    ("set", set),
    ("remove", remove),
    ("keys", keys),
    ("values", values),
];

/// A key as it appears in messages: printed as inside a map (Text quoted with the §2
/// escapes, so `key "a\"b" not found`).
fn key_text(k: KeyRef<'_>) -> String {
    let mut out = String::new();
    match k {
        KeyRef::Int(i) => {
            let _ = write!(out, "{i}");
        }
        KeyRef::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        KeyRef::Text(t) => display::write_quoted(&mut out, t),
    }
    out
}

/// `len(m)`: the number of keys.
fn len_map(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m] = args("len_map", argv)?;
    Ok(Value::Int(
        i64::try_from(map_ref(m)?.len()).unwrap_or(i64::MAX),
    ))
}

/// `has(m, k)`: whether `k` is a key of `m`.
fn has(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m, k] = args("has", argv)?;
    Ok(Value::Bool(map_ref(m)?.contains_key(key_ref(k)?)))
}

/// `get(m, k) -> V`: the value for `k`; traps KEY when `k` is absent.
fn get(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m, k] = args("get", argv)?;
    let k = key_ref(k)?;
    map_ref(m)?
        .get(k)
        .cloned()
        .ok_or_else(|| trap(TrapKind::Key, format!("key {} not found", key_text(k))))
}

/// `set(m, k, v)`: a new key goes last; an existing key keeps its position.
fn set(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m, k, v] = args("set", argv)?;
    map_mut(m)?.insert(key(k)?, v.clone());
    wo_vm::gc::wrote(m, v);
    Ok(Value::Nil)
}

/// `remove(m, k)`: removes `k` if present (absent is not an error), keeping the order
/// of the other keys.
fn remove(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m, k] = args("remove", argv)?;
    map_mut(m)?.remove(key_ref(k)?);
    Ok(Value::Nil)
}

/// `keys(m)`: a new list of the keys in insertion order.
fn keys(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m] = args("keys", argv)?;
    let m = map_ref(m)?;
    let mut out = Vec::new();
    limit::list_room(&mut out, "keys", m.len())?;
    out.extend(m.iter().map(Entry::key_value));
    Ok(new_list(out))
}

/// `values(m)`: a new list of the values in insertion order.
fn values(_: &mut Host, argv: &[Value]) -> Result<Value, Stop> {
    let [m] = args("values", argv)?;
    let m = map_ref(m)?;
    let mut out = Vec::new();
    limit::list_room(&mut out, "values", m.len())?;
    out.extend(m.values().cloned());
    Ok(new_list(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    fn abc() -> Value {
        map_of(vec![(t("a"), i(1)), (t("b"), i(2)), (t("c"), i(3))])
    }

    #[test]
    fn len_has_and_get() {
        let m = abc();
        assert_shows(call1("len_map", &m), "3");
        assert_shows(call("len_map", &[map_of(vec![])]), "0");
        assert_shows(call("has", &[m.clone(), t("b")]), "true");
        assert_shows(call("has", &[m.clone(), t("z")]), "false");
        assert_shows(call("get", &[m.clone(), t("c")]), "3");
    }

    #[test]
    fn get_of_an_absent_key_traps_key() {
        let m = abc();
        assert_trap(
            call("get", &[m, t("zz")]),
            TrapKind::Key,
            r#"key "zz" not found"#,
        );
        let m = map_of(vec![(i(1), t("one"))]);
        assert_trap(call("get", &[m, i(2)]), TrapKind::Key, "key 2 not found");
        let m = map_of(vec![(Value::Bool(true), i(1))]);
        assert_trap(
            call("get", &[m, Value::Bool(false)]),
            TrapKind::Key,
            "key false not found",
        );
        let m = map_of(vec![]);
        assert_trap(
            call("get", &[m, t("a\"b\n")]),
            TrapKind::Key,
            r#"key "a\"b\n" not found"#,
        );
    }

    #[test]
    fn keys_of_different_types_do_not_meet() {
        let m = map_of(vec![(i(1), t("int"))]);
        assert_shows(call("has", &[m.clone(), t("1")]), "false");
        assert_shows(call("has", &[m, Value::Bool(true)]), "false");
    }

    #[test]
    fn set_appends_new_keys_and_keeps_old_positions() {
        let m = abc();
        let alias = m.clone();
        assert_shows(call("set", &[m.clone(), t("a"), i(10)]), "nil");
        assert_shows(call("set", &[m.clone(), t("d"), i(4)]), "nil");
        assert_shows(alias, r#"{"a": 10, "b": 2, "c": 3, "d": 4}"#);
    }

    #[test]
    fn remove_keeps_the_order_of_the_others() {
        let m = abc();
        assert_shows(call("remove", &[m.clone(), t("a")]), "nil");
        assert_shows(call("remove", &[m.clone(), t("absent")]), "nil");
        assert_shows(m.clone(), r#"{"b": 2, "c": 3}"#);
        assert_shows(call("set", &[m.clone(), t("a"), i(1)]), "nil");
        assert_shows(m, r#"{"b": 2, "c": 3, "a": 1}"#);
    }

    #[test]
    fn keys_and_values_are_new_lists_in_order() {
        let m = map_of(vec![(i(3), t("x")), (i(1), t("y"))]);
        let ks = call1("keys", &m);
        assert_shows(ks.clone(), "[3, 1]");
        assert_shows(call1("values", &m), r#"["x", "y"]"#);
        if let Ok(ks) = ks {
            assert_shows(call("push", &[ks, i(9)]), "nil");
        }
        assert_shows(call1("len_map", &m), "2");
        assert_shows(call("keys", &[map_of(vec![])]), "[]");
        assert_shows(call("values", &[map_of(vec![])]), "[]");
    }

    #[test]
    fn a_bad_key_is_an_internal_trap() {
        assert_fault(
            call("get", &[abc(), Value::Float(1.0)]),
            "expected a map key (Int, Bool or Text), got a Float",
        );
        assert_fault(call("has", &[abc(), Value::Nil]), "");
    }
}
