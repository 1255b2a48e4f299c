//! The attribute registry: attributes by name and id, created by the rules
//! of the reference (first creation wins, presets replace properties,
//! globals are process-scoped, a default scope is added).

use crate::sync;
use crate::tree::ContextTree;
use caliper_data::hash::FxHashMap;
use caliper_data::node::{Id, NAME_ATTR_ID, PROP_ATTR_ID};
use caliper_data::{AttrType, Properties, Scope, Text, Variant};
use std::sync::{PoisonError, RwLock};

/// An attribute: a typed key with properties. Cheap to copy; the hot path
/// reads everything it needs from the handle itself. Two handles are equal
/// when their ids are: the registry makes one attribute per id, so the id
/// decides, and comparing it alone is what the hot path can afford.
#[derive(Copy, Clone)]
pub struct Attribute {
    id: Id,
    /// The properties (bits 0–31), the value type's code (32–39) and where
    /// values live (40–47): [`PLACE_VALUE`], [`PLACE_UNALIGNED`] and
    /// [`PLACE_PROCESS`] bits, 0 for the calling thread's region stack, so
    /// that begin and end route an update with one test. One word, not
    /// four fields: the handle is copied and passed on every update, and
    /// two plain words stay in registers.
    meta: u64,
}

/// In [`Attribute::meta`]: an as-value attribute.
const PLACE_VALUE: u64 = 1 << 40;
/// In [`Attribute::meta`]: on the unaligned stack.
const PLACE_UNALIGNED: u64 = 2 << 40;
/// In [`Attribute::meta`]: process scope.
const PLACE_PROCESS: u64 = 4 << 40;
/// The place bits of [`Attribute::meta`].
const PLACE: u64 = 0xff << 40;

impl PartialEq for Attribute {
    #[inline]
    fn eq(&self, other: &Attribute) -> bool {
        self.id == other.id
    }
}

impl Eq for Attribute {}

impl std::hash::Hash for Attribute {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl std::fmt::Debug for Attribute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attribute")
            .field("id", &self.id)
            .field("props", &self.properties())
            .field("ty", &self.attr_type())
            .finish()
    }
}

impl Attribute {
    fn new(id: Id, ty: AttrType, props: Properties) -> Attribute {
        let place = (if props.is_asvalue() { PLACE_VALUE } else { 0 })
            | (if props.is_unaligned() { PLACE_UNALIGNED } else { 0 })
            | (if props.scope() == Scope::Process { PLACE_PROCESS } else { 0 });
        Attribute { id, meta: u64::from(props.bits()) | (u64::from(ty as u8) << 32) | place }
    }
    /// The attribute's id (its context-tree node).
    #[inline]
    pub fn id(self) -> Id {
        self.id
    }
    /// The value type.
    #[inline]
    pub fn attr_type(self) -> AttrType {
        AttrType::from_code((self.meta >> 32) as u8).unwrap_or_default()
    }
    /// The properties, as in effect (presets and default scope applied).
    #[inline]
    pub fn properties(self) -> Properties {
        Properties::from_bits(self.meta as u32)
    }
    /// Whether values are stored directly in snapshots.
    #[inline]
    pub fn is_asvalue(self) -> bool {
        self.meta & PLACE_VALUE != 0
    }
    /// Whether the attribute nests with the region stack.
    pub fn is_nested(self) -> bool {
        self.properties().is_nested()
    }
    /// Whether values go on a blackboard's region stack (neither as-value
    /// nor unaligned), in whichever scope.
    #[inline]
    pub fn on_region_stack(self) -> bool {
        self.meta & (PLACE_VALUE | PLACE_UNALIGNED) == 0
    }
    /// Whether values go on the calling thread's region stack: the common
    /// case of begin and end, decided with one test.
    #[inline]
    pub fn on_thread_regions(self) -> bool {
        self.meta & PLACE == 0
    }
    /// Whether the attribute has process scope.
    #[inline]
    pub fn is_process_scope(self) -> bool {
        self.meta & PLACE_PROCESS != 0
    }
}

/// What the registry knows about an attribute.
#[derive(Clone, Debug)]
pub struct AttributeInfo {
    /// The handle.
    pub attr: Attribute,
    /// The name.
    pub name: Text,
    /// Metadata entries (meta-attribute, value), outermost first.
    pub metadata: Vec<(Id, Variant)>,
}

