//! `wo-stdlib`: the native functions of the builtin catalogue. (Being written.)

use wo_vm::NativeFn;

/// The implementation of the catalogue entry `name`, if any.
pub fn lookup(_name: &str) -> Option<NativeFn> {
    None
}
