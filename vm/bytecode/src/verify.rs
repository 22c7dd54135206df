//! The verifier: the static checks every image passes before the VM runs it, whether it
//! came from the compiler or from a `.wob` file. After [`verify`] accepts an image the
//! interpreter may index registers, constants, functions, classes, builtins, globals and
//! jump targets without bounds checks of its own, and no function can run off the end
//! of its code. What stays dynamic (value types, field indices against the object's
//! actual class, arithmetic traps) is the interpreter's job.
//!
//! It sits apart from the file reader so compiler output can be checked the same way
//! (codegen tests run it on everything they produce).

use std::fmt;

use crate::builtins;
use crate::image::{Function, Image};
use crate::op::{Op, OperandRef};
use crate::types::Reg;

/// The kind of table an index operand points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexKind {
    Const,
    Func,
    Class,
    Builtin,
    Global,
}

impl IndexKind {
    /// The prefix the disassembler prints before such an index (`k3`, `f1`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            IndexKind::Const => "k",
            IndexKind::Func => "f",
            IndexKind::Class => "c",
            IndexKind::Builtin => "b",
            IndexKind::Global => "g",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            IndexKind::Const => "constants",
            IndexKind::Func => "functions",
            IndexKind::Class => "classes",
            IndexKind::Builtin => "builtins",
            IndexKind::Global => "globals",
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IndexKind::Const => "constant",
            IndexKind::Func => "function",
            IndexKind::Class => "class",
            IndexKind::Builtin => "builtin",
            IndexKind::Global => "global",
        })
    }
}

/// The first rule an image breaks. Messages name the function and pc where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error(
        "function `{function}` pc {pc}: register r{reg} out of range (function has {n_regs} \
         registers)"
    )]
    Register {
        function: String,
        pc: usize,
        reg: u16,
        n_regs: u16,
    },
    #[error(
        "function `{function}` pc {pc}: {len} registers from r{base} out of range (function \
         has {n_regs} registers)"
    )]
    RegisterRun {
        function: String,
        pc: usize,
        base: u16,
        len: u32,
        n_regs: u16,
    },
    #[error(
        "function `{function}` pc {pc}: {kind} {}{index} out of range (image has {count} {})",
        .kind.prefix(),
        .kind.plural()
    )]
    Index {
        function: String,
        pc: usize,
        kind: IndexKind,
        index: u32,
        count: usize,
    },
    #[error(
        "function `{function}` pc {pc}: jump target @{target} out of range (function has \
         {len} instructions)"
    )]
    JumpTarget {
        function: String,
        pc: usize,
        target: u32,
        len: usize,
    },
    #[error(
        "function `{function}` pc {pc}: builtin `{builtin}` called with {n} arguments (it \
         takes {arity})"
    )]
    BuiltinArgs {
        function: String,
        pc: usize,
        builtin: String,
        n: u16,
        arity: u16,
    },
    #[error("function `{function}` pc {pc}: field index {field} out of range (at most 65534)")]
    FieldIndex {
        function: String,
        pc: usize,
        field: u16,
    },
    #[error("function `{function}` has no code")]
    EmptyCode { function: String },
    #[error(
        "function `{function}` pc {pc}: the last instruction is {mnemonic}, not RET, RET_NIL \
         or JUMP, so execution could run off the end"
    )]
    FallsOffEnd {
        function: String,
        pc: usize,
        mnemonic: &'static str,
    },
    #[error("function `{function}` has {n_regs} registers, fewer than its arity {arity}")]
    RegsBelowArity {
        function: String,
        arity: u16,
        n_regs: u16,
    },
    #[error("function `{function}` has {n_code} instructions but {n_pos} source positions")]
    PosCount {
        function: String,
        n_code: usize,
        n_pos: usize,
    },
    #[error(
        "function `{function}` pc {pc}: source file index {file} out of range (image has \
         {n_files} files)"
    )]
    PosFile {
        function: String,
        pc: usize,
        file: u32,
        n_files: usize,
    },
    #[error("function `{function}` has {len} instructions, more than a pc can address")]
    CodeTooLong { function: String, len: usize },
    #[error("entry function f{entry} does not exist (image has {n_functions} functions)")]
    NoEntry { entry: u32, n_functions: usize },
    #[error("entry function `{function}` has arity {arity} (expected 0 or 1)")]
    EntryArity { function: String, arity: u16 },
    #[error("init function f{init} does not exist (image has {n_functions} functions)")]
    NoInit { init: u32, n_functions: usize },
    #[error("init function `{function}` has arity {arity} (expected 0)")]
    InitArity { function: String, arity: u16 },
    #[error("builtin b{index} `{name}` is not in this wo's builtin catalogue")]
    UnknownBuiltin { index: usize, name: String },
    #[error(
        "builtin b{index} `{name}` is declared with arity {arity}, but the catalogue's \
         `{name}` takes {expected}"
    )]
    BuiltinArity {
        index: usize,
        name: String,
        arity: u16,
        expected: u16,
    },
}

