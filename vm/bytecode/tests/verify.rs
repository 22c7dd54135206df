//! The verifier, one test per rule: each starts from an image that verifies, breaks
//! exactly one rule and checks that the matching error (and, for a few, its exact text)
//! comes back.

mod common;

use common::*;
use wo_bytecode::image::{ColumnType, QueryAgg, QueryCol};
use wo_bytecode::*;

/// `main` (f0, arity 0, 4 registers) with `code` followed by `RET_NIL`, in an image with
/// two constants, two functions, the Point class, `print` and `min_int`, two globals.
fn with_main(code: &[Op]) -> Image {
    let mut rows: Vec<(Op, u32, u32)> = code.iter().map(|op| (*op, 1, 1)).collect();
    rows.push((Op::RetNil {}, 2, 1));
    Image {
        files: vec!["t.wo".to_string()],
        consts: vec![Const::Int(1), Const::Text("a".to_string())],
        functions: vec![
            func("main", 0, 4, 0, &rows),
            func("two", 2, 2, 0, &[(Op::Ret { a: Reg(1) }, 5, 1)]),
        ],
        classes: vec![Class {
            name: "Point".to_string(),
            fields: vec!["x".to_string(), "y".to_string()],
        }],
        builtins: vec![
            BuiltinRef {
                name: "print".to_string(),
                arity: 1,
            },
            BuiltinRef {
                name: "min_int".to_string(),
                arity: 2,
            },
        ],
        n_globals: 2,
        init: None,
        entry: FuncIdx(0),
        ..Image::default()
    }
}

fn err(image: &Image) -> VerifyError {
    verify(image).expect_err("the image breaks a rule")
}

fn r(i: u16) -> Reg {
    Reg(i)
}

#[test]
fn baseline_verifies() {
    let image = with_main(&[
        Op::LoadConst {
            a: r(0),
            k: ConstIdx(1),
        },
        Op::NewList {
            a: r(0),
            b: r(0),
            n: 4,
        },
        Op::NewMap {
            a: r(0),
            b: r(0),
            n: 2,
        },
        Op::ConcatN {
            a: r(0),
            b: r(1),
            n: 3,
        },
        Op::CallBuiltin {
            f: BuiltinIdx(1),
            base: r(2),
            n: 2,
        },
        Op::Call {
            f: FuncIdx(1),
            base: r(2),
        },
        Op::NewObj {
            a: r(0),
            c: ClassIdx(0),
            b: r(2),
        },
        Op::GetGlobal {
            a: r(0),
            g: GlobalIdx(1),
        },
        Op::GetField {
            a: r(0),
            b: r(1),
            f: FieldIdx(65534),
        },
        Op::JumpIf { a: r(0), t: Pc(10) },
    ]);
    assert_eq!(verify(&image), Ok(()));
    assert_eq!(verify(&sample_image()), Ok(()));
}

#[test]
fn register_out_of_range() {
    let mut image = with_main(&[
        Op::LoadNil { a: r(0) },
        Op::LoadNil { a: r(1) },
        Op::LoadNil { a: r(2) },
        Op::Move { a: r(0), b: r(9) },
    ]);
    let e = err(&image);
    assert_eq!(
        e.to_string(),
        "function `main` pc 3: register r9 out of range (function has 4 registers)"
    );
    // The last register is fine, one past it is not.
    image.functions[0].code[3] = Op::Move { a: r(0), b: r(3) };
    assert_eq!(verify(&image), Ok(()));
    image.functions[0].code[3] = Op::Move { a: r(4), b: r(3) };
    assert!(matches!(
        verify(&image),
        Err(VerifyError::Register { reg: 4, pc: 3, .. })
    ));
}

#[test]
fn new_list_run_out_of_range() {
    let image = with_main(&[Op::NewList {
        a: r(0),
        b: r(1),
        n: 4,
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 1,
            len: 4,
            n_regs: 4,
            ..
        }
    ));
}

