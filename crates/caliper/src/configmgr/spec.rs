//! Config and option specs: what a measurement config is made of, read
//! from the JSON documents that define the built-in configs and that users
//! load with `load(file.json)`.

use super::json::Json;

/// The value type of an option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OptionType {
    /// `true`/`false`: enabled only when true; given without a value, an
    /// option means `true`.
    Bool,
    /// Any text; enabled whenever set.
    String,
    /// An integer.
    Int,
    /// A floating-point number.
    Double,
}

impl OptionType {
    /// The type a spec's `"type"` names. For the reference the type is
    /// documentation, but for `bool`: any other name is accepted, and its
    /// option takes any value and is enabled whenever set, as a string
    /// option is. So a suite's `"type": "boolean"` option works as it does
    /// there: enabled by `name` or `name=true` (and, as there, by
    /// `name=false` too, the value being only recorded as `opts:<name>`).
    fn from_name(name: &str) -> OptionType {
        match name {
            "bool" => OptionType::Bool,
            "int" | "integer" => OptionType::Int,
            "double" => OptionType::Double,
            _ => OptionType::String,
        }
    }

    /// The name used in specs and documentation.
    pub fn name(self) -> &'static str {
        match self {
            OptionType::Bool => "bool",
            OptionType::String => "string",
            OptionType::Int => "int",
            OptionType::Double => "double",
        }
    }
}

/// An option of a config (or a global option, in a category).
#[derive(Clone, Debug, PartialEq)]
pub struct OptionSpec {
    /// The option's name, e.g. `region.count`.
    pub name: String,
    /// Its value type.
    pub kind: OptionType,
    /// One line of documentation.
    pub description: String,
    /// For global options: the category that configs list to get it.
    pub category: String,
    /// Services the option adds to the channel when enabled.
    pub services: Vec<String>,
    /// Options that enabling this one enables too.
    pub inherit: Vec<String>,
    /// Channel settings, `{}` standing for the option's value.
    pub config: Vec<(String, String)>,
    /// CalQL added to the per-process query (`{}`: the value).
    pub query_local: String,
    /// CalQL added to the cross-process query (`{}`: the value).
    pub query_cross: String,
}

/// A measurement config, e.g. `runtime-report`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigSpec {
    /// The config's name.
    pub name: String,
    /// One line of documentation.
    pub description: String,
    /// Other names of the config.
    pub aliases: Vec<String>,
    /// Services the config needs (it is unavailable without them).
    pub services: Vec<String>,
    /// Global option categories the config accepts.
    pub categories: Vec<String>,
    /// The initial channel settings.
    pub config: Vec<(String, String)>,
    /// Option values used when the user gives none.
    pub defaults: Vec<(String, String)>,
    /// The config's own options.
    pub options: Vec<OptionSpec>,
}

/// A spec document that does not describe configs or options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn text(v: &Json, what: &str) -> Result<String, SpecError> {
    v.as_text().map(str::to_string).ok_or_else(|| SpecError(format!("{what} must be a string")))
}

fn field(obj: &Json, key: &str) -> Result<String, SpecError> {
    obj.get(key).map(|v| text(v, &format!("\"{key}\""))).transpose().map(Option::unwrap_or_default)
}

/// A list of strings; a single string is a comma-separated list.
fn list(obj: &Json, key: &str) -> Result<Vec<String>, SpecError> {
    match obj.get(key) {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items.iter().map(|v| text(v, &format!("an item of \"{key}\""))).collect(),
        Some(Json::Text(t)) => Ok(t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()),
        Some(Json::Object(_)) => Err(SpecError(format!("\"{key}\" must be a list"))),
    }
}

fn dict(obj: &Json, key: &str) -> Result<Vec<(String, String)>, SpecError> {
    match obj.get(key) {
        None => Ok(Vec::new()),
        Some(Json::Object(members)) => {
            members.iter().map(|(k, v)| Ok((k.clone(), text(v, &format!("\"{key}\": \"{k}\""))?))).collect()
        }
        Some(_) => Err(SpecError(format!("\"{key}\" must be an object"))),
    }
}

fn name_of(obj: &Json, what: &str) -> Result<String, SpecError> {
    if !matches!(obj, Json::Object(_)) {
        return Err(SpecError(format!("{what} spec must be an object")));
    }
    match obj.get("name").and_then(Json::as_text) {
        Some(name) if !name.is_empty() => Ok(name.to_string()),
        _ => Err(SpecError(format!("{what} spec: \"name\" is missing"))),
    }
}

