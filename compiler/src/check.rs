//! Name resolution and static type checking: AST in, typed IR (`tir`) out, with every
//! error reported as a diagnostic (checking goes on after an error, using the
//! `Unknown` type so one mistake reports once). This is where the language's static
//! rules live: the type rules of §3 (including `?T` narrowing), constructor-literal
//! rules, call arity and types, and the typing of every builtin (`builtin.rs`).

use std::collections::{HashMap, HashSet};

use crate::ast::{self};
use crate::diag::{Diagnostic, SourceMap, Span};
use crate::facts::{Facts, FuncFact, Ref, Target};
use crate::tir::{self, ClassId, ClassInfo, Expr, ExprKind as E, FuncId, Global, LocalId, Ty};

mod assign;
mod builtin;
mod calls;
mod classes;
mod collect;
mod constants;
mod expr;
mod fiber;
mod flow;
mod lint;
mod names;
mod narrowing;
mod operators;
mod stmt;
mod table;
mod types;

pub use builtin::{CORE, MODULE_FUNCTIONS};
use flow::{diverges, diverging};
use names::{did_you_mean, other_language, suggest};
use types::assignable;
use types::{truthiness_note, ty_is_comparable_eq, unify};

/// The standard modules a program may `use`.
pub const MODULES: &[&str] = &["time", "math", "env", "fs", "random", "io"];

struct FnSig {
    name: String,
    params: Vec<(String, Ty)>,
    ret: Ty,
    decl: Option<(usize, usize, Option<usize>)>,
    /// Set for the function that computes a field default: (class, field).
    default: Option<(ClassId, usize)>,
}

enum GlobalState {
    Pending,
    InProgress,
    Done,
}

struct GlobalSlot {
    name: String,
    /// (module index, item index)
    decl: (usize, usize),
    state: GlobalState,
    ty: Ty,
    /// A cycle through this constant was already reported.
    cyclic: bool,
}

/// Per-function checking state.
#[derive(Default)]
struct FnCtx {
    locals: Vec<Ty>,
    /// Where each local is declared (its name), by `LocalId`.
    local_spans: Vec<Span>,
    /// Whether each local is read (named where a value is taken), by `LocalId`.
    read: Vec<bool>,
    /// Whether each local is assigned after its declaration, by `LocalId`.
    written: Vec<bool>,
    /// The function's `let`s, for the `unused` warning.
    lets: Vec<lint::Let>,
    scopes: Vec<HashMap<String, LocalId>>,
    narrowed: HashMap<LocalId, Ty>,
    assigned_log: Vec<LocalId>,
    ret: Option<Ty>,
    loop_depth: usize,
    /// How many query `where` clauses enclose the expression being checked: inside
    /// one, an order comparison may take a `?T` ([`BinOp::CmpOrNil`]).
    in_where: usize,
    /// The variable of each query checked so far and the query's span: a use of the
    /// name after its query ended (`select t.a, t.b`) gets a hint.
    ended_queries: Vec<(String, Span)>,
    /// The `?T` locals assigned a value that is not nil (`st = Stat {}`), which does
    /// not narrow them: a nil error on one gets a note saying so.
    filled: HashSet<LocalId>,
    /// Each bare `return` refused for its missing value whose value went to the
    /// next line (the error's note says so): that line's expression is not also
    /// reported as doing nothing, nor as unreachable at the function's end.
    bare_returns: Vec<Span>,
    /// Whether the statement after the one being checked, in its block, is an
    /// expression (what a bare `return`'s value on the next line parses as).
    value_follows: bool,
}

