//! `wo-stdlib`: the native functions of the builtin catalogue
//! (`wo_bytecode::builtins::BUILTINS`). The VM links an image's builtins by name through
//! [`lookup`]; every catalogue entry has exactly one implementation here and a test
//! keeps the two lists equal. Arguments arrive with the types the checker proved, but a
//! native never panics on a value of the wrong shape: it returns an `internal:` FAIL
//! trap instead, so a hostile image gets an error, not a crash.
//!
//! The functions are grouped by what they work on: `core` (printing, parsing, numbers,
//! assertions), `text`, `list` (including the aggregates), `map`, `modules`
//! (`time`, `math`, `env`, `fs`, `random`), and `query` (the parts of a query done in
//! bytecode: `order_by`, `skip_take`). This file holds the argument helpers and
//! the equality and ordering rules they share.

use std::cell::{Ref, RefMut};
use std::rc::Rc;

use wo_vm::value::KeyRef;
use wo_vm::{Key, MapData, NativeFn, Stop, Trap, TrapKind, Value};

mod core;
mod list;
mod map;
mod modules;
mod query;
mod text;

/// A catalogue name and its implementation.
type Native = (&'static str, NativeFn);

/// Every module's table, searched in order by [`lookup`].
const TABLES: &[&[Native]] = &[
    core::NATIVES,
    text::NATIVES,
    list::NATIVES,
    map::NATIVES,
    modules::NATIVES,
    query::NATIVES,
];

/// The implementation of the catalogue entry `name`, if any.
pub fn lookup(name: &str) -> Option<NativeFn> {
    TABLES
        .iter()
        .flat_map(|t| t.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
}

/// A trap of `kind` with `message`, as a native returns it.
fn trap(kind: TrapKind, message: impl Into<String>) -> Stop {
    Stop::Trap(Trap::new(kind, message))
}

/// An internal fault for a value the checker should have ruled out (possible only in a
/// hand-made image): the program ends, uncatchable, as when an instruction finds a
/// wrongly typed register.
fn internal(message: impl std::fmt::Display) -> Stop {
    Stop::Fault(message.to_string())
}

/// What kind of value `v` is, for `internal:` messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Bool(_) => "a Bool",
        Value::Int(_) => "an Int",
        Value::Float(_) => "a Float",
        Value::Text(_) => "a Text",
        Value::List(_) => "a list",
        Value::Map(_) => "a map",
        Value::Obj(_) => "an object",
        Value::Error(_) => "an Error",
        Value::Row(_) => "a row",
        Value::Task(_) => "a task",
    }
}

fn expected(what: &str, v: &Value) -> Stop {
    internal(format_args!("expected {what}, got {}", kind_of(v)))
}

/// The arguments as an array of the catalogue's arity.
fn args<'a, const N: usize>(name: &str, args: &'a [Value]) -> Result<&'a [Value; N], Stop> {
    <&[Value; N]>::try_from(args).map_err(|_| {
        let noun = if N == 1 { "argument" } else { "arguments" };
        internal(format_args!(
            "`{name}` takes {N} {noun}, got {}",
            args.len()
        ))
    })
}

fn int(v: &Value) -> Result<i64, Stop> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => Err(expected("an Int", v)),
    }
}

fn float(v: &Value) -> Result<f64, Stop> {
    match v {
        Value::Float(f) => Ok(*f),
        _ => Err(expected("a Float", v)),
    }
}

fn boolean(v: &Value) -> Result<bool, Stop> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(expected("a Bool", v)),
    }
}

fn text(v: &Value) -> Result<&Rc<str>, Stop> {
    match v {
        Value::Text(t) => Ok(t),
        _ => Err(expected("a Text", v)),
    }
}

/// The list behind `v`, borrowed for reading.
fn list_ref(v: &Value) -> Result<Ref<'_, Vec<Value>>, Stop> {
    match v {
        Value::List(l) => l
            .try_borrow()
            .map_err(|_| internal("the list is being changed")),
        _ => Err(expected("a list", v)),
    }
}

/// The list behind `v`, borrowed for writing.
fn list_mut(v: &Value) -> Result<RefMut<'_, Vec<Value>>, Stop> {
    match v {
        Value::List(l) => l
            .try_borrow_mut()
            .map_err(|_| internal("the list is already borrowed")),
        _ => Err(expected("a list", v)),
    }
}

