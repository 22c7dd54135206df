//! Structure-aware: fuzzer bytes -> a well-typed wo program (`wo_fuzz::gen`), which
//! must compile; then a differential check. Its image must come back unchanged from
//! the `.wob` round trip, and the program's output and ending must be the same
//! whether its tables are unindexed, hash-indexed or sorted-indexed. A program that
//! spawns fibers runs under the VM's scheduler (`wo_fuzz::run_budgeted`), whose
//! interleaving is deterministic, so the same holds for it.
#![no_main]
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use wo_fuzz::gen::{program_of, TABLE_ATTR, TABLE_VARIANTS};
use wo_fuzz::{compile, run_budgeted, End, BUDGET, GEN_ALONE_DEADLINE, GEN_DEADLINE};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(prog) = program_of(data, 0, &mut u) else {
        return;
    };
    if std::env::var_os("WO_FUZZ_PRINT").is_some() {
        eprintln!("{prog}");
    }
    let mut first: Option<wo_fuzz::Outcome> = None;
    // `wo fmt`'s contract is checked on one of the three variants (they differ in one
    // line), a different one from program to program: formatting is about half the
    // cost of a variant.
    let formatted = prog.len() % TABLE_VARIANTS.len();
    for (i, attr) in TABLE_VARIANTS.into_iter().enumerate() {
        let src = prog.replace(TABLE_ATTR, attr);
        let image = match compile(&src) {
            Ok(i) => i,
            Err(d) => panic!("a generated program does not compile: {d:?}\n{src}"),
        };
        if i == formatted {
            wo_fuzz::check_format(&src, Some(&image));
        }
        let started = std::time::Instant::now();
        let a = run_budgeted(&image, BUDGET, GEN_ALONE_DEADLINE, Some(GEN_DEADLINE));
        if std::env::var_os("WO_FUZZ_PRINT").is_some() {
            let took = started.elapsed();
            eprintln!(
                "{attr}: {:?} in {took:?}\n{}",
                a.end,
                String::from_utf8_lossy(&a.out)
            );
        }
        // The `.wob` round trip must give back the same image (as in `compile`); the
        // VM is deterministic, so the same image runs the same: running it a second
        // time checked nothing more and cost half the target's time.
        let back = wo_bytecode::read_image(&wo_bytecode::write_image(&image))
            .expect("the verifier refused a compiled image");
        assert!(
            back == image,
            "the .wob round trip changed the image\n{src}"
        );
        // A run with fibers stopped by the wall clock is not compared (the only
        // timing-dependent ending), nor one that ran out of its budget.
        if matches!(a.end, End::Deadline | End::Budget) {
            return;
        }
        match &first {
            None => first = Some(a),
            Some(f) => assert_eq!(f, &a, "access paths differ ({attr})\n{src}"),
        }
    }
});
