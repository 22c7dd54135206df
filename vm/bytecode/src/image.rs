//! The in-memory form of a bytecode image: what the compiler produces, what `.wob`
//! files serialize (see `docs/image-format.md` and the `format` module), and what the
//! VM runs after the verifier has accepted it.

use crate::op::Op;
use crate::types::FuncIdx;

/// A constant-pool entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    Int(i64),
    Float(f64),
    Text(String),
}

/// Where an instruction came from, for trap reports and `wo disasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SrcPos {
    /// Index into [`Image::files`].
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

/// One compiled function (methods are functions whose first parameter is `self`).
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// Display name: `main`, `area`, `Point.norm1`.
    pub name: String,
    /// Number of parameters, passed in registers `0 … arity-1`.
    pub arity: u16,
    /// Registers the frame needs (at least `arity`).
    pub n_regs: u16,
    pub code: Vec<Op>,
    /// One position per instruction (`pos.len() == code.len()`).
    pub pos: Vec<SrcPos>,
}

/// A class: its name and field names in declaration order (used to print objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub fields: Vec<String>,
}

/// A builtin the image links against, by name and arity; the loader resolves it in the
/// VM's catalogue (see [`crate::builtins`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinRef {
    pub name: String,
    pub arity: u16,
}

/// A whole program.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Image {
    /// Source file names, for positions.
    pub files: Vec<String>,
    pub consts: Vec<Const>,
    pub functions: Vec<Function>,
    pub classes: Vec<Class>,
    pub builtins: Vec<BuiltinRef>,
    /// Number of global slots (one per `const`), all nil until `init` sets them.
    pub n_globals: u32,
    /// Runs before `entry`: evaluates the constants. Arity 0.
    pub init: Option<FuncIdx>,
    /// `main`: arity 0, or 1 (then it receives the command-line arguments as a list).
    pub entry: FuncIdx,
}
