//! The layering of the library's modules, read from its sources: `entry`
//! (what every entry point shares) uses no other module, the modules use
//! each other without a cycle, and each opens with a `//!` doc that says
//! what it owns. A cycle crept in once (`entry` called into `attributes`
//! and `preload`, which used `entry`); this keeps it from coming back.

use caliper_testutil::layers::{assert_acyclic, describe, graph, undocumented};
use std::path::Path;

#[test]
fn entry_is_a_leaf_and_the_modules_have_no_cycle() {
    let (graph, _) = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 5 && graph.contains_key("entry"), "module files not found:\n{}", describe(&graph));
    assert!(graph["entry"].is_empty(), "entry uses other modules of the crate:\n{}", describe(&graph));
    assert_acyclic(&graph);
}

#[test]
fn every_module_says_what_it_owns() {
    assert_eq!(undocumented(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")), Vec::<String>::new());
}
