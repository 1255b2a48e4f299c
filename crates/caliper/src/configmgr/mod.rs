//! The ConfigManager: measurement configs chosen by a short string such
//! as `runtime-report,region.count` (the `CALI_CONFIG` environment
//! variable, or the API) instead of service lists.
//!
//! ```no_run
//! let mut mgr = caliper::ConfigManager::new();
//! if !mgr.add("runtime-report(output=stdout),region.count") {
//!     eprintln!("config error: {}", mgr.error_msg());
//! }
//! mgr.start();
//! {
//!     let _main = caliper::region!("main");
//!     // ... the program ...
//! }
//! mgr.flush(); // prints the report
//! ```
//!
//! Configs and their options are data: JSON specs (the built-in ones are
//! in `builtin.json`; users add theirs with `load(file.json)` or
//! [`ConfigManager::add_config_spec`]). A config names the services it
//! needs, its initial channel settings, and its options; each option may
//! add services, settings and CalQL fragments to the config's queries.

mod builtin;
mod controller;
pub mod json;
mod loop_report;
mod options;
pub mod parse;
mod queries;
pub mod spec;
mod spot;

pub use controller::ChannelController;
pub use options::Options;

use crate::log;
use crate::runtime::Caliper;
use crate::service::{ChannelView, Runtime, Service};
use crate::services;
use parse::{Item, parse as parse_config_string};
use spec::{ConfigSpec, OptionSpec, SpecSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The built-in config and option specs.
fn builtin_specs() -> &'static SpecSet {
    static SPECS: OnceLock<SpecSet> = OnceLock::new();
    SPECS.get_or_init(|| {
        json::parse(include_str!("builtin.json"))
            .map_err(|e| e.to_string())
            .and_then(|doc| SpecSet::from_json(&doc).map_err(|e| e.0))
            .unwrap_or_else(|e| {
                log::error(format_args!("built-in config specs: {e}"));
                SpecSet::default()
            })
    })
}

/// Whether the runtime has a service of this name.
fn service_exists(name: &str) -> bool {
    services::find(name).is_some()
}

/// Whether every service a config needs exists.
fn is_available(spec: &ConfigSpec) -> bool {
    spec.services.iter().all(|s| service_exists(s))
}

/// Whether the services of an option, and of the options it inherits
/// (among `options`), exist.
fn option_runs(option: &OptionSpec, options: &[&OptionSpec], depth: usize) -> bool {
    depth < 8
        && option.services.iter().all(|s| service_exists(s))
        && option
            .inherit
            .iter()
            .all(|name| options.iter().find(|o| o.name == *name).is_none_or(|o| option_runs(o, options, depth + 1)))
}

/// Creates and controls the channels of measurement configs.
#[derive(Clone)]
pub struct ConfigManager {
    configs: Vec<ConfigSpec>,
    options: Vec<OptionSpec>,
    /// Parameters for every config: `set_default_parameter` calls, then
    /// global keys of config strings, in order.
    global_params: Vec<(String, String)>,
    /// Parameters for one config: (config, key, value).
    config_params: Vec<(String, String, String)>,
    channels: Vec<Arc<ChannelController>>,
    error: Option<String>,
}

impl Default for ConfigManager {
    fn default() -> ConfigManager {
        ConfigManager::new()
    }
}

impl ConfigManager {
    /// A manager that knows the built-in configs.
    pub fn new() -> ConfigManager {
        let specs = builtin_specs();
        ConfigManager {
            configs: specs.configs.clone(),
            options: specs.options.clone(),
            global_params: Vec::new(),
            config_params: Vec::new(),
            channels: Vec::new(),
            error: None,
        }
    }

    /// A manager with the configs of `config_string` added.
    pub fn with(config_string: &str) -> ConfigManager {
        let mut mgr = ConfigManager::new();
        mgr.add(config_string);
        mgr
    }

    fn fail(&mut self, message: String) -> bool {
        if self.error.is_none() {
            self.error = Some(message);
        }
        false
    }

