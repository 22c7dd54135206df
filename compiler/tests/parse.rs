//! Tests of the parser seam `wo_compiler::parse`: every construct of LANGUAGE.md
//! §2–§7 parses to the expected tree (printed as compact s-expressions), spans
//! point at the right text, syntax errors produce the documented messages (the
//! files under `tests/syntax/` are pinned by snapshots), and no input — garbled
//! bytes, random token soup, truncated programs — makes the parser panic.

use wo_compiler::ast::*;
use wo_compiler::{parse, Diagnostic, FileId, SourceFile};

/// A program that uses every piece of syntax of LANGUAGE.md §2–§7.
const ALL_SYNTAX: &str = r#"use time
use math
const LIMIT = 100
const NEG = -9223372036854775808;

@table(name: "employees", index: [dept], index: [dept, level], sorted: [salary],)
class Employee {
  name: Text @unique
  salary: Int
  level: Int = 1
  dept: ref Department       -- a foreign key
  manager: ?ref Employee     -- nullable foreign key
  fn raise(pct: Int) {
    self.salary = self.salary * (100 + pct) / 100
  }
}

@table(name: "departments")
@index
class Department { name: Text @unique }

class Point {
  x: Int
  y: Int = 0
  label: ?Text
  tags: multi Text = []
  fn norm1() -> Int { return abs(self.x) + abs(self.y) }
}

fn area(w: Int, h: Int,) -> Int {
  return w * h
}

fn main(args: multi Text) -> Int {
  let total = 0
  total = total + 1; total += 1; total -= 1; total *= 2; total /= 2; total %= 3
  let m: map<Text, Int> = {}
  let t: task<?Int> = spawn work(1, 2,)
  let m2 = {"a": 1, "b": 2,}
  let p = Point { x: 1, label: "a", }
  p.x = 3
  xs[0] = 7
  m["k"] = 1
  let adults = from p in Person
    where p.age >= 18
    where p.name != ""
    order by p.age desc, p.name asc, p.id
    skip 1
    take 10
    select p.name
  if a > b {
    print("greater")
  }
  else if a == b {
    print("equal")
  } else {
    print("less")
  }
  while n > 0 { n -= 1 }
  for x in xs { if x == 3 { break } else { continue } }
  for k, v in m { print("${k}=${v}") }
  for e in from e in Employee where e.salary > 10 select e { e.raise(5) }
  if p == (Point { x: 1 }).x { print("constructor in parentheses") }
  transaction {
    let d = insert Department { name: "R&D" }
    insert Employee { name: "ann", salary: 10, dept: d }
  }
  try {
    risky()
  }
  catch (e) {
    print(e.message)
  }
  let v = try 10 / z catch (e) -1
  let w = math.PI * float(time.ticks()) + Employee.find(3).salary
  let ok = not a and b or c ?? d
  let s = "a" .. "b" .. text(1 - -2 * 3 % 4)
  delete row
  let f = 1.5e3 + 0x1F + 0b101 + 1_000
  return 0
}
"#;

fn src_file(src: &str) -> SourceFile {
    SourceFile::new("test.wo", src)
}

/// The diagnostics of `src`, one per line as `line:col: [code] message`.
fn diags(src: &str) -> Vec<String> {
    let (_, ds) = parse(src, FileId(0));
    render(src, &ds)
}

fn render(src: &str, ds: &[Diagnostic]) -> Vec<String> {
    let file = src_file(src);
    ds.iter()
        .map(|d| {
            let (line, col) = file.line_col(d.span.lo);
            format!("{line}:{col}: [{}] {}", d.code, d.message)
        })
        .collect()
}

/// Parses `src` and fails the test on any diagnostic.
fn parse_ok(src: &str) -> Module {
    let (m, ds) = parse(src, FileId(0));
    assert!(
        ds.is_empty(),
        "unexpected diagnostics: {:#?}",
        render(src, &ds)
    );
    m
}

/// The statements of the body of the first function of `src`.
fn body(src: &str) -> Vec<Stmt> {
    let m = parse_ok(src);
    match m.items.into_iter().next() {
        Some(Item::Fn(f)) => f.body.stmts,
        other => panic!("expected a function, got {other:?}"),
    }
}

/// The statements of `fn main() { <stmts> }` as s-expressions.
fn stmts(src: &str) -> Vec<String> {
    body(&format!("fn main() {{\n{src}\n}}\n"))
        .iter()
        .map(stmt_sx)
        .collect()
}

