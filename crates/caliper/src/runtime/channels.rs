//! Channels: creating them from a configuration, turning them on and
//! off, and their run metadata.

use super::*;
use crate::blackboard::StackEntry;
use crate::service::{GlobalRuntime, MemoryEvent};

impl Caliper {
    /// Every channel, in creation order.
    pub fn all_channels(&self) -> Vec<Arc<Channel>> {
        sync::read(&self.channels).clone()
    }

    /// Creates a channel with `config`; it starts inactive.
    pub fn create_channel(&self, name: &str, config: RuntimeConfig) -> Arc<Channel> {
        self.create_channel_with(name, config, Vec::new())
    }

    /// Creates a channel with `config` and, besides the services it
    /// enables, the given service objects; it starts inactive.
    pub(crate) fn create_channel_with(
        &self,
        name: &str,
        config: RuntimeConfig,
        extra: Vec<Arc<dyn Service>>,
    ) -> Arc<Channel> {
        let names = config.get_list("CALI_SERVICES_ENABLE", true);
        let mut list = Vec::new();
        let mut events = None;
        // A service named twice (a config's options may each add it) is
        // one service: two would each take their snapshots.
        for (i, service) in names.iter().enumerate() {
            if names[..i].contains(service) {
                continue;
            }
            match services::create(service, self, name, &config) {
                Ok(Created::Service(s)) => list.push(s),
                Ok(Created::Events(e)) => events = Some(e),
                Err(NotCreated::Unknown) => log::error(format_args!("Service \"{service}\" not found!")),
                Err(NotCreated::BadSettings) => {}
            }
        }
        if config.get_bool("CALI_CHANNEL_CONFIG_CHECK", true) {
            services::check_pipeline(name, &names);
        }
        list.extend(extra);
        // A channel's id is its position in the list: held until the
        // channel is in it, so that channels created at once on several
        // threads get distinct ids (threads keep their per-channel states
        // by id).
        let creating = sync::lock(&self.creating_channel);
        let id = sync::read(&self.channels).len();
        let channel = Arc::new(Channel::new(self, id, name, config, list, events));
        {
            let mut bb = sync::lock(channel.blackboard());
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            bb.set(self.builtins.channel, ValueKey::string(name));
            bb.set(self.builtins.implementation_version, ValueKey::string(super::VERSION));
            bb.set(self.builtins.starttime_sec, ValueKey::from_variant(&Variant::Uint(now.as_secs())));
            bb.set(self.builtins.starttime_nsec, ValueKey::from_variant(&Variant::Uint(u64::from(now.subsec_nanos()))));
        }
        for info in self.registry.all() {
            channel.mark_attribute(self, info.attr, &info.name);
        }
        sync::write(&self.channels).push(channel.clone());
        drop(creating);
        self.channels_version.fetch_add(1, Ordering::Release);
        for s in channel.services() {
            log::info(format_args!("{name}: Registered {} service", s.name()));
        }
        if log::enabled(3) {
            log_configuration(&channel, &names);
        }
        channel
    }

