//! The `sample` collector: call stacks sampled on CPU time through
//! perf_event_open, named by the program's functions.

mod common;

#[test]
fn samples_name_the_call_stack_of_a_busy_function() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/spin.c");
    common::gcc(dir.path(), &["-O2", "-fno-omit-frame-pointer", "-o", "spin", source.to_str().unwrap()]);
    let file = dir.path().join("spin.cali");
    let output = common::run_in(dir.path(), &["-c", "sample", "-o", file.to_str().unwrap()], "./spin", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "spun\n");
    assert_eq!(output.status.code(), Some(6), "{}", String::from_utf8_lossy(&output.stderr));

    // Stacks as "outermost;...;innermost" with their sample counts.
    use caliper_data::{MetadataDb, Variant};
    let data = std::fs::read(&file).unwrap();
    let mut db = MetadataDb::new();
    let records = caliper_data::cali::read_records(&mut db, "spin", &data).unwrap();
    let mut stacks = Vec::new();
    for r in &records {
        let mut frames = Vec::new();
        let mut count = 0;
        for (attr, value) in db.expand(r) {
            match (db.attribute(attr).unwrap().name(), value) {
                ("dbi.frame", Variant::Str(f)) => frames.push(f.to_string()),
                ("dbi.samples", Variant::Uint(n)) => count = n,
                _ => {}
            }
        }
        if count > 0 {
            stacks.push((frames.join(";"), count));
        }
    }
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(total >= 100, "half a second at 1 kHz: {stacks:?}");
    let in_spin: u64 = stacks.iter().filter(|s| s.0.contains("main;outer;spin")).map(|s| s.1).sum();
    assert!(in_spin * 10 >= total * 8, "most samples in main > outer > spin: {stacks:?}");
    assert!(!stacks.iter().any(|s| s.0.contains("outer;main")), "outermost first");
}