/// The expression `src` (written as `let it = <src>`) as an s-expression.
fn expr(src: &str) -> String {
    let s = body(&format!("fn main() {{\n  let it = {src}\n}}\n"));
    match &s[..] {
        [Stmt {
            kind: StmtKind::Let { value, .. },
            ..
        }] => sx(value),
        other => panic!("expected one let, got {other:?}"),
    }
}

fn list(xs: &[Expr]) -> String {
    xs.iter().map(sx).collect::<Vec<_>>().join(" ")
}

fn fields(fs: &[FieldInit]) -> String {
    fs.iter()
        .map(|f| format!("{}:{}", f.name.name, sx(&f.value)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn sx(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Text(parts) => {
            let ps: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    TextPart::Lit(s) => format!("{s:?}"),
                    TextPart::Expr(e) => format!("${{{}}}", sx(e)),
                })
                .collect();
            format!("(text {})", ps.join(" "))
        }
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Nil => "nil".into(),
        ExprKind::Name(n) => n.clone(),
        ExprKind::TypeName(n) => format!("type:{n}"),
        ExprKind::Call { callee, args } => format!("(call {} {})", callee.name, list(args)),
        ExprKind::MethodCall { recv, method, args } => {
            format!("(method {} {} {})", sx(recv), method.name, list(args))
        }
        ExprKind::Field { recv, name } => format!("(field {} {})", sx(recv), name.name),
        ExprKind::Index { recv, index } => format!("(index {} {})", sx(recv), sx(index)),
        ExprKind::Unary { op, expr } => format!("({op:?} {})", sx(expr)),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sx(lhs), sx(rhs))
        }
        ExprKind::List(xs) => format!("[{}]", list(xs)),
        ExprKind::Map(kvs) => {
            let es: Vec<String> = kvs
                .iter()
                .map(|(k, v)| format!("{}:{}", sx(k), sx(v)))
                .collect();
            format!("{{{}}}", es.join(" "))
        }
        ExprKind::Construct { class, fields: fs } => format!("(new {} {})", class.name, fields(fs)),
        ExprKind::Insert { table, fields: fs } => format!("(insert {} {})", table.name, fields(fs)),
        ExprKind::Spawn { call } => format!("(spawn {})", sx(call)),
        ExprKind::Try { body, err, handler } => {
            format!("(try {} {} {})", sx(body), err.name, sx(handler))
        }
        ExprKind::Query(q) => {
            let mut s = format!("(from {} {}", q.var.name, sx(&q.source));
            for w in &q.wheres {
                s += &format!(" (where {})", sx(w));
            }
            if !q.order.is_empty() {
                let keys: Vec<String> = q
                    .order
                    .iter()
                    .map(|k| format!("{}{}", sx(&k.expr), if k.desc { " desc" } else { "" }))
                    .collect();
                s += &format!(" (order {})", keys.join(", "));
            }
            if let Some(n) = &q.skip {
                s += &format!(" (skip {})", sx(n));
            }
            if let Some(n) = &q.take {
                s += &format!(" (take {})", sx(n));
            }
            s + &format!(" (select {}))", sx(&q.select))
        }
        ExprKind::Error => "ERROR".into(),
    }
}

fn block_sx(b: &Block) -> String {
    let ss: Vec<String> = b.stmts.iter().map(stmt_sx).collect();
    format!("{{{}}}", ss.join("; "))
}

fn stmt_sx(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Let { name, ty, value } => match ty {
            Some(t) => format!("(let {}: {} {})", name.name, ty_sx(t), sx(value)),
            None => format!("(let {} {})", name.name, sx(value)),
        },
        StmtKind::Assign { target, op, value } => {
            format!("({op:?} {} {})", sx(target), sx(value))
        }
        StmtKind::Expr(e) => sx(e),
        StmtKind::Return(Some(e)) => format!("(return {})", sx(e)),
        StmtKind::Return(None) => "(return)".into(),
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
        StmtKind::Delete(e) => format!("(delete {})", sx(e)),
        StmtKind::If { cond, then, els } => match els {
            Some(e) => format!("(if {} {} {})", sx(cond), block_sx(then), block_sx(e)),
            None => format!("(if {} {})", sx(cond), block_sx(then)),
        },
        StmtKind::While { cond, body } => format!("(while {} {})", sx(cond), block_sx(body)),
        StmtKind::For {
            var,
            var2,
            iter,
            body,
        } => {
            let vars = match var2 {
                Some(v2) => format!("{}, {}", var.name, v2.name),
                None => var.name.clone(),
            };
            format!("(for {vars} {} {})", sx(iter), block_sx(body))
        }
        StmtKind::Transaction(b) => format!("(transaction {})", block_sx(b)),
        StmtKind::Try { body, err, handler } => {
            format!(
                "(try {} {} {})",
                block_sx(body),
                err.name,
                block_sx(handler)
            )
        }
    }
}

