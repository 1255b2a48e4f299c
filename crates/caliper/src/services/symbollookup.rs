//! `symbollookup`: at flush, for every address attribute `A` of a record
//! (those of class `symboladdress`, such as the sampler's
//! `cali.sampler.pc` and the call paths' `callpath.address`, or those
//! named in `CALI_SYMBOLLOOKUP_ATTRIBUTES`), adds what the address is in:
//! `source.function#A`, `sourceloc#A` (`file:line`), `source.file#A`,
//! `source.line#A` and `module#A`, each as its setting asks. An address
//! held as a value gets values; a path of addresses in the context tree (a
//! call path) gets a path of each, outermost first, so that a tree can be
//! made of it. Addresses resolve through [`Symbolizer`] (DWARF, or the
//! symbol table), each once.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{Runtime, Service};
use crate::symbols::{SourceInfo, Symbolizer};
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Record, Variant};
use std::sync::{Arc, Mutex};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "symbollookup",
    aliases: &[],
    description: "Add the function, source location and module of address attributes at flush",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "attributes",
            kind: SettingKind::StringList,
            default: "",
            description: "Address attributes to look up (default: those of class symboladdress)",
        },
        SettingSpec {
            key: "lookup_functions",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add source.function#<attribute>",
        },
        SettingSpec {
            key: "lookup_sourceloc",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add sourceloc#<attribute> (file:line)",
        },
        SettingSpec {
            key: "lookup_file",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add source.file#<attribute>",
        },
        SettingSpec {
            key: "lookup_line",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add source.line#<attribute>",
        },
        SettingSpec {
            key: "lookup_module",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add module#<attribute>",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(SymbolLookup::new(setup))))
    },
};

/// Which parts of a lookup are added.
#[derive(Copy, Clone)]
struct Parts {
    function: bool,
    sourceloc: bool,
    file: bool,
    line: bool,
    module: bool,
}

/// The attributes a looked-up attribute's results go to (`None`: not
/// added).
struct Targets {
    function: Option<Attribute>,
    sourceloc: Option<Attribute>,
    file: Option<Attribute>,
    line: Option<Attribute>,
    module: Option<Attribute>,
}

struct SymbolLookup {
    /// Named in the settings; empty: those of class `symboladdress`.
    names: Vec<String>,
    parts: Parts,
    state: Mutex<State>,
}

/// What the flushes keep between records (flushes run one at a time).
#[derive(Default)]
struct State {
    symbols: Symbolizer,
    /// Per attribute id: where its results go, `None` if it is not looked
    /// up.
    targets: FxHashMap<Id, Option<Arc<Targets>>>,
}

impl SymbolLookup {
    fn new(setup: &Setup<'_>) -> SymbolLookup {
        let s = &setup.settings;
        let parts = Parts {
            function: s.bool("lookup_functions"),
            sourceloc: s.bool("lookup_sourceloc"),
            file: s.bool("lookup_file"),
            line: s.bool("lookup_line"),
            module: s.bool("lookup_module"),
        };
        SymbolLookup { names: s.list("attributes", false), parts, state: Mutex::default() }
    }

    /// Whether attribute `id` is looked up, and its targets if so.
    fn targets(&self, cali: &dyn Runtime, state: &mut State, id: Id) -> Option<Arc<Targets>> {
        if let Some(known) = state.targets.get(&id) {
            return known.clone();
        }
        let info = cali.attribute_info(id);
        let looked_up = info.as_ref().is_some_and(|info| match self.names.is_empty() {
            true => is_symbol_address(cali, &info.metadata),
            false => self.names.iter().any(|n| **n == *info.name),
        });
        let targets = match (looked_up, info) {
            (true, Some(info)) => {
                // Values for values, paths for paths.
                let props = match info.attr.is_asvalue() {
                    true => Properties::ASVALUE | Properties::SKIP_EVENTS,
                    false => Properties::NOMERGE | Properties::SKIP_EVENTS,
                };
                let make = |wanted: bool, prefix: &str, ty: AttrType| {
                    wanted.then(|| cali.create_attribute(&format!("{prefix}#{}", info.name), ty, props, &[]))
                };
                let p = self.parts;
                Some(Arc::new(Targets {
                    function: make(p.function, "source.function", AttrType::String),
                    sourceloc: make(p.sourceloc, "sourceloc", AttrType::String),
                    file: make(p.file, "source.file", AttrType::String),
                    line: make(p.line, "source.line", AttrType::Uint),
                    module: make(p.module, "module", AttrType::String),
                }))
            }
            _ => None,
        };
        state.targets.insert(id, targets.clone());
        targets
    }
}