    /// The available config named `name` (or with that alias).
    fn resolve(&self, name: &str) -> Option<&ConfigSpec> {
        self.configs.iter().find(|c| (c.name == name || c.aliases.iter().any(|a| a == name)) && is_available(c))
    }

    /// Whether any config or global option has an option `key`.
    fn is_known_option(&self, key: &str) -> bool {
        key == "metadata"
            || self.options.iter().any(|o| o.name == key)
            || self.configs.iter().any(|c| c.option(key).is_some())
    }

    /// Adds the configs of a config string; their channels are created
    /// (inactive). Returns `false` on error (see [`ConfigManager::error_msg`]);
    /// on error nothing of the string is added.
    pub fn add(&mut self, config_string: &str) -> bool {
        self.add_string(config_string, None)
    }

    /// Like [`ConfigManager::add`], but keys that are neither configs nor
    /// options are returned in `extra` (with `""` if they had no value)
    /// instead of being errors.
    pub fn add_with_extra(&mut self, config_string: &str, extra: &mut Vec<(String, String)>) -> bool {
        self.add_string(config_string, Some(extra))
    }

    fn add_string(&mut self, text: &str, extra: Option<&mut Vec<(String, String)>>) -> bool {
        match self.parse_string(text, extra) {
            Ok(mut channels) => {
                self.channels.append(&mut channels);
                true
            }
            Err(e) => self.fail(e),
        }
    }

    /// Creates the controllers of a config string without keeping them.
    pub fn parse(&mut self, config_string: &str) -> Result<Vec<Arc<ChannelController>>, String> {
        self.parse_string(config_string, None)
    }

    fn parse_string(
        &mut self,
        text: &str,
        extra: Option<&mut Vec<(String, String)>>,
    ) -> Result<Vec<Arc<ChannelController>>, String> {
        let mut items = self.items(text)?;
        if items.iter().any(|i| matches!(i, Item::Load(_))) {
            // Loaded specs define config names: read them, then parse again.
            for item in &items {
                if let Item::Load(files) = item {
                    for file in files {
                        self.load_specs(file)?;
                    }
                }
            }
            items = self.items(text)?;
        }
        let mut extra = extra;
        let mut globals = Vec::new();
        for item in &items {
            if let Item::Param { key, value } = item {
                if self.is_known_option(key) {
                    globals.push((key.clone(), value.clone().unwrap_or_else(|| "true".into())));
                } else if let Some(extra) = extra.as_deref_mut() {
                    extra.push((key.clone(), value.clone().unwrap_or_default()));
                } else {
                    return Err(format!("Unknown config or parameter: {key}"));
                }
            }
        }
        self.global_params.extend(globals);
        let mut channels = Vec::new();
        for item in &items {
            if let Item::Config { name, args } = item {
                channels.push(Arc::new(self.make_controller(name, args)?));
            }
        }
        Ok(channels)
    }

    fn items(&self, text: &str) -> Result<Vec<Item>, String> {
        parse_config_string(text, |name| self.resolve(name).is_some()).map_err(|e| e.0)
    }

    fn make_controller(&self, name: &str, args: &[(String, String)]) -> Result<ChannelController, String> {
        let spec = self.resolve(name).ok_or_else(|| format!("Unknown config or parameter: {name}"))?;
        if let Some((key, _)) = args.iter().find(|(k, _)| !Options::accepts(spec, &self.options, k)) {
            return Err(format!("Unknown option: {key}"));
        }
        let mut assembled: Vec<(String, String)> = args.to_vec();
        assembled.extend(
            self.config_params.iter().filter(|(c, _, _)| *c == spec.name).map(|(_, k, v)| (k.clone(), v.clone())),
        );
        assembled.extend(self.global_params.iter().filter(|(k, _)| Options::accepts(spec, &self.options, k)).cloned());
        assembled.extend(spec.defaults.iter().cloned());
        let options = Options::new(spec, &self.options, &assembled);
        options.check(service_exists)?;
        builtin::controller(spec, &options)
    }