/// Checks every rule listed in `docs/image-format.md` ("What the verifier guarantees")
/// and returns the first violation.
pub fn verify(image: &Image) -> Result<(), VerifyError> {
    for (index, b) in image.builtins.iter().enumerate() {
        let spec = builtins::lookup(&b.name).ok_or_else(|| VerifyError::UnknownBuiltin {
            index,
            name: b.name.clone(),
        })?;
        if spec.arity != b.arity {
            return Err(VerifyError::BuiltinArity {
                index,
                name: b.name.clone(),
                arity: b.arity,
                expected: spec.arity,
            });
        }
    }

    let n_functions = image.functions.len();
    let entry = image
        .functions
        .get(image.entry.index())
        .ok_or(VerifyError::NoEntry {
            entry: image.entry.0,
            n_functions,
        })?;
    if entry.arity > 1 {
        return Err(VerifyError::EntryArity {
            function: entry.name.clone(),
            arity: entry.arity,
        });
    }
    if let Some(init) = image.init {
        let f = image
            .functions
            .get(init.index())
            .ok_or(VerifyError::NoInit {
                init: init.0,
                n_functions,
            })?;
        if f.arity != 0 {
            return Err(VerifyError::InitArity {
                function: f.name.clone(),
                arity: f.arity,
            });
        }
    }

    for f in &image.functions {
        verify_function(image, f)?;
    }
    Ok(())
}

fn verify_function(image: &Image, f: &Function) -> Result<(), VerifyError> {
    let function = || f.name.clone();
    if f.n_regs < f.arity {
        return Err(VerifyError::RegsBelowArity {
            function: function(),
            arity: f.arity,
            n_regs: f.n_regs,
        });
    }
    if f.code.is_empty() {
        return Err(VerifyError::EmptyCode {
            function: function(),
        });
    }
    if u32::try_from(f.code.len()).is_err() {
        return Err(VerifyError::CodeTooLong {
            function: function(),
            len: f.code.len(),
        });
    }
    if f.pos.len() != f.code.len() {
        return Err(VerifyError::PosCount {
            function: function(),
            n_code: f.code.len(),
            n_pos: f.pos.len(),
        });
    }
    for (pc, p) in f.pos.iter().enumerate() {
        if idx(p.file) >= image.files.len() {
            return Err(VerifyError::PosFile {
                function: function(),
                pc,
                file: p.file,
                n_files: image.files.len(),
            });
        }
    }

    for (pc, op) in f.code.iter().enumerate() {
        verify_op(image, f, pc, op)?;
    }

    let pc = f.code.len() - 1;
    match f.code.get(pc) {
        Some(op) if op.is_terminator() => Ok(()),
        Some(op) => Err(VerifyError::FallsOffEnd {
            function: function(),
            pc,
            mnemonic: op.mnemonic(),
        }),
        None => Err(VerifyError::EmptyCode {
            function: function(),
        }),
    }
}

/// A u32 table index as a `usize` (saturating, so a comparison against a length stays
/// correct even where `usize` is narrower).
fn idx(i: u32) -> usize {
    usize::try_from(i).unwrap_or(usize::MAX)
}

