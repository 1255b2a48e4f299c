//! The layering of the runtime's modules, read from its sources: each
//! module uses only modules of its own layer or of the layers below it,
//! without a cycle, and opens with a `//!` doc that says what it owns.
//! From the bottom: core data, the service interface, the per-thread
//! buffers, the channel, the services, the runtime, and what builds on the
//! runtime (the config manager, the annotation API, the query report, the
//! region profile, the futures with a region path of their own).

use caliper_testutil::layers::{assert_acyclic, describe, graph_split, submodule_graph, undocumented_split};
use std::path::Path;

/// The modules whose submodules sit in different layers: `mpi`'s
/// registration, reduction and communication pattern are below the
/// services, its region, message and finalize entry points above the
/// runtime.
const SPLIT: &[&str] = &["mpi"];

/// The layers, from the bottom. A module may use the modules of its own
/// layer and of those before it.
const LAYERS: &[&[&str]] = &[
    &[
        "alloc_guard",
        "attributes",
        "blackboard",
        "capture",
        "clock",
        "config",
        "contain",
        "default_config",
        "dynlib",
        "id_index",
        "interpose",
        "log",
        "region_filter",
        "snapshot",
        "sparse",
        "symbols",
        "sync",
        "tree",
        "unwind",
        "value",
    ],
    &["service", "mpi", "mpi::pattern", "mpi::reduction"],
    &["buffer"],
    &["channel"],
    &["services"],
    &["runtime"],
    &[
        "alloc",
        "api",
        "configmgr",
        "mpi::finalize",
        "mpi::functions",
        "mpi::messages",
        "query_report",
        "region_profile",
        "task",
    ],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn every_module_uses_only_its_layer_and_those_below_without_a_cycle() {
    let (graph, _) = graph_split(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), SPLIT);
    let mut upward = Vec::new();
    for (module, uses) in &graph {
        let layer = layer_of(module).unwrap_or_else(|| panic!("module {module} is in no layer"));
        for used in uses {
            if layer_of(used).is_none_or(|l| l > layer) {
                upward.push(format!("{module} -> {used}"));
            }
        }
    }
    assert!(upward.is_empty(), "uses of higher layers: {}\n{}", upward.join(", "), describe(&graph));
    assert_acyclic(&graph);
}

#[test]
fn the_config_managers_parts_use_each_other_without_a_cycle() {
    assert_acyclic(&submodule_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/configmgr")));
}

#[test]
fn every_module_says_what_it_owns() {
    assert_eq!(undocumented_split(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), SPLIT), Vec::<String>::new());
}