fn ty_sx(t: &TypeExpr) -> String {
    match &t.kind {
        TypeKind::Named(n) => n.clone(),
        TypeKind::Nullable(t) => format!("?{}", ty_sx(t)),
        TypeKind::Multi(t) => format!("multi {}", ty_sx(t)),
        TypeKind::Map(k, v) => format!("map<{}, {}>", ty_sx(k), ty_sx(v)),
        TypeKind::Task(Some(t)) => format!("task<{}>", ty_sx(t)),
        TypeKind::Task(None) => "task".to_string(),
        TypeKind::Ref(n) => format!("ref {}", n.name),
    }
}

// ---- valid programs

#[test]
fn the_whole_syntax_parses_without_diagnostics() {
    let m = parse_ok(ALL_SYNTAX);
    let kinds: Vec<&str> = m
        .items
        .iter()
        .map(|i| match i {
            Item::Use(_) => "use",
            Item::Const { .. } => "const",
            Item::Fn(_) => "fn",
            Item::Class(_) => "class",
        })
        .collect();
    assert_eq!(
        kinds,
        ["use", "use", "const", "const", "class", "class", "class", "fn", "fn"]
    );
    let Some(Item::Fn(main)) = m.items.last() else {
        panic!("main is last");
    };
    assert_eq!(main.body.stmts.len(), 30);
}

#[test]
fn declarations() {
    let m = parse_ok(ALL_SYNTAX);
    let Item::Class(emp) = &m.items[4] else {
        panic!("Employee is a class");
    };
    assert_eq!(emp.name.name, "Employee");
    assert_eq!(emp.annots.len(), 1);
    let args = emp.annots[0].args.as_ref().expect("@table has arguments");
    let names: Vec<&str> = args.iter().map(|a| a.name.name.as_str()).collect();
    assert_eq!(names, ["name", "index", "index", "sorted"]);
    assert_eq!(sx(&args[2].value), "[dept level]");
    let fields: Vec<String> = emp
        .fields
        .iter()
        .map(|f| {
            let annots: Vec<&str> = f.annots.iter().map(|a| a.name.name.as_str()).collect();
            format!("{}: {} {:?}", f.name.name, ty_sx(&f.ty), annots)
        })
        .collect();
    assert_eq!(
        fields,
        [
            "name: Text [\"unique\"]",
            "salary: Int []",
            "level: Int []",
            "dept: ref Department []",
            "manager: ?ref Employee []",
        ]
    );
    assert_eq!(emp.fields[2].default.as_ref().map(sx), Some("1".into()));
    assert_eq!(emp.methods.len(), 1);
    assert_eq!(emp.methods[0].name.name, "raise");

    // Annotations on their own lines, and a class on one line.
    let Item::Class(dept) = &m.items[5] else {
        panic!("Department is a class");
    };
    let annots: Vec<(&str, bool)> = dept
        .annots
        .iter()
        .map(|a| (a.name.name.as_str(), a.args.is_some()))
        .collect();
    assert_eq!(annots, [("table", true), ("index", false)]);
    assert_eq!(dept.fields.len(), 1);

    let Item::Fn(area) = &m.items[7] else {
        panic!("area is a function");
    };
    let params: Vec<String> = area
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name.name, ty_sx(&p.ty)))
        .collect();
    assert_eq!(params, ["w: Int", "h: Int"]);
    assert_eq!(area.ret.as_ref().map(ty_sx), Some("Int".into()));
    // The span of a function covers its signature only.
    assert_eq!(
        &ALL_SYNTAX[area.span.lo as usize..area.span.hi as usize],
        "fn area(w: Int, h: Int,) -> Int"
    );
    match &m.items[3] {
        Item::Const { name, value, .. } => {
            assert_eq!(name.name, "NEG");
            assert!(matches!(value.kind, ExprKind::Int(i64::MIN)));
        }
        other => panic!("expected a const, got {other:?}"),
    }
}

#[test]
fn types() {
    assert_eq!(
        stmts("let m: map<Text, ?Int> = {}\nlet t: task<multi ?Point> = x\nlet r: ?ref T = nil"),
        [
            "(let m: map<Text, ?Int> {})",
            "(let t: task<multi ?Point> x)",
            "(let r: ?ref T nil)",
        ]
    );
}

