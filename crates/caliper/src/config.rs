//! Runtime configuration: `CALI_*` settings from the program, the
//! environment, configuration profiles and `caliper.config` files.
//!
//! A key resolves, highest priority first, from: values set by the program
//! (`cali_config_set`, channel config maps), the environment (where
//! allowed), the selected profiles (`CALI_CONFIG_PROFILE`, later ones win),
//! the `default` section of the config files, presets, and finally the
//! caller's default.

use crate::log;
use caliper_data::hash::FxHashMap;
use std::sync::OnceLock;

/// Built-in configuration profiles (available without any file).
const BUILTIN_PROFILES: &[(&str, &[(&str, &str)])] = &[
    (
        "serial-trace",
        &[("CALI_SERVICES_ENABLE", "event,recorder,timestamp,trace"), ("CALI_TIMER_INCLUSIVE_DURATION", "true")],
    ),
    ("event-trace", &[("CALI_SERVICES_ENABLE", "event,recorder,timestamp,trace")]),
    ("thread-trace", &[("CALI_SERVICES_ENABLE", "event:pthread:recorder:timestamp:trace")]),
    (
        "flat-function-profile",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,report,timestamp"),
            ("CALI_TIMER_INCLUSIVE_DURATION", "true"),
            ("CALI_AGGREGATE_KEY", "event.end#region"),
            (
                "CALI_REPORT_CONFIG",
                "select event.end#region,sum#time.inclusive.duration.ns where event.end#region format table order by sum#time.inclusive.duration.ns desc",
            ),
        ],
    ),
    (
        "runtime-report",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,report,timestamp"),
            ("CALI_EVENT_ENABLE_SNAPSHOT_INFO", "false"),
            ("CALI_TIMER_INCLUSIVE_DURATION", "false"),
            (
                "CALI_REPORT_CONFIG",
                "let sum#time.duration=scale(sum#time.duration.ns,1e-9) select inclusive_sum(sum#time.duration) as \"Inclusive time\",sum(sum#time.duration) as \"Exclusive time\",percent_total(sum#time.duration) as \"Time %\" group by prop:nested format tree",
            ),
            ("CALI_REPORT_FILENAME", "stderr"),
        ],
    ),
];

/// A set of configuration profiles: name → (key → value).
type Profiles = FxHashMap<String, FxHashMap<String, String>>;

/// The configuration of the process or of one channel.
#[derive(Clone, Debug, Default)]
pub struct RuntimeConfig {
    top: FxHashMap<String, String>,
    presets: FxHashMap<String, String>,
    read_env: bool,
    profiles: OnceLock<(Profiles, Vec<String>)>,
}

impl RuntimeConfig {
    /// A configuration that reads the environment (the process default).
    pub fn with_env() -> RuntimeConfig {
        RuntimeConfig { read_env: true, ..RuntimeConfig::default() }
    }

    /// A configuration from explicit key/value pairs only (a channel's):
    /// the environment is not read unless `read_env`.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>, read_env: bool) -> RuntimeConfig {
        let mut cfg = RuntimeConfig { read_env, ..RuntimeConfig::default() };
        for (k, v) in pairs {
            cfg.top.insert(k.to_string(), v.to_string());
        }
        cfg
    }

    /// Sets a value with the highest priority.
    pub fn set(&mut self, key: &str, value: &str) {
        self.top.insert(key.to_string(), value.to_string());
        self.profiles = OnceLock::new();
    }

    /// Sets a low-priority default.
    pub fn preset(&mut self, key: &str, value: &str) {
        self.presets.insert(key.to_string(), value.to_string());
        self.profiles = OnceLock::new();
    }

    /// Allows or forbids reading the environment.
    pub fn allow_read_env(&mut self, allow: bool) {
        self.read_env = allow;
        self.profiles = OnceLock::new();
    }

    fn env(&self, key: &str) -> Option<String> {
        if self.read_env { std::env::var(key).ok() } else { None }
    }

    /// The value of `key` from the program, the environment or presets,
    /// without profiles (used to find the profiles themselves).
    fn direct(&self, key: &str) -> Option<String> {
        self.top.get(key).cloned().or_else(|| self.env(key)).or_else(|| self.presets.get(key).cloned())
    }

    /// The loaded profiles and the names of the selected ones.
    fn profiles(&self) -> &(Profiles, Vec<String>) {
        self.profiles.get_or_init(|| {
            let mut profiles: Profiles = FxHashMap::default();
            for (name, entries) in BUILTIN_PROFILES {
                let map = entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                profiles.insert(name.to_string(), map);
            }
            let files = self.direct("CALI_CONFIG_FILE").unwrap_or_else(|| "caliper.config".to_string());
            for file in parse_list(&files, &[',', ':']) {
                if let Ok(text) = std::fs::read_to_string(&file) {
                    merge_config_file(&mut profiles, &text);
                }
            }
            let selected = self
                .direct("CALI_CONFIG_PROFILE")
                .or_else(|| profiles.get("default").and_then(|d| d.get("CALI_CONFIG_PROFILE").cloned()))
                .unwrap_or_default();
            let selected: Vec<String> = parse_list(&selected, &[',', ':']);
            for name in &selected {
                if name != "default" && !profiles.contains_key(name) {
                    eprintln!("caliper: error: config profile \"{name}\" not defined.");
                }
            }
            (profiles, selected)
        })
    }

    /// The value of `key` (e.g. `CALI_SERVICES_ENABLE`), if set anywhere.
    pub fn get(&self, key: &str) -> Option<String> {
        if let Some(v) = self.top.get(key) {
            return Some(v.clone());
        }
        if let Some(v) = self.env(key) {
            return Some(v);
        }
        let (profiles, selected) = self.profiles();
        for name in selected.iter().rev() {
            if let Some(v) = profiles.get(name).and_then(|p| p.get(key)) {
                return Some(v.clone());
            }
        }
        if let Some(v) = profiles.get("default").and_then(|p| p.get(key)) {
            return Some(v.clone());
        }
        self.presets.get(key).cloned()
    }

    /// The value of `key` or `default`.
    pub fn get_or(&self, key: &str, default: &str) -> String {
        self.get(key).unwrap_or_else(|| default.to_string())
    }

    /// A boolean value (true/t/false/f in any case, or a number); invalid
    /// text logs a warning and gives `default`.
    pub fn get_bool(&self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(v) => caliper_data::variant::parse_bool(&v).unwrap_or_else(|| {
                log::error(format_args!("Invalid value \"{v}\" for {key}"));
                default
            }),
        }
    }

    /// A number, or `default` (logging a warning) if invalid.
    pub fn get_number<T: std::str::FromStr>(&self, key: &str, default: T) -> T {
        match self.get(key) {
            None => default,
            Some(v) => v.trim().parse().unwrap_or_else(|_| {
                log::error(format_args!("Invalid value \"{v}\" for {key}"));
                default
            }),
        }
    }

    /// A list (comma-separated; `colon` also allows `:`).
    pub fn get_list(&self, key: &str, colon: bool) -> Vec<String> {
        let seps: &[char] = if colon { &[',', ':'] } else { &[','] };
        self.get(key).map(|v| parse_list(&v, seps)).unwrap_or_default()
    }
}