#[test]
fn counted_loop_registers_must_fit_the_frame() {
    // The counter, count and step live in `a … a+2`: from r2 that needs r4, one past
    // the frame of 4, though `a` and `v` themselves are in range.
    for op in [
        Op::ForPrep {
            a: r(2),
            v: r(0),
            t: Pc(1),
        },
        Op::ForLoop {
            a: r(2),
            v: r(0),
            t: Pc(0),
        },
    ] {
        assert!(matches!(
            err(&with_main(&[op])),
            VerifyError::RegisterRun {
                base: 2,
                len: 3,
                n_regs: 4,
                ..
            }
        ));
    }
    let fits = with_main(&[Op::ForPrep {
        a: r(1),
        v: r(0),
        t: Pc(1),
    }]);
    assert_eq!(verify(&fits), Ok(()));
    let past_the_end = with_main(&[Op::ForLoop {
        a: r(0),
        v: r(3),
        t: Pc(9),
    }]);
    assert!(matches!(
        err(&past_the_end),
        VerifyError::JumpTarget { target: 9, .. }
    ));
}

#[test]
fn new_map_run_counts_two_registers_per_pair() {
    // 2 pairs from r1 need r1..r4: one too many, though r1 + 2 would fit.
    let image = with_main(&[Op::NewMap {
        a: r(0),
        b: r(1),
        n: 2,
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 1,
            len: 4,
            ..
        }
    ));
}

#[test]
fn concat_n_run_out_of_range() {
    let image = with_main(&[Op::ConcatN {
        a: r(0),
        b: r(2),
        n: 3,
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 2,
            len: 3,
            ..
        }
    ));
}

#[test]
fn call_builtin_run_out_of_range() {
    let image = with_main(&[Op::CallBuiltin {
        f: BuiltinIdx(1),
        base: r(3),
        n: 2,
    }]);
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::RegisterRun {
            base: 3,
            len: 2,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: 2 registers from r3 out of range (function has 4 registers)"
    );
}

#[test]
fn call_needs_room_for_the_callee_arguments() {
    // `two` has arity 2: arguments in r3 and r4, but main has only r0..r3.
    let image = with_main(&[Op::Call {
        f: FuncIdx(1),
        base: r(3),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 3,
            len: 2,
            ..
        }
    ));
}

#[test]
fn new_obj_needs_room_for_the_fields() {
    let image = with_main(&[Op::NewObj {
        a: r(0),
        c: ClassIdx(0),
        b: r(3),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 3,
            len: 2,
            ..
        }
    ));
}

#[test]
fn constant_index_out_of_range() {
    let image = with_main(&[Op::LoadConst {
        a: r(0),
        k: ConstIdx(2),
    }]);
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::Index {
            kind: IndexKind::Const,
            index: 2,
            count: 2,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: constant k2 out of range (image has 2 constants)"
    );
}

