//! The device code embedded in the binary: the images of `crates/host/modules/` (the portable
//! sm_70 PTX and the sm_80 / sm_90 cubins, zstd-compressed), decoded on first use by the pure-Rust
//! `ruzstd`, and the rule that picks the image a GPU loads ([`select`]).
//!
//! The rule: the cubin that runs on the device's compute capability (sm_80 for 8.x, sm_90 for
//! 9.x), else the PTX, which the driver JIT-compiles (Volta, Turing, Blackwell and newer).
//! `LOCKSTEP_MODULE=ptx` forces the PTX (tests run both paths), `LOCKSTEP_MODULE=cubin` refuses
//! to fall back, `auto` (or unset) is the rule. Every portable kernel is in every image, built
//! from the same source; an architecture-specific kernel ([`Image::own_kernels`], e.g. the
//! sm_90 `cluster_probe`) only in its image, and a launcher asks the loaded module for it.

use crate::error::{Error, Result};
use lockstep_ptx_builder::Arch;
pub use lockstep_ptx_builder::images::ImageKind;
use lockstep_ptx_builder::images::ImageSpec;
use std::io::Read;
use std::sync::OnceLock;

/// The portable module's architecture (`sm_70` unless `LOCKSTEP_PTX_ARCH` said otherwise).
pub const ARCH: &str = include_str!(concat!(env!("OUT_DIR"), "/ptx_arch.txt"));

/// Every kernel (`.entry`) of the portable module, in module order: the kernels every image holds.
pub const KERNELS: &[&str] = include!(concat!(env!("OUT_DIR"), "/kernel_names.rs"));

/// Each kernel of the portable PTX module with its parameters' sizes in bytes, in order, read
/// from its `.entry` declaration by the build script (`lockstep_ptx_builder::entry_params`).
const KERNEL_PARAMS: &[(&str, &[u32])] = include!(concat!(env!("OUT_DIR"), "/kernel_params.rs"));

/// The parameter sizes of kernel `name` as the PTX declares them (`None` for a kernel only an
/// architecture-specific image holds). The host checks every typed launch handle against them
/// when it looks the kernel up, so a kernel signature the host did not follow is an error
/// before any launch.
pub fn parameter_sizes(name: &str) -> Option<&'static [u32]> {
    KERNEL_PARAMS.iter().find(|(k, _)| *k == name).map(|(_, p)| *p)
}

/// Every embedded image, the portable PTX first (written by the build script).
pub static IMAGES: [Image; IMAGE_COUNT] = include!(concat!(env!("OUT_DIR"), "/images.rs"));

const IMAGE_COUNT: usize = include!(concat!(env!("OUT_DIR"), "/image_count.rs"));

/// How an image's bytes are stored in the binary.
#[derive(Debug)]
enum Stored {
    /// zstd-compressed (the shipped images).
    Zstd(&'static [u8]),
    /// As they are (a `LOCKSTEP_PTX_ARCH` build).
    #[allow(dead_code, reason = "constructed by the table of a LOCKSTEP_PTX_ARCH build")]
    Plain(&'static [u8]),
}

/// One embedded image of the device code.
#[derive(Debug)]
pub struct Image {
    spec: ImageSpec,
    stored: Stored,
    own: &'static [&'static str],
    decoded: OnceLock<Vec<u8>>,
}

impl Image {
    const fn new(spec: ImageSpec, stored: Stored, own: &'static [&'static str]) -> Image {
        Image { spec, stored, own, decoded: OnceLock::new() }
    }

    /// PTX or cubin.
    pub fn kind(&self) -> ImageKind {
        self.spec.kind
    }

    /// The architecture it is for (`sm_70`, `sm_80`, `sm_90`).
    pub fn target(&self) -> String {
        self.spec.target.name()
    }

