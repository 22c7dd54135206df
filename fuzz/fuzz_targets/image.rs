//! Bytes -> `read_image` (verified image or error), and every image the verifier
//! accepts runs in the VM (`wo_fuzz::run_budgeted`: under an instruction budget, and
//! when it waits, again with its fibers under the scheduler, in short turns, and a
//! deadline): a verified image must never panic, abort or loop without spending its
//! budget. The format version is set to
//! this build's and the CRC32 trailer re-sealed after mutation, so the section
//! decoders and the verifier are reached. `WO_FUZZ_PRINT=1` prints how each run ended, `=2` the image's code too.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn print() -> bool {
    static P: OnceLock<bool> = OnceLock::new();
    *P.get_or_init(|| std::env::var_os("WO_FUZZ_PRINT").is_some())
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    wo_fuzz::reseal_image(&mut bytes);
    if let Ok(image) = wo_bytecode::read_image(&bytes) {
        if print() && std::env::var_os("WO_FUZZ_PRINT").is_some_and(|v| v == "2") {
            eprintln!("{}", wo_bytecode::disasm::disasm(&image, &|_, _| None));
        }
        let start = std::time::Instant::now();
        let deadline = Some(wo_fuzz::IMAGE_DEADLINE);
        let run = wo_fuzz::run_budgeted(&image, wo_fuzz::BUDGET, wo_fuzz::ALONE_DEADLINE, deadline);
        if print() {
            eprintln!(
                "spawns: {}, {:?} in {:?}, {} bytes of output",
                wo_fuzz::spawns(&image),
                run.end,
                start.elapsed(),
                run.out_len
            );
        }
    }
});
