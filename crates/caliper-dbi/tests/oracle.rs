//! Counts checked against an independent oracle: the compiler's own
//! instrumentation. Programs built from source with
//! `-finstrument-functions` call `__cyg_profile_func_enter(fn, call_site)`
//! at every function entry; `tests/c/oracle/cyg_counts.c`, linked in,
//! counts those calls and writes them at exit. cali-run's per-function
//! `fcount` and per-call-site `arcs` of the same run of the same binary
//! must equal them, function by function and call site by call site.
//!
//! The legitimate differences, and how each is handled:
//! - A function expanded inline is not called, but the compiler calls the
//!   entry hook for it too, from inside the function it was expanded into.
//!   A call is an entry hook called from the function's own entry sequence
//!   (the first call of the hook in its code); the others are inline
//!   expansions, which cali-run cannot see and does not count.
//! - Functions the compiler did not instrument (the C runtime's `_start`,
//!   `_init`, `frame_dummy`..., PLT entries, the counting library itself)
//!   are counted by cali-run alone: every function cali-run counts and the
//!   oracle does not must be one whose code has no entry hook. The counting
//!   library's own functions are excluded from the measurement by name
//!   (`-x '__cyg_profile_func_*'`); each of them runs once per call of
//!   every other function.
//! - cali-run launches the program, so no call comes before it attaches.
//! - Lua seeds its string hashes from addresses: two runs need not make the
//!   same calls, so the oracle is the one of the measured run itself.

mod common;

use caliper_data::Variant;
use common::elf::Elf;
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program's functions, and what its code says about the compiler's
/// instrumentation.
struct Module {
    elf: Elf,
    /// The return address of each instrumented function's own entry hook
    /// call, to the function's address.
    entry_hooks: HashMap<u64, u64>,
}

