//! Generates the PMPI wrappers from `mpi-functions.txt` (one C prototype a
//! line) and compiles the C part that needs `mpi.h` (`src/shim.c`), against
//! the MPI that `mpicc` names (or `MPI_INCLUDE_DIRS` / `MPI_LIB_DIRS`,
//! colon-separated).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=mpi-functions.txt");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=MPI_INCLUDE_DIRS");
    println!("cargo:rerun-if-env-changed=MPI_LIB_DIRS");
    let (includes, libdirs) = find_mpi();
    let handle = handle_type(&includes);

    let list = std::fs::read_to_string("mpi-functions.txt").expect("read mpi-functions.txt");
    let functions: Vec<Function> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| Function::parse(l).unwrap_or_else(|e| panic!("mpi-functions.txt: {e}: {l}")))
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("wrappers.rs"), generate(&functions, handle)).expect("write wrappers.rs");

    let mut shim = cc::Build::new();
    shim.file("src/shim.c").warnings(true).extra_warnings(true);
    for dir in &includes {
        shim.include(dir);
    }
    shim.compile("caliper_mpi_shim");
    for dir in &libdirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=mpi");
    // The MPI library's Fortran bindings, which the Fortran wrappers call
    // on to: needed by libcaliper-mpi itself, else a Fortran program's
    // link leaves them out (its calls resolve to the wrappers).
    let fortran =
        ["mpi_mpifh", "mpifort"].into_iter().find(|l| libdirs.iter().any(|d| d.join(format!("lib{l}.so")).exists()));
    if let Some(lib) = fortran {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--no-as-needed,-l{lib},--as-needed");
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcaliper-mpi.so");
    // Unless it carries the runtime itself, the library reports to
    // libcaliper's.
    if std::env::var_os("CARGO_FEATURE_BUNDLE_RUNTIME").is_none() {
        link_libcaliper(&out);
    }
}

/// Makes libcaliper-mpi depend on libcaliper by its soname, found beside
/// it (`$ORIGIN`) or where the loader looks. libcaliper is built from
/// another package of the workspace, which Cargo builds in no fixed
/// order with this one: the link is against a stub of the same soname,
/// and the runtime resolves the `cali_*` calls in the real library.
fn link_libcaliper(out: &std::path::Path) {
    let stub = out.join("libcaliper-stub");
    std::fs::create_dir_all(&stub).expect("create the stub's directory");
    let source = stub.join("stub.c");
    std::fs::write(&source, "/* libcaliper's soname, for the link of libcaliper-mpi. */\n").expect("write stub.c");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args(["-shared", "-fPIC", "-o"])
        .arg(stub.join("libcaliper.so"))
        .arg(format!("-Wl,-soname,{SONAME}"))
        .arg(&source)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "caliper-mpi: could not build the libcaliper stub");
    println!("cargo:rustc-cdylib-link-arg=-L{}", stub.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--no-as-needed,-lcaliper,--as-needed");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
}

/// libcaliper's soname (set in crates/caliper-c/build.rs).
const SONAME: &str = "libcaliper.so.2";

/// The include and library directories of the MPI to build against.
fn find_mpi() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dirs = |var: &str| std::env::var(var).ok().map(|v| std::env::split_paths(&v).collect::<Vec<_>>());
    if let Some(includes) = dirs("MPI_INCLUDE_DIRS") {
        return (includes, dirs("MPI_LIB_DIRS").unwrap_or_default());
    }
    let mpicc = |args: &[&str]| {
        Command::new("mpicc")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().map(str::to_string).collect::<Vec<_>>())
    };
    // Open MPI names its directories; MPICH prints its compile line.
    if let (Some(inc), Some(lib)) = (mpicc(&["--showme:incdirs"]), mpicc(&["--showme:libdirs"])) {
        return (inc.into_iter().map(PathBuf::from).collect(), lib.into_iter().map(PathBuf::from).collect());
    }
    if let Some(words) = mpicc(&["-show"]) {
        let with = |prefix: &str| words.iter().filter_map(|w| w.strip_prefix(prefix)).map(PathBuf::from).collect();
        return (with("-I"), with("-L"));
    }
    panic!(
        "caliper-mpi: no MPI found: install one (scripts/test-all.sh installs Debian's Open MPI: \
         apt-get install openmpi-bin libopenmpi-dev) or set MPI_INCLUDE_DIRS and MPI_LIB_DIRS"
    );
}