    /// Adds a config spec (JSON); an error if a config of that name exists.
    pub fn add_config_spec(&mut self, spec_json: &str) -> bool {
        let spec =
            json::parse(spec_json).map_err(|e| e.to_string()).and_then(|d| ConfigSpec::from_json(&d).map_err(|e| e.0));
        match spec {
            Ok(spec) => match self.register_config(spec) {
                Ok(()) => true,
                Err(e) => self.fail(e),
            },
            Err(e) => self.fail(format!("config spec: {e}")),
        }
    }

    fn register_config(&mut self, spec: ConfigSpec) -> Result<(), String> {
        if self.configs.iter().any(|c| c.name == spec.name) {
            return Err(format!("Config {} already exists", spec.name));
        }
        self.configs.push(spec);
        Ok(())
    }

    /// Adds global option specs (a JSON list of option specs).
    pub fn add_option_spec(&mut self, spec_json: &str) -> bool {
        let parsed = json::parse(spec_json).map_err(|e| e.to_string()).and_then(|doc| {
            match &doc {
                json::Json::Array(_) => OptionSpec::list_from_json(Some(&doc)),
                other => OptionSpec::from_json(other).map(|o| vec![o]),
            }
            .map_err(|e| e.0)
        });
        match parsed {
            Ok(options) => {
                self.options.extend(options);
                true
            }
            Err(e) => self.fail(format!("option spec: {e}")),
        }
    }

    /// Reads config and option specs from a JSON file: one config spec, a
    /// list of them, or `{"configs": [...], "options": [...]}`. A failure
    /// is also the manager's error, as with the reference (whose `load`
    /// returns nothing, so `error()` is how a program learns of it).
    pub fn load(&mut self, filename: &str) -> Result<(), String> {
        let result = self.load_specs(filename);
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
    }

    fn load_specs(&mut self, filename: &str) -> Result<(), String> {
        let text = std::fs::read_to_string(filename).map_err(|_| format!("Could not open file {filename}"))?;
        let doc = json::parse(&text).map_err(|e| format!("{filename}:{e}"))?;
        let set = SpecSet::from_json(&doc).map_err(|e| format!("{filename}: {}", e.0))?;
        for spec in set.configs {
            self.register_config(spec)?;
        }
        self.options.extend(set.options);
        Ok(())
    }

    /// A parameter for every config of later `add` calls (lower priority
    /// than arguments in parentheses).
    pub fn set_default_parameter(&mut self, key: &str, value: &str) {
        self.global_params.push((key.to_string(), value.to_string()));
    }

    /// A parameter for config `config` in later `add` calls.
    pub fn set_default_parameter_for_config(&mut self, config: &str, key: &str, value: &str) {
        self.config_params.push((config.to_string(), key.to_string(), value.to_string()));
    }

    /// Whether an error occurred.
    pub fn error(&self) -> bool {
        self.error.is_some()
    }

    /// The first error's message (empty if none).
    pub fn error_msg(&self) -> String {
        self.error.clone().unwrap_or_default()
    }

    /// The controllers of the configs added so far.
    pub fn channels(&self) -> &[Arc<ChannelController>] {
        &self.channels
    }

    /// The controller of config `name`.
    pub fn channel(&self, name: &str) -> Option<Arc<ChannelController>> {
        self.channels.iter().find(|c| c.name() == name).cloned()
    }

    /// Starts measuring: creates and activates every config's channel.
    pub fn start(&self) {
        if let Some(cali) = Caliper::instance() {
            self.start_with(cali);
        }
    }

    pub(crate) fn start_with(&self, cali: &Caliper) {
        for c in &self.channels {
            c.start_with(cali);
        }
    }

    /// Stops measuring (the channels stay, with what they gathered).
    pub fn stop(&self) {
        if let Some(cali) = Caliper::instance() {
            for c in &self.channels {
                c.stop_with(cali);
            }
        }
    }

    /// Writes every config's output (reports, files).
    pub fn flush(&self) {
        if let Some(cali) = Caliper::instance() {
            self.flush_with(cali);
        }
    }

    pub(crate) fn flush_with(&self, cali: &Caliper) {
        for c in &self.channels {
            c.flush_with(cali);
        }
    }