/// All attributes of the process.
#[derive(Default)]
pub struct Registry {
    by_name: RwLock<FxHashMap<Text, Attribute>>,
    by_id: RwLock<FxHashMap<Id, AttributeInfo>>,
    presets: FxHashMap<String, Properties>,
    default_scope: Properties,
    /// Meta-attribute whose `true` value makes an attribute aggregatable.
    aggregatable_class: Option<Id>,
}

impl Registry {
    /// Whether another thread is creating or looking up an attribute (see
    /// [`crate::sync::is_held`]).
    pub(crate) fn is_locked(&self) -> bool {
        crate::sync::is_rw_held(&self.by_name) || crate::sync::is_rw_held(&self.by_id)
    }

    /// A registry with the bootstrap attributes, property presets
    /// (`attr=prop:prop,...`) and the default scope (thread or process).
    pub fn new(tree: &ContextTree, presets: &str, default_scope: Properties) -> Registry {
        let mut reg = Registry { default_scope, ..Registry::default() };
        for item in crate::config::parse_list(presets, &[',']) {
            if let Some((name, props)) = item.split_once('=') {
                reg.presets.insert(name.trim().to_string(), Properties::parse(props));
            }
        }
        for (id, ty) in [(8, AttrType::String), (9, AttrType::Type), (10, AttrType::Int)] {
            // (Always a name: every tree starts with the bootstrap nodes.)
            let Some(Variant::Str(name)) = tree.get(id).map(|n| n.value.clone()) else { continue };
            let attr = Attribute::new(id, ty, Properties::DEFAULT);
            reg.by_name.get_mut().unwrap_or_else(PoisonError::into_inner).insert(name.clone(), attr);
            let info = AttributeInfo { attr, name, metadata: Vec::new() };
            reg.by_id.get_mut().unwrap_or_else(PoisonError::into_inner).insert(id, info);
        }
        reg
    }

    /// Sets the meta-attribute `class.aggregatable`.
    pub fn set_aggregatable_class(&mut self, id: Id) {
        self.aggregatable_class = Some(id);
    }

    /// The attribute `name`, if it exists.
    pub fn find(&self, name: &str) -> Option<Attribute> {
        sync::read(&self.by_name).get(name).copied()
    }

    /// What the registry knows about attribute `id`.
    pub fn info(&self, id: Id) -> Option<AttributeInfo> {
        sync::read(&self.by_id).get(&id).cloned()
    }

    /// Every attribute.
    pub fn all(&self) -> Vec<AttributeInfo> {
        let mut all: Vec<AttributeInfo> = sync::read(&self.by_id).values().cloned().collect();
        all.sort_by_key(|a| a.attr.id);
        all
    }

    /// Creates attribute `name` or returns the existing one. The flag says
    /// whether it was new (channels must then hear of it).
    pub fn create(
        &self,
        tree: &ContextTree,
        name: &str,
        ty: AttrType,
        props: Properties,
        metadata: &[(Id, Variant)],
    ) -> (Attribute, bool) {
        if let Some(a) = self.find(name) {
            return (a, false);
        }
        let mut by_name = sync::write(&self.by_name);
        if let Some(a) = by_name.get(name) {
            return (*a, false);
        }
        let mut props = self.presets.get(name).copied().unwrap_or(props);
        if props.is_global() {
            props = props.with_scope(Properties::SCOPE_PROCESS) | Properties::UNALIGNED;
        }
        if props.bits() & Properties::SCOPE_MASK == 0 {
            props |= self.default_scope;
        }
        if let Some(class) = self.aggregatable_class
            && metadata.iter().any(|(m, v)| *m == class && v.to_bool() == Some(true))
        {
            props |= Properties::AGGREGATABLE;
        }
        let mut parent = ty.bootstrap_node();
        for (meta, value) in metadata {
            parent = Some(tree.get_child(*meta, value.clone(), parent));
        }
        let prop_node = tree.get_child(PROP_ATTR_ID, Variant::Int(i64::from(props.bits())), parent);
        let id = tree.get_child(NAME_ATTR_ID, Variant::string(name), Some(prop_node));
        let attr = Attribute::new(id, ty, props);
        let text = Text::new(name);
        // The information first, under the name's lock: a thread that finds
        // the attribute by name must find its information too (an update
        // of an attribute without it takes no snapshot).
        sync::write(&self.by_id).insert(id, AttributeInfo { attr, name: text.clone(), metadata: metadata.to_vec() });
        by_name.insert(text, attr);
        (attr, true)
    }
}