impl Module {
    fn read(path: &Path) -> Module {
        let elf = Elf::read(path);
        let hook = elf.address_of("__cyg_profile_func_enter");
        let entry_hooks = hook
            .map(|hook| {
                elf.functions
                    .iter()
                    .filter_map(|&(address, size, _)| {
                        first_call_to(&elf, address, size, hook).map(|ret| (ret, address))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Module { elf, entry_hooks }
    }

    fn name_of(&self, address: u64) -> &str {
        self.elf.name_of(address)
    }

    /// Whether the function at `address` calls the entry hook: the
    /// compiler instrumented it.
    fn instrumented(&self, address: u64) -> bool {
        self.entry_hooks.values().any(|&f| f == address)
    }
}

/// The return address of the first call of `hook` in the function at
/// `address`, decoding from its entry.
fn first_call_to(elf: &Elf, address: u64, size: u64, hook: u64) -> Option<u64> {
    let code = elf.code(address, size)?;
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    decoder
        .iter()
        .find(|i| i.flow_control() == FlowControl::Call && i.near_branch_target() == hook)
        .map(|i| i.next_ip())
}

/// A code address as the counting library wrote it: module file name and
/// offset from the module's load address.
type Place = (String, u64);

/// The oracle's counts of one run.
#[derive(Default)]
struct Oracle {
    /// Calls by function address (in the program).
    calls: BTreeMap<u64, u64>,
    /// Calls by (call site's return address, callee address).
    arcs: BTreeMap<(Place, u64), u64>,
    inline_expansions: u64,
    /// Functions whose address, as the program computed it, was not the
    /// function's: what the program sees has changed.
    wrong_addresses: Vec<String>,
}

fn parse_place(module: &str, offset: &str) -> Place {
    (module.to_string(), u64::from_str_radix(offset.trim_start_matches("0x"), 16).unwrap())
}

impl Oracle {
    fn read(path: &Path, program: &str, module: &Module) -> Oracle {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("the oracle's counts {}: {e}", path.display()));
        let mut oracle = Oracle::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 7, "{line}");
            let (fn_place, where_place, site) =
                (parse_place(f[0], f[1]), parse_place(f[2], f[3]), parse_place(f[4], f[5]));
            let count: u64 = f[6].parse().unwrap();
            assert_eq!(where_place.0, program, "the hooks are called from the program: {line}");
            let Some(&function) = module.entry_hooks.get(&where_place.1) else {
                oracle.inline_expansions += count;
                continue;
            };
            if fn_place != (program.to_string(), function) {
                oracle.wrong_addresses.push(format!(
                    "{} computed its address as {} {:#x} ({count} calls)",
                    module.name_of(function),
                    fn_place.0,
                    fn_place.1
                ));
            }
            *oracle.calls.entry(function).or_default() += count;
            *oracle.arcs.entry((site, function)).or_default() += count;
        }
        oracle
    }
}

/// cali-run's counts of the program's functions and the arcs into them.
#[derive(Default)]
struct Measured {
    /// (calls, name) by address.
    calls: BTreeMap<u64, (u64, String)>,
    /// Per callee name: calls by (caller module file name, call site).
    arcs: HashMap<String, HashMap<(String, u64), u64>>,
    /// The callers' modules: path by file name.
    caller_modules: HashMap<String, PathBuf>,
}

fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

impl Measured {
    fn read(path: &Path, program: &str) -> Measured {
        let mut measured = Measured::default();
        for record in common::expanded_records(path) {
            let get = |name: &str| record.iter().rev().find(|(a, _)| a == name).map(|(_, v)| v.clone());
            let text = |name: &str| match get(name) {
                Some(Variant::Str(s)) => Some(s.to_string()),
                _ => None,
            };
            let (Some(Variant::Uint(count)), Some(callee)) = (get("dbi.count"), text("dbi.function")) else { continue };
            if text("dbi.caller").is_some() {
                if text("dbi.module#callee").is_none_or(|m| file_name(&m) != program) {
                    continue;
                }
                let Some(Variant::Addr(site)) = get("dbi.callsite") else { panic!("{record:?}") };
                let path = text("dbi.caller.module").unwrap();
                let module = file_name(&path);
                measured.caller_modules.insert(module.clone(), PathBuf::from(path));
                *measured.arcs.entry(callee).or_default().entry((module, site)).or_default() += count;
            } else if text("dbi.module").is_some_and(|m| file_name(&m) == program) {
                let Some(Variant::Addr(address)) = get("dbi.address") else { panic!("{record:?}") };
                measured.calls.insert(address, (count, callee));
            }
        }
        measured
    }
}

/// The differences between cali-run's counts and the oracle's, each a line.
fn differences(oracle: &Oracle, measured: &Measured, module: &Module) -> Vec<String> {
    let mut out = oracle.wrong_addresses.clone();
    for (&address, &calls) in &oracle.calls {
        let name = module.name_of(address);
        match measured.calls.get(&address) {
            Some(&(count, _)) if count == calls => {}
            Some(&(count, _)) => out.push(format!("{name}: {count} calls counted, {calls} made")),
            None => out.push(format!("{name}: {calls} calls made, none counted")),
        }
    }
    for (address, (count, name)) in &measured.calls {
        if !oracle.calls.contains_key(address) && module.instrumented(*address) {
            out.push(format!("{name}: {count} calls counted, none made"));
        }
    }
    // The oracle's arcs by callee name and (module, return address); the
    // measured arcs' call sites turned into return addresses.
    let modules: HashMap<&String, Elf> = measured
        .caller_modules
        .iter()
        .filter(|(_, p)| p.is_file())
        .map(|(name, path)| (name, Elf::read(path)))
        .collect();
    let mut made: HashMap<String, HashMap<Place, u64>> = HashMap::new();
    for ((site, callee), &count) in &oracle.arcs {
        *made.entry(module.name_of(*callee).to_string()).or_default().entry(site.clone()).or_default() += count;
    }
    // Arcs into the functions the compiler instrumented (the others, the
    // PLT's and the C runtime's, have no oracle).
    let instrumented: HashSet<&str> = module.entry_hooks.values().map(|&f| module.name_of(f)).collect();
    let callees: HashSet<&String> =
        made.keys().chain(measured.arcs.keys()).filter(|c| instrumented.contains(c.as_str())).collect();
    for callee in callees {
        let sites = made.get(callee).cloned().unwrap_or_default();
        let mut listed = HashSet::new();
        for ((caller_module, callsite), &count) in measured.arcs.get(callee).into_iter().flatten() {
            let Some(ret) = modules.get(caller_module).and_then(|m| m.next_instruction(*callsite)) else {
                out.push(format!("-> {callee}: call site {caller_module} {callsite:#x} not found"));
                continue;
            };
            let place = (caller_module.clone(), ret);
            let calls = sites.get(&place).copied().unwrap_or(0);
            if calls != count {
                out.push(format!("{caller_module} {callsite:#x} -> {callee}: {count} calls counted, {calls} made"));
            }
            listed.insert(place);
        }
        for (place, calls) in sites.iter().filter(|(p, _)| !listed.contains(*p)) {
            out.push(format!("{} {:#x} -> {callee}: no arc counted, {calls} calls made", place.0, place.1));
        }
    }
    out.sort();
    out
}

/// Builds `sources` with -O2 -finstrument-functions and the counting
/// library into `dir/name`.
fn build(dir: &Path, name: &str, flags: &[&str], sources: &[PathBuf]) -> PathBuf {
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/oracle/cyg_counts.c");
    let mut args = vec!["-O2", "-finstrument-functions"];
    args.extend(flags);
    args.extend(["-o", name]);
    let sources: Vec<&str> = sources.iter().map(|s| s.to_str().unwrap()).collect();
    args.extend(sources);
    args.extend([library.to_str().unwrap(), "-lm", "-ldl"]);
    common::gcc(dir, &args);
    dir.join(name)
}

/// Runs `program args` natively and under `cali-run -c fcount,arcs`
/// with `extra` options (the program's module only, the counting library
/// left out), each
/// writing the oracle's counts; checks the same output and exit code, and
/// compares the measured run's counts with its oracle's. The number of
/// call sites that counted their own calls in the measured run.
fn check(dir: &Path, program: &Path, args: &[&str], extra: &[&str]) -> usize {
    let name = file_name(program.to_str().unwrap());
    let native =
        Command::new(program).args(args).current_dir(dir).env("ORACLE_OUT", dir.join("native.txt")).output().unwrap();
    assert!(native.status.success(), "{}", String::from_utf8_lossy(&native.stderr));
    let result = dir.join(format!("{name}.cali"));
    let counts = dir.join(format!("{name}.txt"));
    let mut options =
        vec!["-c", "fcount,arcs", "-i", &name, "-x", "__cyg_profile_func_*", "-o", result.to_str().unwrap()];
    options.extend(extra);
    let run = common::command_in(dir, &options, program.to_str().unwrap(), args)
        .env("ORACLE_OUT", &counts)
        .env("CALI_RUN_DEBUG_ARCS", "1")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), native.status.code(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&native.stdout));

    let module = Module::read(program);
    let oracle = Oracle::read(&counts, &name, &module);
    let measured = Measured::read(&result, &name);
    let wrong = differences(&oracle, &measured, &module);
    let calls: u64 = oracle.calls.values().sum();
    let own_sites = common::arc_figure(&String::from_utf8_lossy(&run.stderr), " call sites counting their own calls");
    println!(
        "{name}: {} functions, {calls} calls, {} arcs ({own_sites} sites counting their own calls), {} inline \
         expansions left out; {} differences",
        oracle.calls.len(),
        oracle.arcs.len(),
        oracle.inline_expansions,
        wrong.len()
    );
    assert!(oracle.calls.len() > 10 && calls > 1000, "the program ran");
    assert!(wrong.is_empty(), "{name}: {} differences:\n{}", wrong.len(), wrong[..wrong.len().min(40)].join("\n"));
    own_sites
}

