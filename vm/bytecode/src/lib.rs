//! `wo-bytecode`: the contract between the compiler and the VM. Opcodes (one table),
//! the in-memory image, the `.wob` file format, the verifier that every loaded image
//! passes before anything runs, the disassembler and the builtin catalogue.

pub mod builtins;
pub mod disasm;
pub mod format;
pub mod image;
pub mod op;
pub mod types;
pub mod verify;

pub use disasm::disasm;
pub use format::{read_image, write_image, ImageError, FORMAT_VERSION, MAGIC};
pub use image::{
    BuiltinRef, Class, Column, ColumnDefault, ColumnType, Const, Function, Image, Index, QueryAgg,
    QueryCol, QueryDesc, QueryPred, SrcPos, Table, MAX_GLOBALS,
};
pub use op::{Op, OPCODES};
pub use types::*;
pub use verify::{verify, IndexKind, VerifyError};