impl SymbolLookup {
    /// For each looked-up attribute on the context path to `node`: the
    /// last nodes of the paths its lookups make (one path per part).
    fn looked_up_paths(&self, cali: &dyn Runtime, state: &mut State, node: Id) -> Vec<Id> {
        let tree = cali.tree();
        let paths = address_paths(tree, node, |attr| self.targets(cali, state, attr).is_some());
        let mut ends = Vec::new();
        for (attr, addresses) in paths {
            let Some(targets) = self.targets(cali, state, attr) else { continue };
            let lookups: Vec<Vec<(Id, Variant)>> =
                addresses.iter().map(|&a| entries(&targets, &state.symbols.lookup(a))).collect();
            // One path per part, in the parts' order.
            for part in 0..lookups.first().map_or(0, Vec::len) {
                let mut parent = None;
                for lookup in &lookups {
                    let (attr, value) = &lookup[part];
                    parent = Some(tree.get_child(*attr, value.clone(), parent));
                }
                ends.extend(parent);
            }
        }
        ends
    }
}

/// The addresses on the context path to `node`, per attribute that
/// `wanted` names, outermost first (a call path's frames).
pub(super) fn address_paths(
    tree: &crate::tree::ContextTree,
    node: Id,
    mut wanted: impl FnMut(Id) -> bool,
) -> Vec<(Id, Vec<u64>)> {
    let mut chain = Vec::new();
    tree.path_to(node, &mut chain);
    let mut paths: Vec<(Id, Vec<u64>)> = Vec::new();
    for id in chain {
        let Some(n) = tree.get(id) else { continue };
        let (Variant::Addr(address) | Variant::Uint(address)) = *n.value else { continue };
        if !wanted(n.attribute) {
            continue;
        }
        match paths.iter_mut().find(|(a, _)| *a == n.attribute) {
            Some((_, addresses)) => addresses.push(address),
            None => paths.push((n.attribute, vec![address])),
        }
    }
    paths
}

/// Whether metadata has `class.symboladdress=true`.
fn is_symbol_address(cali: &dyn Runtime, metadata: &[(Id, Variant)]) -> bool {
    let Some(class) = cali.find_attribute("class.symboladdress") else { return false };
    metadata.iter().any(|(m, v)| *m == class.id() && v.to_bool() == Some(true))
}

/// The entries a lookup adds to a record, where `info` has them.
fn entries(targets: &Targets, info: &SourceInfo) -> Vec<(Id, Variant)> {
    let text = |a: Option<Attribute>, s: Option<&str>| Some((a?.id(), Variant::string(s.unwrap_or("UNKNOWN"))));
    let sourceloc = match (&info.file, info.line) {
        (Some(file), Some(line)) => Some(format!("{file}:{line}")),
        _ => None,
    };
    [
        text(targets.function, info.function.as_deref()),
        text(targets.sourceloc, sourceloc.as_deref()),
        text(targets.file, info.file.as_deref()),
        targets.line.map(|a| (a.id(), Variant::Uint(u64::from(info.line.unwrap_or(0))))),
        text(targets.module, info.module.as_deref()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

impl Service for SymbolLookup {
    fn name(&self) -> &'static str {
        "symbollookup"
    }

    fn postprocesses(&self) -> bool {
        true
    }

    /// Adds the lookups of the record's address values and paths.
    fn postprocess(&self, cali: &dyn Runtime, record: &mut Record) {
        let mut state = crate::sync::lock(&self.state);
        let refs: Vec<Id> = record.refs().collect();
        for node in refs {
            for node in self.looked_up_paths(cali, &mut state, node) {
                record.push_ref(node);
            }
        }
        let addresses: Vec<(Id, u64)> = record
            .immediates()
            .filter_map(|(a, v)| match v {
                Variant::Addr(x) | Variant::Uint(x) => Some((a, *x)),
                _ => None,
            })
            .collect();
        for (attr, address) in addresses {
            let Some(targets) = self.targets(cali, &mut state, attr) else { continue };
            let info = state.symbols.lookup(address);
            for (attr, value) in entries(&targets, &info) {
                record.push_imm(attr, value);
            }
        }
    }
}