pub(crate) struct Checker<'a> {
    modules: &'a [ast::Module],
    /// The source text, for the few messages that depend on the layout of a line.
    sources: &'a SourceMap,
    diags: &'a mut Vec<Diagnostic>,
    class_names: Vec<String>,
    class_index: HashMap<String, ClassId>,
    classes: Vec<ClassInfo>,
    class_decls: Vec<(usize, usize)>,
    funcs: Vec<FnSig>,
    func_index: HashMap<String, FuncId>,
    globals: Vec<GlobalSlot>,
    global_index: HashMap<String, usize>,
    global_out: Vec<Option<Global>>,
    init_order: Vec<usize>,
    uses: HashSet<String>,
    ctx: FnCtx,
    /// The names declared in files the parser could not read whole
    /// (`ast::Module::broken`), looked up (a scan of them for each unknown name was
    /// quadratic: helper-82, 240,000 misnamed constants).
    broken: HashSet<String>,
    /// Classes declared with `@table`.
    table_classes: HashSet<ClassId>,
    /// Table index → class.
    tables: Vec<ClassId>,
    /// While resolving the column types of a table, `ref T` is allowed.
    in_table: bool,
    /// Lexical depth of `transaction` blocks in the current function.
    tx_depth: usize,
    /// (class, field) → the function that computes the field's default.
    default_fns: HashMap<(ClassId, usize), FuncId>,
    /// How many constants are being checked inside one another.
    const_depth: usize,
    /// Notes for tools (`crate::analyze`); `None` when compiling.
    facts: Option<Facts>,
    /// While a literal field default is checked again at an object literal: its
    /// warnings were said once already.
    quiet: bool,
}