/// The Rust type of MPI's handles (`MPI_Comm`, `MPI_Datatype`, ...): a
/// pointer in Open MPI, an `int` in MPICH and its derivatives. The shim
/// checks the choice against `mpi.h` at compile time.
fn handle_type(includes: &[PathBuf]) -> &'static str {
    let header = includes.iter().map(|d| d.join("mpi.h")).find(|p| p.exists());
    let text = header.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    if text.contains("OPEN_MPI") {
        println!("cargo:rustc-env=CALIPER_MPI_HANDLE=pointer");
        "*mut c_void"
    } else if text.contains("MPICH") {
        println!("cargo:rustc-env=CALIPER_MPI_HANDLE=int");
        "c_int"
    } else {
        panic!("caliper-mpi: mpi.h (in {includes:?}) is neither Open MPI's nor MPICH's");
    }
}

/// One function of the list.
struct Function {
    name: String,
    /// The Rust return type (`c_int` or `f64`).
    result: &'static str,
    /// The Rust type of each parameter.
    params: Vec<Param>,
    /// How many parameters are strings (`char *`): Fortran passes their
    /// lengths as hidden arguments after the others.
    strings: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Param {
    Int,
    Double,
    /// `MPI_Aint`.
    Address,
    /// `MPI_Offset`, `MPI_Count`.
    Long,
    Handle,
    Pointer,
}

impl Param {
    fn rust(self, handle: &str) -> &str {
        match self {
            Param::Int => "c_int",
            Param::Double => "f64",
            Param::Address => "isize",
            Param::Long => "i64",
            Param::Handle => handle,
            Param::Pointer => "*mut c_void",
        }
    }
}

impl Function {
    fn parse(line: &str) -> Result<Function, String> {
        let (head, rest) = line.split_once('(').ok_or("no parameter list")?;
        let params = rest.trim_end_matches(';').trim_end().strip_suffix(')').ok_or("no closing parenthesis")?;
        let mut words = head.split_whitespace();
        let result = match words.next() {
            Some("int") => "c_int",
            Some("double") => "f64",
            other => return Err(format!("return type {other:?} is not int or double")),
        };
        let name = words.next().ok_or("no name")?.to_string();
        if !name.starts_with("MPI_") {
            return Err(format!("{name} is not an MPI function"));
        }
        let (params, strings) = match params.trim() {
            "void" | "" => (Vec::new(), 0),
            list => {
                let strings = list.split(',').filter(|p| p.contains("char") && !p.contains("***")).count();
                (list.split(',').map(Self::param).collect::<Result<_, _>>()?, strings)
            }
        };
        Ok(Function { name, result, params, strings })
    }

    fn param(text: &str) -> Result<Param, String> {
        if text.contains('*') || text.contains('[') {
            return Ok(Param::Pointer);
        }
        let words: Vec<&str> = text.split_whitespace().filter(|w| *w != "const").collect();
        let ty = match words.as_slice() {
            [ty, _] | [ty] => *ty,
            _ => return Err(format!("cannot read parameter \"{text}\"")),
        };
        Ok(match ty {
            "int" | "MPI_Fint" => Param::Int,
            "double" => Param::Double,
            "MPI_Aint" => Param::Address,
            "MPI_Offset" | "MPI_Count" => Param::Long,
            "MPI_Comm" | "MPI_Datatype" | "MPI_File" | "MPI_Win" | "MPI_Info" | "MPI_Group" | "MPI_Op"
            | "MPI_Request" | "MPI_Errhandler" | "MPI_Message" => Param::Handle,
            other => return Err(format!("unknown parameter type {other}")),
        })
    }

