//! The device code lockstep ships with its host crate, as one list: which images exist, what
//! each is made from, and the files they are stored in. `cargo xtask build-ptx` writes them and
//! the host crate's build script embeds them; both read this list, so they cannot disagree.
//!
//! - **sm_70 PTX**: the portable module. Every GPU from Volta on can JIT-compile it; it is the
//!   fallback for devices no cubin matches, and the path `LOCKSTEP_MODULE=ptx` forces.
//! - **sm_80 cubin**: ptxas's machine code of that same PTX, for compute capability 8.x.
//! - **sm_90 cubin**: machine code for compute capability 9.x, assembled from the device crate
//!   built for sm_90. That build holds every portable kernel unchanged ([`same_kernels`]
//!   checks it, body by body) plus the kernels that exist only for sm_90 (clusters and other
//!   Hopper features, `#[cfg(target_feature = "sm_90")]` in the device crate).
//!
//! Files are zstd-compressed (`.zst`), so a kernel change costs history and binaries the
//! compressed size, not the 3.3 MB of text; `census.txt` beside them is the readable record of
//! a change (one line per kernel).

use crate::Arch;

/// What an image holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX text, JIT-compiled by the driver at load.
    Ptx,
    /// Machine code (SASS) for one architecture, loaded as it is.
    Cubin,
}

/// One shipped image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageSpec {
    /// The architecture the image is for (`.target` of a PTX image, `-arch` of a cubin).
    pub target: Arch,
    /// PTX or machine code.
    pub kind: ImageKind,
    /// The architecture the device crate was built for to make it.
    pub from: Arch,
}

/// Every shipped image, the portable PTX first.
pub const IMAGES: [ImageSpec; 3] = [
    ImageSpec { target: Arch::DEFAULT, kind: ImageKind::Ptx, from: Arch::DEFAULT },
    ImageSpec { target: Arch::AMPERE, kind: ImageKind::Cubin, from: Arch::DEFAULT },
    ImageSpec { target: Arch::HOPPER, kind: ImageKind::Cubin, from: Arch::HOPPER },
];

/// The folder of the host crate that holds the images and the census.
pub const DIR: &str = "modules";

/// The census file in [`DIR`]: one line per kernel, the text a reviewer reads.
pub const CENSUS: &str = "census.txt";

/// The architectures the device crate is built for to make [`IMAGES`], in order, no repeats.
pub fn source_archs() -> Vec<Arch> {
    let mut archs: Vec<Arch> = IMAGES.iter().map(|i| i.from).collect();
    archs.dedup();
    archs
}

impl ImageSpec {
    /// The stored file's name, e.g. `lockstep_kernels.sm_80.cubin.zst`.
    pub fn file_name(&self) -> String {
        let ext = match self.kind {
            ImageKind::Ptx => "ptx",
            ImageKind::Cubin => "cubin",
        };
        format!("lockstep_kernels.{}.{ext}.zst", self.target.name())
    }

    /// Whether this image runs on a device of compute capability `major.minor`: PTX on any
    /// device at least as new as its target (the driver JIT-compiles it); a cubin only within
    /// its major version, on a minor version at least its own (SASS is binary-compatible
    /// there and nowhere else).
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        let (t_major, t_minor) = (self.target.number() / 10, self.target.number() % 10);
        match self.kind {
            ImageKind::Ptx => (major, minor) >= (t_major, t_minor),
            ImageKind::Cubin => major == t_major && minor >= t_minor,
        }
    }
}

/// Compares two builds of the device crate, function by function: every function of
/// `portable` must appear in `specific` with the same body, up to the PTX spellings that
/// differ between PTX ISA versions (the `.version`/`.target` lines; a discarded register written
/// `{ .reg .b32 tmp; mov.b64 {tmp, %r1}, %rd1; }` before ISA 7.1 and `mov.b64 {_, %r1}, %rd1;`
/// after). Module-scope declarations (shared arrays, constants) must match too. Returns the
/// names of the functions that exist only in `specific`, or what differs.
pub fn same_kernels(portable: &str, specific: &str) -> Result<Vec<String>, String> {
    let (p_globals, p_funcs) = split(portable);
    let (s_globals, s_funcs) = split(specific);
    let mut differ = Vec::new();
    for g in &p_globals {
        if !s_globals.contains(g) {
            differ.push(format!("module-scope line `{g}` is missing"));
        }
    }
    for (name, body) in &p_funcs {
        match s_funcs.iter().find(|(n, _)| n == name) {
            None => differ.push(format!("function `{name}` is missing")),
            Some((_, b)) if b != body => differ.push(format!("function `{name}` has another body")),
            Some(_) => {}
        }
    }
    if !differ.is_empty() {
        return Err(differ.join("\n"));
    }
    Ok(s_funcs
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !n.ends_with(" (declaration)") && !p_funcs.iter().any(|(p, _)| p == n))
        .collect())
}

