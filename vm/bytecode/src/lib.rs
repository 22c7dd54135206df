//! `wo-bytecode`: the contract between the compiler and the VM. Opcodes (one table),
//! the in-memory image, the `.wob` file format, the verifier that every loaded image
//! passes before anything runs, the disassembler and the builtin catalogue.

pub mod builtins;
pub mod image;
pub mod op;
pub mod types;

pub use image::{BuiltinRef, Class, Const, Function, Image, SrcPos};
pub use op::{Op, OPCODES};
pub use types::*;