/// Splits a list at the separators, honouring double quotes and backslash
/// escapes, trimming whitespace and dropping empty items.
pub fn parse_list(text: &str, separators: &[char]) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '"' => quoted = !quoted,
            c if !quoted && separators.contains(&c) => {
                let item = current.trim().to_string();
                if !item.is_empty() {
                    items.push(item);
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    let item = current.trim().to_string();
    if !item.is_empty() {
        items.push(item);
    }
    items
}

/// Reads a value the way config files do: leading whitespace skipped, up to
/// unquoted whitespace; quotes group text, backslash escapes.
fn read_word(text: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = text.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => break,
            c => out.push(c),
        }
    }
    out
}

/// Adds a config file's profiles: lines `KEY=VALUE`, `#` comments, and
/// profile headers `# [name]`; entries before the first header belong to
/// `default`. Later assignments win.
fn merge_config_file(profiles: &mut Profiles, text: &str) {
    let mut current = "default".to_string();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with('#') {
            if let (Some(open), Some(close)) = (trimmed.find('['), trimmed.find(']'))
                && open < close
            {
                current = trimmed[open + 1..close].trim().to_string();
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once('=') else { continue };
        profiles.entry(current.clone()).or_default().insert(key.trim().to_string(), read_word(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence() {
        let mut cfg = RuntimeConfig::from_pairs([("CALI_A", "top")], false);
        cfg.preset("CALI_A", "preset");
        cfg.preset("CALI_B", "preset");
        assert_eq!(cfg.get("CALI_A").as_deref(), Some("top"));
        assert_eq!(cfg.get("CALI_B").as_deref(), Some("preset"));
        assert_eq!(cfg.get("CALI_C"), None);
        assert_eq!(cfg.get_or("CALI_C", "x"), "x");
    }

    #[test]
    fn builtin_profiles_apply_when_selected() {
        let mut cfg = RuntimeConfig::from_pairs([("CALI_CONFIG_PROFILE", "serial-trace")], false);
        cfg.set("CALI_CONFIG_FILE", "/nonexistent/caliper.config");
        assert_eq!(cfg.get("CALI_SERVICES_ENABLE").as_deref(), Some("event,recorder,timestamp,trace"));
        assert!(cfg.get_bool("CALI_TIMER_INCLUSIVE_DURATION", false));
        cfg.set("CALI_SERVICES_ENABLE", "event");
        assert_eq!(cfg.get("CALI_SERVICES_ENABLE").as_deref(), Some("event"));
    }

    #[test]
    fn config_files_with_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("caliper.config");
        std::fs::write(
            &file,
            "# a comment\nCALI_X=from_default\nCALI_REPORT_CONFIG=\"select * format table\"\n# [mine]\nCALI_X=from_mine\nno equals sign\n",
        )
        .unwrap();
        let mut cfg = RuntimeConfig::from_pairs([("CALI_CONFIG_FILE", file.to_str().unwrap())], false);
        assert_eq!(cfg.get("CALI_X").as_deref(), Some("from_default"));
        assert_eq!(cfg.get("CALI_REPORT_CONFIG").as_deref(), Some("select * format table"));
        cfg.set("CALI_CONFIG_PROFILE", "mine");
        assert_eq!(cfg.get("CALI_X").as_deref(), Some("from_mine"));
    }

    #[test]
    fn lists_and_values() {
        assert_eq!(parse_list("event, trace:timer", &[',', ':']), ["event", "trace", "timer"]);
        assert_eq!(parse_list(r#""a,b",c\,d"#, &[',']), ["a,b", "c,d"]);
        assert_eq!(read_word("  \"two words\" rest"), "two words");
        let cfg = RuntimeConfig::from_pairs([("CALI_N", "12"), ("CALI_B", "t"), ("CALI_BAD", "maybe")], false);
        assert_eq!(cfg.get_number("CALI_N", 0u32), 12);
        assert!(cfg.get_bool("CALI_B", false));
        assert!(!cfg.get_bool("CALI_BAD", false));
    }
}