/// The map behind `v`, borrowed for reading.
fn map_ref(v: &Value) -> Result<Ref<'_, MapData>, Stop> {
    match v {
        Value::Map(m) => m
            .try_borrow()
            .map_err(|_| internal("the map is being changed")),
        _ => Err(expected("a map", v)),
    }
}

/// The map behind `v`, borrowed for writing.
fn map_mut(v: &Value) -> Result<RefMut<'_, MapData>, Stop> {
    match v {
        Value::Map(m) => m
            .try_borrow_mut()
            .map_err(|_| internal("the map is already borrowed")),
        _ => Err(expected("a map", v)),
    }
}

/// A new Text value.
fn new_text(s: impl Into<Rc<str>>) -> Value {
    Value::Text(s.into())
}

/// A new list value.
fn new_list(items: Vec<Value>) -> Value {
    Value::new_list(items)
}

/// `v` as a map key (`Int`, `Bool` or `Text`).
fn key(v: &Value) -> Result<Key, Stop> {
    match v {
        Value::Int(i) => Ok(Key::Int(*i)),
        Value::Bool(b) => Ok(Key::Bool(*b)),
        Value::Text(t) => Ok(Key::Text(t.clone())),
        _ => Err(expected("a map key (Int, Bool or Text)", v)),
    }
}

/// `v` as a borrowed map key, for lookups (no `Rc` clone).
fn key_ref(v: &Value) -> Result<KeyRef<'_>, Stop> {
    KeyRef::of(v).ok_or_else(|| expected("a map key (Int, Bool or Text)", v))
}

/// The language's `==` (LANGUAGE.md §3), as the VM's `EQ` instruction computes it:
/// `contains(xs, v)` must agree with `==`.
use wo_vm::interp::values_eq as values_equal;

