//! Gives the extension module libcaliper's soname, `libcaliper.so.2`: a C
//! library loaded after `import pycaliper` that needs libcaliper is then
//! bound to this module's runtime (see src/runtime.rs) instead of loading
//! a second one.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcaliper.so.2");
}
