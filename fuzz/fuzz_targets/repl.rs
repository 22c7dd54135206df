//! Text -> the REPL's input splitter (`wo_compiler::repl_input`): when `wo repl` runs
//! what it has read and when it asks for another line. It never panics, terminates
//! (libFuzzer's timeout), and its verdict does not depend on trailing blank space:
//! an input and the same input followed by a newline (or spaces and a newline) are
//! classified alike. Checked for the whole text and for the input read up to each
//! line break (as the REPL sees it, a line at a time; the first 64 lines).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wo_compiler::repl_input::{completeness, continues, is_declaration};

fn check(text: &str) {
    let verdict = completeness(text);
    for tail in ["\n", "  \n\n"] {
        let longer = format!("{text}{tail}");
        let again = completeness(&longer);
        assert!(
            again == verdict,
            "{verdict:?} for {text:?} but {again:?} once followed by {tail:?}"
        );
    }
    is_declaration(text);
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    check(src);
    for (i, _) in src.match_indices('\n').take(64) {
        check(&src[..=i]);
    }
    for line in src.lines().take(64) {
        continues(line);
    }
});
