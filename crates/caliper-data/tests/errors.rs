//! Malformed input: every case is a typed error with its place, never a
//! panic.

use caliper_data::MetadataDb;
use caliper_data::cali::{CaliReader, EscapeError, ReadError, ReadErrorKind, read_path};
use caliper_data::metadb::ImportError;
use std::path::Path;

/// Attribute `region` (id 13 in the stream) and node `region=main` (14).
const HEADER: &str = "__rec=node,id=12,attr=10,data=276,parent=3\n\
                      __rec=node,id=13,attr=8,data=region,parent=12\n\
                      __rec=node,id=14,attr=13,data=main\n\
                      __rec=node,id=15,attr=10,data=2133,parent=2\n\
                      __rec=node,id=16,attr=8,data=time,parent=15\n";

fn read(text: &str) -> Result<usize, ReadError> {
    read_bytes(text.as_bytes())
}

fn read_bytes(bytes: &[u8]) -> Result<usize, ReadError> {
    let mut db = MetadataDb::new();
    let mut n = 0;
    CaliReader::new(&mut db, "bad.cali").read(bytes, |_, _| n += 1)?;
    Ok(n)
}

/// Reads `HEADER` + `line` and returns the error, checking it is on line 6.
fn error_in(line: &str) -> (usize, ReadErrorKind) {
    let err = read(&format!("{HEADER}{line}\n")).expect_err(line);
    assert_eq!(err.source, "bad.cali");
    assert_eq!(err.line, 6, "{err}");
    (err.column, err.kind)
}

#[test]
fn the_header_itself_is_fine() {
    assert_eq!(read(&format!("{HEADER}__rec=ctx,ref=14,attr=16,data=5\n")).unwrap(), 1);
}

#[test]
fn empty_input() {
    for text in ["", "\n\n", "\r\n"] {
        let err = read(text).unwrap_err();
        assert_eq!(err.kind, ReadErrorKind::Empty);
        assert_eq!(err.to_string(), "bad.cali: no records: the input is empty");
    }
}

#[test]
fn binary_junk() {
    let err = read_bytes(b"\x7fELF\x02\x01\x01\0\0\0").unwrap_err();
    assert_eq!((err.line, err.column, err.kind), (1, 1, ReadErrorKind::NotARecord));
    let (col, kind) = error_in("__rec=ctx,ref=14,attr=16,data=5\0\x01");
    assert_eq!((col, kind), (32, ReadErrorKind::ControlCharacter(0)));
    let mut bytes = format!("{HEADER}__rec=node,id=17,attr=13,data=").into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\n");
    let err = read_bytes(&bytes).unwrap_err();
    assert_eq!((err.line, err.column, err.kind), (6, 31, ReadErrorKind::InvalidUtf8));
}

#[test]
fn unknown_record_kind_and_fields() {
    assert_eq!(error_in("__rec=snapshot,ref=14"), (7, ReadErrorKind::UnknownRecordKind("snapshot".into())));
    assert_eq!(error_in("__rec=ctx,ref=14,colour=blue"), (18, ReadErrorKind::UnknownField("colour".into())));
    assert_eq!(error_in("__rec=ctx,ref=14,ref=14"), (18, ReadErrorKind::DuplicateField("ref".into())));
    assert_eq!(error_in("__rec=node,attr=13,data=x"), (1, ReadErrorKind::MissingField("id")));
    assert_eq!(error_in("__rec=node,id=17,data=x"), (1, ReadErrorKind::MissingField("attr")));
    assert_eq!(error_in("__rec=ctx,id=3"), (1, ReadErrorKind::UnknownField("id".into())));
}

#[test]
fn truncated_lines() {
    assert_eq!(error_in("__rec=ctx,ref=14,attr"), (18, ReadErrorKind::MissingValue("attr".into())));
    assert_eq!(
        error_in("__rec=ctx,ref=14,attr=16,data=5=6"),
        (31, ReadErrorKind::LengthMismatch { attributes: 1, values: 2 })
    );
    let (col, kind) = error_in("__rec=ctx,ref=14,attr=16=16,data=5");
    assert_eq!((col, kind), (34, ReadErrorKind::LengthMismatch { attributes: 2, values: 1 }));
    let (col, kind) = error_in("__rec=ctx,ref=14,attr=16");
    assert_eq!((col, kind), (25, ReadErrorKind::LengthMismatch { attributes: 1, values: 0 }));
    assert_eq!(error_in("__rec=ctx,ref="), (15, ReadErrorKind::BadId(String::new())));
    assert_eq!(error_in("__rec=ctx,ref=14="), (18, ReadErrorKind::BadId(String::new())));
    // A file cut off in the middle of its last line, without a newline.
    let err = read(&format!("{HEADER}__rec=ctx,ref=14,attr=16,da")).unwrap_err();
    assert_eq!((err.line, err.column, err.kind), (6, 26, ReadErrorKind::MissingValue("da".into())));
}

#[test]
fn bad_escapes() {
    let (col, kind) = error_in("__rec=node,id=17,attr=13,data=ab\\");
    assert_eq!((col, kind), (33, ReadErrorKind::BadEscape(EscapeError::Incomplete)));
    let (col, kind) = error_in("__rec=node,id=17,attr=13,data=a\\qb");
    assert_eq!((col, kind), (32, ReadErrorKind::BadEscape(EscapeError::Unknown('q'))));
    let (col, kind) = error_in("__rec=node,id=17,attr=13,data=\\xZZ");
    assert_eq!((col, kind), (31, ReadErrorKind::BadEscape(EscapeError::BadHex)));
}

