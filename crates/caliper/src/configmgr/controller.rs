//! Channel controllers: one per config instance. A controller holds the
//! channel's settings and run metadata, creates the channel when first
//! started, and writes the config's output when flushed.

use crate::channel::Channel;
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use crate::services::output;
use crate::sync;
use caliper_data::{AttrType, Properties, Variant};
use std::io;
use std::sync::{Arc, Mutex};

/// How a controller writes its output when flushed.
pub(crate) enum Output {
    /// The channel's own output services (recorder, report).
    Channel,
    /// An output the config makes itself from what the channel gathered
    /// (the Spot profile, the loop report).
    Own(Box<dyn OwnOutput>),
}

/// An output a config makes itself rather than through its channel's
/// output services. The outputs name the controller (a Spot profile
/// starts a time-series sub-config), so the controller knows them only
/// through this interface.
pub(crate) trait OwnOutput: Send + Sync {
    /// Where the output goes (`%attr%` fields not yet filled in).
    fn output_pattern(&self) -> &str;

    /// Writes the output of what `channel` gathered to the stream `name`.
    /// Updates are stopped.
    fn write(&self, cali: &Caliper, channel: &Channel, name: &str) -> io::Result<()>;

    /// Controllers of sub-configs, which start and stop with this one's.
    fn sub_controllers(&self) -> Vec<&ChannelController> {
        Vec::new()
    }
}

/// The controller of one config instance's channel.
pub struct ChannelController {
    name: String,
    config: Vec<(String, String)>,
    metadata: Vec<(String, String)>,
    output: Output,
    channel: Mutex<Option<Arc<Channel>>>,
}

impl ChannelController {
    pub(crate) fn new(
        name: &str,
        config: Vec<(String, String)>,
        metadata: Vec<(String, String)>,
        output: Output,
    ) -> ChannelController {
        ChannelController { name: name.to_string(), config, metadata, output, channel: Mutex::new(None) }
    }

    /// The config's name (the channel's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The channel settings (`CALI_*` keys and values).
    pub fn config(&self) -> &[(String, String)] {
        &self.config
    }

    /// The run metadata set on the channel (`opts:*`, `metadata(...)`).
    pub fn metadata(&self) -> &[(String, String)] {
        &self.metadata
    }

    /// The channel, once started.
    pub fn channel(&self) -> Option<Arc<Channel>> {
        sync::lock(&self.channel).clone()
    }

    /// Whether the channel exists.
    pub fn is_instantiated(&self) -> bool {
        self.channel().is_some()
    }

    /// Whether the channel measures now.
    pub fn is_active(&self) -> bool {
        self.channel().is_some_and(|c| c.is_active())
    }

    /// Creates the channel (first time) and activates it.
    pub fn start(&self) {
        if let Some(cali) = Caliper::instance() {
            self.start_with(cali);
        }
    }

    /// Deactivates the channel (it keeps what it gathered).
    pub fn stop(&self) {
        if let Some(cali) = Caliper::instance() {
            self.stop_with(cali);
        }
    }

    /// Writes the config's output (a report, a file) from what the channel
    /// gathered.
    pub fn flush(&self) {
        if let Some(cali) = Caliper::instance() {
            self.flush_with(cali);
        }
    }

    pub(crate) fn start_with(&self, cali: &Caliper) {
        let channel = {
            let mut slot = sync::lock(&self.channel);
            slot.get_or_insert_with(|| self.create(cali)).clone()
        };
        cali.set_channel_active(&channel, true);
        for sub in self.sub_controllers() {
            sub.start_with(cali);
        }
    }

    /// Controllers of sub-configs whose output is part of this one's.
    fn sub_controllers(&self) -> Vec<&ChannelController> {
        match &self.output {
            Output::Own(own) => own.sub_controllers(),
            Output::Channel => Vec::new(),
        }
    }

    fn create(&self, cali: &Caliper) -> Arc<Channel> {
        let config = RuntimeConfig::from_pairs(self.config.iter().map(|(k, v)| (k.as_str(), v.as_str())), false);
        let channel = cali.create_channel(&self.name, config);
        let props = Properties::GLOBAL | Properties::SKIP_EVENTS | Properties::UNALIGNED;
        for (key, value) in &self.metadata {
            let attr = cali.create_attribute(key, AttrType::String, props, &[]);
            cali.set_channel_global(&channel, attr, &Variant::string(value));
        }
        channel
    }

    pub(crate) fn stop_with(&self, cali: &Caliper) {
        if let Some(channel) = self.channel() {
            cali.set_channel_active(&channel, false);
        }
        for sub in self.sub_controllers() {
            sub.stop_with(cali);
        }
    }

    pub(crate) fn flush_with(&self, cali: &Caliper) {
        let Some(channel) = self.channel() else {
            log::info(format_args!("{}: not started, nothing to flush", self.name));
            return;
        };
        match &self.output {
            Output::Channel => cali.flush_and_write(&channel),
            Output::Own(own) => {
                write_output(cali, &channel, own.output_pattern(), |name| own.write(cali, &channel, name))
            }
        }
    }
}

/// Writes a config's own output (with updates stopped) to the stream
/// `pattern` names once its `%attr%` fields are filled in; a failure is
/// logged.
fn write_output(cali: &Caliper, channel: &Channel, pattern: &str, write: impl FnOnce(&str) -> io::Result<()>) {
    cali.with_updates_stopped(|| {
        cali.prepare_flush(channel);
        let name = output::substitute(cali, pattern);
        if let Err(e) = write(&name) {
            log::error(format_args!("{}: could not write {name}: {e}", channel.name()));
        }
    });
}
