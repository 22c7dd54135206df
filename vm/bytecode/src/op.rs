//! The opcode table: the single source of truth for the instruction enum, its byte
//! encoding and decoding, mnemonics and operand layout. Everything that needs to know
//! about instructions (codegen, image writer and reader, verifier, disassembler,
//! interpreter) goes through the `opcodes!` invocation below, so adding an instruction
//! is one entry here plus its semantics in the interpreter.
//!
//! Registers are frame-relative. Instructions that take a run of consecutive registers
//! (`base`, `n`) read `R[base] … R[base+n-1]`.

use crate::types::*;

/// Reads operands out of an encoded instruction stream.
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    pub fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let end = self
            .pos
            .checked_add(N)
            .ok_or(DecodeError::Truncated(self.pos))?;
        let slice = self
            .bytes
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated(self.pos))?;
        self.pos = end;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}

/// Why a byte sequence is not a valid instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("instruction truncated at byte {0}")]
    Truncated(usize),
    #[error("unknown opcode 0x{code:02x} at byte {at}")]
    UnknownOpcode { code: u8, at: usize },
    #[error("invalid operand value {value} at byte {at}")]
    BadOperand { value: u32, at: usize },
}

/// An operand as seen by the verifier and the disassembler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OperandRef {
    Reg(Reg),
    Const(ConstIdx),
    Func(FuncIdx),
    Class(ClassIdx),
    Builtin(BuiltinIdx),
    Global(GlobalIdx),
    Field(FieldIdx),
    Pc(Pc),
    Table(TableIdx),
    Query(QueryIdx),
    Imm(i64),
    Count(u16),
    Cmp(Cmp),
    Bool(bool),
}

/// One operand type: how it is encoded (little-endian, fixed width) and shown.
pub trait Operand: Sized + Copy {
    fn encode(self, out: &mut Vec<u8>);
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
    fn as_ref(self) -> OperandRef;
}

macro_rules! int_operand {
    ($ty:ident, $inner:ty, $n:literal, $variant:ident) => {
        impl Operand for $ty {
            fn encode(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.0.to_le_bytes());
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Ok($ty(<$inner>::from_le_bytes(r.take::<$n>()?)))
            }
            fn as_ref(self) -> OperandRef {
                OperandRef::$variant(self)
            }
        }
    };
}

int_operand!(Reg, u16, 2, Reg);
int_operand!(ConstIdx, u32, 4, Const);
int_operand!(FuncIdx, u32, 4, Func);
int_operand!(ClassIdx, u32, 4, Class);
int_operand!(BuiltinIdx, u16, 2, Builtin);
int_operand!(GlobalIdx, u32, 4, Global);
int_operand!(FieldIdx, u16, 2, Field);
int_operand!(Pc, u32, 4, Pc);
int_operand!(TableIdx, u32, 4, Table);
int_operand!(QueryIdx, u32, 4, Query);

impl Operand for i32 {
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(i32::from_le_bytes(r.take::<4>()?))
    }
    fn as_ref(self) -> OperandRef {
        OperandRef::Imm(i64::from(self))
    }
}

impl Operand for u16 {
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(u16::from_le_bytes(r.take::<2>()?))
    }
    fn as_ref(self) -> OperandRef {
        OperandRef::Count(self)
    }
}

impl Operand for bool {
    fn encode(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.pos;
        match r.take::<1>()?[0] {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::BadOperand {
                value: u32::from(v),
                at,
            }),
        }
    }
    fn as_ref(self) -> OperandRef {
        OperandRef::Bool(self)
    }
}

impl Operand for Cmp {
    fn encode(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.pos;
        let v = r.take::<1>()?[0];
        Cmp::from_u8(v).ok_or(DecodeError::BadOperand {
            value: u32::from(v),
            at,
        })
    }
    fn as_ref(self) -> OperandRef {
        OperandRef::Cmp(self)
    }
}