    /// What the wrapper does besides annotating the call.
    fn hook(&self) -> Hook {
        match self.name.as_str() {
            "MPI_Init" | "MPI_Init_thread" => Hook::AfterInit,
            "MPI_Finalize" => Hook::BeforeFinalize,
            _ => Hook::None,
        }
    }
}

/// The calling convention of a wrapper: C's, or Fortran's (every argument
/// a pointer to a Fortran `INTEGER`, handles and statuses Fortran's).
#[derive(Clone, Copy, PartialEq)]
enum Lang {
    C,
    Fortran,
}

/// An argument of a wrapper, by position, as message reporting reads it.
#[derive(Clone, Copy)]
enum Arg {
    /// An `int` (a count, rank or tag).
    Int(usize),
    /// An `int` pointed to, set by the call (an index or count).
    IntOut(usize),
    /// A flag pointed to (Fortran: a `LOGICAL`), set by the call.
    Flag(usize),
    /// An index pointed to, set by the call (Fortran's from 1).
    Index(usize),
    /// An array of `int`.
    Ints(usize),
    Datatype(usize),
    Comm(usize),
    /// A request pointed to, set by the call.
    Request(usize),
    /// A status (or `MPI_STATUS_IGNORE`).
    Status(usize),
    /// An array of as many statuses as the `int` argument says.
    Statuses(usize, usize),
    /// The first index of arrays of indices: 0 in C, 1 in Fortran.
    IndexBase,
}

impl Arg {
    /// The Rust expression of the argument for a report: C's value or
    /// pointer (handles as pointers to them), also from Fortran's.
    fn render(self, lang: Lang) -> String {
        use Arg::*;
        let f = "crate::fortran";
        match (self, lang) {
            (Int(i), Lang::C) => format!("a{i}"),
            (Int(i) | IntOut(i), _) => format!("crate::messages::int_at(a{i}.cast())"),
            (Flag(i), _) => format!("crate::messages::int_at(a{i}.cast()) != 0"),
            (Index(i), Lang::C) => format!("crate::messages::int_at(a{i}.cast())"),
            (Index(i), Lang::Fortran) => format!("{f}::index(a{i})"),
            (Ints(i) | Status(i), Lang::C) => format!("a{i}"),
            (Ints(i), Lang::Fortran) => format!("a{i}"),
            (Datatype(i) | Comm(i), Lang::C) => format!("ptr(&a{i})"),
            (Datatype(i), Lang::Fortran) => format!("{f}::datatype(a{i}).as_ptr().cast()"),
            (Comm(i), Lang::Fortran) => format!("{f}::comm(a{i}).as_ptr().cast()"),
            (Request(i), Lang::C) => format!("a{i}"),
            (Request(i), Lang::Fortran) => format!("{f}::request(a{i}).as_ptr().cast()"),
            (Status(i), Lang::Fortran) => format!("{f}::status(a{i}).ptr()"),
            (Statuses(i, _), Lang::C) => format!("a{i}"),
            (Statuses(i, n), Lang::Fortran) => format!("{f}::statuses(a{i}, {}).ptr()", IntOut(n).render(lang)),
            (IndexBase, Lang::C) => "0".to_string(),
            (IndexBase, Lang::Fortran) => "1".to_string(),
        }
    }
}

/// A call of a function of `crate::messages` on arguments.
fn call(function: &str, args: &[Arg], lang: Lang) -> String {
    let args: Vec<String> = args.iter().map(|a| a.render(lang)).collect();
    format!("crate::messages::{function}({})", args.join(", "))
}

/// What a traced function reports (`CALI_MPI_MSG_TRACING`,
/// `CALI_MPI_MSG_PATTERN`) after a successful call, as Rust calls on its
/// arguments `aN`.
fn message_report(name: &str, lang: Lang) -> Vec<String> {
    use Arg::*;
    let send = |c, t, d, g| call("sent", &[Int(c), Datatype(t), Int(d), Int(g)], lang);
    let recv = |c, t, s, g, st| call("received", &[Int(c), Datatype(t), Int(s), Int(g), Status(st)], lang);
    let coll = |kind: u8, root: Option<usize>, count_type: Option<(usize, usize)>| {
        let root = root.map_or("-1".to_string(), |r| Int(r).render(lang));
        let (count, datatype) = count_type.map_or(("0".to_string(), "std::ptr::null()".to_string()), |(c, t)| {
            (Int(c).render(lang), Datatype(t).render(lang))
        });
        format!("crate::messages::collective({kind}, {root}, {count}, {datatype})")
    };
    let coll_v = |counts, t, comm| call("collective_v", &[Ints(counts), Datatype(t), Comm(comm)], lang);
    match name {
        "MPI_Send" | "MPI_Bsend" | "MPI_Ssend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Ibsend" | "MPI_Issend"
        | "MPI_Irsend" => vec![send(1, 2, 3, 4)],
        "MPI_Recv" => vec![recv(1, 2, 3, 4, 6)],
        "MPI_Irecv" => vec![call("posted", &[Int(1), Datatype(2), Int(3), Int(4), Request(6)], lang)],
        "MPI_Sendrecv" => vec![send(1, 2, 3, 4), recv(6, 7, 8, 9, 11)],
        "MPI_Sendrecv_replace" => vec![send(1, 2, 3, 4), recv(1, 2, 5, 6, 8)],
        "MPI_Barrier" => vec![coll(1, None, None)],
        "MPI_Bcast" => vec![coll(3, Some(3), Some((1, 2)))],
        "MPI_Scatter" => vec![coll(3, Some(6), Some((1, 2)))],
        "MPI_Reduce" => vec![coll(4, Some(5), Some((2, 3)))],
        "MPI_Gather" => vec![coll(4, Some(6), Some((1, 2)))],
        "MPI_Allreduce" | "MPI_Scan" | "MPI_Exscan" | "MPI_Reduce_scatter_block" => {
            vec![coll(2, None, Some((2, 3)))]
        }
        "MPI_Allgather" | "MPI_Alltoall" | "MPI_Allgatherv" => vec![coll(2, None, Some((1, 2)))],
        "MPI_Gatherv" => vec![coll(4, Some(7), Some((1, 2)))],
        "MPI_Scatterv" => vec![coll(3, Some(7), Some((5, 6)))],
        // Per-rank counts: the sum over the communicator's ranks.
        "MPI_Alltoallv" => vec![coll_v(1, 3, 8)],
        "MPI_Reduce_scatter" => vec![coll_v(2, 3, 5)],
        _ => Vec::new(),
    }
}

/// What a wait or test on receives posted with `MPI_Irecv` does while
/// messages are reported, as Rust expressions.
struct Completion {
    /// Before the call: the requests' handles (`watched`).
    watch: String,
    /// After a successful call, the condition that it completed requests
    /// (a test's flag), if any.
    flag: Option<String>,
    /// Then: the completed ones reported.
    completed: String,
}

fn completion_report(name: &str, lang: Lang) -> Option<Completion> {
    use Arg::*;
    let watch = |requests, count: Option<usize>| {
        let count = count.map_or("1".to_string(), |c| Int(c).render(lang));
        match lang {
            Lang::C => format!("crate::messages::watch(a{requests}, {count})"),
            Lang::Fortran => format!("crate::fortran::watch(a{requests}, {count})"),
        }
    };
    let watched = |function: &str, args: &[Arg]| {
        let args: Vec<String> = args.iter().map(|a| a.render(lang)).collect();
        format!("crate::messages::{function}(&watched, {})", args.join(", "))
    };
    let (watch, flag, completed) = match name {
        "MPI_Wait" => (watch(0, None), None, watched("completed", &[Status(1)])),
        "MPI_Waitall" => (watch(1, Some(0)), None, watched("completed_all", &[Statuses(2, 0)])),
        "MPI_Test" => (watch(0, None), Some(1), watched("completed", &[Status(2)])),
        "MPI_Testall" => (watch(1, Some(0)), Some(2), watched("completed_all", &[Statuses(3, 0)])),
        "MPI_Waitany" => (watch(1, Some(0)), None, watched("completed_one", &[Index(2), Status(3)])),
        "MPI_Testany" => (watch(1, Some(0)), Some(3), watched("completed_one", &[Index(2), Status(4)])),
        "MPI_Waitsome" | "MPI_Testsome" => {
            (watch(1, Some(0)), None, watched("completed_some", &[IntOut(2), Ints(3), IndexBase, Statuses(4, 2)]))
        }
        _ => return None,
    };
    Some(Completion { watch, flag: flag.map(|f| Flag(f).render(lang)), completed })
}

/// The message reporting of one wrapper: what it reports after the call,
/// and what it does around a wait or test.
struct Messages {
    reports: Vec<String>,
    completion: Option<Completion>,
}

impl Messages {
    fn of(name: &str, lang: Lang) -> Messages {
        Messages { reports: message_report(name, lang), completion: completion_report(name, lang) }
    }

