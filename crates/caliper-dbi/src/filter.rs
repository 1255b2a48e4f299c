//! The context in space: which modules and functions are instrumented.
//!
//! A pattern matches a module (by its file name, `libc.so.6`, or its full
//! path) or a function name; `*` matches any run of characters. With
//! include patterns, only what matches one is instrumented; what matches
//! an exclude pattern never is. The dynamic linker is excluded unless an
//! include pattern names it: its functions run while it holds its own
//! locks and during the rendezvous the engine itself uses.
//!
//! Address ranges narrow further: with any, only functions whose entry
//! (its address in the module file) lies in a range of their module are
//! instrumented.

/// Include and exclude patterns, and address ranges.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub ranges: Vec<AddressRange>,
}

/// Addresses `low..high` in the files of the modules that match `module`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressRange {
    pub module: String,
    pub low: u64,
    pub high: u64,
}

impl Filter {
    /// Whether a whole module is out (nothing in it can be selected).
    pub fn excludes_module(&self, path: &str) -> bool {
        let named = |p: &String| matches_file(p, path);
        if self.exclude.iter().any(named) {
            return true;
        }
        is_dynamic_linker(path) && !self.include.iter().any(named)
    }

    /// Whether an entry at `address` (in the file) of module `path` is in
    /// the address ranges (always, without ranges).
    pub fn in_ranges(&self, path: &str, address: u64) -> bool {
        self.ranges.is_empty()
            || self.ranges.iter().any(|r| (r.low..r.high).contains(&address) && matches_file(&r.module, path))
    }

    /// Whether function `name` of module `path` is instrumented.
    pub fn selects(&self, path: &str, name: &str) -> bool {
        !self.excludes_module(path) && self.selects_in(path, name)
    }

    /// [`Filter::selects`] for a module that [`Filter::excludes_module`]
    /// keeps: asked once for the module, not for each of its functions.
    pub fn selects_in(&self, path: &str, name: &str) -> bool {
        if self.exclude.iter().any(|p| glob(p, name)) {
            return false;
        }
        self.include.is_empty() || self.include.iter().any(|p| matches_file(p, path) || glob(p, name))
    }
}

/// Whether `path` is the dynamic linker (`ld-linux-x86-64.so.2`).
pub fn is_dynamic_linker(path: &str) -> bool {
    file_name(path).starts_with("ld-linux") || file_name(path).starts_with("ld64.so")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `pattern` matches the file at `path` by its name or its path.
pub fn matches_file(pattern: &str, path: &str) -> bool {
    glob(pattern, path) || glob(pattern, file_name(path))
}

/// `*`-wildcard matching, iterative with backtracking to the last star.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("foo*", "foobar"));
        assert!(glob("*bar", "foobar"));
        assert!(glob("f*o*r", "foobar"));
        assert!(!glob("f*x", "foobar"));
        assert!(glob("*", ""));
        assert!(!glob("a", "ab"));
    }

    #[test]
    fn include_and_exclude_by_module_and_function() {
        let f = Filter {
            include: vec!["libm.so*".into(), "main".into()],
            exclude: vec!["sin".into()],
            ..Filter::default()
        };
        assert!(f.selects("/lib/libm.so.6", "cos"));
        assert!(!f.selects("/lib/libm.so.6", "sin"));
        assert!(f.selects("/bin/prog", "main"));
        assert!(!f.selects("/bin/prog", "other"));
        let all = Filter::default();
        assert!(all.selects("/bin/prog", "other"));
        assert!(!all.selects("/lib64/ld-linux-x86-64.so.2", "_dl_start"));
        let linker = Filter { include: vec!["ld-linux*".into()], ..Filter::default() };
        assert!(linker.selects("/lib64/ld-linux-x86-64.so.2", "_dl_start"));
    }

    #[test]
    fn address_ranges_narrow_by_module_file_address() {
        let range = AddressRange { module: "libm.so*".into(), low: 0x1000, high: 0x2000 };
        let f = Filter { ranges: vec![range], ..Filter::default() };
        assert!(f.in_ranges("/lib/libm.so.6", 0x1000));
        assert!(f.in_ranges("/lib/libm.so.6", 0x1fff));
        assert!(!f.in_ranges("/lib/libm.so.6", 0x2000));
        assert!(!f.in_ranges("/bin/prog", 0x1800), "another module");
        assert!(Filter::default().in_ranges("/bin/prog", 0x1800));
    }
}
