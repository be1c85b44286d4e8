//! Builds the device crate into PTX with the same builder library as `cargo xtask build-ptx`,
//! in the builder's own target directory (`target/ptx/<arch>`), and hands the module to
//! `src/ptx.rs` through `OUT_DIR`. `LOCKSTEP_PTX_ARCH` picks the architecture (default sm_70).

use lockstep_ptx_builder::{Arch, BuildOptions};
use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.join("../..").canonicalize().expect("workspace root exists");
    for path in
        ["crates/kernels", "crates/cuda-std", "crates/shared", "Cargo.toml", "Cargo.lock", "rust-toolchain.toml"]
    {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PTX_ARCH");
    let arch = match std::env::var("LOCKSTEP_PTX_ARCH") {
        Ok(s) => s.parse::<Arch>().unwrap_or_else(|e| fail(&e.to_string())),
        Err(_) => Arch::DEFAULT,
    };
    let opts = BuildOptions {
        manifest_path: root.join("Cargo.toml"),
        package: "lockstep-kernels".into(),
        arch,
        target_dir: root.join("target/ptx").join(arch.name()),
    };
    let built = lockstep_ptx_builder::build(&opts).unwrap_or_else(|e| fail(&e.to_string()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("lockstep_kernels.ptx"), &built.ptx).expect("OUT_DIR is writable");
    let names: Vec<String> = built.entries.iter().map(|e| format!("{e:?}")).collect();
    std::fs::write(out.join("kernel_names.rs"), format!("&[{}]", names.join(", "))).expect("OUT_DIR is writable");
    std::fs::write(out.join("ptx_arch.txt"), arch.name()).expect("OUT_DIR is writable");
}

/// Prints the whole message (the compiler's output included) and stops the build.
fn fail(message: &str) -> ! {
    eprintln!("error: building lockstep's PTX failed\n{message}");
    std::process::exit(1);
}
