//! What a service declares about itself: its name, what it does, its
//! place in the pipeline, its settings (each with a type, a default and a
//! description, as the reference's service specs have them) and how it is
//! made. A service reads its settings through [`Settings`], which knows
//! them from this declaration, so that `cali-query --help=<service>` and
//! the service agree by construction.

use crate::channel::EventConfig;
use crate::config::RuntimeConfig;
use crate::service::Runtime;
use crate::service::Service;
use std::fmt::Write as _;
use std::sync::Arc;

/// The type of a setting, as the reference's help names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingKind {
    /// `true`/`false`, and the spellings the reference takes for them.
    Bool,
    /// A signed integer.
    Int,
    /// An unsigned integer (sizes, counts).
    Uint,
    /// A floating-point number (intervals in seconds).
    Double,
    /// Free text.
    String,
    /// A comma-separated list.
    StringList,
}

impl SettingKind {
    fn name(self) -> &'static str {
        match self {
            SettingKind::Bool => "bool",
            SettingKind::Int => "int",
            SettingKind::Uint => "uint",
            SettingKind::Double => "double",
            SettingKind::String => "string",
            SettingKind::StringList => "stringlist",
        }
    }
}

/// One setting: the configuration variable `CALI_<SERVICE>_<KEY>`.
pub struct SettingSpec {
    /// The key, lower case (`buffer_size`).
    pub key: &'static str,
    /// How the value is read, and how the help names its type.
    pub kind: SettingKind,
    /// The value when the variable is not set, as text.
    pub default: &'static str,
    /// The setting's line in the service's help (`cali-query --help=<service>`).
    pub description: &'static str,
}

/// Where a service sits in the pipeline, for the configuration check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Takes snapshots (`event`, `loop_monitor`).
    Trigger,
    /// Keeps snapshots (`aggregate`, `trace`).
    Buffer,
    /// Writes flushed records (`recorder`, `report`).
    Output,
    /// Measures, marks or checks (`timer`, `pthread`, `validator`).
    Other,
}

impl Stage {
    /// The reference's services of this stage, named in its configuration
    /// check's advice (`Add "recorder", "report" or "mpireport" to
    /// CALI_SERVICES_ENABLE ...`), which this runtime repeats word for word.
    pub fn reference_services(self) -> &'static [&'static str] {
        match self {
            Stage::Trigger => &["event", "async_event", "loop_monitor", "region_monitor", "sampler", "alloc"],
            Stage::Buffer => &["aggregate", "trace"],
            Stage::Output => &["recorder", "report", "mpireport"],
            Stage::Other => &[],
        }
    }
}

/// What a service's constructor made.
pub(crate) enum Created {
    /// A service object for the channel.
    Service(Arc<dyn Service>),
    /// The channel's own event trigger (`event`), which the channel's fast
    /// path runs itself.
    Events(EventConfig),
}

/// Why a service was not created.
pub(crate) enum NotCreated {
    /// There is no service of that name.
    Unknown,
    /// Its settings are wrong; the service has said how.
    BadSettings,
}

/// What a constructor gets: the runtime, the channel's name and the
/// service's settings.
pub struct Setup<'a> {
    /// The runtime, for the attributes the service makes and the
    /// globals it sets as it starts.
    pub cali: &'a dyn Runtime,
    /// The name of the channel the service is made for, for its log
    /// lines.
    pub channel: &'a str,
    /// The service's `CALI_<SERVICE>_*` values in this channel.
    pub settings: Settings<'a>,
}

/// A service's constructor.
pub(crate) type Constructor = fn(&Setup<'_>) -> Result<Created, NotCreated>;

/// A service as the registry knows it.
pub struct ServiceSpec {
    /// The name `CALI_SERVICES_ENABLE` lists.
    pub name: &'static str,
    /// Other names it is enabled by (`timestamp` for `timer`).
    pub aliases: &'static [&'static str],
    /// The help's one-line description.
    pub description: &'static str,
    /// Where it sits in the pipeline, which the configuration check
    /// uses to warn of a channel that measures but writes nothing.
    pub stage: Stage,
    /// Its `CALI_<SERVICE>_*` settings, with their defaults.
    pub settings: &'static [SettingSpec],
    pub(crate) create: Constructor,
}

impl ServiceSpec {
    /// Whether `name` enables this service.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// The help text, in the reference's layout: `<name> service:`, the
    /// description, then each variable with its default and type and an
    /// indented description.
    pub fn help(&self) -> String {
        let mut out = format!("{} service:\n {}\n", self.name, self.description);
        for s in self.settings {
            let default = if s.default.is_empty() { String::new() } else { format!("={}", s.default) };
            let _ =
                writeln!(out, "  {}{default} ({})\n    {}", variable(self.name, s.key), s.kind.name(), s.description);
        }
        out
    }
}

/// The documented default of the service setting `variable`
/// (`CALI_<SERVICE>_<KEY>`), if a service declares it.
pub fn setting_default(variable_name: &str) -> Option<&'static str> {
    super::SERVICES.iter().find_map(|spec| {
        let setting = spec.settings.iter().find(|s| variable(spec.name, s.key) == variable_name)?;
        Some(setting.default)
    })
}