#[test]
fn simple_statements() {
    assert_eq!(
        stmts("let x = 1; x = 2\nx += 1\np.x -= 2; xs[0] *= 3; m[\"k\"] /= 4; y %= 5\nreturn\nreturn x\nbreak; continue\ndelete row\nf(1)"),
        [
            "(let x 1)",
            "(Set x 2)",
            "(Add x 1)",
            "(Sub (field p x) 2)",
            "(Mul (index xs 0) 3)",
            "(Div (index m (text \"k\")) 4)",
            "(Rem y 5)",
            "(return)",
            "(return x)",
            "break",
            "continue",
            "(delete row)",
            "(call f 1)",
        ]
    );
}

#[test]
fn if_else_chains_nest_in_else_blocks() {
    assert_eq!(
        stmts("if a { x } else if b { y } else { z }"),
        ["(if a {x} {(if b {y} {z})})"]
    );
    // `} else {` may start a line, and so may `else if`.
    assert_eq!(
        stmts("if a {\n  x\n}\nelse if b {\n  y\n}\nelse {\n  z\n}\nafter()"),
        ["(if a {x} {(if b {y} {z})})", "(call after )"]
    );
}

#[test]
fn loops_transactions_and_try() {
    assert_eq!(
        stmts("while n > 0 { n -= 1 }\nfor x in xs { f(x) }\nfor k, v in m { g(k, v) }\ntransaction { h() }"),
        [
            "(while (> n 0) {(Sub n 1)})",
            "(for x xs {(call f x)})",
            "(for k, v m {(call g k v)})",
            "(transaction {(call h )})",
        ]
    );
    assert_eq!(
        stmts("try {\n  risky()\n}\ncatch (e) {\n  print(e.message)\n}"),
        ["(try {(call risky )} e {(call print (field e message))})"]
    );
    assert_eq!(
        stmts("try { a() } catch (e) { b() }"),
        ["(try {(call a )} e {(call b )})"]
    );
}

#[test]
fn query_in_a_for_header_is_not_a_constructor() {
    assert_eq!(
        stmts("for e in from e in Emp where e.d == d select e { print(e) }"),
        ["(for e (from e type:Emp (where (== (field e d) d)) (select e)) {(call print e)})"]
    );
    assert_eq!(
        stmts("if p == (Point { x: 1 }).x { f() }"),
        ["(if (== p (field (new Point x:1) x)) {(call f )})"]
    );
    assert_eq!(
        stmts("while x == T.find(1) { f() }"),
        ["(while (== x (method type:T find 1)) {(call f )})"]
    );
    // `insert T { … }` needs no parentheses even in a header.
    assert_eq!(
        stmts("if insert T { a: 1 } != nil { f() }"),
        ["(if (!= (insert T a:1) nil) {(call f )})"]
    );
}

#[test]
fn multi_line_queries() {
    assert_eq!(
        expr("from p in Person\n    where p.age >= 18\n    order by p.age desc, p.name asc\n    take 10\n    skip 2\n    select p.name"),
        "(from p type:Person (where (>= (field p age) 18)) (order (field p age) desc, (field p name)) (skip 2) (take 10) (select (field p name)))"
    );
    assert_eq!(
        expr("from x in xs select x * 2"),
        "(from x xs (select (* x 2)))"
    );
    assert_eq!(
        expr("count(from x in xs where x > 1 select x)"),
        "(call count (from x xs (where (> x 1)) (select x)))"
    );
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(expr("1 + 2 * 3 - 4"), "(- (+ 1 (* 2 3)) 4)");
    assert_eq!(expr("a .. b + c .. d"), "(.. (.. a (+ b c)) d)");
    assert_eq!(
        expr("a == b and not c or d"),
        "(or (and (== a b) (Not c)) d)"
    );
    assert_eq!(expr("a ?? b ?? c or d"), "(?? a (?? b (or c d)))");
    assert_eq!(expr("-x.f[0]"), "(Neg (index (field x f) 0))");
    assert_eq!(expr("- 5"), "(Neg 5)");
    assert_eq!(expr("-5"), "-5");
    assert_eq!(expr("-(5)"), "(Neg 5)");
    assert_eq!(expr("2 - -3"), "(- 2 -3)");
    assert_eq!(expr("-9223372036854775808"), "-9223372036854775808");
    assert_eq!(
        expr("try a / b catch (e) 0 ?? 1"),
        "(try (/ a b) e (?? 0 1))"
    );
    assert_eq!(expr("try f() catch (e) {}"), "(try (call f ) e {})");
    assert_eq!(
        expr("(try f() catch (e) 1) + 2"),
        "(+ (try (call f ) e 1) 2)"
    );
}