fn verify_op(image: &Image, f: &Function, pc: usize, op: &Op) -> Result<(), VerifyError> {
    let function = || f.name.clone();
    let index = |kind: IndexKind, index: u32, count: usize| {
        if idx(index) < count {
            Ok(())
        } else {
            Err(VerifyError::Index {
                function: function(),
                pc,
                kind,
                index,
                count,
            })
        }
    };

    // The first register of a run that is only read (`b` of NEW_LIST, NEW_MAP,
    // CONCAT_N, NEW_OBJ) is checked with its run below instead: an empty run may start
    // one past the last register (`[]` compiled at the top of the frame reads nothing).
    let run_base = match op {
        Op::NewList { .. } | Op::NewMap { .. } | Op::ConcatN { .. } | Op::NewObj { .. } => {
            Some("b")
        }
        _ => None,
    };
    for (name, operand) in op.operands() {
        match operand {
            OperandRef::Reg(_) if run_base == Some(name) => {}
            OperandRef::Reg(r) => {
                if r.0 >= f.n_regs {
                    return Err(VerifyError::Register {
                        function: function(),
                        pc,
                        reg: r.0,
                        n_regs: f.n_regs,
                    });
                }
            }
            OperandRef::Const(k) => index(IndexKind::Const, k.0, image.consts.len())?,
            OperandRef::Func(i) => index(IndexKind::Func, i.0, image.functions.len())?,
            OperandRef::Class(c) => index(IndexKind::Class, c.0, image.classes.len())?,
            // Tables and queries are checked by the tables milestone's verifier rules.
            OperandRef::Table(_) | OperandRef::Query(_) => {}
            OperandRef::Builtin(b) => {
                index(IndexKind::Builtin, u32::from(b.0), image.builtins.len())?;
            }
            OperandRef::Global(g) => {
                let n_globals = usize::try_from(image.n_globals).unwrap_or(usize::MAX);
                index(IndexKind::Global, g.0, n_globals)?;
            }
            OperandRef::Pc(t) => {
                if t.index() >= f.code.len() {
                    return Err(VerifyError::JumpTarget {
                        function: function(),
                        pc,
                        target: t.0,
                        len: f.code.len(),
                    });
                }
            }
            OperandRef::Field(field) => {
                if field.0 == u16::MAX {
                    return Err(VerifyError::FieldIndex {
                        function: function(),
                        pc,
                        field: field.0,
                    });
                }
            }
            OperandRef::Imm(_)
            | OperandRef::Count(_)
            | OperandRef::Cmp(_)
            | OperandRef::Bool(_) => {}
        }
    }

    // Register runs. Every index operand is in range by now, so the lookups succeed.
    let run = |base: Reg, len: u32| {
        if u64::from(base.0) + u64::from(len) <= u64::from(f.n_regs) {
            Ok(())
        } else {
            Err(VerifyError::RegisterRun {
                function: function(),
                pc,
                base: base.0,
                len,
                n_regs: f.n_regs,
            })
        }
    };
    match *op {
        Op::NewList { b, n, .. } | Op::ConcatN { b, n, .. } => run(b, u32::from(n))?,
        Op::NewMap { b, n, .. } => run(b, 2 * u32::from(n))?,
        Op::CallBuiltin { f: bi, base, n } => {
            run(base, u32::from(n))?;
            if let Some(b) = image.builtins.get(bi.index()) {
                if b.arity != n {
                    return Err(VerifyError::BuiltinArgs {
                        function: function(),
                        pc,
                        builtin: b.name.clone(),
                        n,
                        arity: b.arity,
                    });
                }
            }
        }
        Op::Call { f: callee, base } => {
            if let Some(callee) = image.functions.get(callee.index()) {
                run(base, u32::from(callee.arity))?;
            }
        }
        Op::NewObj { c, b, .. } => {
            if let Some(class) = image.classes.get(c.index()) {
                let n_fields = u32::try_from(class.fields.len()).unwrap_or(u32::MAX);
                run(b, n_fields)?;
            }
        }
        _ => {}
    }
    Ok(())
}
