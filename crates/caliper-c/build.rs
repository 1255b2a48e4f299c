//! Gives `libcaliper.so` the reference's soname, `libcaliper.so.2`: a
//! program linked with `-lcaliper` records that name, and runs against
//! whichever libcaliper of the 2.x API is installed under it (`make
//! install` installs `libcaliper.so.2.15.0` and the links
//! `libcaliper.so.2` and `libcaliper.so`).
//!
//! With the feature `cxx-api`, compiles the out-of-line members of the
//! reference's C++ classes (`cxx/*.cpp`) into the library.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcaliper.so.2");
    }
    if std::env::var_os("CARGO_FEATURE_CXX_API").is_some() {
        compile_cxx_api();
    }
}

/// `cxx/*.cpp`, compiled against the reference's headers
/// (`tests/reference-headers`), so the compiler checks each member's
/// signature, and linked whole: nothing in Rust calls them, and the cdylib
/// exports them (`src/cxx_api.rs`). Their inline functions stay inside
/// the library; libstdc++ becomes a dependency, as the reference's.
fn compile_cxx_api() {
    const SOURCES: &[&str] =
        &["annotation.cpp", "channels.cpp", "config_manager.cpp", "extensions_check.cpp", "variant.cpp"];
    println!("cargo:rerun-if-changed=cxx");
    println!("cargo:rerun-if-changed=include");
    println!("cargo:rerun-if-changed=tests/reference-headers");
    cc::Build::new()
        .cpp(true)
        .std("c++14")
        .files(SOURCES.iter().map(|s| format!("cxx/{s}")))
        .include("tests/reference-headers")
        .flag("-fvisibility-inlines-hidden")
        // Without <iostream> (the headers include it; libstdc++ names its
        // guard so): its static initializer, one in each file that includes
        // it, would have libstdc++ flush the standard streams at exit,
        // calls that the io service records as every program's I/O, a C
        // program's too.
        .define("_GLIBCXX_IOSTREAM", None)
        .warnings(true)
        .extra_warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("caliper_cxx");
}
