//! What the checker learnt about positions, for tools that answer questions about a
//! place in the source (the language server's hover, go to definition and completion).
//! The checker fills a [`Facts`] only when asked ([`crate::analyze`]); `compile` records
//! nothing. It is cut here so the checker stays a checker: each resolution it already
//! makes is noted with one call, and everything a tool derives from the notes (the
//! innermost name under a cursor, a signature's text) lives with the tool.

use crate::diag::Span;
use crate::tir::{ClassId, FuncId, Ty};

/// The notes of one checked program.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Every expression the checker typed, with its static type (after narrowing), in
    /// checking order: an expression comes after the expressions inside it.
    pub exprs: Vec<(Span, Ty)>,
    /// Every name the checker resolved (uses and declarations of locals, calls,
    /// fields, classes in types, constants), with what it names.
    pub refs: Vec<Ref>,
    /// The program's functions and methods, by [`FuncId`].
    pub funcs: Vec<FuncFact>,
    /// The program's class names, by [`ClassId`] (for [`Ty::display`]).
    pub class_names: Vec<String>,
}

/// One name as written in the source, and what it names.
#[derive(Debug, Clone)]
pub struct Ref {
    /// The name where it is written.
    pub span: Span,
    /// The name where it is declared (`None` for builtins, modules and `Error`'s fields).
    pub def: Option<Span>,
    pub target: Target,
}

/// What a name refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A local variable or parameter, with its declared (not narrowed) type.
    Local { name: String, ty: Ty },
    /// A function or a method of the program.
    Func(FuncId),
    /// A class (or table).
    Class(ClassId),
    /// A field of a class (a column of a table), with its type.
    Field {
        class: ClassId,
        name: String,
        ty: Ty,
    },
    /// A field of `Error` (`kind`, `code`, `message`, `line`).
    ErrorField { name: String, ty: Ty },
    /// A constant.
    Const { name: String, ty: Ty },
    /// A builtin function: `len`, or a module's `time.ticks`.
    Builtin(String),
    /// A standard module (`time` in `time.ticks()`).
    Module(String),
}

/// A function's signature as the checker resolved it.
#[derive(Debug, Clone)]
pub struct FuncFact {
    /// `f`, or `Class.m` for a method.
    pub name: String,
    /// The parameters; a method's first one is `self`.
    pub params: Vec<(String, Ty)>,
    pub ret: Ty,
    /// The name at the declaration (`None` for the functions of field defaults).
    pub def: Option<Span>,
}

impl Facts {
    /// `fn name(a: Int, b: Text) -> Bool` (a method's `self` left out).
    pub fn signature(&self, f: FuncId) -> String {
        let Some(func) = self.funcs.get(f) else {
            return String::new();
        };
        let params: Vec<String> = func
            .params
            .iter()
            .filter(|(n, _)| n != "self")
            .map(|(n, t)| format!("{n}: {}", t.display(&self.class_names)))
            .collect();
        let ret = match func.ret {
            Ty::Void => String::new(),
            ref t => format!(" -> {}", t.display(&self.class_names)),
        };
        format!("fn {}({}){ret}", func.name, params.join(", "))
    }
}
