//! Source text -> `wo_compiler::fmt::format` (`wo fmt`), differentially: a text that
//! does not parse is refused (never a panic); one that parses is formatted, and
//! formatting the result changes nothing; the formatted program compiles exactly
//! when the original does, to the same image (source positions aside) or the same
//! diagnostics (as tests/fmt.rs checks the project's own files).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wo_compiler::fmt::format;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let body = src.strip_prefix('\u{feff}').unwrap_or(src);
    let parses = wo_compiler::parse_file(body, wo_compiler::FileId(0))
        .1
        .is_empty();
    let once = match format(src) {
        Ok(once) => once,
        Err(d) => {
            assert!(!parses, "a text that parses is refused: {d:?}");
            return;
        }
    };
    assert!(parses, "a text that does not parse was formatted");
    match format(&once) {
        Ok(twice) => assert!(
            twice == once,
            "not idempotent\n--- once\n{once}\n--- twice\n{twice}"
        ),
        Err(d) => panic!("the formatted text does not format: {d:?}\n{once}"),
    }
    let before = wo_compiler::fmt::meaning("fuzz.wo", body);
    let after = wo_compiler::fmt::meaning("fuzz.wo", &once);
    assert!(
        before == after,
        "compiles differently once formatted\n--- before\n{before:?}\n--- after\n{after:?}\n--- formatted\n{once}"
    );
});