impl OptionSpec {
    /// Reads an option spec.
    pub fn from_json(obj: &Json) -> Result<OptionSpec, SpecError> {
        let name = name_of(obj, "option")?;
        let in_option = |e: SpecError| SpecError(format!("option \"{name}\": {}", e.0));
        let kind = obj.get("type").and_then(Json::as_text).map_or(OptionType::String, OptionType::from_name);
        let (query_local, query_cross) = query_fragments(obj.get("query")).map_err(in_option)?;
        Ok(OptionSpec {
            kind,
            description: field(obj, "description").map_err(in_option)?,
            category: field(obj, "category").map_err(in_option)?,
            services: list(obj, "services").map_err(in_option)?,
            inherit: list(obj, "inherit").map_err(in_option)?,
            config: dict(obj, "config").map_err(in_option)?,
            query_local,
            query_cross,
            name,
        })
    }

    /// Reads a list of option specs (none if absent).
    pub fn list_from_json(list: Option<&Json>) -> Result<Vec<OptionSpec>, SpecError> {
        match list {
            None => Ok(Vec::new()),
            Some(Json::Array(items)) => items.iter().map(OptionSpec::from_json).collect(),
            Some(_) => Err(SpecError("\"options\" must be a list".into())),
        }
    }

    /// Whether the option has a query fragment at `level`.
    pub fn query(&self, level: QueryLevel) -> &str {
        match level {
            QueryLevel::Local => &self.query_local,
            QueryLevel::Cross => &self.query_cross,
        }
    }
}

/// Which aggregation a query fragment belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueryLevel {
    /// Within one process.
    Local,
    /// Across processes (and the final step of two-level reports).
    Cross,
}

/// The local and cross fragments of an option's `query`: either
/// `{"local": "...", "cross": "..."}` or the list form
/// `[{"level": "local", "select": [...], "group by": [...], ...}]`.
fn query_fragments(query: Option<&Json>) -> Result<(String, String), SpecError> {
    match query {
        None => Ok((String::new(), String::new())),
        Some(obj @ Json::Object(_)) => Ok((field(obj, "local")?, field(obj, "cross")?)),
        Some(Json::Array(levels)) => {
            let (mut local, mut cross) = (String::new(), String::new());
            for level in levels {
                let fragment = legacy_fragment(level)?;
                let target = match level.get("level").and_then(Json::as_text).unwrap_or("local") {
                    "local" => &mut local,
                    "cross" => &mut cross,
                    other => return Err(SpecError(format!("unknown query level \"{other}\""))),
                };
                if !target.is_empty() {
                    target.push(' ');
                }
                target.push_str(&fragment);
            }
            Ok((local, cross))
        }
        Some(Json::Text(_)) => Err(SpecError("\"query\" must be an object or a list".into())),
    }
}

/// One level of the list form as CalQL: GROUP BY, LET, WHERE, AGGREGATE,
/// ORDER BY, then SELECT (whose items may be objects with `expr`, `as`
/// and `unit`).
fn legacy_fragment(level: &Json) -> Result<String, SpecError> {
    let mut clauses = Vec::new();
    for (key, keyword) in [
        ("group by", "group by"),
        ("let", "let"),
        ("where", "where"),
        ("aggregate", "aggregate"),
        ("order by", "order by"),
    ] {
        let items = list(level, key)?;
        if !items.is_empty() {
            clauses.push(format!("{keyword} {}", items.join(",")));
        }
    }
    let select = match level.get("select") {
        None => Vec::new(),
        Some(Json::Array(items)) => items.iter().map(select_item).collect::<Result<_, _>>()?,
        Some(_) => list(level, "select")?,
    };
    if !select.is_empty() {
        clauses.push(format!("select {}", select.join(",")));
    }
    Ok(clauses.join(" "))
}

fn select_item(item: &Json) -> Result<String, SpecError> {
    match item {
        Json::Text(t) => Ok(t.clone()),
        Json::Object(_) => {
            let mut out = field(item, "expr")?;
            let alias = field(item, "as")?;
            if !alias.is_empty() {
                out.push_str(&format!(" as \"{alias}\""));
            }
            let unit = field(item, "unit")?;
            if !unit.is_empty() {
                out.push_str(&format!(" unit \"{unit}\""));
            }
            Ok(out)
        }
        Json::Array(_) => Err(SpecError("a select item must be a string or an object".into())),
    }
}

impl ConfigSpec {
    /// Reads a config spec.
    pub fn from_json(obj: &Json) -> Result<ConfigSpec, SpecError> {
        let name = name_of(obj, "config")?;
        let in_config = |e: SpecError| SpecError(format!("config \"{name}\": {}", e.0));
        let options = OptionSpec::list_from_json(obj.get("options")).map_err(in_config)?;
        Ok(ConfigSpec {
            description: field(obj, "description").map_err(in_config)?,
            aliases: list(obj, "alias").map_err(in_config)?,
            services: list(obj, "services").map_err(in_config)?,
            categories: list(obj, "categories").map_err(in_config)?,
            config: dict(obj, "config").map_err(in_config)?,
            defaults: dict(obj, "defaults").map_err(in_config)?,
            options,
            name,
        })
    }

