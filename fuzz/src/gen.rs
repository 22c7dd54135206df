//! A generator of well-typed wo programs driven by fuzzer bytes (`arbitrary`), for the
//! `gen` target: the checker, codegen, verifier, VM and database see programs that
//! get past the parser. Every program it writes must compile; the target checks that,
//! that its image survives the `.wob` round trip unchanged, and compares outputs
//! across access paths (the same program with its tables hash-indexed,
//! sorted-indexed and unindexed).
//!
//! The program has two tables, `Row { k: Int, t: Text }` and `Tag` (a `ref Row`, a
//! `?ref Tag`: foreign keys, restrict on delete), whose annotations are the
//! placeholder [`TABLE_ATTR`], a class `Box` (objects: fields, a nullable reference
//! that can close a cycle, a list field, a method; narrowing of `?Box` locals), a
//! fixed helper `worker` (fibers that write rows and yield), up to three generated
//! helpers that call and spawn only earlier ones (so no unbounded recursion, and every
//! fiber ends), and `main`.
//! Fibers: `spawn` of a helper (its task joined later, at once or never), `yield()`.
//! Row handles are values of their own types (`Row`, `multi Row`): in locals,
//! parameters, results, lists and an object's field (`Box.r`), used after their row
//! is deleted (`DB`, `FK`).
//! `?Int` values, and `?Int` and `?Row` locals narrowed every way LANGUAGE.md §3 lists.
//!
//! A reproducer is kept in literal form (see [`program_of`]), so that it keeps its
//! program when the generator changes.

use arbitrary::{Result, Unstructured};
use std::fmt::Write as _;

/// Replaced by `@table`, `@table(index: [k])` or `@table(sorted: [k])`.
pub const TABLE_ATTR: &str = "@@TABLE@@";

/// The annotations the differential check compares.
pub const TABLE_VARIANTS: [&str; 3] = ["@table", "@table(index: [k])", "@table(sorted: [k])"];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    Int,
    Bool,
    Text,
    List,
    Float,
    Map,
    Obj,
    /// A handle to a row of `Row` (LANGUAGE.md §7): in locals, parameters, results,
    /// lists; it outlives a `delete`, and using it then traps `DB`.
    Row,
    /// `multi Row`: handles from queries (`select r`, `select g.of`) and pushes.
    Rows,
    /// `?Int`: from `parse_int`, a map's `m[k]`, `min`/`max`/`first` of a query or a
    /// list; narrowed (LANGUAGE.md §3) by `if m != nil`, the `else` of `if m == nil`,
    /// the rest of a block after `if m == nil { fail(…) }` or `return`, `while m !=
    /// nil` up to its assignment, and the right operand of `m != nil and …`.
    OptInt,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Int => "Int",
            Ty::Bool => "Bool",
            Ty::Text => "Text",
            Ty::List => "multi Int",
            Ty::Float => "Float",
            Ty::Map => "map<Text, Int>",
            Ty::Obj => "Box",
            Ty::Row => "Row",
            Ty::Rows => "multi Row",
            Ty::OptInt => "?Int",
        }
    }
}

struct Var {
    name: String,
    ty: Ty,
    /// A loop counter: never assigned by generated code, so loops end.
    fixed: bool,
    /// A `task` of a fiber running a helper that returns `ty` (joined, not assigned).
    task: bool,
}

struct Func {
    name: String,
    params: Vec<Ty>,
    ret: Ty,
}

struct Gen<'a, 'b> {
    u: &'b mut Unstructured<'a>,
    out: String,
    vars: Vec<Var>,
    funcs: Vec<Func>,
    /// Functions the current body may call (those declared before it).
    callable: usize,
    next: usize,
    indent: usize,
    /// Statements still allowed (bounds the program's size).
    fuel: usize,
    /// Inside a `transaction` block (they do not nest).
    in_tx: bool,
    /// The result type of the helper being written (`None` in `main`): how a block
    /// that must not complete ends, `return …`.
    ret: Option<Ty>,
}

const MAX_DEPTH: u32 = 3;

/// A helper every program has, so that even a short one can spawn fibers that take
/// turns: it writes rows and prints, yielding between them, and counts what it sees
/// (other fibers' rows too). Called or spawned like the generated helpers.
const WORKER: &str = "fn worker(n: Int, t: Text) -> Int {
  let i = 0
  while i < 3 {
    insert Row { k: n + i, t: t }
    print(\"${t}${i}\")
    yield()
    i += 1
  }
  return count(from r in Row where r.k >= n select r)
}

";

/// Every program's class of objects (`Ty::Obj`): `next` can close a cycle (freed by
/// the VM's cycle collector, printed as `…`), `xs` is a list shared with whoever reads
/// it, `r` a row handle kept on the heap (its row perhaps deleted meanwhile), `bump`
/// changes its receiver.
const BOX: &str = "class Box {
  n: Int
  t: Text = \"b\"
  next: ?Box
  xs: multi Int
  r: ?Row
  fn bump(d: Int) -> Int {
    self.n += d
    return self.n
  }
}

";

/// The second table: each tag points at a row (`of`, never nil) and perhaps at a
/// tag (`up`, itself included). Deleting a row or a tag something points at traps
/// `FK`; storing a deleted row traps `FK` too (LANGUAGE.md §7).
const TAG: &str = "
class Tag {
  k: Int
  of: ref Row
  up: ?ref Tag
}

";

/// Marks an input that carries its program as text: after the bytes the target reads
/// before the program (none for `gen`; the fault plan and variant for `durable`),
/// this marker, then the program (with [`TABLE_ATTR`]).
pub const LITERAL: &[u8] = b"\0wo-fuzz literal program\n";

/// Whether inputs in literal form are taken as such: only when `WO_FUZZ_LITERAL` is
/// set (as `fuzz/run.sh` does for `fuzz/regressions/`), so the fuzzer, which would
/// find the marker by its comparisons, never turns `gen` into a second `compile`.
fn literal_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("WO_FUZZ_LITERAL").is_some())
}

/// The program of an input: the text after [`LITERAL`] when the rest of the input
/// starts with it (and literal inputs are allowed), else [`program`]'s.
///
/// With `WO_FUZZ_SAVE_LITERAL=FILE`, the input is also written to FILE in literal
/// form: the `consumed` bytes read before (`data[..consumed]`), the marker and the
/// program. That is how a crash becomes a reproducer under `fuzz/regressions/`.
pub fn program_of(data: &[u8], consumed: usize, u: &mut Unstructured<'_>) -> Result<String> {
    let prog = match u.peek_bytes(LITERAL.len()) {
        Some(head) if head == LITERAL && literal_allowed() => {
            let rest = &u.bytes(u.len())?[LITERAL.len()..];
            String::from_utf8(rest.to_vec()).map_err(|_| arbitrary::Error::IncorrectFormat)?
        }
        _ => program(u)?,
    };
    if let Some(path) = std::env::var_os("WO_FUZZ_SAVE_LITERAL") {
        let mut bytes = data[..consumed].to_vec();
        bytes.extend_from_slice(LITERAL);
        bytes.extend_from_slice(prog.as_bytes());
        std::fs::write(&path, bytes).expect("WO_FUZZ_SAVE_LITERAL: cannot write the file");
    }
    Ok(prog)
}