    /// Activates or deactivates a channel.
    pub fn set_channel_active(&self, channel: &Channel, active: bool) {
        if channel.is_active() != active {
            channel.set_active(active);
            if active {
                self.active_channels.fetch_add(1, Ordering::AcqRel);
            } else {
                self.active_channels.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.channels_version.fetch_add(1, Ordering::Release);
        if active && READY.load(Ordering::Acquire) {
            self.prepare_calling_thread_for_signals();
        }
    }

    /// The run metadata of a channel: the process's and the channel's
    /// global entries.
    pub fn globals(&self, channel: &Channel) -> Record {
        let mut record = Record::globals();
        {
            let mut p = self.lock_process();
            let ProcessContext { blackboard, cache, .. } = &mut *p;
            if let Some(n) = blackboard.unaligned.node(&self.tree, cache) {
                record.push_ref(n);
            }
            for (a, v) in &blackboard.values {
                if a.properties().is_global() {
                    record.push_imm(a.id(), v.to_variant());
                }
            }
        }
        let mut bb = sync::lock(channel.blackboard());
        let mut cache = ChildCache::default();
        if let Some(n) = bb.unaligned.node(&self.tree, &mut cache) {
            record.push_ref(n);
        }
        record.kind = RecordKind::Globals;
        record
    }

    /// Sets a global attribute of a channel (its run metadata), e.g. an
    /// `opts:` entry.
    pub fn set_channel_global(&self, channel: &Channel, attr: Attribute, value: &Variant) {
        sync::lock(channel.blackboard()).set(attr, ValueKey::from_variant(value));
    }
}

/// The runtime as its services see it (see [`Runtime`]).
impl Runtime for Caliper {
    fn tree(&self) -> &ContextTree {
        &self.tree
    }
    fn builtins(&self) -> &Builtins {
        &self.builtins
    }
    fn create_attribute(&self, name: &str, ty: AttrType, props: Properties, metadata: &[(Id, Variant)]) -> Attribute {
        Caliper::create_attribute(self, name, ty, props, metadata)
    }
    fn find_attribute(&self, name: &str) -> Option<Attribute> {
        Caliper::find_attribute(self, name)
    }
    fn attribute_info(&self, id: Id) -> Option<AttributeInfo> {
        Caliper::attribute_info(self, id)
    }
    fn get(&self, attr: Attribute) -> Option<Variant> {
        Caliper::get(self, attr)
    }
    fn stack_errors(&self) -> u64 {
        Caliper::stack_errors(self)
    }
    fn open_regions(&self) -> Vec<String> {
        Caliper::open_regions(self)
    }
    fn signal_entry(&self) -> SignalEntry {
        push_snapshot_with_path_from_signal
    }
    fn set_global(&self, attr: Attribute, value: ValueKey) {
        self.update_process(|bb| bb.set(attr, value));
    }
    fn set_globals(&self, values: &[(Attribute, ValueKey)]) {
        self.update_process(|bb| values.iter().for_each(|&(attr, value)| bb.set(attr, value)));
    }
    fn request_flush(&self) {
        request_deferred_flush();
    }
    fn global(&self) -> GlobalRuntime {
        || Caliper::if_ready().map(|c| c as &dyn Runtime)
    }
    fn begin(&self, attr: Attribute, value: ValueKey) {
        Caliper::begin(self, attr, value);
    }
    fn end(&self, attr: Attribute) {
        Caliper::end(self, attr, None);
    }
    fn set(&self, attr: Attribute, value: ValueKey) {
        Caliper::set(self, attr, value);
    }
    fn push_snapshot(&self, trigger: &[Entry]) {
        Caliper::push_snapshot(self, trigger);
    }
    fn path_node(&self) -> Option<Id> {
        self.with_thread(|t, _| t.blackboard.regions.node(&self.tree, &mut t.cache)).flatten()
    }
    fn track_memory(&self, event: &MemoryEvent<'_>) {
        Caliper::track_memory(self, event);
    }
    fn region_stack(&self, out: &mut Vec<StackEntry>) {
        Caliper::region_stack(self, out);
    }
    fn switch_regions(&self, path: &[StackEntry], replaced: &mut Vec<StackEntry>) -> usize {
        Caliper::switch_regions(self, path, replaced)
    }
    fn replace_regions(&self, from: usize, with: &[StackEntry], removed: &mut Vec<StackEntry>) -> usize {
        Caliper::replace_regions(self, from, with, removed)
    }
}

/// A channel and its runtime, as the channel's services see them when
/// they write output (see [`ChannelView`]). Made with updates stopped.
pub struct ChannelOutput<'a> {
    cali: &'a Caliper,
    channel: &'a Channel,
}

impl<'a> ChannelOutput<'a> {
    /// The view of `channel` in `cali`.
    pub fn new(cali: &'a Caliper, channel: &'a Channel) -> ChannelOutput<'a> {
        ChannelOutput { cali, channel }
    }
}

impl ChannelView for ChannelOutput<'_> {
    fn name(&self) -> &str {
        self.channel.name()
    }
    fn records(&self, emit: &mut dyn FnMut(&Record)) {
        self.channel.flush(self.cali, emit);
    }
    fn globals(&self) -> Record {
        self.cali.globals(self.channel)
    }
    fn samples(&self) -> bool {
        self.channel.services().iter().any(|s| s.samples())
    }
}

/// The runtime as its channels see it (see [`Host`]).
impl Host for Caliper {
    #[inline(always)]
    fn refresh_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64) {
        Caliper::refresh_process_entries(self, cache, version);
    }
    fn thread_slots(&self) -> Vec<Arc<ThreadSlot>> {
        Caliper::thread_slots(self)
    }
}

/// Logs a channel's configuration (verbosity 3): its services, then each
/// service setting as it takes effect.
#[cold]
fn log_configuration(channel: &Channel, services: &[String]) {
    let name = channel.name();
    log::log(3, format_args!("{name}: Configuration:"));
    log::log(3, format_args!("  CALI_SERVICES_ENABLE={}", services.join(",")));
    for key in ["CALI_CHANNEL_FLUSH_ON_EXIT", "CALI_CHANNEL_CONFIG_CHECK"] {
        log::log(3, format_args!("  {key}={}", channel.config().get_or(key, "true")));
    }
    for line in services::registry::effective_settings(services, channel.config()) {
        log::log(3, format_args!("  {line}"));
    }
}
