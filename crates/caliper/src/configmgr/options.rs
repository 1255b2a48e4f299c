//! The options of one config instance: the arguments assembled for it,
//! which options they enable, and what those do to the channel's
//! settings, its run metadata and its queries.

use super::json::{self, Json};
use super::parse::parse_pairs;
use super::spec::{ConfigSpec, OptionSpec, OptionType, QueryLevel};
use crate::log;
use caliper_data::variant::parse_bool;

/// The options of a config instance.
#[derive(Clone, Debug)]
pub struct Options {
    config: String,
    /// The options this config accepts: its own, then the global options
    /// of its categories.
    available: Vec<OptionSpec>,
    /// The assembled arguments, first occurrence of each key (but
    /// `metadata`, which may repeat).
    args: Vec<(String, String)>,
    /// Indices into `available` of the enabled options, in order.
    enabled: Vec<usize>,
}

impl Options {
    /// The options of `spec` with arguments `args` (already in priority
    /// order; later duplicates are ignored). `globals` are all global
    /// option specs.
    pub fn new(spec: &ConfigSpec, globals: &[OptionSpec], args: &[(String, String)]) -> Options {
        let mut available = spec.options.clone();
        for g in globals {
            if spec.categories.contains(&g.category) && !available.iter().any(|o| o.name == g.name) {
                available.push(g.clone());
            }
        }
        let mut assembled: Vec<(String, String)> = Vec::new();
        for (k, v) in args {
            if k == "metadata" || !assembled.iter().any(|(a, _)| a == k) {
                assembled.push((k.clone(), v.clone()));
            }
        }
        let mut options = Options { config: spec.name.clone(), available, args: assembled, enabled: Vec::new() };
        options.enabled = options.compute_enabled();
        options
    }

    /// Whether the config accepts option `name` (`metadata` always).
    pub fn accepts(spec: &ConfigSpec, globals: &[OptionSpec], name: &str) -> bool {
        name == "metadata"
            || spec.option(name).is_some()
            || globals.iter().any(|g| g.name == name && spec.categories.contains(&g.category))
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.available.iter().position(|o| o.name == name)
    }

    fn compute_enabled(&self) -> Vec<usize> {
        let mut enabled = Vec::new();
        let mut pending: Vec<usize> = Vec::new();
        for (k, v) in &self.args {
            let Some(i) = self.find(k) else { continue };
            if self.available[i].kind != OptionType::Bool || parse_bool(v) == Some(true) {
                pending.push(i);
            }
        }
        // Depth-first, so inherited options follow the one that enables them.
        pending.reverse();
        while let Some(i) = pending.pop() {
            if enabled.contains(&i) {
                continue;
            }
            enabled.push(i);
            for name in self.available[i].inherit.iter().rev() {
                if let Some(j) = self.find(name) {
                    pending.push(j);
                }
            }
        }
        enabled
    }

    /// The config's name.
    pub fn config_name(&self) -> &str {
        &self.config
    }

    /// Whether `name` has a value among the arguments (given or default).
    pub fn is_set(&self, name: &str) -> bool {
        self.args.iter().any(|(k, _)| k == name)
    }

    /// Whether option `name` is enabled: set and, if boolean, true; or
    /// inherited from an enabled option.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.enabled.iter().any(|&i| self.available[i].name == name)
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The value of `name`, or `default`.
    pub fn get_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.get(name).unwrap_or(default)
    }

    /// Whether `name` is set to a true boolean (`default` if unset).
    pub fn get_bool(&self, name: &str, default: bool) -> bool {
        self.get(name).and_then(parse_bool).unwrap_or(default)
    }

    /// The names of the enabled boolean options.
    pub fn enabled_options(&self) -> Vec<&str> {
        self.enabled
            .iter()
            .map(|&i| &self.available[i])
            .filter(|o| o.kind == OptionType::Bool)
            .map(|o| o.name.as_str())
            .collect()
    }

    /// Checks the values of boolean options and that the services of the
    /// enabled options exist. Numeric values are not checked here, as the
    /// reference does not: the setting they fill reads them (and says so
    /// on one line if it cannot), and the rest of the config runs.
    pub fn check(&self, service_exists: impl Fn(&str) -> bool) -> Result<(), String> {
        for (k, v) in &self.args {
            let Some(i) = self.find(k) else { continue };
            if self.available[i].kind == OptionType::Bool && parse_bool(v).is_none() {
                return Err(format!("Invalid value \"{v}\" for {k}"));
            }
        }
        for &i in &self.enabled {
            let option = &self.available[i];
            if let Some(missing) = option.services.iter().find(|s| !service_exists(s)) {
                return Err(format!("{missing} service required for {} option is not available", option.name));
            }
        }
        Ok(())
    }

    /// Adds the enabled options' services to `CALI_SERVICES_ENABLE`
    /// (sorted, without duplicates) and writes their settings, `{}`
    /// replaced by the option's value.
    pub fn update_channel_config(&self, config: &mut Vec<(String, String)>) {
        let mut services: Vec<String> = get_setting(config, "CALI_SERVICES_ENABLE")
            .split([',', ':'])
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for &i in &self.enabled {
            services.extend(self.available[i].services.iter().cloned());
        }
        services.sort();
        services.dedup();
        set_setting(config, "CALI_SERVICES_ENABLE", &services.join(","));
        for &i in &self.enabled {
            let option = &self.available[i];
            let value = self.get(&option.name).unwrap_or("");
            for (k, v) in &option.config {
                set_setting(config, k, &v.replace("{}", value));
            }
        }
    }

    /// The run metadata of the channel: `opts:<key>` for every argument
    /// (sorted by key), then the entries of `metadata(...)` arguments.
    pub fn channel_metadata(&self) -> Vec<(String, String)> {
        let mut opts: Vec<(String, String)> =
            self.args.iter().filter(|(k, _)| k != "metadata").map(|(k, v)| (format!("opts:{k}"), v.clone())).collect();
        opts.sort();
        for (_, text) in self.args.iter().filter(|(k, _)| k == "metadata") {
            opts.extend(metadata_entries(text));
        }
        opts
    }

    /// `base` followed by the enabled options' query fragments for `level`.
    pub fn build_query(&self, level: QueryLevel, base: &str) -> String {
        let mut query = base.to_string();
        for &i in &self.enabled {
            let option = &self.available[i];
            let fragment = option.query(level);
            if !fragment.is_empty() {
                query.push(' ');
                query.push_str(&expand_fragment(fragment, self.get(&option.name).unwrap_or("")));
            }
        }
        query
    }
}