#[test]
fn postfix_forms() {
    assert_eq!(expr("math.PI"), "(field math PI)");
    assert_eq!(expr("time.ticks()"), "(method time ticks )");
    assert_eq!(
        expr("Employee.find(3).salary"),
        "(field (method type:Employee find 3) salary)"
    );
    assert_eq!(
        expr("self.xs[i].f(1, 2,)"),
        "(method (index (field self xs) i) f 1 2)"
    );
    assert_eq!(expr("LIMIT"), "type:LIMIT");
}

#[test]
fn literals() {
    assert_eq!(
        expr("[1, 2.5, \"a\", true, false, nil,]"),
        "[1 2.5 (text \"a\") true false nil]"
    );
    assert_eq!(expr("1_000_000 + 0xFF + 0b1010"), "(+ (+ 1000000 255) 10)");
    assert_eq!(expr("1.0e-3 + 2e9"), "(+ 0.001 2000000000.0)");
    assert_eq!(
        expr("{\"a\": 1, \"b\": 2,}"),
        "{(text \"a\"):1 (text \"b\"):2}"
    );
    assert_eq!(expr("{}"), "{}");
    assert_eq!(expr("[]"), "[]");
    assert_eq!(expr("Point { x: 1, y: 2, }"), "(new Point x:1 y:2)");
    assert_eq!(expr("insert T {}"), "(insert T )");
    assert_eq!(expr("spawn work(1, 2)"), "(spawn (call work 1 2))");
    assert_eq!(expr("spawn acc.add(1)"), "(spawn (method acc add 1))");
    assert_eq!(expr("spawn f(1) + 2"), "(+ (spawn (call f 1)) 2)");
    assert_eq!(
        expr(r#""tab\t nl\n cr\r bs\\ q\" d\$ e\u{1F600} $x ${a + 1}!""#),
        "(text \"tab\\t nl\\n cr\\r bs\\\\ q\\\" d$ e😀 $x \" ${(+ a 1)} \"!\")"
    );
    assert_eq!(
        expr(r#""${m["k"]} and ${ {"a": 1}["a"] } ${"nested ${x}"}""#),
        "(text ${(index m (text \"k\"))} \" and \" ${(index {(text \"a\"):1} (text \"a\"))} \" \" ${(text \"nested \" ${x})})"
    );
}

#[test]
fn interpolation_spans_point_into_the_file() {
    let src = "fn main() {\n  print(\"v=${a + bb}\")\n}\n";
    let s = body(src);
    let StmtKind::Expr(Expr {
        kind: ExprKind::Call { args, .. },
        ..
    }) = &s[0].kind
    else {
        panic!("a call");
    };
    let ExprKind::Text(parts) = &args[0].kind else {
        panic!("a text");
    };
    let TextPart::Expr(e) = &parts[1] else {
        panic!("an interpolation");
    };
    assert_eq!(&src[e.span.lo as usize..e.span.hi as usize], "a + bb");
    // An error inside an interpolation points at its column.
    assert_eq!(
        diags("fn main() {\n  print(\"v=${a + }\")\n}\n"),
        ["2:17: [syntax] unexpected `}` at the end of the interpolation, expected expression"]
    );
    assert_eq!(
        diags("fn main() {\n  print(\"v=${a b}\")\n}\n"),
        ["2:16: [syntax] unexpected identifier `b`, expected `}`"]
    );
}

#[test]
fn spans_cover_their_text() {
    let src = "fn main() {\n  let total = price * 2 + f(x, y)\n  p.name = \"a\"\n}\n";
    let s = body(src);
    let text = |sp: wo_compiler::Span| &src[sp.lo as usize..sp.hi as usize];
    assert_eq!(text(s[0].span), "let total = price * 2 + f(x, y)");
    let StmtKind::Let { name, value, .. } = &s[0].kind else {
        panic!("a let");
    };
    assert_eq!(text(name.span), "total");
    assert_eq!(text(value.span), "price * 2 + f(x, y)");
    let ExprKind::Binary { lhs, rhs, .. } = &value.kind else {
        panic!("a sum");
    };
    assert_eq!(text(lhs.span), "price * 2");
    assert_eq!(text(rhs.span), "f(x, y)");
    let StmtKind::Assign { target, .. } = &s[1].kind else {
        panic!("an assignment");
    };
    assert_eq!(text(target.span), "p.name");
}

#[test]
fn semicolons_and_newlines() {
    // An operator at the end of a line continues the expression; a trailing comma
    // continues a list.
    assert_eq!(
        stmts("let x = 1 +\n  2\nf(1,\n  2,\n)\nlet y = [\n  1,\n  2,\n]"),
        ["(let x (+ 1 2))", "(call f 1 2)", "(let y [1 2])"]
    );
    // As in Go, a list split over lines ends each line with `,`.
    assert_eq!(
        diags("fn main() {\n  let y = [\n    1\n  ]\n}\n"),
        ["3:6: [syntax] unexpected end of line, expected one of `]`, `,`"]
    );
    assert_eq!(stmts("a(); ; b()"), ["(call a )", "(call b )"]);
    // A comment does not hide the newline.
    assert_eq!(stmts("a() -- one\nb()"), ["(call a )", "(call b )"]);
    // No `;` at the end of the file is needed.
    assert!(parse("const A = 1", FileId(0)).1.is_empty());
}

// ---- errors

#[test]
fn keyword_used_as_a_name() {
    assert_eq!(
        diags("fn main() {\n  let order = 1\n}\n"),
        ["2:7: [syntax] `order` is a keyword and cannot be used as a name"]
    );
    assert_eq!(
        diags("fn select() {}\n"),
        ["1:4: [syntax] `select` is a keyword and cannot be used as a name"]
    );
    assert_eq!(
        diags("fn main() {\n  x = order + 1\n}\n"),
        ["2:7: [syntax] `order` is a keyword and cannot be used as a name"]
    );
}

#[test]
fn capitalisation_rules() {
    assert_eq!(
        diags("fn Area() {}\n"),
        ["1:4: [syntax] invalid function name `Area`: function names start with a lower-case letter"]
    );
    assert_eq!(
        diags("class point { x: Int }\n"),
        ["1:7: [syntax] invalid class name `point`: class names start with an upper-case letter"]
    );
    assert_eq!(
        diags("fn f(W: Int) {}\n"),
        ["1:6: [syntax] invalid parameter name `W`: parameter names start with a lower-case letter"]
    );
    assert_eq!(
        diags("fn main() {\n  let X = 1\n}\n"),
        ["2:7: [syntax] invalid variable name `X`: variable names start with a lower-case letter"]
    );
    assert_eq!(
        diags("class P {\n  X: Int\n}\n"),
        ["2:3: [syntax] invalid field name `X`: field names start with a lower-case letter"]
    );
    assert_eq!(
        diags("const limit = 1\n"),
        ["1:7: [syntax] invalid constant name `limit`: constant names start with an upper-case letter"]
    );
    assert_eq!(
        diags("fn f(x: int) {}\n"),
        ["1:9: [syntax] invalid type name `int`: type names start with an upper-case letter"]
    );
}

#[test]
fn comparisons_do_not_chain() {
    assert_eq!(
        diags("fn main() {\n  let b = a < b < c\n}\n"),
        ["2:17: [syntax] comparisons cannot be chained: `<` follows another comparison (combine them with `and`)"]
    );
}

#[test]
fn closing_angle_before_equals_needs_a_space() {
    assert_eq!(
        diags("fn main() {\n  let m: map<Text, Int>= {}\n}\n"),
        ["2:23: [syntax] unexpected `>=`: write a space between a type's closing `>` and `=`"]
    );
}

#[test]
fn unexpected_tokens_name_what_was_expected() {
    assert_eq!(
        diags("fn main() {\n  f(1 2)\n}\n"),
        ["2:7: [syntax] unexpected integer `2`, expected one of `)`, `,`, operator"]
    );
    assert_eq!(
        diags("fn main() {\n  let = 3\n}\n"),
        ["2:7: [syntax] unexpected `=`, expected identifier"]
    );
    assert_eq!(
        diags("fn main() {\n  f(1,\n"),
        ["2:7: [syntax] unexpected end of input, expected one of `)`, expression"]
    );
    assert_eq!(
        diags("fn main() {\n  let x = (1 +\n  2\n"),
        ["3:4: [syntax] unexpected end of line, expected `)`"]
    );
    assert_eq!(
        diags("fn main() {\n  let x = try { 1 } catch (e) { 2 }\n}\n"),
        ["2:11: [syntax] unexpected keyword `try`, expected expression"]
    );
}

#[test]
fn several_mistakes_give_several_diagnostics() {
    let src =
        "fn main() {\n  let = 1\n  f(1 2)\n  ok()\n  g(]\n}\n\nfn Bad() {}\n\nfn good() { h( }\n";
    assert_eq!(
        diags(src),
        [
            "2:7: [syntax] unexpected `=`, expected identifier",
            "3:7: [syntax] unexpected integer `2`, expected one of `)`, `,`, operator",
            "5:5: [syntax] unexpected `]`, expected one of `)`, expression",
            "8:4: [syntax] invalid function name `Bad`: function names start with a lower-case letter",
            "10:16: [syntax] unexpected `}`, expected one of `)`, expression",
        ]
    );
    // The statements and functions around the mistakes are kept.
    let (m, _) = parse(src, FileId(0));
    let names: Vec<&str> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.name.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["main", "good"]);
    let Item::Fn(main) = &m.items[0] else {
        panic!("main first");
    };
    assert!(main
        .body
        .stmts
        .iter()
        .any(|s| matches!(&s.kind, StmtKind::Expr(Expr { kind: ExprKind::Call { callee, .. }, .. }) if callee.name == "ok")));
}

#[test]
fn lexical_errors() {
    assert_eq!(
        diags("fn main() {\n  let a = 1 # 2\n  let b = 9223372036854775808\n  let c = -9223372036854775809\n  let d = 1e999\n  let e = \"abc\n  let f = \"\\q\"\n}\n"),
        [
            "2:13: [lex] `#` does not start a comment in wo",
            "3:11: [lex] integer literal `9223372036854775808` is out of range for `Int`",
            "4:12: [lex] integer literal `-9223372036854775809` is out of range for `Int`",
            "5:11: [lex] float literal `1e999` is out of range for `Float`",
            "6:11: [lex] unterminated text literal: a raw newline cannot appear inside `\"…\"` (write `\\n`)",
            "7:12: [lex] unknown escape `\\q` (escapes are \\n \\t \\r \\\\ \\\" \\$ \\u{…})",
        ]
    );
}

#[test]
fn syntax_error_snapshots() {
    insta::glob!("syntax/*.wo", |path| {
        let src = std::fs::read_to_string(path).expect("a test input is readable");
        insta::assert_snapshot!(diags(&src).join("\n"));
    });
}

// ---- robustness

/// A small deterministic generator (xorshift), so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Parses `src` and checks that every diagnostic span lies inside it.
fn parse_anything(src: &str) {
    let (_, ds) = parse(src, FileId(0));
    for d in &ds {
        assert!(
            d.span.lo <= d.span.hi && d.span.hi as usize <= src.len(),
            "bad span {:?} for {src:?}",
            d.span
        );
        assert!(!d.message.is_empty());
    }
}

#[test]
fn no_input_makes_the_parser_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Random bytes, read as (lossy) UTF-8.
    for _ in 0..1500 {
        let n = rng.below(64);
        let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        parse_anything(&String::from_utf8_lossy(&bytes));
    }
    // Random soup of real tokens, which gets much deeper into the grammar.
    // Every keyword (the lexer's own list), then names, literals and punctuation.
    let mut vocab: Vec<&str> = wo_compiler::lexer::KEYWORDS.to_vec();
    vocab.extend([
        "x",
        "Y",
        "1",
        "2.5",
        "\"t${x}\"",
        "\"${",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        ";",
        ".",
        "..",
        "=",
        "+=",
        "==",
        "<",
        ">",
        ">=",
        "+",
        "-",
        "*",
        "??",
        "?",
        "->",
        "@",
        "\n",
        "\n",
        "--c\n",
        "#",
        "\"",
        "-9223372036854775808",
    ]);
    for _ in 0..2500 {
        let n = rng.below(40);
        let src: Vec<&str> = (0..n).map(|_| vocab[rng.below(vocab.len())]).collect();
        parse_anything(&src.join(" "));
    }
    // Every prefix of a valid program, and the program with one byte removed.
    let chars: Vec<(usize, char)> = ALL_SYNTAX.char_indices().collect();
    for &(i, _) in chars.iter().step_by(3) {
        parse_anything(&ALL_SYNTAX[..i]);
        let mut cut = ALL_SYNTAX[..i].to_string();
        cut.push_str(ALL_SYNTAX.get(i + 1..).unwrap_or(""));
        parse_anything(&cut);
    }
}

