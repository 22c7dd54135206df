//! Bytes -> `read_image` (verified image or error), and every image the verifier
//! accepts runs in the VM under an instruction budget: a verified image must never
//! panic, abort or loop without spending its budget. The format version is set to
//! this build's and the CRC32 trailer re-sealed
//! after mutation, so the section decoders and the verifier are reached.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    wo_fuzz::reseal_image(&mut bytes);
    if let Ok(image) = wo_bytecode::read_image(&bytes) {
        let _ = wo_fuzz::run_budgeted(&image, wo_fuzz::BUDGET);
    }
});
