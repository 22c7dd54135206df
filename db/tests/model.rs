//! The engine against a naive model (`engine_model/mod.rs`), driven by proptest. The
//! same cases are fuzzed, coverage-guided, by `fuzz/fuzz_targets/engine.rs`.

mod engine_model;

use engine_model::{run_case, RawCol, RawTable};
use proptest::prelude::*;

fn raw_table() -> impl Strategy<Value = RawTable> {
    (
        prop::collection::vec(
            (0u8..5, any::<bool>(), any::<u8>()).prop_map(|(ty, nullable, target)| RawCol {
                ty,
                nullable,
                target,
            }),
            1..=5,
        ),
        prop::collection::vec((0u8..3, any::<u8>(), prop::option::of(any::<u8>())), 0..=3),
    )
        .prop_map(|(cols, indexes)| RawTable { cols, indexes })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_model(
        raw in prop::collection::vec(raw_table(), 1..=3),
        ops in prop::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>(), prop::collection::vec(any::<u16>(), 8)), 1..200),
    ) {
        run_case(raw, ops).map_err(TestCaseError::fail)?;
    }
}
