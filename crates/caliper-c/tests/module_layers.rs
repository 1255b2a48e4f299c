//! The layering of the library's modules, read from its sources: `entry`
//! (what every entry point shares) uses no other module, the modules use
//! each other without a cycle, and each opens with a `//!` doc that says
//! what it owns. A cycle crept in once (`entry` called into `attributes`
//! and `preload`, which used `entry`); this keeps it from coming back.

use caliper_testutil::layers::{cycle, describe, graph};
use std::path::Path;

#[test]
fn entry_is_a_leaf_and_the_modules_have_no_cycle() {
    let (graph, _) = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 5 && graph.contains_key("entry"), "module files not found:\n{}", describe(&graph));
    assert!(graph["entry"].is_empty(), "entry uses other modules of the crate:\n{}", describe(&graph));
    if let Some(cycle) = cycle(&graph) {
        panic!("module cycle {}:\n{}", cycle.join(" -> "), describe(&graph));
    }
}

#[test]
fn every_module_says_what_it_owns() {
    let (_, sources) = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    for (name, text) in &sources {
        assert!(text.starts_with("//! "), "{name}.rs does not open with a //! doc");
    }
}
