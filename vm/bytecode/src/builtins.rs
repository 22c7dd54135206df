//! The builtin catalogue: every native function an image may link against, by name and
//! arity. The compiler picks entries by name (typed variants such as `len_text` and
//! `len_list` are separate entries, so the VM never dispatches on a static type); the
//! image records the names it uses; the loader checks each against this table and the
//! standard library implements each one. Renaming or removing an entry breaks old
//! images, so it bumps the image format version (see `docs/image-format.md`).

/// One catalogue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinSpec {
    pub name: &'static str,
    pub arity: u16,
    /// What it does, for `docs/` and `wo disasm`.
    pub doc: &'static str,
}

macro_rules! catalogue {
    ($( $name:literal / $arity:literal : $doc:literal ),* $(,)?) => {
        /// Every builtin, in a stable order.
        pub const BUILTINS: &[BuiltinSpec] = &[
            $( BuiltinSpec { name: $name, arity: $arity, doc: $doc }, )*
        ];
    };
}

catalogue! {
    "print" / 1: "print(v): the value's text and a newline on stdout",
    "print_err" / 1: "print_err(v): the value's text and a newline on stderr",
    "text" / 1: "text(v): any value as Text",
    "parse_int" / 1: "parse_int(t) -> ?Int: optional sign and decimal digits, nothing else",
    "parse_float" / 1: "parse_float(t) -> ?Float",
    "abs_int" / 1: "abs(i); traps OVERFLOW on the minimum Int",
    "abs_float" / 1: "abs(f)",
    "min_int" / 2: "min(a, b) on Int",
    "max_int" / 2: "max(a, b) on Int",
    "min_float" / 2: "min(a, b) on Float",
    "max_float" / 2: "max(a, b) on Float",
    "min_text" / 2: "min(a, b) on Text",
    "max_text" / 2: "max(a, b) on Text",
    "fail" / 1: "fail(msg): traps FAIL",
    "assert" / 1: "assert(cond): traps ASSERT with `assertion failed`",
    "assert_msg" / 2: "assert(cond, msg): traps ASSERT with msg",
    "exit" / 1: "exit(code): ends the program with that status",
    "len_text" / 1: "len(t): characters",
    "len_list" / 1: "len(xs)",
    "len_map" / 1: "len(m)",
    "substr" / 3: "substr(t, start, n) in characters; traps BOUNDS",
    "index_of" / 2: "index_of(t, s) -> Int in characters, -1 when absent",
    "contains_text" / 2: "contains(t, s)",
    "starts_with" / 2: "starts_with(t, s)",
    "ends_with" / 2: "ends_with(t, s)",
    "split" / 2: "split(t, sep) -> multi Text; traps FAIL on an empty sep",
    "join" / 2: "join(xs, sep)",
    "trim" / 1: "trim(t): without leading and trailing white space",
    "to_upper" / 1: "to_upper(t)",
    "to_lower" / 1: "to_lower(t)",
    "replace" / 3: "replace(t, old, new): every occurrence",
    "repeat" / 2: "repeat(t, n)",
    "chars" / 1: "chars(t) -> multi Text: each character as a one-character Text",
    "ord" / 1: "ord(c) -> Int: the Unicode scalar value of a one-character Text; traps BOUNDS otherwise",
    "chr" / 1: "chr(i) -> Text: the character with that scalar value; traps BOUNDS",
    "pad_left" / 2: "pad_left(t, width): spaces before t up to width characters",
    "pad_right" / 2: "pad_right(t, width): spaces after t up to width characters",
    "to_fixed" / 2: "to_fixed(x, digits) -> Text: digits (0-17) decimals, no exponent, half to even; traps BOUNDS",
    "push" / 2: "push(xs, v)",
    "pop" / 1: "pop(xs) -> ?T",
    "remove_at" / 2: "remove_at(xs, i) -> T; traps BOUNDS",
    "insert_at" / 3: "insert_at(xs, i, v) with 0 <= i <= len; traps BOUNDS",
    "slice" / 3: "slice(xs, lo, hi): a new list; traps BOUNDS unless 0 <= lo <= hi <= len",
    "sort" / 1: "sort(xs): in place, ascending (Int, Float or Text)",
    "reverse" / 1: "reverse(xs): in place",
    "contains_list" / 2: "contains(xs, v)",
    "has" / 2: "has(m, k)",
    "get" / 2: "get(m, k) -> V; traps KEY when absent",
    "set" / 3: "set(m, k, v)",
    "remove" / 2: "remove(m, k): keeps the order of the other keys",
    "keys" / 1: "keys(m) -> multi K in insertion order",
    "values" / 1: "values(m) -> multi V in insertion order",
    "count" / 1: "count(xs): number of elements",
    "exists" / 1: "exists(xs): len(xs) > 0",
    "sum_int" / 1: "sum(xs) on Int, 0 on empty; traps OVERFLOW",
    "sum_float" / 1: "sum(xs) on Float, 0.0 on empty",
    "min_list" / 1: "min(xs) -> ?T on Int, Float or Text; nil on empty",
    "max_list" / 1: "max(xs) -> ?T on Int, Float or Text; nil on empty",
    "avg_int" / 1: "avg(xs) -> ?Float over Int elements; nil on empty",
    "avg_float" / 1: "avg(xs) -> ?Float over Float elements; nil on empty",
    "first" / 1: "first(xs) -> ?T; nil on empty",
    "range" / 3: "range(start, stop, step) -> multi Int outside a `for` header; traps BOUNDS on a step of 0",
    "yield" / 0: "yield(): lets other fibers run",
    "order_by" / 3: "order_by(keys, values, desc_mask): a query's `order by` done in bytecode: sorts `values` by the key lists in `keys` (one list per value; key i descending when bit i of desc_mask is set), stable, nil first",
    "skip_take" / 3: "skip_take(xs, skip, take): a new list without the first `skip` elements and at most `take` of the rest; nil means absent, negative counts as 0",
    "time.ticks" / 0: "time.ticks() -> Int: monotonic microseconds",
    "time.now" / 0: "time.now() -> Int: milliseconds since the Unix epoch",
    "time.sleep" / 1: "time.sleep(ms): parks the fiber",
    "math.sqrt" / 1: "math.sqrt(x)",
    "math.floor" / 1: "math.floor(x)",
    "math.ceil" / 1: "math.ceil(x)",
    "math.round" / 1: "math.round(x): half away from zero",
    "math.pow" / 2: "math.pow(x, y)",
    "env.get" / 1: "env.get(name) -> ?Text",
    "fs.read_text" / 1: "fs.read_text(path) -> Text; traps IO",
    "fs.write_text" / 2: "fs.write_text(path, t); traps IO",
    "fs.exists" / 1: "fs.exists(path) -> Bool",
    "random.seed" / 1: "random.seed(n): makes random deterministic",
    "random.int" / 2: "random.int(lo, hi): inclusive; traps FAIL when lo > hi",
    "random.float" / 0: "random.float() in [0, 1)",
    "io.read_line" / 0: "io.read_line() -> ?Text: the next line of stdin without `\\n` or `\\r\\n`, nil at the end; flushes stdout before it waits for input; traps IO on input that is not UTF-8",
    "io.read_all" / 0: "io.read_all() -> Text: the rest of stdin; flushes stdout first; traps IO on input that is not UTF-8",
    "io.write" / 1: "io.write(v): the value's text on stdout without a newline",
}

/// Looks a builtin up by name.
pub fn lookup(name: &str) -> Option<&'static BuiltinSpec> {
    BUILTINS.iter().find(|b| b.name == name)
}
