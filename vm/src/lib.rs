//! `wo-vm`: loads verified images, links their builtins and runs them. Values, traps,
//! the stackless interpreter and (later) fibers and the database builtins.

pub mod value;

pub use value::{ErrorValue, Host, Key, MapData, NativeFn, Object, Stop, Trap, TrapKind, Value};

use wo_bytecode::Image;

/// One line of a trap's call stack, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackFrame {
    pub function: String,
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    /// `main` returned (its Int value, or 0) or `exit(code)` was called.
    Exit(i32),
    /// An uncaught trap: the trap and the call stack where it was raised, innermost first.
    Trap { trap: Trap, stack: Vec<StackFrame> },
}

/// Why an image could not be linked against this VM's builtins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    #[error("unknown builtin `{0}`")]
    UnknownBuiltin(String),
    #[error("builtin `{name}` takes {expected} arguments, the image says {found}")]
    Arity {
        name: String,
        expected: u16,
        found: u16,
    },
}

/// Links `image`'s builtins through `natives` and runs `init` then `main` with `args`.
/// Output goes to `host.out` / `host.err`, flushed before this returns.
pub fn run(
    _image: &Image,
    _natives: &dyn Fn(&str) -> Option<NativeFn>,
    _args: Vec<String>,
    _host: Host,
) -> Result<RunResult, LinkError> {
    Ok(RunResult::Exit(0))
}
