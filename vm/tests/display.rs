//! The printing rules of LANGUAGE.md §11 on every kind of value: Float formatting,
//! quoting of nested Text, maps in insertion order, objects with their field names,
//! Errors, rows, and cycles.

use std::cell::RefCell;
use std::rc::Rc;

use wo_bytecode::Class;
use wo_vm::{to_text, ErrorValue, Key, MapData, Object, RowRef, TrapKind, Value};

fn text(s: &str) -> Value {
    Value::Text(Rc::from(s))
}

fn list(items: Vec<Value>) -> Value {
    Value::List(Rc::new(RefCell::new(items)))
}

fn map(entries: Vec<(Key, Value)>) -> Value {
    let mut m = MapData::default();
    for (k, v) in entries {
        m.insert(k, v);
    }
    Value::Map(Rc::new(RefCell::new(m)))
}

fn point_classes() -> Vec<Class> {
    vec![Class {
        name: "Point".into(),
        fields: vec!["x".into(), "y".into(), "label".into()],
    }]
}

fn obj(class: u32, fields: Vec<Value>) -> Rc<Object> {
    match Value::new_object(class, fields) {
        Value::Obj(o) => o,
        _ => unreachable!("new_object makes an object"),
    }
}

fn show(v: &Value) -> String {
    to_text(v, &point_classes())
}

#[test]
fn scalars() {
    assert_eq!(show(&Value::Int(-42)), "-42");
    assert_eq!(show(&Value::Int(i64::MIN)), "-9223372036854775808");
    assert_eq!(show(&Value::Bool(true)), "true");
    assert_eq!(show(&Value::Bool(false)), "false");
    assert_eq!(show(&Value::Nil), "nil");
    assert_eq!(show(&text("a \"b\"\n")), "a \"b\"\n");
}

