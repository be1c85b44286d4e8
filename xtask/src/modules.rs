//! The device code shipped with the host crate (`crates/host/modules/`): built, assembled,
//! compressed and written by `cargo xtask build-ptx`, checked by `cargo xtask test`.
//!
//! Steps: the device crate is built for every architecture the images come from
//! ([`images::source_archs`]: sm_70, sm_90); the sm_90 build must hold every sm_70 kernel
//! unchanged ([`images::same_kernels`]) and may add its own; ptxas assembles the cubins; each
//! image is compared with the *decompressed* stored file, and the census text with
//! `census.txt`. Write mode replaces what differs (the compressed file is rewritten only when
//! its content changed, so an unchanged build never touches history); check mode fails and
//! names what is stale.

use anyhow::{Context, Result, bail};
use lockstep_ptx_builder::census::{self, FunctionCensus};
use lockstep_ptx_builder::images::{self, IMAGES, ImageKind};
use lockstep_ptx_builder::ptxas::{self, PtxasFunction};
use lockstep_ptx_builder::{Arch, BuildOptions, BuiltPtx};
use std::path::{Path, PathBuf};

/// zstd level of the stored images: the highest of the standard levels (19). Decoding speed does
/// not depend on it; the files are written rarely.
const ZSTD_LEVEL: i32 = 19;

/// What [`build`] does with the stored images and census.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shipped {
    /// Replace what differs (`cargo xtask build-ptx`).
    Write,
    /// Fail when anything differs (`cargo xtask test`: stale device code never lands).
    Check,
}

/// The folder of the stored images, from the workspace root.
pub fn dir(root: &Path) -> PathBuf {
    root.join("crates/host").join(images::DIR)
}

/// Builds the device crate for `arch` into `target/ptx/<arch>`.
pub fn build_arch(root: &Path, arch: Arch) -> Result<BuiltPtx> {
    let opts = BuildOptions {
        manifest_path: root.join("Cargo.toml"),
        package: "lockstep-kernels".into(),
        arch,
        target_dir: root.join("target/ptx").join(arch.name()),
    };
    let built = lockstep_ptx_builder::build(&opts)?;
    println!("PTX for {arch}: {} ({} kernels, no .extern .func)", built.path.display(), built.entries.len());
    Ok(built)
}

/// Builds every image, prints the census, and writes or checks the stored files.
pub fn build(root: &Path, ptxas: &Path, shipped: Shipped) -> Result<()> {
    let builds: Vec<BuiltPtx> =
        images::source_archs().into_iter().map(|a| build_arch(root, a)).collect::<Result<_>>()?;
    let built_for = |arch: Arch| builds.iter().find(|b| b.arch == arch).expect("built for every source arch");
    let portable = built_for(Arch::DEFAULT);
    let mut arch_only: Vec<(String, Arch)> = Vec::new();
    for b in builds.iter().filter(|b| b.arch != Arch::DEFAULT) {
        let arch = b.arch;
        let extra = images::same_kernels(&portable.ptx, &b.ptx).map_err(|why| {
            anyhow::anyhow!("the {arch} build of the device crate does not hold the portable kernels unchanged:\n{why}")
        })?;
        println!("{arch} build: every {} kernel unchanged, {} of its own: {extra:?}", Arch::DEFAULT, extra.len());
        arch_only.extend(extra.into_iter().map(|k| (k, arch)));
    }

    let version = ptxas::version(ptxas).map_err(anyhow::Error::msg)?;
    let work = root.join("target/ptx/images");
    std::fs::create_dir_all(&work)?;
    let mut contents: Vec<Vec<u8>> = Vec::new();
    let mut reports: Vec<(String, Vec<PtxasFunction>)> = Vec::new();
    for spec in IMAGES {
        let source = built_for(spec.from);
        match spec.kind {
            ImageKind::Ptx => contents.push(source.ptx.clone().into_bytes()),
            ImageKind::Cubin => {
                let sm = spec.target.name();
                let cubin = work.join(format!("lockstep_kernels.{sm}.cubin"));
                let report = ptxas::assemble(ptxas, &source.path, &sm, &cubin).map_err(anyhow::Error::msg)?;
                println!("ptxas {version} -arch={sm} ({} PTX): accepted", spec.from);
                contents.push(std::fs::read(&cubin).with_context(|| format!("reading {}", cubin.display()))?);
                reports.push((sm, report));
            }
        }
    }

    // the census: portable kernels from the sm_70 PTX, architecture-only ones from their build
    let mut rows: Vec<(FunctionCensus, String)> =
        census::functions(&portable.ptx).into_iter().map(|f| (f, "all".to_string())).collect();
    for (kernel, arch) in &arch_only {
        let f = census::functions(&built_for(*arch).ptx).into_iter().find(|f| &f.name == kernel).expect("listed");
        rows.push((f, arch.name()));
    }
    let sizes: Vec<String> = IMAGES
        .iter()
        .zip(&contents)
        .map(|(spec, c)| format!("{} {:?} {} B", spec.target, spec.kind, c.len()))
        .collect();
    let census_text = format!(
        "# lockstep's device code, one line per kernel: written by `cargo xtask build-ptx`, checked by `cargo xtask test`.\n\
         # images in this folder (zstd): {}\n\
         # cubins by ptxas {version}: sm_80 from the sm_70 PTX, sm_90 from the sm_90 build (the sm_70 kernels unchanged, plus those marked sm_90)\n\
         # in: the images that hold the kernel; local: PTX instructions on local memory; depotB: declared local bytes; stackB: ptxas stack frame\n{}",
        sizes.join("; "),
        census::kernel_lines(&rows, &reports)
    );
    println!("\n{census_text}");

    // compare with (and write) the stored files
    let dir = dir(root);
    std::fs::create_dir_all(&dir)?;
    let mut stale = Vec::new();
    for (spec, content) in IMAGES.iter().zip(&contents) {
        let path = dir.join(spec.file_name());
        let stored = std::fs::read(&path).ok().and_then(|z| zstd::decode_all(&z[..]).ok());
        if stored.as_deref() == Some(&content[..]) {
            continue;
        }
        match shipped {
            Shipped::Write => {
                let z = zstd::encode_all(&content[..], ZSTD_LEVEL).context("compressing")?;
                std::fs::write(&path, &z).with_context(|| format!("writing {}", path.display()))?;
                println!("{}: updated ({} B, {} B compressed; commit it)", path.display(), content.len(), z.len());
            }
            Shipped::Check => stale.push(spec.file_name()),
        }
    }
    let census_path = dir.join(images::CENSUS);
    if std::fs::read_to_string(&census_path).ok().as_deref() != Some(census_text.as_str()) {
        match shipped {
            Shipped::Write => {
                std::fs::write(&census_path, &census_text)?;
                println!("{}: updated (commit it)", census_path.display());
            }
            Shipped::Check => stale.push(images::CENSUS.to_string()),
        }
    }
    if !stale.is_empty() {
        bail!(
            "crates/host/{}/ is stale against a fresh build of the device crate ({}): run `cargo xtask build-ptx` and commit the folder",
            images::DIR,
            stale.join(", ")
        );
    }
    println!("shipped device code crates/host/{}/: up to date with this build", images::DIR);
    Ok(())
}