/// Attributes every program has.
pub struct Builtins {
    /// `region`: code regions.
    pub region: Attribute,
    /// `phase`: coarse program phases (level 4).
    pub phase: Attribute,
    /// `comm.region`: communication regions (level 1).
    pub comm_region: Attribute,
    /// `loop`: loops.
    pub loop_attr: Attribute,
    /// `class.iteration`: marks loop iteration attributes.
    pub class_iteration: Attribute,
    /// `cali.channel`: a channel's name (global).
    pub channel: Attribute,
    /// `starttime.sec` / `starttime.nsec`: when a channel started (global).
    pub starttime_sec: Attribute,
    /// See `starttime_sec`.
    pub starttime_nsec: Attribute,
    /// `cali.caliper-rs.version`: this implementation's version (global).
    /// A channel's, not the process's, so that it stays out of the
    /// snapshot records, where the reference has `cali.caliper.version`
    /// only.
    pub implementation_version: Attribute,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(presets: &str, scope: Properties) -> (ContextTree, Registry) {
        let tree = ContextTree::new();
        let reg = Registry::new(&tree, presets, scope);
        (tree, reg)
    }

    /// An attribute another thread can find by name has its information
    /// (the runtime's event marking looks it up by id): the registry
    /// publishes both at once. Readers race the creators of many
    /// attributes; a creator preempted between the two (the case that lost
    /// snapshots) shows here as a name found without information.
    #[test]
    fn an_attribute_found_by_name_has_its_information() {
        let (tree, reg) = registry("", Properties::SCOPE_THREAD);
        let names: Vec<String> = (0..4000).map(|i| format!("racing.{i}")).collect();
        let found_without_info = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            let (reg, tree) = (&reg, &tree);
            for half in names.chunks(names.len() / 2) {
                s.spawn(move || {
                    for name in half {
                        reg.create(tree, name, AttrType::Int, Properties::DEFAULT, &[]);
                    }
                });
            }
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..20 {
                        for name in &names {
                            if let Some(attr) = reg.find(name)
                                && reg.info(attr.id()).is_none()
                            {
                                found_without_info.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(found_without_info.into_inner(), 0);
    }

    #[test]
    fn creation_rules() {
        let (tree, reg) = registry("", Properties::SCOPE_THREAD);
        let (plain, new) = reg.create(&tree, "plain", AttrType::Int, Properties::DEFAULT, &[]);
        assert!(new);
        assert_eq!(plain.properties().bits(), 20, "default scope thread");
        let (v, _) = reg.create(&tree, "v", AttrType::Int, Properties::ASVALUE, &[]);
        assert_eq!(v.properties().bits(), 21);
        let (g, _) = reg.create(&tree, "g", AttrType::String, Properties::GLOBAL, &[]);
        assert_eq!(g.properties().bits(), 512 | 12 | 1024);
        let (again, new) = reg.create(&tree, "plain", AttrType::String, Properties::NESTED, &[]);
        assert!(!new);
        assert_eq!(again, plain, "the first creation wins");
        assert_eq!(reg.find("plain"), Some(plain));
        assert_eq!(&*reg.info(plain.id()).unwrap().name, "plain");
    }

    #[test]
    fn presets_and_process_scope() {
        let (tree, reg) = registry("region=process_scope", Properties::SCOPE_PROCESS);
        let (r, _) = reg.create(&tree, "region", AttrType::String, Properties::NESTED, &[]);
        assert_eq!(r.properties().bits(), 12, "the preset replaces the properties");
        let (x, _) = reg.create(&tree, "x", AttrType::Int, Properties::ASVALUE, &[]);
        assert_eq!(x.properties().bits(), 13);
    }

    #[test]
    fn aggregatable_class() {
        let (tree, mut reg) = registry("", Properties::SCOPE_THREAD);
        let (class, _) = reg.create(&tree, "class.aggregatable", AttrType::Bool, Properties::SKIP_EVENTS, &[]);
        reg.set_aggregatable_class(class.id());
        let (m, _) =
            reg.create(&tree, "m", AttrType::Double, Properties::ASVALUE, &[(class.id(), Variant::Bool(true))]);
        assert!(m.properties().is_aggregatable());
    }
}