#[test]
fn bad_ids_and_values() {
    assert_eq!(error_in("__rec=ctx,ref=1x4"), (15, ReadErrorKind::BadId("1x4".into())));
    assert_eq!(error_in("__rec=ctx,ref=-3"), (15, ReadErrorKind::BadId("-3".into())));
    assert_eq!(
        error_in("__rec=ctx,ref=99999999999999999999"),
        (15, ReadErrorKind::BadId("99999999999999999999".into()))
    );
    let (col, kind) = error_in("__rec=ctx,ref=14,attr=16,data=5.5");
    assert_eq!(col, 31);
    assert!(matches!(kind, ReadErrorKind::Import(ImportError::BadValue(_))), "{kind:?}");
    assert_eq!(kind.to_string(), "invalid uint value \"5.5\"");
    let (col, kind) = error_in("__rec=node,id=17,attr=10,data=many,parent=3");
    assert_eq!((col, kind.to_string().as_str()), (31, "invalid int value \"many\""));
}

#[test]
fn unknown_ids() {
    assert_eq!(error_in("__rec=ctx,ref=14=999"), (18, ReadErrorKind::Import(ImportError::UnknownNode(999))));
    assert_eq!(error_in("__rec=ctx,attr=77,data=1"), (16, ReadErrorKind::Import(ImportError::UnknownAttribute(77))));
    assert_eq!(error_in("__rec=ctx,attr=14,data=1"), (16, ReadErrorKind::Import(ImportError::NotAnAttribute(14))));
    assert_eq!(
        error_in("__rec=node,id=17,attr=13,data=x,parent=400"),
        (40, ReadErrorKind::Import(ImportError::UnknownNode(400)))
    );
    assert_eq!(
        error_in("__rec=node,id=17,attr=55,data=x"),
        (23, ReadErrorKind::Import(ImportError::UnknownAttribute(55)))
    );
    let (col, kind) = error_in("__rec=node,id=17,attr=8,data=orphan");
    assert_eq!(col, 15);
    assert!(matches!(kind, ReadErrorKind::Import(ImportError::BadAttribute(_))));
}

#[test]
fn node_fields_take_one_value() {
    assert_eq!(error_in("__rec=node,id=17=18,attr=13,data=x"), (18, ReadErrorKind::ExpectedOneValue("id")));
    assert_eq!(error_in("__rec=node,id=17,attr=13,data=x=y"), (31, ReadErrorKind::ExpectedOneValue("data")));
}

#[test]
fn messages_name_file_line_and_column() {
    let err = read(&format!("{HEADER}__rec=ctx,ref=14=999\n")).unwrap_err();
    assert_eq!(err.to_string(), "bad.cali:6:18: unknown node id 999");
}

#[test]
fn missing_file() {
    let mut db = MetadataDb::new();
    let err = read_path(&mut db, Path::new("/nonexistent/x.cali"), |_, _| {}).unwrap_err();
    assert_eq!(err.source, "/nonexistent/x.cali");
    assert!(matches!(err.kind, ReadErrorKind::Io(std::io::ErrorKind::NotFound, _)));
    assert!(err.to_string().starts_with("/nonexistent/x.cali: cannot open file:"), "{err}");
}

#[test]
fn lenient_where_the_reference_is() {
    // CRLF line ends, blank lines and a last line without newline.
    let text = format!("{}\r\n\r\n__rec=ctx,ref=14", HEADER.replace('\n', "\r\n"));
    assert_eq!(read(&text).unwrap(), 1);
    // Fields in any order; a bare snapshot line is an empty record.
    assert_eq!(read(&format!("{HEADER}__rec=ctx,data=4,attr=16,ref=14\n__rec=ctx\n")).unwrap(), 2);
    // A node without data has the empty value.
    assert_eq!(read(&format!("{HEADER}__rec=node,id=17,attr=13\n__rec=ctx,ref=17\n")).unwrap(), 1);
}

#[test]
fn the_invalid_id_is_not_a_node() {
    let (col, kind) = error_in("__rec=node,id=18446744073709551615,attr=13,data=x");
    assert_eq!((col, kind), (15, ReadErrorKind::InvalidNodeId));
    let err = read(&format!("{HEADER}__rec=node,id=18446744073709551615,attr=13,data=x\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad.cali:6:15: node id 18446744073709551615 is the invalid id (CALI_INV_ID), not a node"
    );
}

#[test]
fn a_repeated_node_id_keeps_the_first_definition() {
    let text =
        format!("{HEADER}__rec=node,id=14,attr=13,data=other\n__rec=node,id=14,attr=13,data=third\n__rec=ctx,ref=14\n");
    let mut db = MetadataDb::new();
    let mut regions = Vec::new();
    let mut reader = CaliReader::new(&mut db, "dup.cali");
    reader
        .read(text.as_bytes(), |db, r| {
            regions.extend(db.expand_paths(r).into_iter().flat_map(|(_, v)| v).map(|v| v.to_string()))
        })
        .unwrap();
    assert_eq!(regions, ["main"]);
    assert_eq!(reader.duplicates().map(|d| (d.line, d.id, d.count)), Some((6, 14, 2)));
    assert_eq!(
        reader.warning().unwrap(),
        "dup.cali:6: node id 14 defined again; the first definition is kept (2 node records repeat an id)"
    );
    // Bootstrap ids may be written again (id 11 is, by the reference).
    let mut db = MetadataDb::new();
    let mut reader = CaliReader::new(&mut db, "ok.cali");
    reader.read(format!("{HEADER}__rec=ctx,ref=14\n").as_bytes(), |_, _| {}).unwrap();
    assert_eq!(reader.warning(), None);
}