#[test]
fn function_index_out_of_range() {
    let image = with_main(&[Op::Call {
        f: FuncIdx(7),
        base: r(0),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::Index {
            kind: IndexKind::Func,
            index: 7,
            count: 2,
            ..
        }
    ));
}

#[test]
fn class_index_out_of_range() {
    let image = with_main(&[Op::NewObj {
        a: r(0),
        c: ClassIdx(1),
        b: r(0),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::Index {
            kind: IndexKind::Class,
            index: 1,
            count: 1,
            ..
        }
    ));
}

#[test]
fn builtin_index_out_of_range() {
    let image = with_main(&[Op::CallBuiltin {
        f: BuiltinIdx(2),
        base: r(0),
        n: 1,
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::Index {
            kind: IndexKind::Builtin,
            index: 2,
            count: 2,
            ..
        }
    ));
}

#[test]
fn global_index_out_of_range() {
    let image = with_main(&[Op::SetGlobal {
        g: GlobalIdx(2),
        a: r(0),
    }]);
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::Index {
            kind: IndexKind::Global,
            index: 2,
            count: 2,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: global g2 out of range (image has 2 globals)"
    );
}

#[test]
fn jump_target_out_of_range() {
    // Two instructions (the jump and RET_NIL): @2 is one past the end.
    let image = with_main(&[Op::JumpIfNot { a: r(0), t: Pc(2) }]);
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::JumpTarget {
            target: 2,
            len: 2,
            pc: 0,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: jump target @2 out of range (function has 2 instructions)"
    );
}

#[test]
fn fused_compare_jump_target_out_of_range() {
    let image = with_main(&[Op::JumpUnlessCmpInt {
        b: r(0),
        c: r(1),
        op: Cmp::Lt,
        t: Pc(9),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::JumpTarget { target: 9, .. }
    ));
}

#[test]
fn try_enter_target_out_of_range() {
    let image = with_main(&[Op::TryEnter {
        t: Pc(5),
        err: r(0),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::JumpTarget { target: 5, .. }
    ));
}

#[test]
fn try_enter_error_register_out_of_range() {
    let image = with_main(&[Op::TryEnter {
        t: Pc(1),
        err: r(4),
    }]);
    assert!(matches!(err(&image), VerifyError::Register { reg: 4, .. }));
}

#[test]
fn empty_code_is_refused() {
    let mut image = with_main(&[]);
    image.functions[1].code.clear();
    image.functions[1].pos.clear();
    let e = err(&image);
    assert!(matches!(e, VerifyError::EmptyCode { .. }));
    assert_eq!(e.to_string(), "function `two` has no code");
}

#[test]
fn last_instruction_must_be_a_terminator() {
    let mut image = with_main(&[Op::LoadNil { a: r(0) }]);
    image.functions[0].code.pop();
    image.functions[0].pos.pop();
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::FallsOffEnd {
            pc: 0,
            mnemonic: "LOAD_NIL",
            ..
        }
    ));
    // A conditional jump is not enough: it falls through when the condition fails.
    let mut image = with_main(&[Op::LoadNil { a: r(0) }]);
    image.functions[0].code[1] = Op::JumpIfNil { a: r(0), t: Pc(0) };
    assert!(matches!(
        err(&image),
        VerifyError::FallsOffEnd { pc: 1, .. }
    ));
    // RET and JUMP are.
    image.functions[0].code[1] = Op::Jump { t: Pc(0) };
    assert_eq!(verify(&image), Ok(()));
    image.functions[0].code[1] = Op::Ret { a: r(0) };
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn builtin_call_count_must_match_arity() {
    let image = with_main(&[Op::CallBuiltin {
        f: BuiltinIdx(0),
        base: r(0),
        n: 2,
    }]);
    let e = err(&image);
    assert!(matches!(e, VerifyError::BuiltinArgs { n: 2, arity: 1, .. }));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: builtin `print` called with 2 arguments (it takes 1)"
    );
}

#[test]
fn spawn_argument_count_must_match_arity_and_stay_in_the_frame() {
    let spawn = |n, base| {
        with_main(&[Op::Spawn {
            a: r(0),
            f: FuncIdx(1),
            base: r(base),
            n,
        }])
    };
    assert_eq!(verify(&spawn(2, 1)), Ok(()));
    let e = err(&spawn(1, 1));
    assert!(matches!(e, VerifyError::SpawnArgs { n: 1, arity: 2, .. }));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: SPAWN passes 1 arguments to `two`, which takes 2"
    );
    assert!(matches!(
        err(&spawn(2, 3)),
        VerifyError::RegisterRun {
            base: 3,
            len: 2,
            ..
        }
    ));
}

#[test]
fn unknown_builtin_name_is_refused() {
    let mut image = with_main(&[]);
    image.builtins.push(BuiltinRef {
        name: "launch_missiles".to_string(),
        arity: 0,
    });
    let e = err(&image);
    assert!(matches!(e, VerifyError::UnknownBuiltin { index: 2, .. }));
    assert_eq!(
        e.to_string(),
        "builtin b2 `launch_missiles` is not in this wo's builtin catalogue"
    );
}

#[test]
fn builtin_arity_must_match_the_catalogue() {
    let mut image = with_main(&[]);
    image.builtins[0].arity = 2;
    assert!(matches!(
        err(&image),
        VerifyError::BuiltinArity {
            index: 0,
            arity: 2,
            expected: 1,
            ..
        }
    ));
}

#[test]
fn registers_must_cover_the_arity() {
    let mut image = with_main(&[]);
    image.functions[1].n_regs = 1;
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::RegsBelowArity {
            arity: 2,
            n_regs: 1,
            ..
        }
    ));
}

#[test]
fn one_position_per_instruction() {
    let mut image = with_main(&[Op::Nop {}]);
    image.functions[0].pos.pop();
    assert!(matches!(
        err(&image),
        VerifyError::PosCount {
            n_code: 2,
            n_pos: 1,
            ..
        }
    ));
}

#[test]
fn position_file_out_of_range() {
    let mut image = with_main(&[Op::Nop {}]);
    image.functions[0].pos[1].file = 1;
    let e = err(&image);
    assert!(matches!(
        e,
        VerifyError::PosFile {
            pc: 1,
            file: 1,
            n_files: 1,
            ..
        }
    ));
}