/// A module's module-scope lines (normalised; `.version`, `.target` and comments dropped) and
/// its functions as `(name, normalised text)`: a header up to its body's closing `}` at the
/// start of a line, or up to the `;` that ends a declaration without body (as the census reads
/// a module).
fn split(ptx: &str) -> (Vec<String>, Vec<(String, String)>) {
    let mut globals = Vec::new();
    let mut funcs = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut in_body = false;
    for line in ptx.lines() {
        let t = normalise(line);
        if let Some((_, text)) = current.as_mut() {
            text.push_str(&t);
            text.push('\n');
            let ends = if in_body { line.starts_with('}') } else { t.ends_with(';') };
            if ends {
                let (name, text) = current.take().expect("checked above");
                // a declaration and the definition of one function are two items
                funcs.push((if in_body { name } else { format!("{name} (declaration)") }, text));
            }
            in_body |= t == "{";
            continue;
        }
        if t.is_empty() || t.starts_with("//") || t.starts_with(".version") || t.starts_with(".target") {
            continue;
        }
        if let Some(name) = function_name(&t) {
            in_body = false;
            if t.ends_with(';') {
                funcs.push((format!("{name} (declaration)"), t));
            } else {
                current = Some((name, format!("{t}\n")));
            }
            continue;
        }
        globals.push(t);
    }
    (globals, funcs)
}

/// The name of the function whose header starts on this (normalised) line.
fn function_name(t: &str) -> Option<String> {
    let mut rest = t;
    for keyword in [".visible", ".weak", ".extern"] {
        rest = rest.strip_prefix(keyword).unwrap_or(rest).trim_start();
    }
    let rest = rest.strip_prefix(".entry").or_else(|| rest.strip_prefix(".func"))?.trim_start();
    let rest = if rest.starts_with('(') { rest[rest.find(')')? + 1..].trim_start() } else { rest };
    let name: String = rest.chars().take_while(|c| !c.is_whitespace() && *c != '(' && *c != ';').collect();
    (!name.is_empty()).then_some(name)
}

/// One line with whitespace collapsed, the pre-7.1 discard idiom rewritten to `_`, and the
/// function's position in the module dropped from its names (`$L__BB19_2` → `$L__BB_2`,
/// `__local_depot19` → `__local_depot`): a kernel added to a build renumbers the others.
fn normalise(line: &str) -> String {
    let t = line.trim();
    let t = match t.strip_prefix("{ .reg .b").and_then(|r| r.split_once(" tmp; ")) {
        Some((_, inner)) if inner.ends_with(" }") => inner[..inner.len() - 2].replace("tmp", "_"),
        _ => t.to_string(),
    };
    let t = drop_index(&drop_index(&t, "$L__BB"), "__local_depot");
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes the digits right after each `prefix`.
fn drop_index(t: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(i) = rest.find(prefix) {
        out.push_str(&rest[..i + prefix.len()]);
        rest = rest[i + prefix.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\n.shared .align 16 .b8 S[64];\n\
        .visible .entry k(\n\t.param .u32 p\n)\n{\n\t{ .reg .b32 tmp; mov.b64 {tmp, %r1}, %rd8; }\n\tret;\n\n}\n";

    #[test]
    fn portable_kernels_match_across_isa_spellings() {
        let new = OLD
            .replace(".version 7.0", ".version 7.8")
            .replace(".target sm_70", ".target sm_90")
            .replace("{ .reg .b32 tmp; mov.b64 {tmp, %r1}, %rd8; }", "mov.b64 \t{_, %r1}, %rd8;");
        assert_eq!(same_kernels(OLD, &new).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn renumbered_labels_are_the_same_kernel() {
        let a = OLD.replace("\tret;", "\t@%p1 bra $L__BB19_2;\n$L__BB19_2:\n\tret;");
        let b = OLD.replace("\tret;", "\t@%p1 bra $L__BB20_2;\n$L__BB20_2:\n\tret;");
        assert!(same_kernels(&a, &b).is_ok());
        let c = OLD.replace("\tret;", "\t@%p1 bra $L__BB20_3;\n$L__BB20_2:\n\tret;");
        assert!(same_kernels(&a, &c).is_err());
    }

    #[test]
    fn extra_kernels_are_listed_and_changes_refused() {
        let more = format!("{OLD}.visible .entry only90(\n)\n{{\n\tret;\n\n}}\n");
        assert_eq!(same_kernels(OLD, &more).unwrap(), vec!["only90".to_string()]);
        let changed = OLD.replace("ret;", "trap;");
        assert!(same_kernels(OLD, &changed).unwrap_err().contains("`k` has another body"));
        let no_shared = OLD.replace(".shared .align 16 .b8 S[64];\n", "");
        assert!(same_kernels(OLD, &no_shared).unwrap_err().contains(".shared"));
        assert!(same_kernels(&more, OLD).unwrap_err().contains("`only90` is missing"));
    }

    #[test]
    fn images_run_where_their_code_does() {
        let [ptx, sm80, sm90] = IMAGES;
        assert!(ptx.runs_on(7, 0) && ptx.runs_on(12, 0) && !ptx.runs_on(6, 1));
        assert!(sm80.runs_on(8, 0) && sm80.runs_on(8, 9) && !sm80.runs_on(9, 0) && !sm80.runs_on(7, 5));
        assert!(sm90.runs_on(9, 0) && !sm90.runs_on(10, 0) && !sm90.runs_on(8, 6));
        assert_eq!(sm80.file_name(), "lockstep_kernels.sm_80.cubin.zst");
        assert_eq!(ptx.file_name(), "lockstep_kernels.sm_70.ptx.zst");
        assert_eq!(source_archs(), vec![Arch::DEFAULT, Arch::HOPPER]);
    }
}
