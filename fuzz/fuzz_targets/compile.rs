//! Source text -> `wo_compiler::compile`: diagnostics or an image, never a panic. An
//! image the compiler makes must survive the `.wob` round trip unchanged, and a source
//! that parses must keep `wo fmt`'s contract (`wo_fuzz::check_format`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let compiled = wo_fuzz::compile(src);
    if let (Some(_), Err(diags)) = (std::env::var_os("WO_FUZZ_WOB"), &compiled) {
        for d in diags {
            eprintln!("{}: {} at {:?}", d.code, d.message, d.span);
        }
    }
    if let Ok(image) = &compiled {
        let bytes = wo_bytecode::write_image(image);
        // Making seeds for `image` without the `wo` binary: `WO_FUZZ_WOB=out.wob
        // fuzz/target/release/compile prog.wo` writes the image, or prints the
        // diagnostics (docs/fuzzing.md).
        if let Some(path) = std::env::var_os("WO_FUZZ_WOB") {
            std::fs::write(&path, &bytes).expect("write WO_FUZZ_WOB");
        }
        let back = wo_bytecode::read_image(&bytes)
            .unwrap_or_else(|e| panic!("the verifier refused a compiled image: {e}"));
        assert!(back == *image, "the .wob round trip changed the image");
    }
    wo_fuzz::check_format(src, compiled.as_ref().ok());
});
