//! Name resolution and static type checking: AST in, typed IR (`tir`) out, with every
//! error reported as a diagnostic (checking goes on after an error, using the
//! `Unknown` type so one mistake reports once). This is where the language's static
//! rules live: the type rules of §3 (including `?T` narrowing), constructor-literal
//! rules, call arity and types, and the typing of every builtin (`builtin.rs`).

use std::collections::{HashMap, HashSet};

use crate::ast::{self};
use crate::diag::{Diagnostic, SourceMap, Span};
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
mod names;
mod narrowing;
mod operators;
mod stmt;
mod table;
mod types;

use flow::{diverges, diverging};
use names::{did_you_mean, other_language, suggest};
use types::assignable;
use types::{nil_note, ty_is_comparable_eq, unify};

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
    scopes: Vec<HashMap<String, LocalId>>,
    narrowed: HashMap<LocalId, Ty>,
    assigned_log: Vec<LocalId>,
    ret: Option<Ty>,
    loop_depth: usize,
}

pub(crate) struct Checker<'a> {
    modules: &'a [ast::Module],
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
}

/// Checks a whole program. Diagnostics are appended to `diags`; the returned program is
/// only meaningful when no error was reported.
pub fn check(
    modules: &[ast::Module],
    _sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> tir::Program {
    let mut c = Checker {
        modules,
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
    };
    c.run()
}

impl<'a> Checker<'a> {
    fn err(&mut self, code: &'static str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }

    fn tyname(&self, t: &Ty) -> String {
        format!("`{}`", t.display(&self.class_names))
    }

    fn run(&mut self) -> tir::Program {
        self.collect();
        self.check_constants();
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
                    self.err("main", Span::default(), "the program has no `fn main()`");
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
