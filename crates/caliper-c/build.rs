//! Gives `libcaliper.so` the reference's soname, `libcaliper.so.2`: a
//! program linked with `-lcaliper` records that name, and runs against
//! whichever libcaliper of the 2.x API is installed under it (`make
//! install` installs `libcaliper.so.2.15.0` and the links
//! `libcaliper.so.2` and `libcaliper.so`).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcaliper.so.2");
    }
}