#[test]
fn a_file_past_16_mib_is_refused_whole() {
    let big = format!("fn main() {{\n{}}}\n", ";".repeat(17 << 20));
    let ds = diags(&big);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert!(
        ds[0].starts_with(
            "1:1: [syntax] this file is 17825806 bytes of source; wo reads at most 16 MiB (16777216 bytes) in one file"
        ),
        "{ds:?}"
    );
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    let deep = format!(
        "fn main() {{ let x = {}1{} }}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let ds = diags(&deep);
    assert_eq!(ds, ["1:148: [syntax] brackets are nested too deeply (at most 128 levels of `(`, `[` and `{`, a function's own `{` counted)"]);
    let long = format!("fn main() {{ let x = 1{} }}", " + 1".repeat(100_000));
    assert_eq!(
        diags(&long),
        ["1:4015: [syntax] statement is too complex (about 1000 operators one inside another; split it over `let`s)"]
    );
    let negs = format!("fn main() {{ let x = {}1 }}", "- ".repeat(100_000));
    assert_eq!(diags(&negs).len(), 1);
    // A list, call or map of any length adds only its widest element (helper-72: a
    // list of 1,000 negative numbers was "too complex").
    for element in ["-1", "-1.5", "f(1)", "[1, -2]", "P { x: 1 }", "{\"a\": 1}"] {
        let wide = format!(
            "fn main() {{ let x = [{}] }}",
            vec![element; 20_000].join(", ")
        );
        assert_eq!(diags(&wide), Vec::<String>::new(), "{element}");
    }
    let args = format!("fn main() {{ f({}) }}", vec!["-1"; 20_000].join(", "));
    assert_eq!(diags(&args), Vec::<String>::new());
    // Chains are counted through brackets and beside siblings.
    let chained = format!("fn main() {{ let x = xs{} }}", "[0]".repeat(1_100));
    assert_eq!(diags(&chained).len(), 1);
    let methods = format!("fn main() {{ let x = p{} }}", ".f(1)".repeat(600));
    assert_eq!(diags(&methods).len(), 1);
    let beside = format!("fn main() {{ f(1, 2{}, 3) }}", " + 1".repeat(1_100));
    assert_eq!(diags(&beside).len(), 1);
    let inside = format!("fn main() {{ f([1{}]) }}", " + 1".repeat(1_100));
    assert_eq!(diags(&inside).len(), 1);
    // The keys of an `order by` are a level of their own: their `,` does not clear
    // the count of the queries around them (helper-75: 1,982 nested queries, then a
    // stack overflow, with `order by x, x` every 990).
    let level = format!(
        "{}from x in xs order by x, x select ",
        "from x in ".repeat(990)
    );
    let nested = format!(
        "fn main() {{ let y = {}0{} }}",
        level.repeat(2),
        " select x".repeat(1_980)
    );
    let ds = diags(&nested);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert!(ds[0].contains("too complex"), "{ds:?}");
    // Keys side by side are fine.
    let keys = format!(
        "fn main() {{ let y = from x in xs order by {} select x }}",
        vec!["x + 1"; 5_000].join(", ")
    );
    assert_eq!(diags(&keys), Vec::<String>::new());
    // `else if` chains nested in each other's last `else` count together.
    let chain = format!("if a {{}}{} else {{ ", " else if a {}".repeat(12_000));
    let two = format!("fn main() {{ {}{} }}", chain.repeat(2), "}".repeat(2));
    let ds = diags(&two);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert!(
        ds[0].contains("with those of the chains it is nested in"),
        "{ds:?}"
    );
    let one = format!("fn main() {{ {}}} }}", chain);
    assert_eq!(diags(&one), Vec::<String>::new());
    let interp = format!("fn main() {{ print({}) }}", "\"${".repeat(1000));
    assert!(!diags(&interp).is_empty());
    // Types nest through `multi`, `?` and the value of a `map<K, V>` (whose `,` is
    // no sibling): 300,000 `multi` overflowed the stack of `wo check` and `wo fmt`.
    for (open, close) in [
        ("multi ", ""),
        ("?multi ", ""),
        ("map<Text, ", ">"),
        ("task<", ">"),
    ] {
        let deep = format!(
            "fn main() {{ let x: {}Int{} = nil }}",
            open.repeat(300_000),
            close.repeat(300_000)
        );
        let ds = diags(&deep);
        assert_eq!(ds.len(), 1, "{open}: {ds:?}");
        assert!(
            ds[0].ends_with("[syntax] type is nested too deeply (about 1000 levels of `multi` or `?`, 500 of `map<…>` or `task<…>`)"),
            "{ds:?}"
        );
    }
    // A type that only begins where the count runs out is not the one to blame.
    let cond = format!(
        "fn main() {{ if a{} == 2 {{ let x: ?Int = nil }} }}",
        " + a".repeat(995)
    );
    assert_eq!(
        diags(&cond),
        ["1:4012: [syntax] statement is too complex (about 1000 operators one inside another; split it over `let`s)"]
    );
    let params = format!(
        "fn f({}) {{}}",
        vec!["a: ?multi map<Text, Int>"; 5_000].join(", ")
    );
    assert_eq!(diags(&params), Vec::<String>::new());
}