/// Writes a program from `u`. The text contains [`TABLE_ATTR`] twice (the same
/// annotation for both tables, whose indexed column is `k`).
pub fn program(u: &mut Unstructured<'_>) -> Result<String> {
    let mut g = Gen {
        u,
        out: String::new(),
        vars: Vec::new(),
        funcs: Vec::new(),
        callable: 0,
        next: 0,
        indent: 0,
        fuel: 60,
        in_tx: false,
        ret: None,
    };
    g.out.push_str(TABLE_ATTR);
    g.out.push_str("\nclass Row {\n  k: Int\n  t: Text\n}\n\n");
    g.out.push_str(TABLE_ATTR);
    g.out.push_str(TAG);
    g.out.push_str(BOX);
    g.out.push_str(WORKER);
    g.funcs.push(Func {
        name: "worker".to_string(),
        params: vec![Ty::Int, Ty::Text],
        ret: Ty::Int,
    });
    let n_funcs = g.u.int_in_range(0..=3)?;
    for i in 0..n_funcs {
        let n_params = g.u.int_in_range(0..=3)?;
        let mut params = Vec::new();
        for _ in 0..n_params {
            params.push(g.ty()?);
        }
        let ret = *g.u.choose(&[
            Ty::Int,
            Ty::Text,
            Ty::Bool,
            Ty::List,
            Ty::Float,
            Ty::Map,
            Ty::Obj,
            Ty::Row,
            Ty::Rows,
            Ty::OptInt,
        ])?;
        let name = format!("f{i}");
        let sig: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(j, t)| format!("p{j}: {}", t.name()))
            .collect();
        let _ = writeln!(g.out, "fn {name}({}) -> {} {{", sig.join(", "), ret.name());
        g.vars = params
            .iter()
            .enumerate()
            .map(|(j, t)| Var {
                name: format!("p{j}"),
                ty: *t,
                fixed: false,
                task: false,
            })
            .collect();
        g.callable = g.funcs.len();
        g.indent = 1;
        g.ret = Some(ret);
        g.block_body(0)?;
        let e = g.expr(ret, 0)?;
        g.line(&format!("return {e}"));
        g.out.push_str("}\n\n");
        g.funcs.push(Func { name, params, ret });
    }
    g.vars.clear();
    g.ret = None;
    g.callable = g.funcs.len();
    g.out.push_str("fn main() {\n");
    g.indent = 1;
    g.fuel = 80;
    g.block_body(0)?;
    g.out.push_str("}\n");
    Ok(g.out)
}

