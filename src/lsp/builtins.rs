//! The signature and a line of documentation of every builtin function, for hover and
//! completion (LANGUAGE.md §11 in short). The checker's catalogue
//! (`wo_compiler::check::CORE`, `MODULE_FUNCTIONS`) is the list of names; a test checks
//! that every name there has its entry here, so the two cannot drift apart.

/// `(name, signature, doc)`; a module function's name is `module.function`. In
/// signatures `T` is an element type, `K`/`V` a map's key and value types.
pub const DOCS: &[(&str, &str, &str)] = &[
    (
        "print",
        "print(v: any)",
        "Prints the value's text and a newline on stdout.",
    ),
    (
        "print_err",
        "print_err(v: any)",
        "Prints the value's text and a newline on stderr.",
    ),
    (
        "len",
        "len(v: Text | multi T | map<K, V>) -> Int",
        "The number of characters of a Text, elements of a list or entries of a map.",
    ),
    (
        "text",
        "text(v: any) -> Text",
        "The value as text, as `print` writes it.",
    ),
    ("int", "int(f: Float) -> Int", "Converts toward zero."),
    (
        "float",
        "float(i: Int) -> Float",
        "Converts an Int to a Float.",
    ),
    (
        "parse_int",
        "parse_int(t: Text) -> ?Int",
        "An optional sign and decimal digits, nothing else; nil otherwise.",
    ),
    (
        "parse_float",
        "parse_float(t: Text) -> ?Float",
        "A decimal Float; nil when `t` is not one.",
    ),
    (
        "abs",
        "abs(x: Int | Float) -> Int | Float",
        "The absolute value.",
    ),
    (
        "min",
        "min(a: T, b: T) -> T",
        "The smaller of two Ints, Floats or Texts.",
    ),
    (
        "max",
        "max(a: T, b: T) -> T",
        "The larger of two Ints, Floats or Texts; on a list or query, its largest element.",
    ),
    (
        "unwrap",
        "unwrap(x: ?T) -> T",
        "The value of `x`; traps `NIL` when it is nil.",
    ),
    (
        "fail",
        "fail(msg: Text)",
        "Traps `FAIL` with the message (catchable with `try`).",
    ),
    (
        "assert",
        "assert(cond: Bool [, msg: Text])",
        "Traps `ASSERT` when `cond` is false.",
    ),
    (
        "exit",
        "exit(code: Int)",
        "Ends the program with the exit status `code`.",
    ),
    (
        "substr",
        "substr(t: Text, start: Int, n: Int) -> Text",
        "`n` characters of `t` from character `start`.",
    ),
    (
        "index_of",
        "index_of(t: Text, s: Text) -> Int",
        "The character position of `s` in `t`, -1 when absent.",
    ),
    (
        "contains",
        "contains(t: Text, s: Text) -> Bool | contains(xs: multi T, v: T) -> Bool",
        "Whether `t` contains `s`, or the list `xs` the value `v`.",
    ),
    (
        "starts_with",
        "starts_with(t: Text, s: Text) -> Bool",
        "Whether `t` begins with `s`.",
    ),
    (
        "ends_with",
        "ends_with(t: Text, s: Text) -> Bool",
        "Whether `t` ends with `s`.",
    ),
    (
        "split",
        "split(t: Text, sep: Text) -> multi Text",
        "The fields of `t` between separators; empty fields are kept.",
    ),
    (
        "join",
        "join(xs: multi Text, sep: Text) -> Text | join(t: task<T>) -> T",
        "The Texts joined with `sep`; or waits for a task and gives its result.",
    ),
    (
        "trim",
        "trim(t: Text) -> Text",
        "`t` without leading and trailing white space.",
    ),
    (
        "to_upper",
        "to_upper(t: Text) -> Text",
        "`t` in upper case.",
    ),
    (
        "to_lower",
        "to_lower(t: Text) -> Text",
        "`t` in lower case.",
    ),
    (
        "replace",
        "replace(t: Text, old: Text, new: Text) -> Text",
        "`t` with every occurrence of `old` replaced by `new`.",
    ),
    (
        "repeat",
        "repeat(t: Text, n: Int) -> Text",
        "`t` repeated `n` times.",
    ),
    (
        "chars",
        "chars(t: Text) -> multi Text",
        "Each character of `t` as a one-character Text (what `for c in t` walks).",
    ),
    (
        "ord",
        "ord(c: Text) -> Int",
        "The Unicode scalar value of a one-character Text; traps BOUNDS otherwise.",
    ),
    (
        "chr",
        "chr(i: Int) -> Text",
        "The character with scalar value `i`; traps BOUNDS for a value that is not one.",
    ),
    (
        "pad_left",
        "pad_left(t: Text, width: Int) -> Text",
        "`t` with spaces before it up to `width` characters; a longer text whole.",
    ),
    (
        "pad_right",
        "pad_right(t: Text, width: Int) -> Text",
        "`t` with spaces after it up to `width` characters; a longer text whole.",
    ),
    (
        "to_fixed",
        "to_fixed(x: Float, digits: Int) -> Text",
        "`x` with `digits` (0–17) decimals and no exponent, rounded half to even.",
    ),
    (
        "push",
        "push(xs: multi T, v: T)",
        "Appends `v` to the list.",
    ),
    (
        "pop",
        "pop(xs: multi T) -> ?T",
        "Removes and returns the last element; nil when the list is empty.",
    ),
    (
        "remove_at",
        "remove_at(xs: multi T, i: Int) -> T",
        "Removes and returns the element at `i`.",
    ),
    (
        "insert_at",
        "insert_at(xs: multi T, i: Int, v: T)",
        "Inserts `v` at `i` (`0 ≤ i ≤ len`).",
    ),
    (
        "slice",
        "slice(xs: multi T, lo: Int, hi: Int) -> multi T",
        "A new list of the elements `lo ≤ i < hi`.",
    ),
    (
        "sort",
        "sort(xs: multi T)",
        "Sorts in place, ascending (Int, Float or Text elements).",
    ),
    (
        "reverse",
        "reverse(xs: multi T)",
        "Reverses the list in place.",
    ),
    (
        "has",
        "has(m: map<K, V>, k: K) -> Bool",
        "Whether the map has the key.",
    ),
    (
        "get",
        "get(m: map<K, V>, k: K) -> V",
        "The value at `k` (`m[k]` gives `?V`, nil when absent).",
    ),
    (
        "set",
        "set(m: map<K, V>, k: K, v: V)",
        "Sets the value at `k`.",
    ),
    (
        "remove",
        "remove(m: map<K, V>, k: K)",
        "Removes the key (the others keep their order).",
    ),
    (
        "keys",
        "keys(m: map<K, V>) -> multi K",
        "The keys in insertion order.",
    ),
    (
        "values",
        "values(m: map<K, V>) -> multi V",
        "The values in insertion order.",
    ),
    (
        "count",
        "count(xs: multi T) -> Int",
        "The number of elements of a list or rows of a query.",
    ),
    (
        "exists",
        "exists(xs: multi T) -> Bool",
        "Whether a list or query has an element.",
    ),
    (
        "sum",
        "sum(xs: multi Int | multi Float) -> Int | Float",
        "The sum (nil elements skipped).",
    ),
    (
        "avg",
        "avg(xs: multi Int | multi Float) -> ?Float",
        "The mean (nil when empty; nil elements skipped).",
    ),
    (
        "first",
        "first(xs: multi T) -> ?T",
        "The first element of a list or query; nil when empty.",
    ),
    ("yield", "yield()", "Lets the other fibers run."),
    ("range", "range([start: Int,] stop: Int [, step: Int]) -> multi Int", "The Ints from `start` (0) up to `stop` excluded, by `step` (1); `for i in range(…)` counts without building the list."),
    (
        "time.ticks",
        "time.ticks() -> Int",
        "Microseconds on a monotonic clock.",
    ),
    (
        "time.now",
        "time.now() -> Int",
        "Milliseconds since the Unix epoch.",
    ),
    (
        "time.sleep",
        "time.sleep(ms: Int)",
        "Suspends this fiber for `ms` milliseconds.",
    ),
    (
        "math.sqrt",
        "math.sqrt(x: Float) -> Float",
        "The square root.",
    ),
    (
        "math.floor",
        "math.floor(x: Float) -> Float",
        "Rounds down.",
    ),
    ("math.ceil", "math.ceil(x: Float) -> Float", "Rounds up."),
    (
        "math.round",
        "math.round(x: Float) -> Float",
        "Rounds half away from zero.",
    ),
    (
        "math.pow",
        "math.pow(x: Float, y: Float) -> Float",
        "`x` to the power `y`.",
    ),
    (
        "env.get",
        "env.get(name: Text) -> ?Text",
        "The environment variable; nil when unset.",
    ),
    (
        "fs.read_text",
        "fs.read_text(path: Text) -> Text",
        "The file's text; traps `IO` on failure.",
    ),
    (
        "fs.write_text",
        "fs.write_text(path: Text, t: Text)",
        "Writes the file; traps `IO` on failure.",
    ),
    (
        "fs.exists",
        "fs.exists(path: Text) -> Bool",
        "Whether the path exists.",
    ),
    (
        "random.seed",
        "random.seed(n: Int)",
        "Makes the following random numbers deterministic.",
    ),
    (
        "random.int",
        "random.int(lo: Int, hi: Int) -> Int",
        "A random Int in `lo..=hi`.",
    ),
    (
        "random.float",
        "random.float() -> Float",
        "A random Float in `[0, 1)`.",
    ),
    ("io.read_line", "io.read_line() -> ?Text", "The next line of standard input without its newline; nil at the end."),
    ("io.read_all", "io.read_all() -> Text", "The rest of standard input."),
    ("io.write", "io.write(v: any)", "Writes the value's text on stdout, without a newline."),
];

/// The signature and doc of builtin `name` (`len`, `time.ticks`).
pub fn doc(name: &str) -> Option<(&'static str, &'static str)> {
    DOCS.iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, sig, doc)| (*sig, *doc))
}

/// What a module is for, in a line.
pub fn module_doc(module: &str) -> &'static str {
    match module {
        "time" => "Clocks and sleeping.",
        "math" => "Float functions and the constant `PI`.",
        "env" => "Environment variables.",
        "fs" => "Reading and writing files.",
        "random" => "Pseudo-random numbers.",
        "io" => "Standard input, and output without a newline.",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use wo_compiler::check::{CORE, MODULES, MODULE_FUNCTIONS};

    #[test]
    fn every_builtin_has_a_doc() {
        for name in CORE {
            assert!(super::doc(name).is_some(), "no doc for builtin `{name}`");
        }
        for (m, f) in MODULE_FUNCTIONS {
            let name = format!("{m}.{f}");
            assert!(super::doc(&name).is_some(), "no doc for `{name}`");
        }
        for m in MODULES {
            assert!(!super::module_doc(m).is_empty(), "no doc for module `{m}`");
        }
    }
}
