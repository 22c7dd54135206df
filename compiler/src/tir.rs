//! Typed IR. (Being written.)
pub struct Program;