#[test]
fn floats_print_as_rust_debug() {
    let cases = [
        (1.0, "1.0"),
        (2.5, "2.5"),
        (0.1, "0.1"),
        (1e16, "1e16"),
        (1e15, "1000000000000000.0"),
        (1.5e-7, "1.5e-7"),
        (0.0001, "0.0001"),
        (-0.0, "-0.0"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (1.0 / 3.0, "0.3333333333333333"),
    ];
    for (f, want) in cases {
        assert_eq!(show(&Value::Float(f)), want);
    }
}

#[test]
fn text_inside_containers_is_quoted_with_escapes() {
    let v = list(vec![
        text("plain"),
        text("q\"uote"),
        text("back\\slash"),
        text("line\nbreak\ttab\rcr"),
        text("cost $5 and ${x}"),
        text("bell\u{7}nul\u{0}"),
        text("é ü 😀"),
    ]);
    assert_eq!(
        show(&v),
        r#"["plain", "q\"uote", "back\\slash", "line\nbreak\ttab\rcr", "cost \$5 and \${x}", "bell\u{7}nul\u{0}", "é ü 😀"]"#
    );
}

#[test]
fn lists_and_maps() {
    assert_eq!(show(&list(vec![])), "[]");
    assert_eq!(
        show(&list(vec![Value::Int(1), Value::Float(2.0), Value::Nil])),
        "[1, 2.0, nil]"
    );
    assert_eq!(show(&map(vec![])), "{}");
    let m = map(vec![
        (Key::Text(Rc::from("b")), Value::Int(1)),
        (Key::Text(Rc::from("a")), list(vec![text("x")])),
    ]);
    assert_eq!(show(&m), r#"{"b": 1, "a": ["x"]}"#);
    let m = map(vec![
        (Key::Int(3), Value::Bool(true)),
        (Key::Bool(false), text("f")),
    ]);
    assert_eq!(show(&m), r#"{3: true, false: "f"}"#);
}

#[test]
fn objects_use_class_and_field_names() {
    let p = obj(0, vec![Value::Int(1), Value::Int(0), Value::Nil]);
    assert_eq!(show(&Value::Obj(p)), "Point { x: 1, y: 0, label: nil }");
    let p = obj(0, vec![Value::Int(1), Value::Int(2), text("a\"b")]);
    assert_eq!(
        show(&list(vec![Value::Obj(p)])),
        r#"[Point { x: 1, y: 2, label: "a\"b" }]"#
    );
    let classes = vec![Class {
        name: "Empty".into(),
        fields: vec![],
    }];
    assert_eq!(to_text(&Value::Obj(obj(0, vec![])), &classes), "Empty {}");
}

#[test]
fn errors_print_as_kind_and_message() {
    let e = Value::Error(Rc::new(ErrorValue {
        kind: TrapKind::Div0,
        message: Rc::from("division by zero"),
        line: 3,
    }));
    assert_eq!(show(&e), "DIV0: division by zero");
    // Inside a container the message is quoted and escaped like Text.
    assert_eq!(show(&list(vec![e])), "[DIV0: \"division by zero\"]");
    let e = Value::Error(Rc::new(ErrorValue {
        kind: TrapKind::Fail,
        message: Rc::from("two\nlines, \"quoted\""),
        line: 3,
    }));
    assert_eq!(show(&e), "FAIL: two\nlines, \"quoted\"");
    assert_eq!(
        show(&list(vec![e, Value::Int(1)])),
        "[FAIL: \"two\\nlines, \\\"quoted\\\"\", 1]"
    );
}

#[test]
fn cycles_print_as_ellipsis() {
    let l = Rc::new(RefCell::new(vec![Value::Int(1)]));
    l.borrow_mut().push(Value::List(l.clone()));
    assert_eq!(show(&Value::List(l.clone())), "[1, …]");
    // Break the cycle so the test does not leak.
    l.borrow_mut().pop();

    let p = obj(0, vec![Value::Int(1), Value::Nil, Value::Nil]);
    p.fields.borrow_mut()[1] = Value::Obj(p.clone());
    assert_eq!(
        show(&Value::Obj(p.clone())),
        "Point { x: 1, y: …, label: nil }"
    );
    p.fields.borrow_mut()[1] = Value::Nil;

    // The same list twice is not a cycle.
    let shared = list(vec![Value::Int(7)]);
    assert_eq!(show(&list(vec![shared.clone(), shared])), "[[7], [7]]");
}

#[test]
fn very_deep_nesting_is_cut_instead_of_overflowing() {
    let mut v = Value::Int(0);
    for _ in 0..100_000 {
        v = list(vec![v]);
    }
    let s = show(&v);
    // Cut at MAX_DEPTH levels with its own marker: `…` is reserved for cycles.
    let depth = wo_vm::display::MAX_DEPTH;
    let want = format!(
        "{}{}{}",
        "[".repeat(depth),
        wo_vm::display::DEEP_MARKER,
        "]".repeat(depth)
    );
    assert_eq!(s, want);
    assert!(!s.contains('…'));
    // Dropping this chain of lists is the caller's affair; unwrap it iteratively.
    while let Value::List(l) = v {
        let inner = l.borrow_mut().pop().unwrap_or_default();
        v = inner;
    }
}

#[test]
fn rows_print_as_class_and_id_in_every_context() {
    let classes = vec![
        Class {
            name: "Point".into(),
            fields: vec!["x".into()],
        },
        Class {
            name: "Employee".into(),
            fields: vec!["name".into()],
        },
    ];
    let row = Value::Row(RowRef::new(1, 3));
    assert_eq!(to_text(&row, &classes), "Employee(3)");
    let nested = list(vec![row.clone(), map(vec![(Key::Int(1), row)])]);
    assert_eq!(
        to_text(&nested, &classes),
        "[Employee(3), {1: Employee(3)}]"
    );
    // A class index the image does not have prints as `?`, never panics.
    let stray = Value::Row(RowRef::new(9, 1));
    assert_eq!(to_text(&stray, &classes), "?(1)");
}

/// Ints are written without the formatter (and small ones come from a shared table):
/// every digit count, both signs, the table's edges and the extremes must read exactly as
/// Rust's `{}` writes them, alone, inside a list, and as map keys.
#[test]
fn ints_print_as_rust_display() {
    let mut samples = vec![0, 1, 9, 10, 99, 100, 101, 255, 256, 257, 1000, 65_535];
    samples.extend([
        i64::MIN,
        i64::MIN + 1,
        i64::MAX,
        -1,
        -9,
        -10,
        -99,
        -100,
        -256,
    ]);
    let mut p = 1_i64;
    while let Some(next) = p.checked_mul(10) {
        samples.extend([p - 1, p, p + 1, -p, 7 * p + 3]);
        p = next;
    }
    for i in samples {
        let expected = format!("{i}");
        assert_eq!(&*wo_vm::display::text_of(&Value::Int(i), &[]), expected);
        assert_eq!(show(&Value::Int(i)), expected);
        assert_eq!(show(&list(vec![Value::Int(i)])), format!("[{i}]"));
        assert_eq!(
            show(&map(vec![(Key::Int(i), Value::Int(i))])),
            format!("{{{i}: {i}}}")
        );
    }
    // A small Int's Text is shared, not rebuilt.
    let a = wo_vm::display::text_of(&Value::Int(7), &[]);
    let b = wo_vm::display::text_of(&Value::Int(7), &[]);
    assert!(Rc::ptr_eq(&a, &b));
}