    /// The kernels only this image holds (besides [`KERNELS`], which every image holds).
    pub fn own_kernels(&self) -> &'static [&'static str] {
        self.own
    }

    /// Whether it runs on a device of compute capability `major.minor` (a cubin within its
    /// major version only; the PTX on any newer device).
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        self.spec.runs_on(major, minor)
    }

    /// `sm_90 cubin`, `sm_70 PTX`.
    pub fn describe(&self) -> String {
        let kind = match self.spec.kind {
            ImageKind::Ptx => "PTX",
            ImageKind::Cubin => "cubin",
        };
        format!("{} {kind}", self.target())
    }

    /// The image's bytes (PTX text or cubin), decoded once and kept. [`Error::CorruptImage`]
    /// when the embedded data does not decode (a damaged file; `cargo xtask test` decodes every
    /// image, and the build script the PTX).
    pub fn bytes(&self) -> Result<&[u8]> {
        if let Some(b) = self.decoded.get() {
            return Ok(b);
        }
        let decoded = match self.stored {
            Stored::Plain(b) => b.to_vec(),
            Stored::Zstd(z) => {
                let mut out = Vec::new();
                ruzstd::decoding::StreamingDecoder::new(z)
                    .map_err(|e| e.to_string())
                    .and_then(|mut d| d.read_to_end(&mut out).map_err(|e| e.to_string()))
                    .map_err(|why| Error::CorruptImage { image: self.describe(), why })?;
                out
            }
        };
        Ok(self.decoded.get_or_init(|| decoded))
    }
}

/// The portable module's PTX text (decoded on first use; the build script decoded and checked it).
pub fn module() -> &'static str {
    IMAGES[0]
        .bytes()
        .ok()
        .and_then(|b| std::str::from_utf8(b).ok())
        .expect("the build script decoded the PTX image and checked it is a module")
}

/// Which image a GPU loads: the rule, or one kind forced (`LOCKSTEP_MODULE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleChoice {
    /// The cubin that runs on the device, else the PTX (the default).
    Auto,
    /// The portable PTX, JIT-compiled by the driver, whatever the device.
    Ptx,
    /// A cubin that runs on the device, or an error.
    Cubin,
}

/// The variable that forces a [`ModuleChoice`]: `auto`, `ptx` or `cubin`.
pub const MODULE_VAR: &str = "LOCKSTEP_MODULE";

impl ModuleChoice {
    /// `LOCKSTEP_MODULE`, [`ModuleChoice::Auto`] when unset; another value is an error.
    pub fn from_env() -> Result<ModuleChoice> {
        match std::env::var(MODULE_VAR) {
            Err(std::env::VarError::NotPresent) => Ok(ModuleChoice::Auto),
            Ok(v) => v.parse(),
            Err(e) => Err(Error::InvalidInput { what: "LOCKSTEP_MODULE", why: e.to_string() }),
        }
    }
}

impl std::str::FromStr for ModuleChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<ModuleChoice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(ModuleChoice::Auto),
            "ptx" => Ok(ModuleChoice::Ptx),
            "cubin" => Ok(ModuleChoice::Cubin),
            _ => {
                Err(Error::InvalidInput { what: "LOCKSTEP_MODULE", why: format!("`{s}`: expected auto, ptx or cubin") })
            }
        }
    }
}

/// The image a device of compute capability `major.minor` loads under `choice`.
///
/// Errors: [`Error::NoImage`] when `choice` is [`ModuleChoice::Cubin`] and no cubin runs on the
/// device, or when not even the PTX does (a device older than its architecture).
pub fn select(major: u32, minor: u32, choice: ModuleChoice) -> Result<&'static Image> {
    let cubin = IMAGES.iter().find(|i| i.kind() == ImageKind::Cubin && i.runs_on(major, minor));
    let ptx = IMAGES.iter().find(|i| i.kind() == ImageKind::Ptx && i.runs_on(major, minor));
    let found = match choice {
        ModuleChoice::Auto => cubin.or(ptx),
        ModuleChoice::Ptx => ptx,
        ModuleChoice::Cubin => cubin,
    };
    found.ok_or_else(|| Error::NoImage {
        device: format!("compute capability {major}.{minor}"),
        choice: format!("{choice:?}").to_ascii_lowercase(),
        available: IMAGES.iter().map(Image::describe).collect::<Vec<_>>().join(", "),
    })
}

