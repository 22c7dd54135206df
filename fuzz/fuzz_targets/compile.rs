//! Source text -> `wo_compiler::compile`: diagnostics or an image, never a panic. An
//! image the compiler makes must survive the `.wob` round trip unchanged.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(image) = wo_fuzz::compile(src) {
        let bytes = wo_bytecode::write_image(&image);
        let back = wo_bytecode::read_image(&bytes)
            .unwrap_or_else(|e| panic!("the verifier refused a compiled image: {e}"));
        assert!(back == image, "the .wob round trip changed the image");
    }
});