/// A query fragment for an option's `value`: `{}` stands for the value;
/// a fragment with `{item}` is repeated for each item of a comma-separated
/// value (`papi.counters=a,b`: a column per counter).
fn expand_fragment(fragment: &str, value: &str) -> String {
    if !fragment.contains("{item}") {
        return fragment.replace("{}", value);
    }
    let items = value.split(',').map(str::trim).filter(|item| !item.is_empty());
    items.map(|item| fragment.replace("{item}", item)).collect::<Vec<_>>().join(" ")
}

/// A setting of a channel config list.
pub fn get_setting<'a>(config: &'a [(String, String)], key: &str) -> &'a str {
    config.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or("")
}

/// Sets (or replaces) a setting of a channel config list.
pub fn set_setting(config: &mut Vec<(String, String)>, key: &str, value: &str) {
    match config.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => config.push((key.to_string(), value.to_string())),
    }
}

/// The entries of a `metadata(...)` argument: its `key=value` pairs, or
/// with `file=<json>` the values of the file's top-level keys (all, or
/// those `keys="a,b.c"` names), nested objects flattened to dotted names.
fn metadata_entries(text: &str) -> Vec<(String, String)> {
    let pairs = match parse_pairs(text) {
        Ok(p) => p,
        Err(e) => {
            log::error(format_args!("metadata: {}", e.0));
            return Vec::new();
        }
    };
    let Some((_, file)) = pairs.iter().find(|(k, _)| k == "file") else { return pairs };
    let doc = match std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|t| json::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(doc) => doc,
        Err(e) => {
            log::error(format_args!("metadata: could not read {file}: {e}"));
            return Vec::new();
        }
    };
    let keys: Vec<String> = match pairs.iter().find(|(k, _)| k == "keys") {
        Some((_, list)) => list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        None => match &doc {
            Json::Object(members) => members.iter().map(|(k, _)| k.clone()).collect(),
            _ => Vec::new(),
        },
    };
    let mut out = Vec::new();
    for key in keys {
        let mut value = Some(&doc);
        for part in key.split('.') {
            value = value.and_then(|v| v.get(part));
        }
        match value {
            Some(v) => flatten(&key, v, &mut out),
            None => log::error(format_args!("metadata: {file}: key \"{key}\" not found")),
        }
    }
    out
}