/// The order of `sort`, `min` and `max` on Floats: the engine's, so `order by`, sorted
/// indexes and the list functions agree (`-0.0` before `0.0`, every NaN last).
use wo_vm::value::float_order;

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use wo_bytecode::builtins::BUILTINS;

    /// Issue 11 item 3: every native that builds a Text or a list stays within the
    /// limit of `wo_vm::limit` (lowered on this thread to 64 bytes, 2 list elements,
    /// so nothing big is allocated) and traps LIMIT past it.
    #[test]
    fn every_builder_of_texts_and_lists_traps_limit_past_the_limit() {
        wo_vm::limit::set_max_bytes(64);
        let x40 = t(&"x".repeat(40));
        let limit = |res: Result<Value, Stop>, msg: &str| assert_trap(res, TrapKind::Limit, msg);
        limit(
            call("repeat", &[t("ab"), Value::Int(33)]),
            "repeat would make a text of 66 bytes, over the limit of 64 bytes",
        );
        assert_shows(call("repeat", &[t("ab"), Value::Int(32)]), &"ab".repeat(32));
        limit(
            call("join", &[list(vec![x40.clone(), x40.clone()]), t("")]),
            "join would make a text of 80 bytes",
        );
        limit(
            call("replace", &[x40.clone(), t("x"), t("xy")]),
            "replace would make a text of 80 bytes",
        );
        limit(
            call("to_upper", &[t(&"ΐ".repeat(11))]),
            "to_upper would make a text of 66 bytes",
        );
        limit(
            call("text", &[list(vec![x40.clone(), x40.clone()])]),
            "printing a value would make a text over",
        );
        limit(
            call("print", &[list(vec![x40.clone(), x40.clone()])]),
            "printing a value would make a text over",
        );
        limit(
            call("split", &[t("a,b,c"), t(",")]),
            "split would make a list of 3 elements, over the limit of 64 bytes (2 elements)",
        );
        assert_shows(call("split", &[t("a,b"), t(",")]), "[\"a\", \"b\"]");
        let xs = list(vec![Value::Int(1), Value::Int(2)]);
        limit(
            call("push", &[xs.clone(), Value::Int(3)]),
            "push would make a list of 3 elements",
        );
        limit(
            call("insert_at", &[xs.clone(), Value::Int(0), Value::Int(3)]),
            "insert_at would make a list of 3 elements",
        );
        assert_shows(xs, "[1, 2]");
        let m = map_of((0..3).map(|i| (Value::Int(i), Value::Int(i))).collect());
        limit(call1("keys", &m), "keys would make a list of 3 elements");
        limit(
            call("values", &[m]),
            "values would make a list of 3 elements",
        );
        let path = std::env::temp_dir().join(format!("wo-limit-{}.txt", std::process::id()));
        std::fs::write(&path, "y".repeat(65)).expect("write a test file");
        let res = call("fs.read_text", &[t(path.to_str().expect("a UTF-8 path"))]);
        let _ = std::fs::remove_file(&path);
        limit(
            res,
            "would make a text of 65 bytes, over the limit of 64 bytes",
        );
    }

    #[test]
    fn every_catalogue_entry_has_an_implementation() {
        let missing: Vec<&str> = BUILTINS
            .iter()
            .map(|b| b.name)
            .filter(|n| lookup(n).is_none())
            .collect();
        assert!(missing.is_empty(), "no implementation for {missing:?}");
    }

    #[test]
    fn every_implementation_is_in_the_catalogue_once() {
        let names: Vec<&str> = TABLES.iter().flat_map(|t| t.iter()).map(|n| n.0).collect();
        for name in &names {
            assert!(
                wo_bytecode::builtins::lookup(name).is_some(),
                "`{name}` is implemented but not in the catalogue"
            );
            let n = names.iter().filter(|m| *m == name).count();
            assert_eq!(n, 1, "`{name}` is implemented {n} times");
        }
        assert_eq!(names.len(), BUILTINS.len());
    }

    #[test]
    fn unknown_names_are_not_found() {
        assert!(lookup("no_such_builtin").is_none());
        assert!(lookup("").is_none());
    }

    #[test]
    fn a_wrong_number_of_arguments_is_an_internal_fault() {
        for b in BUILTINS {
            let mut h = host();
            let f = lookup(b.name).expect("checked by every_catalogue_entry_has_an_implementation");
            let too_many = vec![Value::Int(0); usize::from(b.arity) + 1];
            let res = f(&mut h.host, &too_many);
            assert_fault(res, "");
        }
    }

    /// Every native, called with every combination of a set of sample values of the
    /// right count, returns a value or a stop and never panics.
    #[test]
    fn mismatched_values_never_panic() {
        // These would sleep or write files; they are tested on their own.
        let skip = ["time.sleep", "fs.write_text"];
        let samples = || {
            vec![
                Value::Nil,
                Value::Bool(true),
                Value::Int(0),
                Value::Int(-1),
                Value::Int(i64::MAX),
                Value::Int(i64::MIN),
                Value::Float(f64::NAN),
                Value::Float(-0.0),
                t(""),
                t("a,b"),
                ints(&[3, 1, 2]),
                list(vec![]),
                list(vec![t("x"), Value::Float(1.0)]),
                map_of(vec![(t("k"), Value::Int(1))]),
            ]
        };
        for b in BUILTINS.iter().filter(|b| !skip.contains(&b.name)) {
            let f = lookup(b.name).expect("checked by every_catalogue_entry_has_an_implementation");
            let n = samples().len();
            let arity = u32::from(b.arity);
            for combo in 0..n.pow(arity) {
                let mut h = host();
                let vals = samples();
                let mut rest = combo;
                let mut argv = Vec::new();
                for _ in 0..arity {
                    argv.push(vals[rest % n].clone());
                    rest /= n;
                }
                let _ = f(&mut h.host, &argv);
            }
        }
    }

    #[test]
    fn equality_follows_the_language() {
        let xs = ints(&[1]);
        assert!(values_equal(&Value::Nil, &Value::Nil));
        assert!(!values_equal(&Value::Nil, &Value::Int(0)));
        assert!(values_equal(&Value::Float(-0.0), &Value::Float(0.0)));
        assert!(!values_equal(
            &Value::Float(f64::NAN),
            &Value::Float(f64::NAN)
        ));
        assert!(values_equal(&t("é"), &t("é")));
        assert!(values_equal(&xs, &xs.clone()));
        assert!(!values_equal(&xs, &ints(&[1])));
        assert!(!values_equal(&Value::Int(1), &Value::Float(1.0)));
    }

    #[test]
    fn float_order_puts_nan_last_and_negative_zero_first() {
        use std::cmp::Ordering::*;
        assert_eq!(float_order(f64::NAN, 1.0), Greater);
        assert_eq!(float_order(-f64::NAN, f64::INFINITY), Greater);
        assert_eq!(float_order(1.0, f64::NAN), Less);
        assert_eq!(float_order(f64::NAN, -f64::NAN), Equal);
        assert_eq!(float_order(-0.0, 0.0), Less);
        assert_eq!(float_order(-1.0, 2.0), Less);
    }
}