    /// Checks a config string without side effects: the error message, or
    /// `None` if it is fine. With `allow_extra`, unknown keys are fine.
    pub fn check(&self, config_string: &str, allow_extra: bool) -> Option<String> {
        let mut scratch = self.clone();
        let mut extra = Vec::new();
        scratch.parse_string(config_string, allow_extra.then_some(&mut extra)).err()
    }

    /// The names (and aliases) of the configs that can run here.
    pub fn available_config_specs(&self) -> Vec<String> {
        self.configs
            .iter()
            .filter(|c| is_available(c))
            .flat_map(|c| std::iter::once(c.name.clone()).chain(c.aliases.iter().cloned()))
            .collect()
    }

    /// A config's one-line description.
    pub fn description_for_spec(&self, name: &str) -> Option<String> {
        self.resolve(name).map(|c| c.description.clone())
    }

    /// A config's documentation: description and options.
    pub fn documentation_for_spec(&self, name: &str) -> String {
        let Some(spec) = self.resolve(name) else { return format!("{name}: Not available") };
        let accepted: Vec<&OptionSpec> =
            spec.options.iter().chain(self.options.iter().filter(|o| spec.categories.contains(&o.category))).collect();
        let options: Vec<&OptionSpec> = accepted.iter().copied().filter(|o| option_runs(o, &accepted, 0)).collect();
        let width = options.iter().map(|o| o.name.len()).max().unwrap_or(0);
        let mut doc = format!("{}\n {}", spec.name, spec.description);
        if !spec.aliases.is_empty() {
            doc.push_str(&format!(" (alias: {})", spec.aliases.join(", ")));
        }
        if !options.is_empty() {
            doc.push_str("\n  Options:");
            for o in options {
                doc.push_str(&format!("\n   {:width$} {}", o.name, o.description));
            }
        }
        doc
    }

    /// `Available config recipes:` and a line per config with its
    /// description (`cali-query --help=configs`).
    pub fn configs_help(&self) -> String {
        let available: Vec<&ConfigSpec> = self.configs.iter().filter(|c| is_available(c)).collect();
        let width = available.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let mut out = String::from("Available config recipes:");
        for c in available {
            out.push_str(&format!("\n {:width$} {}", c.name, c.description));
        }
        out
    }
}

/// `CALI_CONFIG`: the configs of the environment variable, started when
/// the runtime initialises and flushed once when the program ends (through
/// the `builtin.configmgr` channel, which flushes at exit). A bad string is
/// logged and nothing is measured.
pub(crate) fn start_from_env(cali: &'static Caliper, config_string: &str) {
    let mut manager = ConfigManager::new();
    if !manager.add(config_string) {
        log::error(format_args!("CALI_CONFIG: error: {}", manager.error_msg()));
        return;
    }
    let flush = Arc::new(FlushOnce { cali, manager, flushed: AtomicBool::new(false) });
    // In an MPI program the channel records the rank (for `%mpi.rank%`
    // in file names) and writes the configs' outputs before MPI_Finalize.
    let services = if crate::mpi::layer().is_some() { "mpi" } else { "" };
    let config = crate::RuntimeConfig::from_pairs(
        [("CALI_CHANNEL_CONFIG_CHECK", "false"), ("CALI_SERVICES_ENABLE", services)],
        false,
    );
    cali.create_channel_with("builtin.configmgr", config, vec![flush.clone()]);
    flush.manager.start_with(cali);
}

/// Flushes the `CALI_CONFIG` manager when its channel writes output, once.
struct FlushOnce {
    /// The runtime the manager runs in (its channels' own).
    cali: &'static Caliper,
    manager: ConfigManager,
    flushed: AtomicBool,
}

impl Service for FlushOnce {
    fn name(&self) -> &'static str {
        "configmgr"
    }

    fn writes_output(&self) -> bool {
        true
    }

    fn flushes_at_finalize(&self) -> bool {
        crate::mpi::layer().is_some()
    }

    fn write_output(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        if !self.flushed.swap(true, Ordering::AcqRel) {
            self.manager.flush_with(self.cali);
        }
    }
}

#[cfg(test)]
mod tests;