fn flatten(name: &str, value: &Json, out: &mut Vec<(String, String)>) {
    match value {
        Json::Text(t) => out.push((name.to_string(), t.clone())),
        Json::Object(members) => {
            for (k, v) in members {
                flatten(&format!("{name}.{k}"), v, out);
            }
        }
        Json::Array(items) => {
            let texts: Vec<&str> = items.iter().filter_map(Json::as_text).collect();
            out.push((name.to_string(), texts.join(",")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configmgr::json::parse;
    use crate::configmgr::spec::SpecSet;

    fn specs() -> SpecSet {
        SpecSet::from_json(
            &parse(
                r#"{ "configs": [ { "name": "c", "services": [ "aggregate", "event" ], "categories": [ "metric" ],
                       "options": [ { "name": "own", "type": "string", "config": { "CALI_X": "x={}" },
                                      "query": { "local": "select {}" } },
                                    { "name": "b", "type": "bool", "inherit": [ "m2" ] },
                                    { "name": "n", "type": "int", "config": { "CALI_N": "{}" } } ] } ],
                     "options": [ { "name": "m1", "type": "bool", "category": "metric", "services": [ "timer" ],
                                    "query": { "local": "select sum(x)", "cross": "select sum(sum#x)" } },
                                  { "name": "m2", "type": "bool", "category": "metric", "services": [ "nosuch" ] },
                                  { "name": "o", "type": "int", "category": "other" },
                                  { "name": "suite", "type": "boolean", "category": "metric",
                                    "query": { "local": "select any(max#ps) as PS" } } ] }"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    fn options(args: &[(&str, &str)]) -> Options {
        let s = specs();
        let args: Vec<(String, String)> = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Options::new(&s.configs[0], &s.options, &args)
    }

    #[test]
    fn enabled_options_and_queries() {
        let o = options(&[("own", "count()"), ("m1", "true"), ("own", "ignored"), ("b", "false")]);
        assert_eq!(o.get("own"), Some("count()"));
        assert!(o.is_enabled("m1") && o.is_enabled("own") && !o.is_enabled("b") && !o.is_enabled("m2"));
        assert_eq!(o.enabled_options(), ["m1"]);
        assert_eq!(o.build_query(QueryLevel::Local, "group by path"), "group by path select count() select sum(x)");
        assert_eq!(o.build_query(QueryLevel::Cross, "q"), "q select sum(sum#x)");
        let mut config = vec![("CALI_SERVICES_ENABLE".to_string(), "event,aggregate".to_string())];
        o.update_channel_config(&mut config);
        assert_eq!(get_setting(&config, "CALI_SERVICES_ENABLE"), "aggregate,event,timer");
        assert_eq!(get_setting(&config, "CALI_X"), "x=count()");
        assert_eq!(o.check(|s| s != "nosuch"), Ok(()));
    }

    #[test]
    fn item_fragments_repeat_for_each_item_of_the_value() {
        assert_eq!(
            expand_fragment("select sum(p.{item}) as \"{item}\"", " a::x , b-y,"),
            "select sum(p.a::x) as \"a::x\" select sum(p.b-y) as \"b-y\""
        );
        assert_eq!(expand_fragment("select {}", "a,b"), "select a,b");
        assert_eq!(expand_fragment("select sum(p.{item})", ""), "");
    }

    #[test]
    fn inheritance_and_checks() {
        let o = options(&[("b", "true")]);
        assert!(o.is_enabled("m2"), "b inherits m2");
        assert_eq!(o.check(|s| s != "nosuch"), Err("nosuch service required for m2 option is not available".into()));
        assert_eq!(options(&[("b", "maybe")]).check(|_| true), Err("Invalid value \"maybe\" for b".into()));
        // A numeric option's value goes to its setting unchecked, as in
        // the reference.
        let n = options(&[("n", "many")]);
        assert_eq!(n.check(|_| true), Ok(()));
        let mut config = Vec::new();
        n.update_channel_config(&mut config);
        assert_eq!(get_setting(&config, "CALI_N"), "many");
        let s = specs();
        assert!(Options::accepts(&s.configs[0], &s.options, "m1"));
        assert!(Options::accepts(&s.configs[0], &s.options, "metadata"));
        assert!(!Options::accepts(&s.configs[0], &s.options, "o"), "category not listed");
    }

    #[test]
    fn an_option_of_an_uninterpreted_type_is_enabled_when_set() {
        // "boolean" is not "bool": the reference takes any value and
        // enables the option whenever it is set.
        for value in ["true", "false"] {
            let o = options(&[("suite", value)]);
            assert_eq!(o.check(|_| true), Ok(()));
            assert!(o.is_enabled("suite"), "{value}");
            assert_eq!(o.build_query(QueryLevel::Local, "group by path"), "group by path select any(max#ps) as PS");
            assert_eq!(o.channel_metadata(), [("opts:suite".to_string(), value.to_string())]);
            assert!(o.enabled_options().is_empty(), "only bool options are listed");
        }
    }

    #[test]
    fn metadata_from_pairs_and_files() {
        let dir = std::env::temp_dir().join(format!("cali-meta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.json");
        std::fs::write(&file, r#"{ "host": { "os": { "name": "linux", "version": "6" }, "cpus": 2 }, "user": "me" }"#)
            .unwrap();
        let o = options(&[
            ("own", "v"),
            ("metadata", "a=1,b=two"),
            ("metadata", &format!("file={},keys=\"host.os,user\"", file.display())),
        ]);
        assert_eq!(
            o.channel_metadata(),
            [
                ("opts:own", "v"),
                ("a", "1"),
                ("b", "two"),
                ("host.os.name", "linux"),
                ("host.os.version", "6"),
                ("user", "me")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