/// `CALI_<SERVICE>_<KEY>`.
fn variable(service: &str, key: &str) -> String {
    format!("CALI_{}_{}", service, key).to_uppercase()
}

/// The effective settings of the services `names` in `config`, as
/// `CALI_<SERVICE>_<KEY>=value` lines in the order the services and their
/// specs list them (for the configuration a channel logs at verbosity 3).
pub(crate) fn effective_settings(names: &[String], config: &RuntimeConfig) -> Vec<String> {
    let specs = names.iter().filter_map(|n| super::find(n));
    specs
        .flat_map(|spec| {
            let settings = Settings::new(spec, config);
            spec.settings.iter().map(move |s| format!("{}={}", variable(spec.name, s.key), settings.text(s.key)))
        })
        .collect()
}

/// A service's settings in a channel's configuration, read by key.
pub struct Settings<'a> {
    spec: &'static ServiceSpec,
    config: &'a RuntimeConfig,
}

impl<'a> Settings<'a> {
    pub(crate) fn new(spec: &'static ServiceSpec, config: &'a RuntimeConfig) -> Settings<'a> {
        Settings { spec, config }
    }

    /// The declaration of `key`. Reading an undeclared key is a mistake in
    /// the service, which the registry's tests catch; in a release build it
    /// reads as unset with an empty default.
    fn spec(&self, key: &str) -> (&'static str, String) {
        let found = self.spec.settings.iter().find(|s| s.key == key);
        debug_assert!(found.is_some(), "service {} reads undeclared setting {key}", self.spec.name);
        (found.map_or("", |s| s.default), variable(self.spec.name, key))
    }

    /// The setting as set, if it is.
    pub fn get(&self, key: &str) -> Option<String> {
        let (_, variable) = self.spec(key);
        self.config.get(&variable)
    }

    /// The setting's text, or its default.
    pub fn text(&self, key: &str) -> String {
        let (default, variable) = self.spec(key);
        self.config.get_or(&variable, default)
    }

    /// The setting as a boolean (`true`, `1`, `yes`, ...), or its default.
    pub fn bool(&self, key: &str) -> bool {
        let (default, variable) = self.spec(key);
        self.config.get_bool(&variable, default == "true")
    }

    /// The setting as a number, or its default.
    pub fn number<T: std::str::FromStr + Default>(&self, key: &str) -> T {
        let (default, variable) = self.spec(key);
        self.config.get_number(&variable, default.parse().unwrap_or_default())
    }

    /// The setting as a list (comma-separated, and colon-separated too
    /// where `colon`), or its default.
    pub fn list(&self, key: &str, colon: bool) -> Vec<String> {
        let (default, variable) = self.spec(key);
        if self.config.get(&variable).is_some() {
            self.config.get_list(&variable, colon)
        } else {
            crate::config::parse_list(default, if colon { &[',', ':'] } else { &[','] })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MPI_SERVICES, SERVICES};
    use super::*;

    #[test]
    fn every_default_has_its_declared_type_and_names_are_unique() {
        let mut names: Vec<&str> =
            SERVICES.iter().flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied())).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name or alias used twice");
        for service in SERVICES.iter().chain(MPI_SERVICES) {
            for s in service.settings {
                let ok = match s.kind {
                    SettingKind::Bool => matches!(s.default, "true" | "false"),
                    SettingKind::Int => s.default.parse::<i64>().is_ok(),
                    SettingKind::Uint => s.default.parse::<u64>().is_ok(),
                    SettingKind::Double => s.default.parse::<f64>().is_ok(),
                    SettingKind::String | SettingKind::StringList => true,
                };
                assert!(ok, "{}: {} default {:?} is not a {:?}", service.name, s.key, s.default, s.kind);
                assert!(!s.description.is_empty() && s.key == s.key.to_lowercase());
            }
        }
    }

    #[test]
    fn settings_are_read_by_key_with_the_declared_default() {
        let spec = super::super::find("trace").unwrap();
        let config = RuntimeConfig::from_pairs([("CALI_TRACE_BUFFER_POLICY", "flush")], false);
        let settings = Settings::new(spec, &config);
        assert_eq!(settings.text("buffer_policy"), "flush");
        assert_eq!(settings.number::<f64>("buffer_size"), 2.0);
        assert_eq!(settings.get("buffer_size"), None);
        let template = super::super::find("measurement_template").unwrap();
        assert_eq!(Settings::new(template, &config).list("names", false), ["a", "b"]);
    }

    #[test]
    fn help_has_the_reference_layout() {
        let help = super::super::find("timestamp").unwrap().help();
        assert_eq!(
            help,
            "timer service:\n Add time offsets and durations to snapshots\n  \
             CALI_TIMER_INCLUSIVE_DURATION=false (bool)\n    Also record time.inclusive.duration.ns on region ends\n"
        );
    }
}
