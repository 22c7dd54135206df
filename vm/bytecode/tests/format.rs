//! The `.wob` reader and writer: round trips, the compatibility fixture, the header
//! checks (magic, version, checksum), hostile lengths, and sweeps and property tests
//! showing that no byte string makes `read_image` panic or return an unverified image.

mod common;

use std::collections::BTreeSet;

use common::*;
use proptest::prelude::*;
use wo_bytecode::*;

/// Replaces the trailer with the CRC32 of what precedes it, so a test can damage the
/// body on purpose and reach the decoder instead of the checksum check.
fn fix_crc(bytes: &mut Vec<u8>) {
    let body_len = bytes.len().saturating_sub(4);
    bytes.truncate(body_len);
    let crc = crc32fast::hash(bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
}

/// The header of a current-version image followed by `body` and a correct trailer.
fn with_header(body: &[u8]) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&[0, 0]);
    bytes.extend_from_slice(body);
    bytes.extend_from_slice(&[0; 4]);
    fix_crc(&mut bytes);
    bytes
}

/// What every successful read must satisfy: verified, and stable under a rewrite.
fn check_accepted(image: &Image) {
    assert_eq!(verify(image), Ok(()));
    let again = read_image(&write_image(image)).expect("a read image writes back readably");
    assert_eq!(&again, image);
}

#[test]
fn sample_image_verifies() {
    assert_eq!(verify(&sample_image()), Ok(()));
}

#[test]
fn every_op_covers_every_opcode() {
    let used: BTreeSet<u8> = every_op().code.iter().map(|op| op.code()).collect();
    let all: BTreeSet<u8> = OPCODES.iter().map(|(code, _, _)| *code).collect();
    assert_eq!(used, all);
}

#[test]
fn round_trip_is_identity() {
    let image = sample_image();
    let bytes = write_image(&image);
    assert_eq!(read_image(&bytes), Ok(image));
    assert_eq!(&bytes[..4], b"WOB\0");
    assert_eq!(&bytes[4..6], &FORMAT_VERSION.to_le_bytes());
}

