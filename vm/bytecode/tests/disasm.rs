//! The disassembler: a snapshot of the sample image with its source interleaved (what
//! `wo disasm` prints), plus checks that it is deterministic and never panics on an
//! image the verifier would refuse.

mod common;

use common::*;
use wo_bytecode::*;

#[test]
fn sample_snapshot() {
    let text = disasm(&sample_image(), &source_line);
    check_snapshot("sample.disasm", &text);
}

#[test]
fn source_lines_are_interleaved() {
    let text = disasm(&sample_image(), &source_line);
    let lines: Vec<&str> = text.lines().collect();
    let call = lines
        .iter()
        .position(|l| l.contains("CALL ") && l.contains("norm1(r5)"))
        .expect("the call to norm1 names its callee");
    // The source line of the call is printed above the instructions it produced.
    let src = lines[..call]
        .iter()
        .rposition(|l| l.trim_start().starts_with("; 13 | "))
        .expect("line 13 precedes its instructions");
    assert!(lines[src].ends_with("print(\"sum is \" .. text(total + norm1(p)))"));
    assert!(text.contains("fn main  (arity 0, 6 registers, entry)  ; main.wo\n"));
    assert!(text.contains("fn <init>  (arity 0, 1 register, init)  ; main.wo\n"));
}

#[test]
fn without_sources_there_are_no_source_comments() {
    let text = disasm(&sample_image(), &|_, _| None);
    assert!(!text.contains(" | "));
    assert!(text.contains("LOAD_CONST"));
}

#[test]
fn output_is_deterministic() {
    let image = sample_image();
    assert_eq!(disasm(&image, &source_line), disasm(&image, &source_line));
}

#[test]
fn unverified_images_do_not_panic() {
    let image = Image {
        functions: vec![Function {
            name: "bad".to_string(),
            arity: 0,
            n_regs: 0,
            code: vec![
                Op::LoadConst {
                    a: Reg(9),
                    k: ConstIdx(99),
                },
                Op::Call {
                    f: FuncIdx(99),
                    base: Reg(0),
                },
                Op::CallBuiltin {
                    f: BuiltinIdx(9),
                    base: Reg(0),
                    n: 1,
                },
                Op::NewObj {
                    a: Reg(0),
                    c: ClassIdx(9),
                    b: Reg(u16::MAX),
                },
                Op::NewList {
                    a: Reg(0),
                    b: Reg(u16::MAX),
                    n: u16::MAX,
                },
                Op::NewMap {
                    a: Reg(0),
                    b: Reg(u16::MAX),
                    n: u16::MAX,
                },
                Op::ConcatN {
                    a: Reg(0),
                    b: Reg(u16::MAX),
                    n: u16::MAX,
                },
                Op::GetField {
                    a: Reg(0),
                    b: Reg(0),
                    f: FieldIdx(u16::MAX),
                },
            ],
            pos: vec![SrcPos {
                file: 7,
                line: 3,
                col: 1,
            }],
        }],
        ..Image::default()
    };
    let text = disasm(&image, &source_line);
    assert!(text.starts_with("fn bad  (arity 0, 0 registers, entry)\n"));
    assert_eq!(text.lines().count(), 1 + 8);
}

#[test]
fn a_line_from_another_file_names_its_file() {
    let mut image = sample_image();
    image.functions[2].pos[5].file = 1;
    let text = disasm(&image, &|file, line| {
        Some(format!("line {line} of file {file}"))
    });
    assert!(text.contains("; 4 | line 4 of file 0\n"), "{text}");
    assert!(
        text.contains("; every_op.wo:4 | line 4 of file 1\n"),
        "{text}"
    );
}

#[test]
fn database_instructions_name_tables_columns_and_queries() {
    let text = disasm(&sample_image(), &|_, _| None);
    for expected in [
        "; insert into employees (name, salary, level, dept, manager, rating, active)",
        "; delete from departments",
        "; from employees where dept == arg0 and salary >= arg1 order by salary desc, id \
         skip arg2 take arg3 → rows",
        "TX_BEGIN",
        "; commit transaction",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    // A column read names its table and column (the comment column's width depends on
    // the function's longest operands).
    assert!(
        text.lines().any(|l| l.contains("DB_GET_FIELD")
            && l.contains("t1, .1 ")
            && l.ends_with("; employees.salary")),
        "no read of employees.salary in\n{text}"
    );
    // Each aggregate, through one DB_QUERY per descriptor.
    let mut image = sample_image();
    let code: Vec<(Op, u32, u32)> = (0..7u32)
        .map(|q| {
            (
                Op::DbQuery {
                    a: Reg(0),
                    q: QueryIdx(q),
                    b: Reg(0),
                },
                1,
                1,
            )
        })
        .chain([(Op::RetNil {}, 1, 1)])
        .collect();
    image.functions = vec![func("main", 0, 4, 0, &code)];
    image.init = None;
    image.entry = FuncIdx(0);
    let text = disasm(&image, &|_, _| None);
    let comments: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("; ").map(|(_, c)| c))
        .collect();
    // The header names the function's file (`; main.wo`), then one comment per query.
    assert_eq!(
        comments[2..],
        [
            "from employees → count",
            "from departments where id == arg0 → exists",
            "from employees → sum(salary)",
            "from employees → min(id)",
            "from employees → max(rating)",
            "from employees → avg(level)",
        ]
    );
}

#[test]
fn get_field_comments_leave_out_table_classes() {
    let text = disasm(&sample_image(), &|_, _| None);
    assert!(text.contains(".0  ; Point.x\n"), "{text}");
}
