//! Hands `src/ptx.rs` the device code through `OUT_DIR`, and (feature `gpu`) lets programs start
//! without the CUDA driver. Writes nothing outside `OUT_DIR` and runs no compiler by default.
//!
//! - **The device code.** By default the images shipped with the crate (`modules/`: the sm_70
//!   PTX and the sm_80 / sm_90 cubins, zstd-compressed, and `census.txt`; written by `cargo
//!   xtask build-ptx`, checked against a fresh build by `cargo xtask test`) are embedded as
//!   they are, compressed: `src/ptx.rs` decodes the one a GPU needs when it loads. Here the PTX
//!   is decoded once to check it can load and to list its kernels, and the census's kernel list
//!   must agree with it. Any toolchain, stable included, builds lockstep.
//!   `LOCKSTEP_PTX_ARCH=sm_NN` (NN ≠ 70) instead builds the device crate for that architecture
//!   with the toolchain pinned in `rust-toolchain.toml`, run through rustup (never the calling
//!   cargo), into `OUT_DIR`, and embeds that PTX alone (no cubins).
//! - **The driver.** On Linux x86_64/aarch64 with feature `gpu`, `-lcuda` (from cust's build
//!   script) finds an empty `libcuda.so` linker script here, and `src/driver.rs` defines the
//!   driver's symbols and opens `libcuda.so.1` when a GPU is first asked for (cfg `lazy_cuda`).

use lockstep_ptx_builder::images::{self, IMAGES, ImageKind};
use lockstep_ptx_builder::{Arch, BuildOptions, census};
use std::io::Read;
use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let modules = manifest_dir.join(images::DIR);
    println!("cargo:rerun-if-changed={}", modules.display());
    println!("cargo:rerun-if-env-changed=LOCKSTEP_PTX_ARCH");
    let arch = match std::env::var("LOCKSTEP_PTX_ARCH") {
        Ok(s) => s.parse::<Arch>().unwrap_or_else(|e| fail(&e.to_string())),
        Err(_) => Arch::DEFAULT,
    };
    let (ptx, table, census) =
        if arch == Arch::DEFAULT { shipped(&modules) } else { own_build(&manifest_dir, &out, arch) };
    let entries = lockstep_ptx_builder::check_module(&ptx).unwrap_or_else(|e| fail(&e.to_string()));
    // the census must list exactly the PTX's kernels as `all` (a stale census is refused too)
    if let Some(mut portable) = census {
        let mut sorted = entries.clone();
        sorted.sort();
        portable.sort();
        if portable != sorted {
            fail(&format!(
                "{} does not list the PTX module's kernels (run `cargo xtask build-ptx` in lockstep's checkout)",
                modules.join(images::CENSUS).display()
            ));
        }
    }
    let params = lockstep_ptx_builder::entry_params(&ptx).unwrap_or_else(|e| fail(&e.to_string()));
    let rows: Vec<String> = params.iter().map(|(k, sizes)| format!("({k:?}, &{sizes:?})")).collect();
    write(&out.join("kernel_params.rs"), &format!("&[{}]", rows.join(", ")));
    let names: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
    write(&out.join("kernel_names.rs"), &format!("&[{}]", names.join(", ")));
    write(&out.join("ptx_arch.txt"), &arch.name());
    write(&out.join("image_count.rs"), &table.matches("Image::new(").count().to_string());
    write(&out.join("images.rs"), &table);
    lazy_driver(&out);
}

/// The shipped images: the decoded PTX, the image table for `src/ptx.rs`, and the kernels the
/// census lists in every image.
fn shipped(modules: &Path) -> (String, String, Option<Vec<String>>) {
    let hint = "(run `cargo xtask build-ptx` in lockstep's checkout)";
    let census_path = modules.join(images::CENSUS);
    let census_text = std::fs::read_to_string(&census_path)
        .unwrap_or_else(|e| fail(&format!("{}: {e} {hint}", census_path.display())));
    let rows = census::read_kernel_lines(&census_text);
    let mut ptx = None;
    let mut table = String::from("[\n");
    for spec in IMAGES {
        let path = modules.join(spec.file_name());
        println!("cargo:rerun-if-changed={}", path.display());
        if spec.kind == ImageKind::Ptx {
            let z = std::fs::read(&path).unwrap_or_else(|e| fail(&format!("{}: {e} {hint}", path.display())));
            let mut text = String::new();
            ruzstd::decoding::StreamingDecoder::new(&z[..])
                .map_err(|e| e.to_string())
                .and_then(|mut d| d.read_to_string(&mut text).map_err(|e| e.to_string()))
                .unwrap_or_else(|e| {
                    fail(&format!("{}: not a zstd-compressed PTX module ({e}) {hint}", path.display()))
                });
            ptx = Some(text);
        } else if !path.is_file() {
            fail(&format!("{}: missing {hint}", path.display()));
        }
        let own: Vec<String> =
            rows.iter().filter(|(_, images)| *images == spec.target.name()).map(|(k, _)| format!("{k:?}")).collect();
        table += &format!(
            "    Image::new(ImageSpec {{ target: Arch::new({}), kind: ImageKind::{:?}, from: Arch::new({}) }}, \
             Stored::Zstd(include_bytes!({:?})), &[{}]),\n",
            spec.target.number(),
            spec.kind,
            spec.from.number(),
            path.display().to_string(),
            own.join(", ")
        );
    }
    table += "]";
    let ptx = ptx.expect("IMAGES holds a PTX image");
    let portable = rows.into_iter().filter(|(_, i)| i == "all").map(|(k, _)| k).collect();
    (ptx, table, Some(portable))
}

/// Builds the device crate for `arch` with the pinned toolchain, into `OUT_DIR/ptx-build`: its
/// PTX, and a table of that one image (stored as it is); no census.
fn own_build(manifest_dir: &Path, out: &Path, arch: Arch) -> (String, String, Option<Vec<String>>) {
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
    let built = lockstep_ptx_builder::build(&opts).unwrap_or_else(|e| fail(&e.to_string()));
    let table = format!(
        "[\n    Image::new(ImageSpec {{ target: Arch::new({n}), kind: ImageKind::Ptx, from: Arch::new({n}) }}, \
         Stored::Plain(include_bytes!({:?})), &[]),\n]",
        built.path.display().to_string(),
        n = arch.number()
    );
    (built.ptx, table, None)
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
    eprintln!("error: preparing lockstep's device code failed\n{message}");
    std::process::exit(1);
}