macro_rules! opcodes {
    ($( $(#[doc = $doc:literal])* $name:ident = $code:literal, $mn:literal { $($field:ident : $ty:ty),* $(,)? } )*) => {
        /// One instruction. Each variant's doc comment states its effect.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum Op {
            $( $(#[doc = $doc])* $name { $($field: $ty),* }, )*
        }

        /// Every opcode: (byte, mnemonic, one-line effect).
        pub const OPCODES: &[(u8, &str, &str)] = &[
            $( ($code, $mn, concat!($($doc),*)), )*
        ];

        /// Every opcode's operand layout: (byte, [(operand name, operand type)]), in
        /// encoding order. The image-format documentation and its version fingerprint
        /// are generated from this table.
        pub const OPCODE_OPERANDS: &[(u8, &[(&str, &str)])] = &[
            $( ($code, &[ $( (stringify!($field), stringify!($ty)) ),* ]), )*
        ];

        impl Op {
            /// The mnemonic `wo disasm` prints.
            pub fn mnemonic(&self) -> &'static str {
                match self { $( Op::$name { .. } => $mn, )* }
            }

            /// The opcode byte.
            pub fn code(&self) -> u8 {
                match self { $( Op::$name { .. } => $code, )* }
            }

            /// Appends the encoding: the opcode byte, then each operand little-endian.
            #[allow(unused_variables)] // operand-less opcodes bind nothing
            pub fn encode(&self, out: &mut Vec<u8>) {
                match *self {
                    $( Op::$name { $($field),* } => {
                        out.push($code);
                        $( Operand::encode($field, out); )*
                    } )*
                }
            }

            /// Decodes one instruction.
            pub fn decode(r: &mut Reader<'_>) -> Result<Op, DecodeError> {
                let at = r.pos;
                let code = r.take::<1>()?[0];
                match code {
                    $( $code => Ok(Op::$name { $($field: <$ty as Operand>::decode(r)?),* }), )*
                    _ => Err(DecodeError::UnknownOpcode { code, at }),
                }
            }

            /// The operands, named as in the table, in encoding order.
            #[allow(unused_variables)] // operand-less opcodes bind nothing
            pub fn operands(&self) -> Vec<(&'static str, OperandRef)> {
                match *self {
                    $( Op::$name { $($field),* } => vec![ $( (stringify!($field), Operand::as_ref($field)) ),* ], )*
                }
            }
        }
    };
}

opcodes! {
    /// Does nothing.
    Nop = 0x00, "NOP" {}
    /// `R[a] = R[b]`.
    Move = 0x01, "MOVE" { a: Reg, b: Reg }
    /// `R[a] = K[k]` (an Int, Float or Text constant).
    LoadConst = 0x02, "LOAD_CONST" { a: Reg, k: ConstIdx }
    /// `R[a] = v` (a small Int).
    LoadInt = 0x03, "LOAD_INT" { a: Reg, v: i32 }
    /// `R[a] = nil`.
    LoadNil = 0x04, "LOAD_NIL" { a: Reg }
    /// `R[a] = v` (a Bool).
    LoadBool = 0x05, "LOAD_BOOL" { a: Reg, v: bool }
    /// `R[a] = G[g]` (a global: the value of a `const`).
    GetGlobal = 0x06, "GET_GLOBAL" { a: Reg, g: GlobalIdx }
    /// `G[g] = R[a]`.
    SetGlobal = 0x07, "SET_GLOBAL" { g: GlobalIdx, a: Reg }

    /// `R[a] = R[b] + R[c]` on Int; traps OVERFLOW.
    AddInt = 0x10, "ADD_INT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] - R[c]` on Int; traps OVERFLOW.
    SubInt = 0x11, "SUB_INT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] * R[c]` on Int; traps OVERFLOW.
    MulInt = 0x12, "MUL_INT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] / R[c]` on Int, truncating toward zero; traps DIV0 and OVERFLOW.
    DivInt = 0x13, "DIV_INT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] % R[c]` on Int, sign of the dividend; traps DIV0 (`MIN % -1` is 0).
    RemInt = 0x14, "REM_INT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] + v` on Int; traps OVERFLOW.
    AddIntImm = 0x15, "ADD_INT_IMM" { a: Reg, b: Reg, v: i32 }
    /// `R[a] = -R[b]` on Int; traps OVERFLOW.
    NegInt = 0x16, "NEG_INT" { a: Reg, b: Reg }
    /// `R[a] = R[b] - v` on Int; traps OVERFLOW.
    SubIntImm = 0x17, "SUB_INT_IMM" { a: Reg, b: Reg, v: i32 }
    /// `R[a] = R[b] + R[c]` on Float.
    AddFloat = 0x18, "ADD_FLOAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] - R[c]` on Float.
    SubFloat = 0x19, "SUB_FLOAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] * R[c]` on Float.
    MulFloat = 0x1a, "MUL_FLOAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] / R[c]` on Float (IEEE: no trap).
    DivFloat = 0x1b, "DIV_FLOAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] % R[c]` on Float (IEEE remainder as Rust's `%`).
    RemFloat = 0x1c, "REM_FLOAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = -R[b]` on Float.
    NegFloat = 0x1d, "NEG_FLOAT" { a: Reg, b: Reg }
    /// `R[a] = float(R[b])`.
    IntToFloat = 0x1e, "INT_TO_FLOAT" { a: Reg, b: Reg }
    /// `R[a] = int(R[b])` toward zero; traps OVERFLOW when out of range or NaN.
    FloatToInt = 0x1f, "FLOAT_TO_INT" { a: Reg, b: Reg }

    /// `R[a] = R[b] <op> R[c]` on Int, a Bool.
    CmpInt = 0x20, "CMP_INT" { a: Reg, b: Reg, c: Reg, op: Cmp }
    /// `R[a] = R[b] <op> R[c]` on Float (IEEE: NaN compares false, `!=` true).
    CmpFloat = 0x21, "CMP_FLOAT" { a: Reg, b: Reg, c: Reg, op: Cmp }
    /// `R[a] = R[b] <op> R[c]` on Text (byte order).
    CmpText = 0x22, "CMP_TEXT" { a: Reg, b: Reg, c: Reg, op: Cmp }
    /// `R[a] = R[b] == R[c]` for any two values of comparable types (nil equals only nil).
    Eq = 0x23, "EQ" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] != R[c]` for any two values of comparable types.
    Ne = 0x24, "NE" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = not R[b]` on Bool.
    Not = 0x25, "NOT" { a: Reg, b: Reg }

    /// `R[a] = R[b] .. R[c]` on Text.
    Concat = 0x28, "CONCAT" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = R[b] .. R[b+1] .. … R[b+n-1]`, all Text.
    ConcatN = 0x29, "CONCAT_N" { a: Reg, b: Reg, n: u16 }
    /// `R[a] = text(R[b])`: any value as Text by the printing rules.
    ToText = 0x2a, "TO_TEXT" { a: Reg, b: Reg }

    /// `goto t` (a back edge counts against the instruction budget).
    Jump = 0x30, "JUMP" { t: Pc }
    /// `if R[a] { goto t }` on Bool.
    JumpIf = 0x31, "JUMP_IF" { a: Reg, t: Pc }
    /// `if not R[a] { goto t }` on Bool.
    JumpIfNot = 0x32, "JUMP_IF_NOT" { a: Reg, t: Pc }
    /// `if R[a] == nil { goto t }`.
    JumpIfNil = 0x33, "JUMP_IF_NIL" { a: Reg, t: Pc }
    /// `if R[a] != nil { goto t }`.
    JumpIfNotNil = 0x34, "JUMP_IF_NOT_NIL" { a: Reg, t: Pc }
    /// `if not (R[b] <op> R[c]) { goto t }` on Int: the fused loop test.
    JumpUnlessCmpInt = 0x35, "JUMP_UNLESS_CMP_INT" { b: Reg, c: Reg, op: Cmp, t: Pc }
    /// `if not (R[b] <op> v) { goto t }` on Int: the fused test against a constant.
    JumpUnlessCmpIntImm = 0x36, "JUMP_UNLESS_CMP_IMM" { b: Reg, v: i32, op: Cmp, t: Pc }
    /// Starts a counted loop (`for v in range(…)`) over the Ints `R[a]` (start),
    /// `R[a+1]` (stop) and `R[a+2]` (step): traps BOUNDS when the step is 0; goes to `t`
    /// when the range is empty; else sets `R[a+1]` to the number of iterations left after
    /// the first (as an unsigned count) and `R[v] = R[a]`.
    ForPrep = 0x37, "FOR_PREP" { a: Reg, v: Reg, t: Pc }
    /// The step of a counted loop: when `R[a+1]` (iterations left) is not 0, counts it
    /// down, `R[a] += R[a+2]`, `R[v] = R[a]` and goes to `t` (a back edge); else falls
    /// through. Never overflows: FOR_PREP counted the iterations.
    ForLoop = 0x38, "FOR_LOOP" { a: Reg, v: Reg, t: Pc }
    /// The step of `for v in text`: when the byte offset `R[i]` is at the end of the
    /// Text `R[b]`, goes to `t`; else `R[v]` = the character at `R[i]` as a
    /// one-character Text, and `R[i]` += its length in bytes.
    TextNext = 0x39, "TEXT_NEXT" { v: Reg, b: Reg, i: Reg, t: Pc }
    /// `if (R[b] == K[k]) != eq { goto t }`: the fused test of `==` (`eq` true) or
    /// `!=` (`eq` false) against a Text or Float constant, by the rules of `EQ`.
    JumpUnlessEqConst = 0x3a, "JUMP_UNLESS_EQ_K" { b: Reg, k: ConstIdx, eq: bool, t: Pc }

    /// `R[base] = f(R[base] … R[base+arity-1])`: the callee's frame starts at `base`.
    Call = 0x40, "CALL" { f: FuncIdx, base: Reg }
    /// `R[base] = builtin(R[base] … R[base+n-1])` through the image's builtin table.
    CallBuiltin = 0x41, "CALL_BUILTIN" { f: BuiltinIdx, base: Reg, n: u16 }
    /// Returns `R[a]` to the caller.
    Ret = 0x42, "RET" { a: Reg }
    /// Returns nil to the caller.
    RetNil = 0x43, "RET_NIL" {}
    /// Installs a trap handler: a trap before the matching `TRY_EXIT` unwinds to this
    /// frame, stores the Error in `R[err]` and continues at `t`.
    TryEnter = 0x44, "TRY_ENTER" { t: Pc, err: Reg }
    /// Removes the innermost handler installed by this frame.
    TryExit = 0x45, "TRY_EXIT" {}
    /// `R[a] = task`: starts `f(R[base] … R[base+n-1])` on a new fiber at the back of
    /// the run queue (`n` is `f`'s arity); the spawning fiber goes on.
    Spawn = 0x48, "SPAWN" { a: Reg, f: FuncIdx, base: Reg, n: u16 }
    /// `R[a] = join(R[b])`: waits for the task in `R[b]` to end and takes its result,
    /// or raises its trap again; traps `DB` inside a transaction when it has not ended.
    Join = 0x49, "JOIN" { a: Reg, b: Reg }
    /// `R[a] = unwrap(R[b])`; traps NIL when it is nil.
    Unwrap = 0x46, "UNWRAP" { a: Reg, b: Reg }

    /// `R[a] = [R[b] … R[b+n-1]]`.
    NewList = 0x50, "NEW_LIST" { a: Reg, b: Reg, n: u16 }
    /// `R[a] = R[b][R[c]]` on a list; traps BOUNDS.
    ListGet = 0x51, "LIST_GET" { a: Reg, b: Reg, c: Reg }
    /// `R[a][R[b]] = R[c]` on a list; traps BOUNDS.
    ListSet = 0x52, "LIST_SET" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = len(R[b])` on a list.
    ListLen = 0x53, "LIST_LEN" { a: Reg, b: Reg }
    /// `R[a] = {R[b]: R[b+1], …}` with `n` pairs.
    NewMap = 0x54, "NEW_MAP" { a: Reg, b: Reg, n: u16 }
    /// `R[a] = R[b][R[c]]` on a map: the value, or nil when absent.
    MapGet = 0x55, "MAP_GET" { a: Reg, b: Reg, c: Reg }
    /// `R[a][R[b]] = R[c]` on a map (inserts at the end, or replaces in place).
    MapSet = 0x56, "MAP_SET" { a: Reg, b: Reg, c: Reg }
    /// `R[a] = len(R[b])` on a map.
    MapLen = 0x57, "MAP_LEN" { a: Reg, b: Reg }
    /// `R[k], R[v] = the R[i]-th entry of map R[m]` in insertion order; traps BOUNDS.
    MapEntry = 0x58, "MAP_ENTRY" { k: Reg, v: Reg, m: Reg, i: Reg }
    /// `R[a] = R[b][R[c]]` on a list as a `for` loop's step; traps BOUNDS, saying that
    /// elements were removed during the loop.
    ListEntry = 0x59, "LIST_ENTRY" { a: Reg, b: Reg, c: Reg }

    /// `R[a] = new object of class c` with fields `R[b] …` in declaration order.
    NewObj = 0x60, "NEW_OBJ" { a: Reg, c: ClassIdx, b: Reg }
    /// `R[a] = R[b].f` on an object (or an Error: kind, code, message, line).
    GetField = 0x61, "GET_FIELD" { a: Reg, b: Reg, f: FieldIdx }
    /// `R[a].f = R[b]` on an object.
    SetField = 0x62, "SET_FIELD" { a: Reg, f: FieldIdx, b: Reg }

    /// `R[a] = insert into table t` with its columns from `R[b] …` in declaration
    /// order; traps UNIQUE, FK (and IO once durable).
    DbInsert = 0x70, "DB_INSERT" { a: Reg, t: TableIdx, b: Reg }
    /// `R[a] = column f of row R[b]` (a row of table t); traps DB when the row was
    /// deleted.
    DbGetField = 0x71, "DB_GET_FIELD" { a: Reg, b: Reg, t: TableIdx, f: FieldIdx }
    /// `column f of row R[a] = R[b]` (a row of table t); traps DB, UNIQUE, FK.
    DbUpdateField = 0x72, "DB_UPDATE_FIELD" { a: Reg, t: TableIdx, f: FieldIdx, b: Reg }
    /// Deletes row R[a] of table t; traps DB (already deleted) and FK (still
    /// referenced).
    DbDelete = 0x73, "DB_DELETE" { a: Reg, t: TableIdx }
    /// `R[a] = the row of table t with id R[b]`, or nil.
    DbFind = 0x74, "DB_FIND" { a: Reg, t: TableIdx, b: Reg }
    /// `R[a] = R[b].id` (a row's id; readable even after a delete).
    DbRowId = 0x75, "DB_ROW_ID" { a: Reg, b: Reg }
    /// `R[a] = whether row R[b] still exists`.
    DbAlive = 0x76, "DB_ALIVE" { a: Reg, b: Reg }
    /// `R[a] = run query q` with its arguments in `R[b] …`: a list of rows, or the
    /// aggregate the descriptor names.
    DbQuery = 0x77, "DB_QUERY" { a: Reg, q: QueryIdx, b: Reg }
    /// Starts a transaction; traps DB when one is already active. A trap that leaves
    /// the transaction (unwinding past the point where it began) rolls it back.
    TxBegin = 0x78, "TX_BEGIN" {}
    /// Commits the active transaction (one log write and one sync once durable).
    TxCommit = 0x79, "TX_COMMIT" {}
}

impl Op {
    /// Whether control never falls through to the next instruction (`RET`, `RET_NIL`,
    /// `JUMP`). The verifier requires every function to end with one.
    pub fn is_terminator(&self) -> bool {
        matches!(self, Op::Ret { .. } | Op::RetNil {} | Op::Jump { .. })
    }
}
