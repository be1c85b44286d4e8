//! Hands `src/ptx.rs` the PTX module through `OUT_DIR`, and (feature `gpu`) lets programs start
//! without the CUDA driver. Writes nothing outside `OUT_DIR` and runs no compiler by default.
//!
//! - **The module.** By default the module shipped with the crate
//!   (`ptx/lockstep_kernels.sm_70.ptx`, written by `cargo xtask build-ptx`, checked against a
//!   fresh build by `cargo xtask test`) is embedded as it is: any toolchain, stable included,
//!   builds lockstep. `LOCKSTEP_PTX_ARCH=sm_NN` (NN ≠ 70) instead builds the device crate for
//!   that architecture with the toolchain pinned in `rust-toolchain.toml`, run through rustup
//!   (never the calling cargo), into `OUT_DIR`.
//! - **The driver.** On Linux x86_64/aarch64 with feature `gpu`, `-lcuda` (from cust's build
//!   script) finds an empty `libcuda.so` linker script here, and `src/driver.rs` defines the
//!   driver's symbols and opens `libcuda.so.1` when a GPU is first asked for (cfg `lazy_cuda`).

use lockstep_ptx_builder::{Arch, BuildOptions};
use std::path::{Path, PathBuf};

/// The module shipped with the crate, for [`Arch::DEFAULT`].
const SHIPPED: &str = "ptx/lockstep_kernels.sm_70.ptx";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed={SHIPPED}");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PTX_ARCH");
    let arch = match std::env::var("LOCKSTEP_PTX_ARCH") {
        Ok(s) => s.parse::<Arch>().unwrap_or_else(|e| fail(&e.to_string())),
        Err(_) => Arch::DEFAULT,
    };
    let ptx = if arch == Arch::DEFAULT {
        let path = manifest_dir.join(SHIPPED);
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            fail(&format!("{}: {e} (run `cargo xtask build-ptx` in lockstep's checkout)", path.display()))
        })
    } else {
        build_for(&manifest_dir, &out, arch)
    };
    let entries = lockstep_ptx_builder::check_module(&ptx).unwrap_or_else(|e| fail(&e.to_string()));
    write(&out.join("lockstep_kernels.ptx"), &ptx);
    let names: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
    write(&out.join("kernel_names.rs"), &format!("&[{}]", names.join(", ")));
    write(&out.join("ptx_arch.txt"), &arch.name());
    lazy_driver(&out);
}

/// Builds the device crate for `arch` with the pinned toolchain, into `OUT_DIR/ptx-build`.
fn build_for(manifest_dir: &Path, out: &Path, arch: Arch) -> String {
    let root = manifest_dir.join("../..");
    let root = root.canonicalize().unwrap_or_else(|e| {
        fail(&format!(
            "LOCKSTEP_PTX_ARCH={arch} needs lockstep's whole checkout (workspace root {}): {e}",
            root.display()
        ))
    });
    for path in
        ["crates/kernels", "crates/cuda-std", "crates/shared", "Cargo.toml", "Cargo.lock", "rust-toolchain.toml"]
    {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let opts = BuildOptions {
        manifest_path: root.join("Cargo.toml"),
        package: "lockstep-kernels".into(),
        arch,
        target_dir: out.join("ptx-build"),
    };
    lockstep_ptx_builder::build(&opts).unwrap_or_else(|e| fail(&e.to_string())).ptx
}

/// The empty `libcuda.so` for the linker, and cfg `lazy_cuda` for `src/driver.rs`.
fn lazy_driver(out: &Path) {
    println!("cargo::rustc-check-cfg=cfg(lazy_cuda)");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let lazy =
        std::env::var_os("CARGO_FEATURE_GPU").is_some() && os == "linux" && (arch == "x86_64" || arch == "aarch64");
    if !lazy {
        return;
    }
    let dir = out.join("lazy-cuda");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
    write(
        &dir.join("libcuda.so"),
        "/* lockstep: the driver's symbols are defined by lockstep's driver module, which opens\n   libcuda.so.1 at run time; this linker script adds no input and no DT_NEEDED. */\n",
    );
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-cfg=lazy_cuda");
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
}

/// Prints the whole message (the compiler's output included) and stops the build.
fn fail(message: &str) -> ! {
    eprintln!("error: preparing lockstep's PTX module failed\n{message}");
    std::process::exit(1);
}