#[test]
fn round_trip_keeps_float_bits() {
    let mut image = sample_image();
    image.consts = vec![
        Const::Float(f64::NAN),
        Const::Float(-0.0),
        Const::Float(f64::INFINITY),
        Const::Float(f64::MIN_POSITIVE / 2.0),
        Const::Int(1_000_000),
        Const::Text(String::new()),
    ];
    let back = read_image(&write_image(&image)).expect("valid image");
    let bits = |img: &Image| -> Vec<u64> {
        img.consts
            .iter()
            .filter_map(|k| match k {
                Const::Float(f) => Some(f.to_bits()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(bits(&back), bits(&image));
    assert_eq!(bits(&back).len(), 4);
    // An image equals its round trip whatever Floats it holds: the fuzz targets
    // check `read_image(write_image(i)) == i` (helper-81: a NaN default failed it).
    assert_eq!(back, image);
    assert_ne!(Const::Float(0.0), Const::Float(-0.0));
    let mut nan_default = with_renames_and_defaults(sample_image());
    nan_default.tables[1].columns[5].default =
        Some(wo_bytecode::image::ColumnDefault::Float(f64::NAN));
    let back = read_image(&write_image(&nan_default)).expect("valid image");
    assert_eq!(back, nan_default);
}

#[test]
fn round_trip_minimal_image() {
    let image = Image {
        files: vec![String::new()],
        functions: vec![func("main", 0, 0, 0, &[(Op::RetNil {}, 0, 0)])],
        ..Image::default()
    };
    assert_eq!(read_image(&write_image(&image)), Ok(image));
}

#[test]
fn debug_table_is_compressed() {
    // One run for many instructions on the same position costs a few bytes.
    let rows: Vec<(Op, u32, u32)> = (0..1000)
        .map(|_| (Op::Nop {}, 7, 3))
        .chain([(Op::RetNil {}, 8, 1)])
        .collect();
    let small = Image {
        files: vec!["a.wo".to_string()],
        functions: vec![func("main", 0, 0, 0, &rows)],
        ..Image::default()
    };
    let bytes = write_image(&small);
    // 1001 one-byte instructions, about 130 bytes of headers and two position runs; a
    // table of 12 bytes per instruction would add 12 012.
    assert!(bytes.len() < 1001 + 144, "image is {} bytes", bytes.len());
    assert_eq!(read_image(&bytes), Ok(small));
}

/// `tests/fixtures/sample-v<N>.wob` were written by the build whose format version was N.
/// The current version's fixture must load as the sample image and be reproduced byte
/// for byte (so any layout change shows up here and forces a version bump); older ones
/// must load as the sample image without what they could not hold (from
/// `OLDEST_VERSION` on) or be refused with a message naming both versions. `WO_BLESS=1`
/// writes the current fixture.
#[test]
fn compatibility_fixtures() {
    let plain = sample_image();
    let image = with_renames_and_defaults(sample_image());
    let current = fixture_dir().join(format!("sample-v{FORMAT_VERSION}.wob"));
    if blessing() {
        std::fs::write(&current, write_image(&image)).expect("write the fixture");
    }
    let mut seen_current = false;
    for entry in std::fs::read_dir(fixture_dir()).expect("the fixture directory") {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let Some(version) = name
            .strip_prefix("sample-v")
            .and_then(|rest| rest.strip_suffix(".wob"))
        else {
            continue;
        };
        let version: u16 = version.parse().expect("a numeric version in the name");
        let bytes = std::fs::read(&path).expect("read the fixture");
        if version == FORMAT_VERSION {
            seen_current = true;
            assert_eq!(read_image(&bytes), Ok(image.clone()), "{name}");
            assert!(
                write_image(&image) == bytes,
                "{name}: the writer's output changed; if the format changed on purpose, bump \
                 FORMAT_VERSION and rerun with WO_BLESS=1"
            );
        } else if version >= 6 {
            // Renames and literal defaults are in the tables section from version 6.
            assert_eq!(
                read_image(&bytes),
                Ok(written_by(version, &image)),
                "{name}"
            );
        } else if version >= wo_bytecode::format::OLDEST_VERSION {
            assert_eq!(
                read_image(&bytes),
                Ok(written_by(version, &plain)),
                "{name}"
            );
        } else {
            let err = read_image(&bytes).expect_err("an old image is refused");
            let msg = err.to_string();
            assert!(msg.contains(&format!("version {version}")), "{msg}");
            assert!(
                msg.contains(&format!("version {}", wo_bytecode::format::OLDEST_VERSION)),
                "{msg}"
            );
        }
    }
    assert!(
        seen_current,
        "no fixture for format version {FORMAT_VERSION}"
    );
}

/// `image` as the build of format `version` wrote it: without the instructions added
/// after that version (`since_version`), which the sample has only near the end of a
/// function, after every jump target. The sample's positions are made by index, so the
/// fewer instructions have the first positions.
fn written_by(version: u16, image: &Image) -> Image {
    let mut image = image.clone();
    for f in &mut image.functions {
        let before = f.code.len();
        f.code
            .retain(|op| wo_bytecode::format::since_version(op) <= version);
        f.pos.truncate(f.pos.len() - (before - f.code.len()));
    }
    image
}

/// The sample image with the table metadata of format version 6: renames and literal
/// defaults of every kind.
fn with_renames_and_defaults(mut image: Image) -> Image {
    use wo_bytecode::image::ColumnDefault as D;
    let t = &mut image.tables[1];
    t.was = Some("staff".to_string());
    t.columns[1].was = Some("pay".to_string());
    let defaults = [
        D::Text("a \"b\"\n".to_string()),
        D::Int(-7),
        D::Int(i64::MAX),
        D::Nil,
        D::Nil,
        D::Float(-0.0),
        D::Bool(true),
    ];
    for (c, d) in t.columns.iter_mut().zip(defaults) {
        c.default = Some(d);
    }
    t.columns[3].default = None;
    image
}

#[test]
fn bad_magic_is_refused() {
    for bytes in [
        &b""[..],
        b"WO",
        b"WOB",
        b"WOC\0\x01\x00\x00\x00",
        b"\x7fELF\x02\x01\x01",
    ] {
        assert_eq!(read_image(bytes), Err(ImageError::BadMagic));
    }
    assert_eq!(
        ImageError::BadMagic.to_string(),
        "not a wo image (it does not start with the bytes `WOB\\0`)"
    );
}

#[test]
fn older_version_is_refused_naming_both_versions() {
    let mut bytes = write_image(&sample_image());
    bytes[4..6].copy_from_slice(&0u16.to_le_bytes());
    let err = read_image(&bytes).expect_err("older version");
    assert_eq!(
        err,
        ImageError::TooOld {
            found: 0,
            supported: wo_bytecode::format::OLDEST_VERSION
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "image format version 0 is older than version {}, the oldest this wo \
             reads; rebuild the image from source with `wo build`",
            wo_bytecode::format::OLDEST_VERSION
        )
    );
}

#[test]
fn newer_version_is_refused_naming_both_versions() {
    let mut bytes = write_image(&sample_image());
    let newer = FORMAT_VERSION + 1;
    bytes[4..6].copy_from_slice(&newer.to_le_bytes());
    // A checksum that is right for the new version's bytes must not matter: the version
    // is checked first.
    fix_crc(&mut bytes);
    let err = read_image(&bytes).expect_err("newer version");
    assert_eq!(
        err,
        ImageError::TooNew {
            found: newer,
            supported: FORMAT_VERSION
        }
    );
    let msg = err.to_string();
    assert!(msg.contains(&format!(
        "version {newer} is newer than version {FORMAT_VERSION}"
    )));
}

#[test]
fn damage_is_caught_by_the_checksum() {
    let mut bytes = write_image(&sample_image());
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    assert!(matches!(
        read_image(&bytes),
        Err(ImageError::Checksum { .. })
    ));
    let msg = read_image(&bytes).expect_err("damaged").to_string();
    assert!(msg.starts_with("checksum mismatch (stored 0x"), "{msg}");
}

#[test]
fn short_files_are_truncated_errors() {
    let bytes = write_image(&sample_image());
    // Header present but nothing else: too short for the trailer.
    assert!(matches!(
        read_image(&bytes[..7]),
        Err(ImageError::Truncated { .. })
    ));
    assert!(matches!(
        read_image(&bytes[..5]),
        Err(ImageError::Truncated { .. })
    ));
}

#[test]
fn hostile_count_is_refused_before_allocating() {
    // A files section claiming u32::MAX names in 4 bytes.
    let mut body = vec![1u8];
    body.extend_from_slice(&4u32.to_le_bytes());
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    let err = read_image(&with_header(&body)).expect_err("hostile count");
    assert!(
        matches!(
            err,
            ImageError::CountTooLarge {
                what: "file",
                count: u32::MAX,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn hostile_string_length_is_refused() {
    // One file name claiming 4 GiB - 1 bytes.
    let mut body = vec![1u8];
    body.extend_from_slice(&8u32.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    let err = read_image(&with_header(&body)).expect_err("hostile length");
    assert!(matches!(err, ImageError::Truncated { .. }), "{err:?}");
}

#[test]
fn hostile_section_length_is_refused() {
    let mut body = vec![1u8];
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    let err = read_image(&with_header(&body)).expect_err("hostile section");
    assert!(
        matches!(err, ImageError::Truncated { what: "files", .. }),
        "{err:?}"
    );
}

#[test]
fn sections_out_of_order_are_refused() {
    let mut body = vec![2u8];
    body.extend_from_slice(&0u32.to_le_bytes());
    let err = read_image(&with_header(&body)).expect_err("wrong section");
    assert_eq!(
        err.to_string(),
        "expected the files section (tag 1) at byte 8, found tag 2"
    );
}

#[test]
fn trailing_bytes_in_a_section_are_refused() {
    // A files section with zero names and one stray byte.
    let mut body = vec![1u8];
    body.extend_from_slice(&5u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.push(0xee);
    let err = read_image(&with_header(&body)).expect_err("trailing");
    assert!(
        matches!(
            err,
            ImageError::TrailingBytes {
                section: "files",
                n: 1,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn bytes_after_the_last_section_are_refused() {
    let mut bytes = write_image(&sample_image());
    let crc_at = bytes.len() - 4;
    bytes.insert(crc_at, 0);
    fix_crc(&mut bytes);
    assert!(matches!(
        read_image(&bytes),
        Err(ImageError::TrailingData { n: 1, .. })
    ));
}

#[test]
fn unknown_opcode_names_function_and_pc() {
    let image = Image {
        files: vec!["a.wo".to_string()],
        functions: vec![func(
            "main",
            0,
            1,
            0,
            &[(Op::LoadNil { a: Reg(0) }, 1, 1), (Op::RetNil {}, 1, 1)],
        )],
        ..Image::default()
    };
    let mut bytes = write_image(&image);
    // The RET_NIL byte (0x43) is the last code byte; find it after the LOAD_NIL (0x04 0 0).
    let at = bytes
        .windows(4)
        .position(|w| w == [0x04, 0x00, 0x00, 0x43])
        .expect("the code bytes")
        + 3;
    bytes[at] = 0xff;
    fix_crc(&mut bytes);
    let err = read_image(&bytes).expect_err("unknown opcode");
    assert_eq!(
        err.to_string(),
        // The offset counts from the start of the file, like every other one.
        format!("function `main` pc 1: unknown opcode 0xff at byte {at}")
    );
}

#[test]
fn verifier_errors_come_through_read_image() {
    let mut image = sample_image();
    image.entry = FuncIdx(99);
    let err = read_image(&write_image(&image)).expect_err("bad entry");
    assert!(matches!(
        err,
        ImageError::Verify(VerifyError::NoEntry { entry: 99, .. })
    ));
    assert_eq!(
        err.to_string(),
        "entry function f99 does not exist (image has 4 functions)"
    );
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = write_image(&sample_image());
    for len in 0..bytes.len() {
        assert!(read_image(&bytes[..len]).is_err(), "prefix of {len} bytes");
        // Truncated with a correct checksum: the sections themselves must notice.
        let mut cut = bytes[..len].to_vec();
        cut.extend_from_slice(&[0; 4]);
        fix_crc(&mut cut);
        if let Ok(image) = read_image(&cut) {
            check_accepted(&image);
        }
    }
}

#[test]
fn every_byte_change_is_caught_by_the_checksum() {
    let bytes = write_image(&sample_image());
    let mut copy = bytes.clone();
    for i in 0..bytes.len() {
        for delta in 1..=255u8 {
            copy[i] = bytes[i].wrapping_add(delta);
            let res = read_image(&copy);
            assert!(res.is_err(), "byte {i} + {delta} was accepted");
        }
        copy[i] = bytes[i];
    }
}

#[test]
fn every_byte_change_past_the_checksum_errs_or_verifies() {
    // With the checksum recomputed, each change reaches the section decoder and the
    // verifier: the result is an error or a verified image, never a panic.
    let bytes = write_image(&sample_image());
    let mut n_accepted = 0;
    let mut copy = bytes.clone();
    for i in 0..bytes.len() - 4 {
        for delta in 1..=255u8 {
            copy[i] = bytes[i].wrapping_add(delta);
            fix_crc(&mut copy);
            if let Ok(image) = read_image(&copy) {
                check_accepted(&image);
                n_accepted += 1;
            }
        }
        copy[i] = bytes[i];
    }
    // Some changes (a constant's value, a register within range) are legitimately valid.
    assert!(n_accepted > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(image) = read_image(&bytes) {
            check_accepted(&image);
        }
    }

    #[test]
    fn random_bodies_behind_a_valid_header_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        if let Ok(image) = read_image(&with_header(&body)) {
            check_accepted(&image);
        }
    }

    #[test]
    fn random_edits_of_the_sample_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
    ) {
        let mut bytes = write_image(&sample_image());
        let body_len = bytes.len() - 4;
        for (at, value) in edits {
            bytes[at.index(body_len)] = value;
        }
        fix_crc(&mut bytes);
        if let Ok(image) = read_image(&bytes) {
            check_accepted(&image);
        }
    }
}

#[test]
fn older_fixtures_are_refused_with_the_version_message() {
    for old in 1..wo_bytecode::format::OLDEST_VERSION {
        let bytes = std::fs::read(fixture_dir().join(format!("sample-v{old}.wob")))
            .expect("the fixture of an older version");
        let err = read_image(&bytes).expect_err("an older image");
        assert_eq!(
            err,
            ImageError::TooOld {
                found: old,
                supported: 5
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "image format version {old} is older than version 5, the oldest this wo reads; \
                 rebuild the image from source with `wo build`"
            )
        );
    }
}

#[test]
fn tables_and_queries_round_trip() {
    let image = sample_image();
    assert_eq!(image.tables.len(), 2);
    assert_eq!(image.queries.len(), 7);
    let back = read_image(&write_image(&image)).expect("valid image");
    assert_eq!(back.tables, image.tables);
    assert_eq!(back.queries, image.queries);
}

/// A one-table image whose column is named `zz`, so tests can find its bytes.
fn one_table_image() -> Image {
    let mut image = Image {
        files: vec!["a.wo".to_string()],
        functions: vec![func("main", 0, 0, 0, &[(Op::RetNil {}, 1, 1)])],
        classes: vec![Class {
            name: "T".to_string(),
            fields: vec!["zz".to_string()],
        }],
        ..Image::default()
    };
    image.tables = vec![wo_bytecode::image::Table {
        class: ClassIdx(0),
        name: "tt".to_string(),
        columns: vec![wo_bytecode::image::Column {
            name: "zz".to_string(),
            ty: wo_bytecode::image::ColumnType::Int,
            nullable: false,
            was: None,
            default: None,
        }],
        indexes: Vec::new(),
        durable: true,
        was: None,
    }];
    image
}

/// The offset just after the last occurrence of the `str` encoding of `s`.
fn after_str(bytes: &[u8], s: &str) -> usize {
    let mut enc = u32::try_from(s.len())
        .expect("short")
        .to_le_bytes()
        .to_vec();
    enc.extend_from_slice(s.as_bytes());
    bytes
        .windows(enc.len())
        .rposition(|w| w == enc.as_slice())
        .expect("the string is in the image")
        + enc.len()
}

#[test]
fn bad_table_tags_and_flags_are_refused() {
    let bytes = write_image(&one_table_image());
    assert_eq!(read_image(&bytes), Ok(one_table_image()));
    // The durable flag follows the table name; the column type tag follows the column
    // name (the last `zz`, after the class's field of the same name).
    for (at, what) in [
        (after_str(&bytes, "tt"), "durable flag"),
        (after_str(&bytes, "zz"), "column type tag"),
        (after_str(&bytes, "zz") + 1, "nullable flag"),
    ] {
        let mut bad = bytes.clone();
        bad[at] = 7;
        fix_crc(&mut bad);
        let err = read_image(&bad).expect_err("a bad tag");
        assert_eq!(
            err.to_string(),
            format!("invalid {what} 7 at byte {at}"),
            "{what}"
        );
    }
}

#[test]
fn bad_query_tags_are_refused() {
    let mut image = one_table_image();
    image.queries = vec![wo_bytecode::image::QueryDesc {
        table: 0,
        preds: Vec::new(),
        order: Vec::new(),
        skip: None,
        take: None,
        n_args: 0,
        agg: wo_bytecode::image::QueryAgg::Count,
    }];
    let bytes = write_image(&image);
    assert_eq!(read_image(&bytes), Ok(image));
    // The queries section is last: table u32, 0 preds, 0 order keys, skip (flag, u16),
    // take (flag, u16), n_args u16, then the aggregate tag, then the CRC.
    let agg_at = bytes.len() - 4 - 1;
    assert_eq!(bytes[agg_at], 1);
    let mut bad = bytes.clone();
    bad[agg_at] = 9;
    fix_crc(&mut bad);
    assert_eq!(
        read_image(&bad).expect_err("bad aggregate").to_string(),
        format!("invalid aggregate tag 9 at byte {agg_at}")
    );
    // An absent skip must store argument 0.
    let skip_arg_at = agg_at - 2 - 3 - 2;
    let mut bad = bytes.clone();
    bad[skip_arg_at] = 1;
    fix_crc(&mut bad);
    assert!(matches!(
        read_image(&bad),
        Err(ImageError::BadValue { at, .. }) if at == skip_arg_at
    ));
}

/// An image that says it is of an older version but holds an instruction added later
/// (`TEXT_NEXT` in version 8, `JUMP_UNLESS_EQ_K` in version 9) is refused: no wo of that
/// version wrote it, and one would refuse it. Without the instruction, the same bytes
/// load as that version.
#[test]
fn an_older_version_cannot_hold_a_newer_instruction() {
    let image = sample_image();
    for (version, code) in [(7u16, 0x39), (8, 0x3a)] {
        let mut bytes = write_image(&written_by(version + 1, &image));
        bytes[4..6].copy_from_slice(&version.to_le_bytes());
        fix_crc(&mut bytes);
        let err = read_image(&bytes).expect_err("a newer instruction in an older image");
        let want = format!("unknown opcode 0x{code:02x}");
        assert!(err.to_string().contains(&want), "version {version}: {err}");
        let mut bytes = write_image(&written_by(version, &image));
        bytes[4..6].copy_from_slice(&version.to_le_bytes());
        fix_crc(&mut bytes);
        assert!(read_image(&bytes).is_ok(), "version {version}");
    }
}