/// The image that holds architecture-specific kernel `name`, if it is one.
pub fn image_holding(name: &str) -> Option<&'static Image> {
    IMAGES.iter().find(|i| i.own.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_picks_the_matching_cubin_else_the_ptx() {
        let pick = |major, minor, choice| select(major, minor, choice).map(Image::describe);
        if IMAGES.len() == 1 {
            return; // a LOCKSTEP_PTX_ARCH build: one PTX image
        }
        assert_eq!(pick(9, 0, ModuleChoice::Auto).unwrap(), "sm_90 cubin");
        assert_eq!(pick(8, 0, ModuleChoice::Auto).unwrap(), "sm_80 cubin");
        assert_eq!(pick(8, 9, ModuleChoice::Auto).unwrap(), "sm_80 cubin");
        assert_eq!(pick(7, 5, ModuleChoice::Auto).unwrap(), "sm_70 PTX");
        assert_eq!(pick(12, 0, ModuleChoice::Auto).unwrap(), "sm_70 PTX");
        assert_eq!(pick(9, 0, ModuleChoice::Ptx).unwrap(), "sm_70 PTX");
        assert_eq!(pick(9, 0, ModuleChoice::Cubin).unwrap(), "sm_90 cubin");
        assert!(matches!(select(12, 0, ModuleChoice::Cubin), Err(Error::NoImage { .. })));
        assert!(matches!(select(6, 1, ModuleChoice::Auto), Err(Error::NoImage { .. })));
    }

    #[test]
    fn module_choice_parses_and_refuses() {
        assert_eq!("PTX".parse::<ModuleChoice>().unwrap(), ModuleChoice::Ptx);
        assert_eq!("auto".parse::<ModuleChoice>().unwrap(), ModuleChoice::Auto);
        assert_eq!("cubin".parse::<ModuleChoice>().unwrap(), ModuleChoice::Cubin);
        let e = "sass".parse::<ModuleChoice>().unwrap_err().to_string();
        assert!(e.contains("LOCKSTEP_MODULE") && e.contains("sass"), "{e}");
    }

    #[test]
    fn the_himeno_sweep_carries_its_launch_bounds() {
        // `launch_bounds!` in the device crate, turned into directives by the PTX builder (the
        // host's check of the block, `himeno::gpu`, reads the same constant).
        let m = module();
        assert!(!m.contains("__lockstep_launch_bounds__"), "a launch-bounds symbol was left in the module");
        let at = m.find(".entry himeno_jacobi(").expect("the module has the Himeno sweep");
        let head = &m[at..at + m[at..].find("\n{").unwrap()];
        use lockstep_shared::himeno::{SWEEP_MAX_THREADS, SWEEP_MIN_BLOCKS};
        assert!(
            head.contains(&format!(".maxntid {SWEEP_MAX_THREADS}, 1, 1\n.minnctapersm {SWEEP_MIN_BLOCKS}")),
            "{head}"
        );
    }

    #[test]
    fn every_image_decodes_and_the_ptx_lists_the_kernels() {
        for image in &IMAGES {
            let b = image.bytes().unwrap();
            match image.kind() {
                ImageKind::Ptx => assert!(std::str::from_utf8(b).unwrap().contains(".entry")),
                // an ELF file
                ImageKind::Cubin => assert_eq!(&b[..4], b"\x7fELF", "{}", image.describe()),
            }
        }
        for k in KERNELS {
            assert!(module().contains(&format!(".entry {k}(")), "{k}");
        }
    }

    #[test]
    fn architecture_kernels_live_in_their_image_only() {
        if IMAGES.len() == 1 {
            return;
        }
        let sm90 = IMAGES.iter().find(|i| i.describe() == "sm_90 cubin").unwrap();
        assert!(!sm90.own_kernels().is_empty(), "the sm_90 image shows the mechanism with its cluster probe");
        for image in &IMAGES {
            for k in image.own_kernels() {
                assert!(std::ptr::eq(image_holding(k).unwrap(), image), "{k}");
                assert!(!KERNELS.contains(k), "{k} is in every image");
            }
        }
        assert!(image_holding(KERNELS[0]).is_none());
    }
}