    /// The config's own option `name`.
    pub fn option(&self, name: &str) -> Option<&OptionSpec> {
        self.options.iter().find(|o| o.name == name)
    }
}

/// What a spec document holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpecSet {
    /// Config specs.
    pub configs: Vec<ConfigSpec>,
    /// Global option specs.
    pub options: Vec<OptionSpec>,
}

impl SpecSet {
    /// Reads a document: one config spec, a list of them, or
    /// `{"configs": [...], "options": [...]}`.
    pub fn from_json(doc: &Json) -> Result<SpecSet, SpecError> {
        let configs = |v: &Json| match v {
            Json::Array(items) => items.iter().map(ConfigSpec::from_json).collect::<Result<Vec<_>, _>>(),
            other => Ok(vec![ConfigSpec::from_json(other)?]),
        };
        match doc {
            Json::Array(_) => Ok(SpecSet { configs: configs(doc)?, options: Vec::new() }),
            Json::Object(_) if doc.get("name").is_some() => Ok(SpecSet { configs: configs(doc)?, options: Vec::new() }),
            Json::Object(_) if doc.get("configs").is_some() || doc.get("options").is_some() => {
                let options = OptionSpec::list_from_json(doc.get("options"))?;
                Ok(SpecSet { configs: doc.get("configs").map(configs).transpose()?.unwrap_or_default(), options })
            }
            _ => Err(SpecError(
                "expected a config spec, a list of config specs, or {\"configs\": [...], \"options\": [...]}".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configmgr::json::parse;

    #[test]
    fn a_config_spec() {
        let doc = parse(
            r#"{ "name": "my-report", "description": "d", "alias": ["mr"], "services": ["aggregate", "event"],
                 "categories": ["metric"], "config": { "CALI_EVENT_ENABLE_SNAPSHOT_INFO": "false" },
                 "defaults": { "x": "true" },
                 "options": [ { "name": "x", "type": "bool", "description": "an x",
                                "query": { "local": "select count()", "cross": "select sum(count)" } } ] }"#,
        )
        .unwrap();
        let spec = ConfigSpec::from_json(&doc).unwrap();
        assert_eq!(spec.name, "my-report");
        assert_eq!(spec.aliases, ["mr"]);
        assert_eq!(spec.services, ["aggregate", "event"]);
        assert_eq!(spec.config, [("CALI_EVENT_ENABLE_SNAPSHOT_INFO".to_string(), "false".to_string())]);
        let x = spec.option("x").unwrap();
        assert_eq!(
            (x.kind, x.query(QueryLevel::Local), x.query(QueryLevel::Cross)),
            (OptionType::Bool, "select count()", "select sum(count)")
        );
    }

    #[test]
    fn the_list_form_of_queries() {
        let doc = parse(
            r#"{ "name": "o", "type": "bool", "query": [
                 { "level": "local", "select": [ { "expr": "sum(x)", "as": "X", "unit": "sec" }, "count()" ],
                   "group by": "a,b", "let": [ "y=first(x)" ] },
                 { "level": "cross", "select": [ "max(y)" ] } ] }"#,
        )
        .unwrap();
        let o = OptionSpec::from_json(&doc).unwrap();
        assert_eq!(o.query_local, "group by a,b let y=first(x) select sum(x) as \"X\" unit \"sec\",count()");
        assert_eq!(o.query_cross, "select max(y)");
    }

    #[test]
    fn documents_and_errors() {
        let set = SpecSet::from_json(
            &parse(r#"{ "configs": [ { "name": "a" } ], "options": [ { "name": "b" } ] }"#).unwrap(),
        )
        .unwrap();
        assert_eq!((set.configs.len(), set.options.len()), (1, 1));
        let set = SpecSet::from_json(&parse(r#"[ { "name": "a" }, { "name": "b" } ]"#).unwrap()).unwrap();
        assert_eq!(set.configs.len(), 2);
        assert!(SpecSet::from_json(&parse(r#"{ "description": "x" }"#).unwrap()).is_err());
        assert!(ConfigSpec::from_json(&parse(r#"{ "services": [] }"#).unwrap()).is_err());
    }

    #[test]
    fn a_type_other_than_bool_int_double_is_a_string_option() {
        let doc = parse(
            r#"{ "name": "a", "options": [ { "name": "o", "type": "boolean" }, { "name": "p", "type": "flag" },
                                          { "name": "q", "type": "bool" }, { "name": "r" } ] }"#,
        )
        .unwrap();
        let spec = ConfigSpec::from_json(&doc).unwrap();
        let kinds: Vec<OptionType> = spec.options.iter().map(|o| o.kind).collect();
        assert_eq!(kinds, [OptionType::String, OptionType::String, OptionType::Bool, OptionType::String]);
    }
}