impl Gen<'_, '_> {
    fn ty(&mut self) -> Result<Ty> {
        Ok(*self.u.choose(&[
            Ty::Int,
            Ty::Int,
            Ty::Text,
            Ty::Bool,
            Ty::List,
            Ty::Float,
            Ty::Map,
            Ty::Obj,
            Ty::Row,
            Ty::Rows,
            Ty::OptInt,
        ])?)
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn var_of(&mut self, ty: Ty, assignable: bool) -> Result<Option<String>> {
        let names: Vec<&str> = self
            .vars
            .iter()
            .filter(|v| v.ty == ty && !v.task && !(assignable && v.fixed))
            .map(|v| v.name.as_str())
            .collect();
        if names.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.u.choose(&names)?.to_string()))
    }

    /// Declares a plain variable (assignable, not a task) in the current scope.
    fn bind(&mut self, name: String, ty: Ty) {
        self.vars.push(Var {
            name,
            ty,
            fixed: false,
            task: false,
        });
    }

    /// A task variable whose helper returns `ty`.
    fn task_of(&mut self, ty: Ty) -> Result<Option<String>> {
        let names: Vec<&str> = self
            .vars
            .iter()
            .filter(|v| v.ty == ty && v.task)
            .map(|v| v.name.as_str())
            .collect();
        if names.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.u.choose(&names)?.to_string()))
    }

    fn block_body(&mut self, depth: u32) -> Result<()> {
        let scope = self.vars.len();
        let n = self.u.int_in_range(1..=6)?;
        for _ in 0..n {
            if self.fuel == 0 || self.u.is_empty() {
                break;
            }
            self.fuel -= 1;
            self.stmt(depth)?;
        }
        self.vars.truncate(scope);
        Ok(())
    }

    /// The block of statements of a header written, one level in.
    fn inner(&mut self, depth: u32) -> Result<()> {
        self.indent += 1;
        self.block_body(depth + 1)?;
        self.indent -= 1;
        Ok(())
    }

    /// Perhaps an `else` block, then the `}` of an `if`.
    fn else_and_close(&mut self, depth: u32) -> Result<()> {
        if self.u.arbitrary()? {
            self.line("} else {");
            self.inner(depth)?;
        }
        self.line("}");
        Ok(())
    }

    fn nested(&mut self, head: &str, depth: u32) -> Result<()> {
        self.line(&format!("{head} {{"));
        self.inner(depth)?;
        Ok(())
    }

    fn stmt(&mut self, depth: u32) -> Result<()> {
        let nested_ok = depth < 3;
        // Spawning, joining and `join(spawn …)` twice as likely as the others: they
        // need a helper to exist, so they would be rare in the short programs most
        // inputs make.
        let choice = match self.u.int_in_range(0..=34)? {
            23 => 16,
            24 => 17,
            25 => 19,
            c => c,
        };
        match choice {
            0 | 1 => {
                let ty = self.ty()?;
                let empty = match ty {
                    Ty::List | Ty::Rows => "[]",
                    Ty::Map => "{}",
                    _ => "",
                };
                let name = self.fresh("v");
                if !empty.is_empty() && self.u.ratio(1, 4)? {
                    self.line(&format!("let {name}: {} = {empty}", ty.name()));
                } else {
                    let e = self.expr(ty, 0)?;
                    self.line(&format!("let {name} = {e}"));
                }
                self.bind(name, ty);
            }
            2 => {
                let ty = self.ty()?;
                if let Some(v) = self.var_of(ty, true)? {
                    let e = self.expr(ty, 0)?;
                    self.line(&format!("{v} = {e}"));
                } else {
                    let e = self.expr(ty, 0)?;
                    self.line(&format!("print({e})"));
                }
            }
            3 => {
                if let Some(v) = self.var_of(Ty::Int, true)? {
                    let op = *self.u.choose(&["+=", "-=", "*="])?;
                    let e = self.expr(Ty::Int, 1)?;
                    self.line(&format!("{v} {op} {e}"));
                } else if let Some(v) = self.var_of(Ty::Text, true)? {
                    let e = self.expr(Ty::Text, 1)?;
                    self.line(&format!("{v} = {v} .. {e}"));
                }
            }
            4 | 5 => {
                let ty = self.ty()?;
                let e = self.expr(ty, 0)?;
                self.line(&format!("print({e})"));
            }
            6 if nested_ok => {
                let c = self.expr(Ty::Bool, 0)?;
                self.nested(&format!("if {c}"), depth)?;
                self.else_and_close(depth)?;
            }
            7 if nested_ok => {
                let c = self.fresh("c");
                let n = self.u.int_in_range(0..=6)?;
                self.line(&format!("let {c} = 0"));
                self.line(&format!("while {c} < {n} {{"));
                self.indent += 1;
                self.line(&format!("{c} += 1"));
                self.vars.push(Var {
                    name: c,
                    ty: Ty::Int,
                    fixed: true,
                    task: false,
                });
                self.indent -= 1;
                self.nested_tail(depth)?;
                self.vars.pop();
            }
            8 if nested_ok => {
                // Over a list of Ints or of row handles, or a text walk (`for c in
                // t`: one-character Texts).
                let x = self.fresh("x");
                let walk = self.u.int_in_range(0..=5)?;
                if walk < 2 {
                    let t = self.expr(Ty::Text, 1)?;
                    self.line(&format!("for {x} in {t} {{"));
                    self.bind(x, Ty::Text);
                } else if walk == 2 {
                    let l = self.expr(Ty::Rows, 1)?;
                    self.line(&format!("for {x} in {l} {{"));
                    self.bind(x, Ty::Row);
                } else {
                    let l = self.expr(Ty::List, 1)?;
                    self.line(&format!("for {x} in {l} {{"));
                    self.bind(x, Ty::Int);
                }
                self.nested_tail(depth)?;
                self.vars.pop();
            }
            9 => {
                let elem = *self.u.choose(&[Ty::Int, Ty::Int, Ty::Row])?;
                let list = if elem == Ty::Row { Ty::Rows } else { Ty::List };
                if let Some(l) = self.var_of(list, false)? {
                    if self.u.arbitrary()? {
                        let e = self.expr(elem, 1)?;
                        self.line(&format!("push({l}, {e})"));
                    } else {
                        self.line(&format!("print(pop({l}))"));
                    }
                }
            }
            10 | 11 => {
                let k = self.expr(Ty::Int, 1)?;
                let t = self.expr(Ty::Text, 1)?;
                self.line(&format!("insert Row {{ k: {k}, t: {t} }}"));
            }
            12 => {
                let op = self.cmp()?;
                let e = self.expr(Ty::Int, 1)?;
                let sel = *self
                    .u
                    .choose(&["r.t", "r.k", "r.id", "\"${r.k}:${r.t}\""])?;
                let order = *self.u.choose(&[
                    "",
                    " order by r.k",
                    " order by r.k desc",
                    " order by r.t",
                ])?;
                self.line(&format!(
                    "print(from r in Row where r.k {op} {e}{order} select {sel})"
                ));
            }
            13 if nested_ok => {
                let op = self.cmp()?;
                let e = self.expr(Ty::Int, 1)?;
                let r = self.fresh("row");
                self.line(&format!(
                    "for {r} in from r in Row where r.k {op} {e} select r {{"
                ));
                self.indent += 1;
                match self.u.int_in_range(0..=2)? {
                    0 => self.line(&format!("delete {r}")),
                    1 => {
                        let v = self.expr(Ty::Int, 1)?;
                        self.line(&format!("{r}.k = {v}"));
                    }
                    _ => {
                        let v = self.expr(Ty::Text, 1)?;
                        self.line(&format!("{r}.t = {v}"));
                    }
                }
                self.indent -= 1;
                self.line("}");
            }
            14 if nested_ok => {
                let e = self.fresh("e");
                self.nested("try", depth)?;
                self.line(&format!("}} catch ({e}) {{"));
                self.indent += 1;
                self.line(&format!("print({e}.kind)"));
                self.indent -= 1;
                self.line("}");
            }
            15 if nested_ok && !self.in_tx => {
                self.in_tx = true;
                self.nested("transaction", depth)?;
                self.in_tx = false;
                self.line("}");
            }
            // Fibers (LANGUAGE.md §9): a helper started with `spawn` (helpers call
            // and spawn only earlier ones, so every fiber ends and no `join` can
            // deadlock), joined later or never; `yield()` lets the others run.
            16 if self.callable > 0 => {
                let i = self.u.int_in_range(0..=self.callable - 1)?;
                let ty = self.funcs[i].ret;
                let call = self.call_of(i, 0)?;
                let name = self.fresh("t");
                self.line(&format!("let {name} = spawn {call}"));
                self.vars.push(Var {
                    name,
                    ty,
                    fixed: false,
                    task: true,
                });
            }
            17 => {
                let ty = self.ty()?;
                match self.task_of(ty)? {
                    Some(t) => self.line(&format!("print(join({t}))")),
                    None => self.line("yield()"),
                }
            }
            18 => self.line("yield()"),
            20 => {
                if let Some(m) = self.var_of(Ty::Map, false)? {
                    let k = self.expr(Ty::Text, 1)?;
                    match self.u.int_in_range(0..=2)? {
                        0 => {
                            let v = self.expr(Ty::Int, 1)?;
                            self.line(&format!("{m}[{k}] = {v}"));
                        }
                        1 => {
                            let v = self.expr(Ty::Int, 1)?;
                            self.line(&format!("set({m}, {k}, {v})"));
                        }
                        _ => self.line(&format!("remove({m}, {k})")),
                    }
                }
            }
            21 if nested_ok => {
                let m = self.expr(Ty::Map, 1)?;
                let (k, v) = (self.fresh("k"), self.fresh("n"));
                self.line(&format!("for {k}, {v} in ({m}) {{"));
                for (name, ty) in [(k, Ty::Text), (v, Ty::Int)] {
                    self.bind(name, ty);
                }
                self.nested_tail(depth)?;
                self.vars.truncate(self.vars.len() - 2);
            }
            22 if nested_ok => {
                let i = self.fresh("i");
                let a = self.u.int_in_range(-3..=8i64)?;
                let b = self.u.int_in_range(-3..=8i64)?;
                let step = *self.u.choose(&[1, 1, 2, -1, -2, 3])?;
                self.line(&format!("for {i} in range({a}, {b}, {step}) {{"));
                self.bind(i, Ty::Int);
                self.nested_tail(depth)?;
                self.vars.pop();
            }
            19 if self.callable > 0 => {
                let i = self.u.int_in_range(0..=self.callable - 1)?;
                let call = self.call_of(i, 0)?;
                self.line(&format!("print(join(spawn {call}))"));
            }
            26 => self.object_stmt()?,
            29 | 30 => self.tag_stmt()?,
            31 | 32 => self.row_stmt()?,
            33 | 34 if nested_ok => self.narrow_stmt(depth)?,
            // Narrowing (LANGUAGE.md §3): a `?Box` local is a `Box` in the block of
            // `if m != nil`, and in that of `while w != nil` up to its assignment.
            27 if nested_ok => {
                let m = self.fresh("m");
                let o = self.expr(Ty::Obj, 1)?;
                self.line(&format!("let {m} = {o}.next"));
                self.line(&format!("if {m} != nil {{"));
                self.vars.push(Var {
                    name: m,
                    ty: Ty::Obj,
                    fixed: true,
                    task: false,
                });
                self.inner(depth)?;
                self.vars.pop();
                self.line("}");
            }
            28 if nested_ok => {
                // A walk along `next` (which may be a cycle), at most five steps.
                let (w, c) = (self.fresh("w"), self.fresh("c"));
                let o = self.expr(Ty::Obj, 1)?;
                self.line(&format!("let {w}: ?Box = {o}"));
                self.line(&format!("let {c} = 0"));
                self.line(&format!("while {w} != nil {{"));
                self.indent += 1;
                self.line(&format!("{c} += 1"));
                self.line(&format!("if {c} > 5 {{"));
                self.line("  break");
                self.line("}");
                self.line(&format!("print({w}.n)"));
                self.vars.push(Var {
                    name: w.clone(),
                    ty: Ty::Obj,
                    fixed: true,
                    task: false,
                });
                self.block_body(depth + 1)?;
                self.vars.pop();
                self.line(&format!("{w} = {w}.next"));
                self.indent -= 1;
                self.line("}");
            }
            _ => {
                let e = self.expr(Ty::Int, 0)?;
                self.line(&format!("print({e})"));
            }
        }
        Ok(())
    }

    /// A statement on the `Tag` table: tags inserted pointing at rows a query finds
    /// (and at a tag found by id, or none), listed through their references, counted,
    /// pointed elsewhere, deleted; rows deleted that tags may point at, and a deleted
    /// row stored in a tag (both `FK`). Each is a fixed shape of lines, at any depth.
    fn tag_stmt(&mut self) -> Result<()> {
        let op = self.cmp()?;
        let e = self.expr(Ty::Int, 1)?;
        let (r, g) = (self.fresh("r"), self.fresh("g"));
        let rows = |take: &str| format!("from r in Row where r.k {op} {e}{take} select r");
        match self.u.int_in_range(0..=7)? {
            0 | 1 => {
                let take = *self.u.choose(&["", " take 1", " take 2"])?;
                let k = self.expr(Ty::Int, 1)?;
                let up = match self.u.int_in_range(0..=2)? {
                    0 => String::new(),
                    1 => ", up: nil".to_string(),
                    _ => format!(", up: Tag.find({})", self.expr(Ty::Int, 1)?),
                };
                self.line(&format!("for {r} in {} {{", rows(take)));
                self.line(&format!("  insert Tag {{ k: {k}, of: {r}{up} }}"));
                self.line("}");
            }
            2 => {
                let sel = *self.u.choose(&[
                    "g.k",
                    "g.of.k",
                    "g.of.t",
                    "\"${g.k}>${g.of.id}\"",
                    "g.up == nil",
                ])?;
                let order = *self.u.choose(&[
                    "",
                    " order by g.k",
                    " order by g.of.k desc",
                    " order by g.of.t",
                ])?;
                self.line(&format!(
                    "print(from g in Tag where g.k {op} {e}{order} select {sel})"
                ));
            }
            3 => {
                let on = *self.u.choose(&["g.k", "g.of.k"])?;
                self.line(&format!(
                    "print(count(from g in Tag where {on} {op} {e} select g))"
                ));
            }
            4 => {
                let k = self.expr(Ty::Int, 1)?;
                self.line(&format!("for {r} in {} {{", rows(" take 1")));
                self.line(&format!(
                    "  for {g} in from g in Tag where g.k != {k} select g {{"
                ));
                if self.u.arbitrary()? {
                    self.line(&format!("    {g}.of = {r}"));
                } else {
                    let id = self.expr(Ty::Int, 1)?;
                    self.line(&format!("    {g}.up = Tag.find({id})"));
                }
                self.line("  }");
                self.line("}");
            }
            5 => {
                self.line(&format!(
                    "for {g} in from g in Tag where g.k {op} {e} select g {{"
                ));
                self.line(&format!("  delete {g}"));
                self.line("}");
            }
            // Rows deleted where tags may point at them (`FK` then, restrict).
            6 => {
                self.line(&format!("for {r} in {} {{", rows("")));
                self.line(&format!("  delete {r}"));
                self.line("}");
            }
            // A handle to a row deleted, then stored: `FK` (or at the delete).
            _ => {
                let k = self.expr(Ty::Int, 1)?;
                self.line(&format!("for {r} in {} {{", rows(" take 1")));
                self.line(&format!("  delete {r}"));
                self.line(&format!("  insert Tag {{ k: {k}, of: {r} }}"));
                self.line("}");
            }
        }
        Ok(())
    }

    /// Narrowing of a fresh `?Int` or `?Row` local `m` (LANGUAGE.md §3): an `Int` or
    /// a `Row` where the checker knows it is not nil. `m` is never assignable in the generated code
    /// (the `while` shape assigns it at the end of its body, after its last use),
    /// so no statement ends a narrowing the generator relies on.
    fn narrow_stmt(&mut self, depth: u32) -> Result<()> {
        let m = self.fresh("m");
        // A `?Int`, or a `?Row` (a handle then, its row perhaps deleted in the block).
        let ty = if self.u.ratio(1, 3)? {
            Ty::Row
        } else {
            Ty::Int
        };
        let e = self.nullable(ty)?;
        // Its type written out: `e` may be a `?Int` local narrowed where it is read
        // (inside its own `if v != nil`), which would make `m` an `Int` that the
        // `while` shape's assignment of a `?Int` does not fit (found by the campaign
        // of December 5: `durable/g2-a-narrowed-local-copied`).
        let nullable = if ty == Ty::Row { "?Row" } else { "?Int" };
        self.line(&format!("let {m}: {nullable} = {e}"));
        let narrowed = |name: &str| Var {
            name: name.to_string(),
            ty,
            fixed: true,
            task: false,
        };
        match self.u.int_in_range(0..=3)? {
            0 => {
                self.line(&format!("if {m} != nil {{"));
                self.vars.push(narrowed(&m));
                self.inner(depth)?;
                self.vars.pop();
                self.else_and_close(depth)?;
            }
            1 => {
                self.line(&format!("if {m} == nil {{"));
                self.inner(depth)?;
                self.line("} else {");
                self.vars.push(narrowed(&m));
                self.inner(depth)?;
                self.vars.pop();
                self.line("}");
            }
            // The rest of the enclosing block (its scope ends with it).
            2 => {
                let exit = match self.ret {
                    _ if self.in_tx || self.u.ratio(1, 3)? => format!("fail(\"{m} is nil\")"),
                    None => "return".to_string(),
                    Some(ty) => format!("return {}", self.expr(ty, 1)?),
                };
                self.line(&format!("if {m} == nil {{"));
                self.line(&format!("  {exit}"));
                self.line("}");
                self.vars.push(narrowed(&m));
            }
            _ => {
                let c = self.fresh("c");
                self.line(&format!("let {c} = 0"));
                self.line(&format!("while {m} != nil {{"));
                self.indent += 1;
                self.line(&format!("{c} += 1"));
                self.line(&format!("if {c} > 4 {{"));
                self.line("  break");
                self.line("}");
                self.vars.push(narrowed(&m));
                self.block_body(depth + 1)?;
                let next = self.nullable(ty)?;
                self.vars.pop();
                self.line(&format!("{m} = {next}"));
                self.indent -= 1;
                self.line("}");
            }
        }
        Ok(())
    }

    /// A value of `?Int` (`ty` Int) or `?Row` (`ty` Row): `Row.find(n)`, the first row
    /// of a list of handles, an object's `r`.
    fn nullable(&mut self, ty: Ty) -> Result<String> {
        match ty {
            Ty::Row => match self.u.int_in_range(0..=2)? {
                0 => self.fill("Row.find({})", &[Ty::Int], 1),
                1 => self.fill("first({})", &[Ty::Rows], 1),
                _ => self.fill("{}.r", &[Ty::Obj], 1),
            },
            _ => self.expr(Ty::OptInt, 1),
        }
    }

    /// A statement on a row handle (a local, a parameter, a loop's variable, or one
    /// an expression finds or inserts): its columns written and read, the row
    /// deleted (the handle stays: using it later traps `DB`, storing it in a tag
    /// `FK`), a tag pointed at it, the local pointed at another row.
    fn row_stmt(&mut self) -> Result<()> {
        let h = match self.var_of(Ty::Row, false)? {
            Some(v) => v,
            None => {
                let e = self.expr(Ty::Row, 1)?;
                let v = self.fresh("h");
                self.line(&format!("let {v} = {e}"));
                self.bind(v.clone(), Ty::Row);
                v
            }
        };
        match self.u.int_in_range(0..=7)? {
            0 => {
                let e = self.expr(Ty::Int, 1)?;
                let op = *self.u.choose(&["=", "+=", "-="])?;
                self.line(&format!("{h}.k {op} {e}"));
            }
            1 => {
                let e = self.expr(Ty::Text, 1)?;
                self.line(&format!("{h}.t = {e}"));
            }
            2 => self.line(&format!("delete {h}")),
            3 => {
                let k = self.expr(Ty::Int, 1)?;
                self.line(&format!("insert Tag {{ k: {k}, of: {h} }}"));
            }
            4 => {
                let sel = *self.u.choose(&[
                    "{h}.k",
                    "{h}.t",
                    "{h}.id",
                    "{h}",
                    "Row.find({h}.id) == nil",
                ])?;
                self.line(&format!("print({})", sel.replace("{h}", &h)));
            }
            5 if self.vars.iter().any(|v| v.name == h && !v.fixed && !v.task) => {
                let e = self.expr(Ty::Row, 1)?;
                self.line(&format!("{h} = {e}"));
            }
            _ => {
                let k = self.expr(Ty::Int, 1)?;
                self.line(&format!(
                    "print(count(from g in Tag where g.of == {h} and g.k != {k} select g))"
                ));
            }
        }
        Ok(())
    }

    /// A statement on an object: a field written (`next` perhaps closing a cycle, `r`
    /// given a row handle or nil), a list field grown, the method called.
    fn object_stmt(&mut self) -> Result<()> {
        let Some(o) = self.var_of(Ty::Obj, false)? else {
            let e = self.expr(Ty::Obj, 0)?;
            self.line(&format!("print({e})"));
            return Ok(());
        };
        match self.u.int_in_range(0..=6)? {
            0 => {
                let e = self.expr(Ty::Int, 1)?;
                self.line(&format!("{o}.n = {e}"));
            }
            6 => {
                let e = if self.u.ratio(1, 4)? {
                    "nil".to_string()
                } else {
                    self.expr(Ty::Row, 1)?
                };
                self.line(&format!("{o}.r = {e}"));
            }
            1 => {
                let e = self.expr(Ty::Text, 1)?;
                self.line(&format!("{o}.t = {e}"));
            }
            2 => {
                let e = if self.u.ratio(1, 4)? {
                    "nil".to_string()
                } else {
                    self.expr(Ty::Obj, 1)?
                };
                self.line(&format!("{o}.next = {e}"));
            }
            3 => {
                let e = self.expr(Ty::Int, 1)?;
                self.line(&format!("push({o}.xs, {e})"));
            }
            4 => {
                let e = self.expr(Ty::List, 1)?;
                self.line(&format!("{o}.xs = {e}"));
            }
            _ => {
                let e = self.expr(Ty::Int, 1)?;
                self.line(&format!("print({o}.bump({e}))"));
            }
        }
        Ok(())
    }

    /// The body and closing brace of a loop whose header is written.
    fn nested_tail(&mut self, depth: u32) -> Result<()> {
        self.indent += 1;
        self.block_body(depth + 1)?;
        if self.u.ratio(1, 8)? {
            let kw = *self.u.choose(&["break", "continue"])?;
            self.line(kw);
        }
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// `[a, b, …]`: one to `most` expressions of type `ty`.
    fn list_literal(&mut self, ty: Ty, most: usize, d: u32) -> Result<String> {
        let n = self.u.int_in_range(1..=most)?;
        let mut items = Vec::new();
        for _ in 0..n {
            items.push(self.expr(ty, d)?);
        }
        Ok(format!("[{}]", items.join(", ")))
    }

    /// `template` with each `{}` replaced, in order, by an expression of the type
    /// `tys` gives there.
    fn fill(&mut self, template: &str, tys: &[Ty], d: u32) -> Result<String> {
        let mut out = String::new();
        let mut parts = template.split("{}");
        out.push_str(parts.next().unwrap_or(""));
        for (part, &ty) in parts.zip(tys) {
            out.push_str(&self.expr(ty, d)?);
            out.push_str(part);
        }
        Ok(out)
    }

    /// `v.k op e`: a query's condition on the indexed column (an access path the
    /// differential check compares).
    fn on_k(&mut self, v: &str, d: u32) -> Result<String> {
        let op = self.cmp()?;
        // A `?Int` bound of a range, one time in four: in a `where`, `<` takes a
        // `?T` and is false on nil, whichever path runs it (the engine's walk of a
        // sorted index or its scan, the bytecode over a list).
        let bound = if matches!(op, "<" | "<=" | ">" | ">=") && self.u.ratio(1, 4)? {
            Ty::OptInt
        } else {
            Ty::Int
        };
        Ok(format!("{v}.k {op} {}", self.expr(bound, d)?))
    }

    fn cmp(&mut self) -> Result<&'static str> {
        Ok(*self.u.choose(&["==", "!=", "<", "<=", ">", ">="])?)
    }

    fn call(&mut self, ty: Ty, depth: u32) -> Result<Option<String>> {
        let cands: Vec<usize> = (0..self.callable)
            .filter(|&i| self.funcs[i].ret == ty)
            .collect();
        if cands.is_empty() {
            return Ok(None);
        }
        let i = *self.u.choose(&cands)?;
        Ok(Some(self.call_of(i, depth)?))
    }

    /// A call of helper `i` with arguments of its parameter types.
    fn call_of(&mut self, i: usize, depth: u32) -> Result<String> {
        let params = self.funcs[i].params.clone();
        let mut args = Vec::new();
        for p in params {
            args.push(self.expr(p, depth + 1)?);
        }
        Ok(format!("{}({})", self.funcs[i].name, args.join(", ")))
    }

    fn expr(&mut self, ty: Ty, depth: u32) -> Result<String> {
        let leaf = depth >= MAX_DEPTH || self.u.is_empty();
        let choice = if leaf {
            0
        } else {
            self.u.int_in_range(0..=17)?
        };
        if choice == 1 {
            if self.u.ratio(1, 4)? {
                if let Some(t) = self.task_of(ty)? {
                    return Ok(format!("join({t})"));
                }
            }
            if let Some(v) = self.var_of(ty, false)? {
                return Ok(v);
            }
        }
        if choice == 2 {
            if let Some(c) = self.call(ty, depth)? {
                return Ok(c);
            }
        }
        if choice == 0 || choice <= 2 {
            return self.literal(ty);
        }
        let d = depth + 1;
        Ok(match ty {
            Ty::Int => match choice {
                3 | 4 => {
                    let op = *self.u.choose(&["+", "-", "*", "/", "%"])?;
                    self.bin(Ty::Int, op, d)?
                }
                5 => format!("len({})", self.expr(Ty::Text, d)?),
                6 => format!("len({})", self.expr(Ty::List, d)?),
                7 => format!("{}[{}]", self.list_atom(d)?, self.expr(Ty::Int, d)?),
                8 => format!("count(from r in Row where {} select r)", self.on_k("r", d)?),
                9 => {
                    if self.u.arbitrary()? {
                        format!("ord({})", self.char_expr(d)?)
                    } else {
                        format!("len(chars({}))", self.expr(Ty::Text, d)?)
                    }
                }
                10 => format!("int({})", self.expr(Ty::Float, d)?),
                11 => format!("len({})", self.expr(Ty::Map, d)?),
                12 => {
                    let (m, k) = (self.expr(Ty::Map, d)?, self.expr(Ty::Text, d)?);
                    if self.u.arbitrary()? {
                        format!("get({m}, {k})")
                    } else {
                        format!("({m}[{k}] ?? {})", self.expr(Ty::Int, d)?)
                    }
                }
                13 => {
                    let o = self.expr(Ty::Obj, d)?;
                    match self.u.int_in_range(0..=3)? {
                        0 => format!("({o}.n)"),
                        1 => format!("({o}.bump({}))", self.expr(Ty::Int, d)?),
                        2 => format!("len({o}.xs)"),
                        // `NIL` when `next` is nil.
                        _ => format!("(unwrap({o}.next).n)"),
                    }
                }
                15 => {
                    let col = *self.u.choose(&["k", "id"])?;
                    format!("({}.{col})", self.expr(Ty::Row, d)?)
                }
                16 => {
                    let f = *self.u.choose(&["len", "count"])?;
                    format!("{f}({})", self.expr(Ty::Rows, d)?)
                }
                // `NIL` when it is nil.
                17 => match self.u.int_in_range(0..=2)? {
                    0 => format!("unwrap({})", self.expr(Ty::OptInt, d)?),
                    _ => self.fill("({} ?? {})", &[Ty::OptInt, Ty::Int], d)?,
                },
                _ => self.try_catch(Ty::Int, d)?,
            },
            Ty::Bool => match choice {
                3 | 4 => {
                    let op = self.cmp()?;
                    self.bin(Ty::Int, op, d)?
                }
                5 => {
                    let op = *self.u.choose(&["and", "or"])?;
                    self.bin(Ty::Bool, op, d)?
                }
                6 => format!("(not {})", self.expr(Ty::Bool, d)?),
                7 => self.bin(Ty::Text, "==", d)?,
                8 => format!(
                    "contains({}, {})",
                    self.list_atom(d)?,
                    self.expr(Ty::Int, d)?
                ),
                10 => {
                    let op = self.cmp()?;
                    self.bin(Ty::Float, op, d)?
                }
                11 => self.fill("has({}, {})", &[Ty::Map, Ty::Text], d)?,
                13 => {
                    let op = *self.u.choose(&["==", "!="])?;
                    format!("({}.next {op} nil)", self.expr(Ty::Obj, d)?)
                }
                15 => {
                    let op = *self.u.choose(&["==", "!="])?;
                    self.bin(Ty::Row, op, d)?
                }
                17 => match self.var_of(Ty::OptInt, false)? {
                    // Narrowed in the right operand of `and`.
                    Some(v) if self.u.arbitrary()? => {
                        format!(
                            "({v} != nil and {v} {} {})",
                            self.cmp()?,
                            self.expr(Ty::Int, d)?
                        )
                    }
                    _ => {
                        let op = *self.u.choose(&["==", "!="])?;
                        let other = if self.u.arbitrary()? {
                            "nil".to_string()
                        } else {
                            self.expr(Ty::Int, d)?
                        };
                        format!("({} {op} {other})", self.expr(Ty::OptInt, d)?)
                    }
                },
                16 => format!(
                    "exists(from q in {} where {} select q)",
                    self.expr(Ty::Rows, d)?,
                    self.on_k("q", d)?
                ),
                _ => format!("(Row.find({}) == nil)", self.expr(Ty::Int, d)?),
            },
            Ty::Text => match choice {
                3 | 4 => self.bin(Ty::Text, "..", d)?,
                5 => format!("text({})", self.expr(Ty::Int, d)?),
                6 => format!(
                    "\"<${{{}}}|${{{}}}>\"",
                    self.expr(Ty::Int, d)?,
                    self.expr(Ty::Text, d)?
                ),
                7 => format!("text({})", self.list_atom(d)?),
                8 => format!(
                    "(try unwrap(Row.find({})).t catch (err) \"none\")",
                    self.expr(Ty::Int, d)?
                ),
                9 => match self.u.int_in_range(0..=3)? {
                    0 => format!("chr({})", self.expr(Ty::Int, d)?),
                    1 => self.fill("pad_left({}, {})", &[Ty::Text, Ty::Int], d)?,
                    2 => self.fill("pad_right({}, {})", &[Ty::Text, Ty::Int], d)?,
                    // Digits 0–17 are allowed: -1 and 18 trap BOUNDS.
                    _ => format!(
                        "to_fixed({}, {})",
                        self.expr(Ty::Float, d)?,
                        self.u.int_in_range(-1..=18i64)?
                    ),
                },
                10 => format!("text({})", self.expr(Ty::Float, d)?),
                11 => format!("text({})", self.expr(Ty::Map, d)?),
                13 => {
                    let o = self.expr(Ty::Obj, d)?;
                    if self.u.arbitrary()? {
                        format!("({o}.t)")
                    } else {
                        format!("text({o})")
                    }
                }
                15 => {
                    let h = self.expr(Ty::Row, d)?;
                    if self.u.arbitrary()? {
                        format!("({h}.t)")
                    } else {
                        format!("text({h})")
                    }
                }
                16 => format!("text({})", self.expr(Ty::Rows, d)?),
                17 => format!("text({})", self.expr(Ty::OptInt, d)?),
                12 if self.u.arbitrary()? => self.fill("chars({})[{}]", &[Ty::Text, Ty::Int], d)?,
                _ => format!("text({})", self.expr(Ty::Bool, d)?),
            },
            Ty::List => match choice {
                3 | 4 => self.list_literal(Ty::Int, 4, d)?,
                5 | 6 => format!(
                    "slice({}, {}, {})",
                    self.list_atom(d)?,
                    self.expr(Ty::Int, d)?,
                    self.expr(Ty::Int, d)?
                ),
                7 => format!("(from r in Row where {} select r.k)", self.on_k("r", d)?),
                9 => {
                    // `where v != nil` narrows `v` in the `select` (LANGUAGE.md §3 as
                    // docs/language.md extends it); the `0` gives the list a type
                    // when both values are a `nil`.
                    let v = self.fresh("v");
                    let a = self.expr(Ty::OptInt, d)?;
                    let b = self.expr(Ty::OptInt, d)?;
                    self.vars.push(Var {
                        name: v.clone(),
                        ty: Ty::Int,
                        fixed: true,
                        task: false,
                    });
                    let sel = if self.u.arbitrary()? {
                        let op = *self.u.choose(&["+", "-", "*"])?;
                        self.expr(Ty::Int, d).map(|e| format!("{v} {op} {e}"))
                    } else {
                        self.expr(Ty::Int, d)
                    };
                    self.vars.pop();
                    format!(
                        "(from {v} in [{a}, {b}, 0] where {v} != nil select {})",
                        sel?
                    )
                }
                10 => format!("values({})", self.expr(Ty::Map, d)?),
                13 => format!("({}.xs)", self.expr(Ty::Obj, d)?),
                15 => format!(
                    "(from q in {} order by q.t select q.k)",
                    self.expr(Ty::Rows, d)?
                ),
                11 => format!(
                    "range({}, {})",
                    self.u.int_in_range(-2..=6i64)?,
                    self.u.int_in_range(-2..=6i64)?
                ),
                _ => "(from r in Row order by r.k desc select r.id)".to_string(),
            },
            Ty::Float => match choice {
                3..=5 => {
                    let op = *self.u.choose(&["+", "-", "*", "/"])?;
                    self.bin(Ty::Float, op, d)?
                }
                6 => format!("float({})", self.expr(Ty::Int, d)?),
                7 => {
                    let f = *self.u.choose(&["min", "max"])?;
                    format!(
                        "{f}({}, {})",
                        self.expr(Ty::Float, d)?,
                        self.expr(Ty::Float, d)?
                    )
                }
                8 => format!("abs({})", self.expr(Ty::Float, d)?),
                9 => self.fill("(parse_float({}) ?? {})", &[Ty::Text, Ty::Float], d)?,
                _ => self.try_catch(Ty::Float, d)?,
            },
            Ty::Obj => match choice {
                3..=5 => {
                    let (n, xs) = (self.expr(Ty::Int, d)?, self.expr(Ty::List, d)?);
                    let mut fields = format!("n: {n}, xs: {xs}");
                    if self.u.arbitrary()? {
                        let _ = write!(fields, ", t: {}", self.expr(Ty::Text, d)?);
                    }
                    if self.u.arbitrary()? {
                        let _ = write!(fields, ", next: {}", self.expr(Ty::Obj, d)?);
                    }
                    if self.u.ratio(1, 4)? {
                        let _ = write!(fields, ", r: {}", self.expr(Ty::Row, d)?);
                    }
                    format!("Box {{ {fields} }}")
                }
                6 | 7 => self.fill("({}.next ?? {})", &[Ty::Obj, Ty::Obj], d)?,
                // `NIL` when `next` is nil.
                8 => format!("unwrap({}.next)", self.expr(Ty::Obj, d)?),
                9 => self.try_catch(Ty::Obj, d)?,
                _ => self.literal(Ty::Obj)?,
            },
            Ty::Row => match choice {
                3..=5 => format!(
                    "(insert Row {{ k: {}, t: {} }})",
                    self.expr(Ty::Int, d)?,
                    self.expr(Ty::Text, d)?
                ),
                // `NIL` when there is no such row.
                6 => format!("unwrap(Row.find({}))", self.expr(Ty::Int, d)?),
                7 => self.fill("(Row.find({}) ?? {})", &[Ty::Int, Ty::Row], d)?,
                // `BOUNDS` past the end.
                8 => self.fill("{}[{}]", &[Ty::Rows, Ty::Int], d)?,
                9 => format!(
                    "unwrap(first(from r in Row where {} select r))",
                    self.on_k("r", d)?
                ),
                10 => format!(
                    "(unwrap(first(from g in Tag where {} select g)).of)",
                    self.on_k("g", d)?
                ),
                11 => self.try_catch(Ty::Row, d)?,
                _ => self.literal(Ty::Row)?,
            },
            Ty::Rows => match choice {
                3 | 4 => self.list_literal(Ty::Row, 3, d)?,
                5 | 6 => {
                    let order = *self
                        .u
                        .choose(&["", " order by r.k", " order by r.t desc"])?;
                    format!(
                        "(from r in Row where {}{order} select r)",
                        self.on_k("r", d)?
                    )
                }
                7 => self.fill("slice({}, {}, {})", &[Ty::Rows, Ty::Int, Ty::Int], d)?,
                8 => format!("(from g in Tag where {} select g.of)", self.on_k("g", d)?),
                9 => self.fill(
                    "(from q in {} where q.t != {} select q)",
                    &[Ty::Rows, Ty::Text],
                    d,
                )?,
                10 => self.try_catch(Ty::Rows, d)?,
                _ => self.literal(Ty::Rows)?,
            },
            Ty::OptInt => match choice {
                3 | 4 => format!("parse_int({})", self.expr(Ty::Text, d)?),
                5 => self.fill("{}[{}]", &[Ty::Map, Ty::Text], d)?,
                6 | 7 => {
                    let f = *self.u.choose(&["min", "max", "first"])?;
                    format!("{f}(from r in Row where {} select r.k)", self.on_k("r", d)?)
                }
                8 => {
                    let f = *self.u.choose(&["min", "max", "first"])?;
                    format!("{f}({})", self.list_atom(d)?)
                }
                9 => self.try_catch(Ty::OptInt, d)?,
                _ => self.literal(Ty::OptInt)?,
            },
            Ty::Map => {
                let n = self.u.int_in_range(1..=3)?;
                let mut items = Vec::new();
                for _ in 0..n {
                    let k = self.expr(Ty::Text, d)?;
                    items.push(format!("{k}: {}", self.expr(Ty::Int, d)?));
                }
                format!("({{{}}})", items.join(", "))
            }
        })
    }

    /// A Text for `ord`: mostly one character (of one to four UTF-8 bytes), sometimes
    /// any text (`BOUNDS` unless it is one character).
    fn char_expr(&mut self, d: u32) -> Result<String> {
        Ok(match self.u.int_in_range(0..=3)? {
            0 => format!("chr({})", self.expr(Ty::Int, d)?),
            1 => self.expr(Ty::Text, d)?,
            _ => {
                let c = *self
                    .u
                    .choose(&["a", " ", "\\n", "é", "ß", "∂", "😀", "0"])?;
                format!("\"{c}\"")
            }
        })
    }

    /// `(a op b)`, both operands of type `ty`.
    fn bin(&mut self, ty: Ty, op: &str, d: u32) -> Result<String> {
        Ok(format!(
            "({} {op} {})",
            self.expr(ty, d)?,
            self.expr(ty, d)?
        ))
    }

    /// `(try a catch (err) b)`, both of type `ty`.
    fn try_catch(&mut self, ty: Ty, d: u32) -> Result<String> {
        let (a, b) = (self.expr(ty, d)?, self.expr(ty, d)?);
        Ok(format!("(try {a} catch (err) {b})"))
    }

    /// A list expression that can be indexed or passed without parentheses trouble.
    fn list_atom(&mut self, depth: u32) -> Result<String> {
        if let Some(v) = self.var_of(Ty::List, false)? {
            if self.u.arbitrary()? {
                return Ok(v);
            }
        }
        self.expr(Ty::List, depth)
    }

    fn literal(&mut self, ty: Ty) -> Result<String> {
        Ok(match ty {
            Ty::Int => {
                let v: i64 = match self.u.int_in_range(0..=9)? {
                    0 => i64::MAX,
                    1 => -i64::MAX,
                    2 => 1 << 32,
                    3 => -1,
                    _ => self.u.int_in_range(0..=20)?,
                };
                if v < 0 {
                    format!("({v})")
                } else {
                    v.to_string()
                }
            }
            Ty::Bool => (if self.u.arbitrary()? { "true" } else { "false" }).to_string(),
            Ty::Text => {
                let s = *self.u.choose(&[
                    "",
                    "a",
                    "bc",
                    "héllo",
                    "x\\ty",
                    "\\n",
                    "ß∂",
                    "\\\"q\\\"",
                    "10",
                ])?;
                format!("\"{s}\"")
            }
            Ty::List => {
                let n = self.u.int_in_range(1..=3)?;
                let items: Vec<String> = (0..n)
                    .map(|_| self.u.int_in_range(-2..=9i64).map(|v| v.to_string()))
                    .collect::<Result<_>>()?;
                format!("[{}]", items.join(", "))
            }
            Ty::Float => {
                let s = *self.u.choose(&[
                    "0.0", "-0.0", "0.5", "1.5", "2.5", "0.1", "1e308", "-1e308", "2e9", "1.0e-3",
                    "3.0",
                ])?;
                if s.starts_with('-') {
                    format!("({s})")
                } else {
                    s.to_string()
                }
            }
            Ty::Map => {
                let n = self.u.int_in_range(1..=2)?;
                let mut items = Vec::new();
                for _ in 0..n {
                    let k = *self.u.choose(&["a", "b", "", "héllo"])?;
                    items.push(format!("\"{k}\": {}", self.u.int_in_range(-2..=9i64)?));
                }
                format!("({{{}}})", items.join(", "))
            }
            Ty::Row => {
                let n = self.u.int_in_range(-2..=9i64)?;
                if self.u.arbitrary()? {
                    format!("(insert Row {{ k: {n}, t: \"h\" }})")
                } else {
                    format!(
                        "(Row.find({}) ?? insert Row {{ k: {n}, t: \"f\" }})",
                        n.abs()
                    )
                }
            }
            Ty::OptInt => {
                let t = *self
                    .u
                    .choose(&["7", "-3", "x", "", "9223372036854775808"])?;
                format!("parse_int(\"{t}\")")
            }
            Ty::Rows => {
                let op = *self.u.choose(&["<", ">=", "!="])?;
                let n = self.u.int_in_range(-2..=9i64)?;
                format!("(from r in Row where r.k {op} {n} select r)")
            }
            Ty::Obj => {
                let n = self.u.int_in_range(-2..=9i64)?;
                if self.u.arbitrary()? {
                    format!("Box {{ n: {n}, xs: [] }}")
                } else {
                    format!("Box {{ n: {n}, t: \"o\", xs: [{n}] }}")
                }
            }
        })
    }
}