    /// Before the call: the requests a wait or test watches.
    fn before(&self, s: &mut String) {
        if let Some(c) = &self.completion {
            let _ = writeln!(
                s,
                "    let watched = if crate::layer::reports_messages() {{ {} }} else {{ Default::default() }};",
                c.watch
            );
        }
    }

    /// After the call, if `success` (a Rust condition): the reports (a
    /// panic in them stops at the wrapper).
    fn after(&self, s: &mut String, success: &str) {
        if let Some(c) = &self.completion {
            let flag = c.flag.as_ref().map_or(String::new(), |f| format!(" && {f}"));
            let _ = writeln!(s, "    if {success} && !watched.is_empty(){flag} {{");
            let _ = writeln!(s, "        crate::layer::guarded(|| {});\n    }}", c.completed);
        }
        if !self.reports.is_empty() {
            let _ = writeln!(s, "    if {success} && crate::layer::reports_messages() {{");
            let _ = writeln!(s, "        crate::layer::guarded(|| {{");
            for report in &self.reports {
                let _ = writeln!(s, "            {report};");
            }
            let _ = writeln!(s, "        }});\n    }}");
        }
    }
}

#[derive(PartialEq)]
enum Hook {
    None,
    AfterInit,
    BeforeFinalize,
}

/// The Rust source of the wrappers: the function names, the table of
/// which are enabled, the C wrappers over `PMPI_*`, and the Fortran ones
/// over the next definition of `mpi_<name>_`.
fn generate(functions: &[Function], handle: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// Generated by build.rs from mpi-functions.txt.\n");
    let _ = writeln!(s, "/// The wrapped functions; an index into this list names one.");
    let _ = writeln!(s, "pub static FUNCTIONS: [&str; {}] = [", functions.len());
    for f in functions {
        let _ = writeln!(s, "    \"{}\",", f.name);
    }
    let _ = writeln!(s, "];\n");
    let names: String = functions.iter().map(|f| format!("{}\\0", f.name)).collect();
    let length: usize = functions.iter().map(|f| f.name.len() + 1).sum();
    let _ = writeln!(s, "/// The same names, each NUL-terminated, for the runtime.");
    let _ = writeln!(s, "pub static FUNCTION_NAMES: [u8; {length}] = *b\"{names}\";\n");
    let _ = writeln!(s, "/// A pointer to a handle argument, for the shim.");
    let _ = writeln!(s, "#[inline]\nfn ptr<T>(handle: &T) -> *const c_void {{\n    (handle as *const T).cast()\n}}\n");
    let _ = writeln!(s, "unsafe extern \"C\" {{");
    for f in functions {
        let params: Vec<String> =
            f.params.iter().enumerate().map(|(i, p)| format!("a{i}: {}", p.rust(handle))).collect();
        let _ = writeln!(s, "    fn P{}({}) -> {};", f.name, params.join(", "), f.result);
    }
    let _ = writeln!(s, "}}\n");
    for (index, f) in functions.iter().enumerate() {
        let params: Vec<String> =
            f.params.iter().enumerate().map(|(i, p)| format!("a{i}: {}", p.rust(handle))).collect();
        let args: Vec<String> = (0..f.params.len()).map(|i| format!("a{i}")).collect();
        let _ = writeln!(s, "/// `{}`, annotated when enabled.", f.name);
        let _ = writeln!(s, "#[unsafe(no_mangle)]");
        let _ = writeln!(s, "pub unsafe extern \"C\" fn {}({}) -> {} {{", f.name, params.join(", "), f.result);
        if f.hook() == Hook::BeforeFinalize {
            let _ = writeln!(s, "    crate::layer::finalizing();");
        }
        let messages = Messages::of(&f.name, Lang::C);
        messages.before(&mut s);
        let _ = writeln!(s, "    let entered = crate::layer::enter({index});");
        let _ = writeln!(s, "    // SAFETY: the caller's arguments, passed on unchanged.");
        let _ = writeln!(s, "    let result = unsafe {{ P{}({}) }};", f.name, args.join(", "));
        messages.after(&mut s, "result == 0");
        let _ = writeln!(s, "    crate::layer::leave(entered);");
        if f.hook() == Hook::AfterInit {
            let _ = writeln!(s, "    crate::layer::initialized();");
        }
        let _ = writeln!(s, "    result\n}}\n");
    }
    for (index, f) in functions.iter().enumerate() {
        // Fortran passes every argument by reference, and subroutines end
        // with the error code's: C's count plus one pointer, then one
        // hidden length per string, passed on as they came. A callee that
        // takes fewer (MPI_INIT takes only the error code) ignores the
        // rest, which the caller clears in the C calling convention.
        let fname = format!("{}_", f.name.to_lowercase());
        let arity = if f.result == "f64" { f.params.len() } else { f.params.len() + 1 } + f.strings;
        let params: Vec<String> = (0..arity).map(|i| format!("a{i}: *mut c_void")).collect();
        let types = vec!["*mut c_void"; arity].join(", ");
        let args: Vec<String> = (0..arity).map(|i| format!("a{i}")).collect();
        let ret = if f.result == "f64" { " -> f64" } else { "" };
        let _ = writeln!(s, "/// `{}` from Fortran, annotated when enabled.", f.name);
        let _ = writeln!(s, "#[unsafe(no_mangle)]");
        let _ = writeln!(s, "pub unsafe extern \"C\" fn {fname}({}){ret} {{", params.join(", "));
        let (fallback, bind, value) = match ret {
            "" => ("", "", ""),
            _ => (" 0.0", "let result = ", "    result\n"),
        };
        let _ = writeln!(s, "    static NEXT: crate::layer::Next = crate::layer::Next::new(c\"{fname}\");");
        let _ = writeln!(s, "    let Some(next) = NEXT.get() else {{ return{fallback} }};");
        let _ = writeln!(s, "    // SAFETY: the next definition of this Fortran binding, as declared.");
        let _ =
            writeln!(s, "    let next: unsafe extern \"C\" fn({types}){ret} = unsafe {{ std::mem::transmute(next) }};");
        if f.hook() == Hook::BeforeFinalize {
            let _ = writeln!(s, "    crate::layer::finalizing();");
        }
        // A subroutine's error code is its argument after C's.
        let messages = Messages::of(&f.name, Lang::Fortran);
        messages.before(&mut s);
        let _ = writeln!(s, "    let entered = crate::layer::enter({index});");
        let _ = writeln!(s, "    // SAFETY: the caller's arguments, passed on unchanged.");
        let _ = writeln!(s, "    {bind}unsafe {{ next({}) }};", args.join(", "));
        messages.after(&mut s, &format!("crate::messages::int_at(a{}.cast()) == 0", f.params.len()));
        let _ = writeln!(s, "    crate::layer::leave(entered);");
        if f.hook() == Hook::AfterInit {
            let _ = writeln!(s, "    crate::layer::initialized();");
        }
        let _ = writeln!(s, "{value}}}\n");
    }
    s
}
