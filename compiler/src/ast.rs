//! The abstract syntax tree produced by the parser. Every node carries a byte span into
//! its source file; the checker resolves names and types over it. The tree is plain
//! data: no behaviour lives here beyond small helpers.

use crate::diag::Span;

/// A name as written in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// One parsed source file.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub items: Vec<Item>,
    /// Names of top-level declarations (`fn f`, `class C`, `const K`) in a file with
    /// syntax errors, whether or not they were read: a declaration the parser had to
    /// skip is not reported again as unknown where it is used.
    pub broken: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Item {
    /// `use time`
    Use(Ident),
    /// `const LIMIT = 100`
    Const {
        name: Ident,
        value: Expr,
        span: Span,
    },
    Fn(FnDecl),
    Class(ClassDecl),
}

#[derive(Debug, Clone)]
pub struct FnDecl {
    pub name: Ident,
    pub params: Vec<Param>,
    pub ret: Option<TypeExpr>,
    pub body: Block,
    /// From `fn` to the end of the signature (what a diagnostic about the function points at).
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: Ident,
    pub ty: TypeExpr,
}

#[derive(Debug, Clone)]
pub struct ClassDecl {
    pub annots: Vec<Annotation>,
    pub name: Ident,
    pub fields: Vec<FieldDecl>,
    pub methods: Vec<FnDecl>,
    /// `class Name`: where diagnostics about the class point.
    pub span: Span,
    /// The members, from `{` to `}`.
    pub body: Span,
}

/// `@name` or `@name(arg: value, …)`.
#[derive(Debug, Clone)]
pub struct Annotation {
    pub name: Ident,
    /// `None` when written without parentheses.
    pub args: Option<Vec<AnnotArg>>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct AnnotArg {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone)]
pub struct FieldDecl {
    pub name: Ident,
    pub ty: TypeExpr,
    pub default: Option<Expr>,
    /// Annotations written after the type, such as `@unique`.
    pub annots: Vec<Annotation>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct TypeExpr {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum TypeKind {
    /// An upper-case name: `Int`, `Text`, a class.
    Named(String),
    /// `?T`
    Nullable(Box<TypeExpr>),
    /// `multi T`
    Multi(Box<TypeExpr>),
    /// `map<K, V>`
    Map(Box<TypeExpr>, Box<TypeExpr>),
    /// `task<T>`, or `task` (a fiber without a result)
    Task(Option<Box<TypeExpr>>),
    /// `ref T`
    Ref(Ident),
}

#[derive(Debug, Clone)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone)]
pub enum StmtKind {
    Let {
        name: Ident,
        ty: Option<TypeExpr>,
        value: Expr,
    },
    /// `target op value`; the target is any expression, the checker accepts names,
    /// fields and index expressions.
    Assign {
        target: Expr,
        op: AssignOp,
        value: Expr,
    },
    Expr(Expr),
    Return(Option<Expr>),
    Break,
    Continue,
    Delete(Expr),
    /// `else if` is represented as an `els` block holding a single `If` statement.
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    While {
        cond: Expr,
        body: Block,
    },
    /// `for x in e { … }` or `for k, v in m { … }` (then `var2` is `Some(v)`).
    For {
        var: Ident,
        var2: Option<Ident>,
        iter: Expr,
        body: Block,
    },
    Transaction(Block),
    Try {
        body: Block,
        err: Ident,
        handler: Block,
    },
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Coalesce,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Concat => "..",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Coalesce => "??",
        }
    }
}

/// A piece of a text literal: literal characters (escapes already decoded) or an
/// interpolated expression `${…}`.
#[derive(Debug, Clone)]
pub enum TextPart {
    Lit(String),
    Expr(Expr),
}

#[derive(Debug, Clone)]
pub struct FieldInit {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone)]
pub struct OrderKey {
    pub expr: Expr,
    pub desc: bool,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub var: Ident,
    pub source: Expr,
    pub wheres: Vec<Expr>,
    pub order: Vec<OrderKey>,
    pub skip: Option<Expr>,
    pub take: Option<Expr>,
    pub select: Expr,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An Int literal; a `-` directly before a literal is folded in by the parser.
    Int(i64),
    Float(f64),
    /// A text literal: one `Lit` part when there is no interpolation.
    Text(Vec<TextPart>),
    Bool(bool),
    Nil,
    /// A lower-case name: a local, a parameter, `self`, a function used as a value (an
    /// error), or a module (`time` in `time.ticks()`).
    Name(String),
    /// An upper-case name: a constant or a class.
    TypeName(String),
    /// `f(a, b)`
    Call {
        callee: Ident,
        args: Vec<Expr>,
    },
    /// `x.m(a, b)`, also `time.ticks()` and `Employee.find(3)`.
    MethodCall {
        recv: Box<Expr>,
        method: Ident,
        args: Vec<Expr>,
    },
    /// `x.f`, also `math.PI` (then `name` is upper-case).
    Field {
        recv: Box<Expr>,
        name: Ident,
    },
    /// `x[i]`
    Index {
        recv: Box<Expr>,
        index: Box<Expr>,
    },
    Unary {
        op: UnOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `[a, b, c]`
    List(Vec<Expr>),
    /// `{k: v, …}`
    Map(Vec<(Expr, Expr)>),
    /// `Point { x: 1 }`
    Construct {
        class: Ident,
        fields: Vec<FieldInit>,
    },
    /// `insert T { … }`
    Insert {
        table: Ident,
        fields: Vec<FieldInit>,
    },
    /// `spawn f(a, b)` or `spawn obj.m(a)`; the checker requires `call` to be a call.
    Spawn {
        call: Box<Expr>,
    },
    /// `try E1 catch (e) E2`
    Try {
        body: Box<Expr>,
        err: Ident,
        handler: Box<Expr>,
    },
    /// `from x in S where … select e`
    Query(Box<Query>),
    /// Produced by error recovery where an expression could not be parsed.
    Error,
}