/// Checks a whole program. Diagnostics are appended to `diags`; the returned program is
/// only meaningful when no error was reported.
pub fn check(
    modules: &[ast::Module],
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> tir::Program {
    checker(modules, sources, diags, None).0
}

/// Like [`check`], and also returns what the checker learnt about each name and
/// expression (for the language server).
pub fn check_with_facts(
    modules: &[ast::Module],
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> (tir::Program, Facts) {
    let (program, facts) = checker(modules, sources, diags, Some(Facts::default()));
    (program, facts.unwrap_or_default())
}

fn checker<'a>(
    modules: &'a [ast::Module],
    sources: &'a SourceMap,
    diags: &mut Vec<Diagnostic>,
    facts: Option<Facts>,
) -> (tir::Program, Option<Facts>) {
    names::reset_suggestion_budget();
    let mut c = Checker {
        modules,
        sources,
        diags,
        class_names: Vec::new(),
        class_index: HashMap::new(),
        classes: Vec::new(),
        class_decls: Vec::new(),
        funcs: Vec::new(),
        func_index: HashMap::new(),
        globals: Vec::new(),
        global_index: HashMap::new(),
        global_out: Vec::new(),
        init_order: Vec::new(),
        uses: HashSet::new(),
        ctx: FnCtx::default(),
        table_classes: HashSet::new(),
        tables: Vec::new(),
        in_table: false,
        tx_depth: 0,
        default_fns: HashMap::new(),
        const_depth: 0,
        broken: modules
            .iter()
            .flat_map(|m| m.broken.iter().cloned())
            .collect(),
        facts,
        quiet: false,
    };
    let program = c.run();
    let mut facts = c.facts.take();
    if let Some(f) = facts.as_mut() {
        f.class_names = c.class_names.clone();
        f.funcs = (0..c.funcs.len())
            .map(|id| FuncFact {
                name: c.funcs[id].name.clone(),
                params: c.funcs[id].params.clone(),
                ret: c.funcs[id].ret.clone(),
                def: c.fn_decl(id).map(|d| d.name.span),
            })
            .collect();
    }
    (program, facts)
}

impl<'a> Checker<'a> {
    fn err(&mut self, code: &'static str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }

    /// Notes that the name at `span` refers to `target`, declared at `def`.
    fn note_ref(&mut self, span: Span, def: Option<Span>, target: Target) {
        if let Some(f) = self.facts.as_mut() {
            f.refs.push(Ref { span, def, target });
        }
    }

    /// Notes the name of field `i` of class `cid`, written at `span`.
    fn note_field(&mut self, span: Span, cid: ClassId, i: usize) {
        if self.facts.is_none() {
            return;
        }
        let (mi, ii) = self.class_decls[cid];
        let def = match &self.modules[mi].items[ii] {
            ast::Item::Class(c) => c.fields.get(i).map(|f| f.name.span),
            _ => None,
        };
        let Some(field) = self.classes.get(cid).and_then(|c| c.fields.get(i)) else {
            return;
        };
        let target = Target::Field {
            class: cid,
            name: field.name.clone(),
            ty: field.ty.clone(),
        };
        self.note_ref(span, def, target);
    }

    /// Notes a use of function (or method) `f` at `span`.
    fn note_func(&mut self, span: Span, f: FuncId) {
        if self.facts.is_some() {
            let def = self.fn_decl(f).map(|d| d.name.span);
            self.note_ref(span, def, Target::Func(f));
        }
    }

    /// Notes a use of class `cid` at `span`.
    fn note_class(&mut self, span: Span, cid: ClassId) {
        if self.facts.is_some() {
            let (mi, ii) = self.class_decls[cid];
            let def = match &self.modules[mi].items[ii] {
                ast::Item::Class(c) => Some(c.name.span),
                _ => None,
            };
            self.note_ref(span, def, Target::Class(cid));
        }
    }

    fn tyname(&self, t: &Ty) -> String {
        format!("`{}`", t.display(&self.class_names))
    }

    fn run(&mut self) -> tir::Program {
        self.collect();
        self.check_constants();
        self.warn_default_texts();
        self.note_declarations();
        // Function bodies (and field defaults).
        let mut funcs = Vec::with_capacity(self.funcs.len());
        for f in 0..self.funcs.len() {
            funcs.push(self.check_fn(f));
        }
        self.order_constants(&funcs);
        let main = self.find_main();
        let globals = self
            .global_out
            .drain(..)
            .map(|g| {
                g.unwrap_or(Global {
                    name: String::new(),
                    ty: Ty::Unknown,
                    value: Expr::new(E::Nil, Ty::Unknown, Span::default()),
                    n_locals: 0,
                })
            })
            .collect();
        tir::Program {
            funcs,
            classes: std::mem::take(&mut self.classes),
            globals,
            init_order: std::mem::take(&mut self.init_order),
            main,
            tables: std::mem::take(&mut self.tables),
        }
    }

    /// Notes every declared class, field, function and constant at its own name, so a
    /// tool finds them there as at their uses.
    fn note_declarations(&mut self) {
        if self.facts.is_none() {
            return;
        }
        for cid in 0..self.classes.len() {
            let (mi, ii) = self.class_decls[cid];
            let ast::Item::Class(c) = &self.modules[mi].items[ii] else {
                continue;
            };
            self.note_class(c.name.span, cid);
            for (i, f) in c.fields.iter().enumerate() {
                self.note_field(f.name.span, cid, i);
            }
        }
        for f in 0..self.funcs.len() {
            if let Some(d) = self.fn_decl(f) {
                self.note_func(d.name.span, f);
            }
        }
        for g in 0..self.globals.len() {
            let span = self.const_span(g);
            let target = Target::Const {
                name: self.globals[g].name.clone(),
                ty: self.globals[g].ty.clone(),
            };
            self.note_ref(span, Some(span), target);
        }
    }

    fn find_main(&mut self) -> FuncId {
        match self.func_index.get("main") {
            Some(&f) => {
                let sig = &self.funcs[f];
                let span = self.fn_decl(f).map(|d| d.span).unwrap_or_default();
                let params_ok = sig.params.is_empty()
                    || (sig.params.len() == 1 && sig.params[0].1 == Ty::List(Box::new(Ty::Text)));
                let ret_ok = matches!(sig.ret, Ty::Void | Ty::Int);
                if !params_ok {
                    self.err(
                        "main",
                        span,
                        "`main` takes no parameters or one `args: multi Text`",
                    );
                }
                if !ret_ok {
                    self.err(
                        "main",
                        span,
                        "`main` returns nothing or an `Int` (the exit status)",
                    );
                }
                f
            }
            None => {
                // A syntax error may have swallowed `main`; saying so again is noise.
                if !self
                    .diags
                    .iter()
                    .any(|d| matches!(d.code, "syntax" | "lex"))
                {
                    let mut d = Diagnostic::error(
                        "main",
                        Span::default(),
                        "the program has no `fn main()`",
                    );
                    if self.func_index.keys().any(|n| n.starts_with("test_")) {
                        d = d.with_note(
                            "it has tests (`fn test_…`): `wo test` runs them without a `main`",
                        );
                    }
                    self.diags.push(d);
                }
                0
            }
        }
    }

    fn fn_decl(&self, f: FuncId) -> Option<&'a ast::FnDecl> {
        let (m, i, meth) = self.funcs[f].decl?;
        match (&self.modules[m].items[i], meth) {
            (ast::Item::Fn(d), None) => Some(d),
            (ast::Item::Class(c), Some(k)) => c.methods.get(k),
            _ => None,
        }
    }
}