#[test]
fn entry_must_exist() {
    let mut image = with_main(&[]);
    image.entry = FuncIdx(2);
    assert!(matches!(
        err(&image),
        VerifyError::NoEntry {
            entry: 2,
            n_functions: 2
        }
    ));
}

#[test]
fn entry_arity_is_zero_or_one() {
    let mut image = with_main(&[]);
    image.entry = FuncIdx(1);
    let e = err(&image);
    assert!(matches!(e, VerifyError::EntryArity { arity: 2, .. }));
    assert_eq!(
        e.to_string(),
        "entry function `two` has arity 2 (expected 0 or 1)"
    );
    // Arity 1 (main receiving the arguments) is allowed.
    image.functions[1].arity = 1;
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn init_must_exist() {
    let mut image = with_main(&[]);
    image.init = Some(FuncIdx(5));
    assert!(matches!(err(&image), VerifyError::NoInit { init: 5, .. }));
}

#[test]
fn init_arity_is_zero() {
    let mut image = with_main(&[]);
    image.init = Some(FuncIdx(1));
    assert!(matches!(
        err(&image),
        VerifyError::InitArity { arity: 2, .. }
    ));
    image.init = Some(FuncIdx(0));
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn field_index_65535_is_refused() {
    for op in [
        Op::GetField {
            a: r(0),
            b: r(1),
            f: FieldIdx(u16::MAX),
        },
        Op::SetField {
            a: r(0),
            f: FieldIdx(u16::MAX),
            b: r(1),
        },
    ] {
        let image = with_main(&[op]);
        assert!(matches!(
            err(&image),
            VerifyError::FieldIndex {
                field: u16::MAX,
                ..
            }
        ));
    }
}

#[test]
fn an_empty_run_may_start_one_past_the_last_register() {
    // `[]` compiled when the frame is full: `b` is r4 in a 4-register frame, read never.
    for op in [
        Op::NewList {
            a: r(0),
            b: r(4),
            n: 0,
        },
        Op::NewMap {
            a: r(0),
            b: r(4),
            n: 0,
        },
        Op::ConcatN {
            a: r(0),
            b: r(4),
            n: 0,
        },
    ] {
        assert_eq!(verify(&with_main(&[op])), Ok(()), "{}", op.mnemonic());
    }
    // One further is out of range even though nothing is read.
    let image = with_main(&[Op::NewList {
        a: r(0),
        b: r(5),
        n: 0,
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 5,
            len: 0,
            ..
        }
    ));
    // The result register is still an ordinary register operand.
    let image = with_main(&[Op::NewList {
        a: r(4),
        b: r(0),
        n: 0,
    }]);
    assert!(matches!(err(&image), VerifyError::Register { reg: 4, .. }));
}

#[test]
fn a_call_base_must_be_a_register_even_without_arguments() {
    // CALL and CALL_BUILTIN write their result to R[base].
    let mut image = with_main(&[Op::Call {
        f: FuncIdx(2),
        base: r(4),
    }]);
    image
        .functions
        .push(func("zero", 0, 1, 0, &[(Op::RetNil {}, 9, 1)]));
    assert!(matches!(err(&image), VerifyError::Register { reg: 4, .. }));
}

// ---------------------------------------------------------------------------------------
// Tables, queries and the database instructions
// ---------------------------------------------------------------------------------------

/// [`with_main`] with the sample schema (`departments` t0 of class c2, `employees` t1
/// of class c3 with 7 columns, queries q0–q6; q0 takes 4 arguments) and 8 registers.
fn with_db(code: &[Op]) -> Image {
    let mut image = with_main(code);
    image.functions[0].n_regs = 8;
    image.classes = sample_image().classes;
    image.tables = sample_tables();
    image.queries = sample_queries();
    image
}

fn table_problem(image: &Image) -> String {
    match err(image) {
        e @ VerifyError::Table { .. } => e.to_string(),
        other => panic!("expected a table error, got {other:?}"),
    }
}

fn query_problem(image: &Image) -> String {
    match err(image) {
        e @ VerifyError::Query { .. } => e.to_string(),
        other => panic!("expected a query error, got {other:?}"),
    }
}

#[test]
fn database_instructions_verify() {
    let image = with_db(&[
        Op::DbInsert {
            a: r(0),
            t: TableIdx(1),
            b: r(1),
        },
        Op::DbGetField {
            a: r(0),
            b: r(1),
            t: TableIdx(1),
            f: FieldIdx(6),
        },
        Op::DbUpdateField {
            a: r(0),
            t: TableIdx(0),
            f: FieldIdx(0),
            b: r(1),
        },
        Op::DbDelete {
            a: r(0),
            t: TableIdx(1),
        },
        Op::DbFind {
            a: r(0),
            t: TableIdx(1),
            b: r(1),
        },
        Op::DbRowId { a: r(0), b: r(1) },
        Op::DbAlive { a: r(0), b: r(1) },
        Op::DbQuery {
            a: r(0),
            q: QueryIdx(0),
            b: r(4),
        },
        // q1 takes no arguments: its empty run may start one past the last register.
        Op::DbQuery {
            a: r(0),
            q: QueryIdx(1),
            b: r(8),
        },
        Op::TxBegin {},
        Op::TxCommit {},
    ]);
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn table_and_query_operands_must_be_in_range() {
    let image = with_db(&[Op::DbDelete {
        a: r(0),
        t: TableIdx(2),
    }]);
    assert_eq!(
        err(&image).to_string(),
        "function `main` pc 0: table t2 out of range (image has 2 tables)"
    );
    let image = with_db(&[Op::DbQuery {
        a: r(0),
        q: QueryIdx(7),
        b: r(0),
    }]);
    assert_eq!(
        err(&image).to_string(),
        "function `main` pc 0: query q7 out of range (image has 7 queries)"
    );
}

#[test]
fn db_insert_reads_one_register_per_column() {
    let image = with_db(&[Op::DbInsert {
        a: r(0),
        t: TableIdx(1),
        b: r(2),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 2,
            len: 7,
            n_regs: 8,
            ..
        }
    ));
}

#[test]
fn db_query_reads_its_arguments_from_a_run() {
    let image = with_db(&[Op::DbQuery {
        a: r(0),
        q: QueryIdx(0),
        b: r(5),
    }]);
    assert!(matches!(
        err(&image),
        VerifyError::RegisterRun {
            base: 5,
            len: 4,
            ..
        }
    ));
}

#[test]
fn db_field_indices_must_name_a_column() {
    for op in [
        Op::DbGetField {
            a: r(0),
            b: r(1),
            t: TableIdx(0),
            f: FieldIdx(1),
        },
        Op::DbUpdateField {
            a: r(0),
            t: TableIdx(0),
            f: FieldIdx(1),
            b: r(1),
        },
    ] {
        let e = err(&with_db(&[op]));
        assert_eq!(
            e.to_string(),
            "function `main` pc 0: column .1 out of range (table `departments` has 1 columns)"
        );
    }
}

#[test]
fn a_table_needs_an_existing_class_of_its_own() {
    let mut image = with_db(&[]);
    image.tables[1].class = ClassIdx(9);
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: class c9 out of range (image has 4 classes)"
    );
    let mut image = with_db(&[]);
    image.tables[1].class = ClassIdx(2);
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: class `Department` already belongs to table t0 `departments`"
    );
}

#[test]
fn columns_are_the_class_fields() {
    let mut image = with_db(&[]);
    image.tables[1].columns.pop();
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: has 6 columns but class `Employee` has 7 fields"
    );
    let mut image = with_db(&[]);
    image.tables[1].columns[2].name = "lvl".to_string();
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: column 2 is named `lvl` but field 2 of class `Employee` is \
         `level`"
    );
}

