//! Typed indices used as instruction operands. Each is a distinct type so a register
//! can never be passed where a constant index is expected; conversions that can fail
//! return errors rather than truncating with `as`.

use std::fmt;

macro_rules! index_type {
    ($(#[$m:meta])* $name:ident($inner:ty), $prefix:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $inner);

        impl $name {
            /// Converts an index, failing when it does not fit the operand width.
            pub fn try_new(i: usize) -> Option<$name> {
                <$inner>::try_from(i).ok().map($name)
            }

            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

index_type!(
    /// A frame-relative register.
    Reg(u16), "r"
);
index_type!(
    /// An index into the image's constant pool.
    ConstIdx(u32), "k"
);
index_type!(
    /// An index into the image's function table.
    FuncIdx(u32), "f"
);
index_type!(
    /// An index into the image's class table.
    ClassIdx(u32), "c"
);
index_type!(
    /// An index into the image's builtin table (not the VM's: the loader links them).
    BuiltinIdx(u16), "b"
);
index_type!(
    /// An index into the global slots (one per `const`).
    GlobalIdx(u32), "g"
);
index_type!(
    /// A field's position in its class, in declaration order.
    FieldIdx(u16), "."
);
index_type!(
    /// An instruction index within one function (jump targets are absolute).
    Pc(u32), "@"
);
index_type!(
    /// An index into the image's table list (not the class list).
    TableIdx(u32), "t"
);
index_type!(
    /// An index into the image's query descriptors.
    QueryIdx(u32), "q"
);

/// A comparison operator carried as an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cmp {
    Eq = 0,
    Ne = 1,
    Lt = 2,
    Le = 3,
    Gt = 4,
    Ge = 5,
}

impl Cmp {
    pub fn from_u8(v: u8) -> Option<Cmp> {
        Some(match v {
            0 => Cmp::Eq,
            1 => Cmp::Ne,
            2 => Cmp::Lt,
            3 => Cmp::Le,
            4 => Cmp::Gt,
            5 => Cmp::Ge,
            _ => return None,
        })
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// Applies the comparison to an ordering.
    pub fn test<T: PartialOrd + ?Sized>(self, a: &T, b: &T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}