/// The multi-file program (tests/c/oracle/main.c, shapes.c, words.c):
/// calls across files, static functions, recursion, calls through
/// pointers, a callback from the C library's qsort, a function both
/// expanded inline and called through a pointer.
fn multi_file_program(dir: &Path) -> PathBuf {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/oracle");
    let files: Vec<PathBuf> = ["main.c", "shapes.c", "words.c"].iter().map(|f| sources.join(f)).collect();
    build(dir, "multi", &[], &files)
}

#[test]
fn a_multi_file_program_is_counted_as_its_compiler_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let program = multi_file_program(dir.path());
    check(dir.path(), &program, &["100"], &[]);
}

#[test]
fn a_multi_file_program_is_counted_so_at_its_breakpoints() {
    let dir = tempfile::tempdir().unwrap();
    let program = multi_file_program(dir.path());
    check(dir.path(), &program, &["100"], &["--breakpoints-only"]);
}

#[test]
fn the_lua_interpreter_is_counted_as_its_compiler_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let lua = common::lua_sources();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&lua)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/oracle");
    sources.push(oracle.join("lua_host.c"));
    let include = format!("-I{}", lua.display());
    let program = build(dir.path(), "lua_oracle", &["-DLUA_USE_LINUX", &include], &sources);
    let own_sites = check(dir.path(), &program, &[oracle.join("exercise.lua").to_str().unwrap()], &[]);
    // Its last stretch runs long enough for the hottest direct call sites
    // to count their own calls: their arcs are checked too.
    assert!(own_sites > 0, "no call site counted its own calls");
}