#[test]
fn ref_columns_name_a_table() {
    let mut image = with_db(&[]);
    image.tables[1].columns[3].ty = ColumnType::Ref(2);
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: column `dept` refers to table t2 (image has 2 tables)"
    );
}

#[test]
fn indexes_name_existing_columns() {
    let mut image = with_db(&[]);
    image.tables[1].indexes[1].columns.push(7);
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: index 1 names column 7 (table has 7 columns)"
    );
    let mut image = with_db(&[]);
    image.tables[0].indexes[0].columns.clear();
    assert_eq!(
        table_problem(&image),
        "table t0 `departments`: index 0 has no columns"
    );
}

#[test]
fn a_sorted_index_has_exactly_one_column() {
    let mut image = with_db(&[]);
    image.tables[1].indexes[2].columns.push(2);
    assert_eq!(
        table_problem(&image),
        "table t1 `employees`: sorted index 2 has 2 columns (exactly one expected)"
    );
    // Hash indexes may have several.
    let mut image = with_db(&[]);
    image.tables[1].indexes[0].columns = vec![0, 1, 2];
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn a_query_reads_an_existing_table() {
    let mut image = with_db(&[]);
    image.queries[1].table = 5;
    assert_eq!(
        query_problem(&image),
        "query q1: table t5 out of range (image has 2 tables)"
    );
}

#[test]
fn query_columns_must_exist() {
    let mut image = with_db(&[]);
    image.queries[0].preds[1].col = QueryCol::Col(7);
    assert_eq!(
        query_problem(&image),
        "query q0: predicate 1 reads column 7 (table `employees` has 7 columns)"
    );
    let mut image = with_db(&[]);
    image.queries[0].order[0].0 = QueryCol::Col(9);
    assert_eq!(
        query_problem(&image),
        "query q0: order key 0 reads column 9 (table `employees` has 7 columns)"
    );
    let mut image = with_db(&[]);
    image.queries[3].agg = QueryAgg::Sum(QueryCol::Col(7));
    assert_eq!(
        query_problem(&image),
        "query q3: the aggregate reads column 7 (table `employees` has 7 columns)"
    );
    // The id is always there.
    let mut image = with_db(&[]);
    image.queries[3].agg = QueryAgg::Max(QueryCol::Id);
    assert_eq!(verify(&image), Ok(()));
}

#[test]
fn query_arguments_must_be_passed() {
    let mut image = with_db(&[]);
    image.queries[0].preds[0].arg = 4;
    assert_eq!(
        query_problem(&image),
        "query q0: predicate 0 reads argument 4 (the query takes 4)"
    );
    let mut image = with_db(&[]);
    image.queries[0].skip = Some(4);
    assert_eq!(
        query_problem(&image),
        "query q0: skip reads argument 4 (the query takes 4)"
    );
    let mut image = with_db(&[]);
    image.queries[0].take = Some(9);
    assert_eq!(
        query_problem(&image),
        "query q0: take reads argument 9 (the query takes 4)"
    );
}

/// Issue 13 I1: an image asking for 2^32 - 1 global slots, with an instruction naming
/// the last one, made `Vm::new` try to allocate 103 GB. Refused by the verifier, and
/// so by `read_image`.
#[test]
fn too_many_global_slots_are_refused() {
    let mut image = with_main(&[Op::GetGlobal {
        a: r(0),
        g: GlobalIdx(u32::MAX - 1),
    }]);
    image.n_globals = u32::MAX;
    let e = err(&image);
    assert_eq!(
        e,
        VerifyError::TooManyGlobals {
            n_globals: u32::MAX,
            max: MAX_GLOBALS
        }
    );
    assert_eq!(
        e.to_string(),
        "the image asks for 4294967295 global slots (at most 1048576)"
    );
    assert!(read_image(&write_image(&image)).is_err());
    image.n_globals = MAX_GLOBALS;
    image.functions[0].code[0] = Op::GetGlobal {
        a: r(0),
        g: GlobalIdx(MAX_GLOBALS - 1),
    };
    assert_eq!(verify(&image), Ok(()));
}

/// Issue 13 I2: a TRY_ENTER whose handler is the TRY_ENTER itself (or earlier) loops
/// on a trap without a back edge, so `Vm::resume` never ran out of budget.
#[test]
fn try_enter_handler_must_come_later() {
    for t in [0, 1] {
        let image = with_main(&[
            Op::LoadInt { a: r(1), v: 0 },
            Op::TryEnter {
                t: Pc(t),
                err: r(0),
            },
            Op::DivInt {
                a: r(2),
                b: r(1),
                c: r(1),
            },
        ]);
        let e = err(&image);
        assert_eq!(
            e,
            VerifyError::HandlerNotForward {
                function: "main".into(),
                pc: 1,
                target: t
            }
        );
        assert!(read_image(&write_image(&image)).is_err());
    }
    let e = err(&with_main(&[Op::TryEnter {
        t: Pc(0),
        err: r(0),
    }]));
    assert_eq!(
        e.to_string(),
        "function `main` pc 0: TRY_ENTER handler @0 is not after the TRY_ENTER (a handler \
         must come later in the code)"
    );
}
