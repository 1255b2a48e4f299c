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
}

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

/// What a traced function reports (`CALI_MPI_MSG_TRACING`), as Rust
/// calls on its arguments `aN` (handles passed as pointers to them).
fn message_report(name: &str) -> Vec<String> {
    let send = |c: usize, t: usize, d: usize, g: usize| format!("crate::messages::sent(a{c}, ptr(&a{t}), a{d}, a{g})");
    let recv = |c: usize, t: usize, s: usize, g: usize, st: usize| {
        format!("crate::messages::received(a{c}, ptr(&a{t}), a{s}, a{g}, a{st})")
    };
    let coll = |kind: u8, root: Option<usize>, count_type: Option<(usize, usize)>| {
        let root = root.map_or("-1".to_string(), |r| format!("a{r}"));
        let (count, datatype) = count_type.map_or(("0".to_string(), "std::ptr::null()".to_string()), |(c, t)| {
            (format!("a{c}"), format!("ptr(&a{t})"))
        });
        format!("crate::messages::collective({kind}, {root}, {count}, {datatype})")
    };
    match name {
        "MPI_Send" | "MPI_Bsend" | "MPI_Ssend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Ibsend" | "MPI_Issend"
        | "MPI_Irsend" => vec![send(1, 2, 3, 4)],
        "MPI_Recv" => vec![recv(1, 2, 3, 4, 6)],
        "MPI_Irecv" => vec!["crate::messages::posted(a1, ptr(&a2), a3, a4, a6)".to_string()],
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
        "MPI_Alltoallv" => vec!["crate::messages::collective_v(2, a1, ptr(&a3), ptr(&a8))".to_string()],
        "MPI_Reduce_scatter" => vec!["crate::messages::collective_v(2, a2, ptr(&a3), ptr(&a5))".to_string()],
        _ => Vec::new(),
    }
}

/// What a wait or test on receives posted with `MPI_Irecv` does under
/// message tracing: before the call (the requests' handles, `watched`)
/// and after it (the completed ones reported).
fn completion_report(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "MPI_Wait" => ("crate::messages::watch(a0, 1)", "crate::messages::completed(&watched, a1, false)"),
        "MPI_Waitall" => ("crate::messages::watch(a1, a0)", "crate::messages::completed(&watched, a2, true)"),
        "MPI_Test" => {
            ("crate::messages::watch(a0, 1)", "crate::messages::completed_if(a1.cast(), &watched, a2, false)")
        }
        "MPI_Testall" => {
            ("crate::messages::watch(a1, a0)", "crate::messages::completed_if(a2.cast(), &watched, a3, true)")
        }
        "MPI_Waitany" => ("crate::messages::watch(a1, a0)", "crate::messages::completed_one(&watched, a2.cast(), a3)"),
        "MPI_Testany" => {
            ("crate::messages::watch(a1, a0)", "crate::messages::completed_one_if(a3.cast(), &watched, a2.cast(), a4)")
        }
        "MPI_Waitsome" | "MPI_Testsome" => {
            ("crate::messages::watch(a1, a0)", "crate::messages::completed_some(&watched, a2.cast(), a3.cast(), a4)")
        }
        _ => return None,
    })
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
        let completion = completion_report(&f.name);
        if let Some((before, _)) = completion {
            let _ = writeln!(
                s,
                "    let watched = if runtime::mpi::reports_messages() {{ {before} }} else {{ Default::default() }};"
            );
        }
        let _ = writeln!(s, "    let entered = crate::layer::enter({index});");
        let _ = writeln!(s, "    // SAFETY: the caller's arguments, passed on unchanged.");
        let _ = writeln!(s, "    let result = unsafe {{ P{}({}) }};", f.name, args.join(", "));
        if let Some((_, after)) = completion {
            let _ = writeln!(s, "    if result == 0 && !watched.is_empty() {{\n        {after};\n    }}");
        }
        let reports = message_report(&f.name);
        if !reports.is_empty() {
            let _ = writeln!(s, "    if result == 0 && runtime::mpi::reports_messages() {{");
            for report in reports {
                let _ = writeln!(s, "        {report};");
            }
            let _ = writeln!(s, "    }}");
        }
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
        let _ = writeln!(s, "    let entered = crate::layer::enter({index});");
        let _ = writeln!(s, "    // SAFETY: the caller's arguments, passed on unchanged.");
        let _ = writeln!(s, "    {bind}unsafe {{ next({}) }};", args.join(", "));
        let _ = writeln!(s, "    crate::layer::leave(entered);");
        if f.hook() == Hook::AfterInit {
            let _ = writeln!(s, "    crate::layer::initialized();");
        }
        let _ = writeln!(s, "{value}}}\n");
    }
    s
}
