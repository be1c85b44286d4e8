//! Launch bounds written into kernel entries: CUDA's `__launch_bounds__(max_threads,
//! min_blocks)` for kernels built by rustc, which has no attribute for it.
//!
//! The device crate declares them with `lockstep_cuda_std::launch_bounds!`, which exports a
//! `[u32; 2] = [max_threads, min_blocks]` named [`PREFIX`]`<kernel>`; rustc emits it as
//! `.visible .global .align 4 .b8 __lockstep_launch_bounds__<kernel>[8] = {…};` (little-endian
//! bytes, trailing zeros omitted). [`apply`] removes each such symbol and writes
//! `.maxntid max_threads, 1, 1` and `.minnctapersm min_blocks` into the kernel's entry, before
//! its body. ptxas then allocates registers for `min_blocks` resident blocks of `max_threads`
//! threads, and the driver refuses a launch of a larger block.

use crate::BuildError;

/// Prefix of the symbols `lockstep_cuda_std::launch_bounds!` exports (the macro spells the same
/// literal; the host crate's tests check a kernel's bounds arrive in the shipped module).
pub const PREFIX: &str = "__lockstep_launch_bounds__";

/// One kernel's bounds: `(kernel, max_threads, min_blocks)`.
type Bounds = (String, u32, u32);

/// The module with every launch-bounds symbol turned into its kernel's directives. Fails when a
/// symbol cannot be read or names a kernel the module does not define.
pub fn apply(ptx: &str) -> Result<String, BuildError> {
    let mut bounds = Vec::new();
    let mut out = String::with_capacity(ptx.len());
    for line in ptx.split_inclusive('\n') {
        match symbol(line)? {
            Some(b) => bounds.push(b),
            None => out.push_str(line),
        }
    }
    for (kernel, threads, blocks) in bounds {
        let bad = |why: &str| BuildError::InvalidModule(format!("launch bounds for `{kernel}`: {why}"));
        let at = out.find(&format!(".entry {kernel}(")).ok_or_else(|| bad("no such kernel in the module"))?;
        let body = at + out[at..].find("\n{").ok_or_else(|| bad("the entry has no body"))? + 1;
        out.insert_str(body, &format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"));
    }
    Ok(out)
}

/// The bounds a line declares, if it is a launch-bounds symbol.
fn symbol(line: &str) -> Result<Option<Bounds>, BuildError> {
    let Some(at) = line.find(PREFIX) else { return Ok(None) };
    let bad = || BuildError::InvalidModule(format!("cannot read the launch bounds `{}`", line.trim()));
    let rest = &line[at + PREFIX.len()..];
    let (kernel, rest) = rest.split_once("[8] = {").ok_or_else(bad)?;
    let bytes = rest.trim_end().strip_suffix("};").ok_or_else(bad)?;
    let mut le = [0u8; 8];
    for (slot, b) in le.iter_mut().zip(bytes.split(',')) {
        *slot = b.trim().parse().map_err(|_| bad())?;
    }
    let word = |i: usize| u32::from_le_bytes([le[i], le[i + 1], le[i + 2], le[i + 3]]);
    let (threads, blocks) = (word(0), word(4));
    if bytes.split(',').count() > 8 || threads == 0 || threads > 1024 || blocks == 0 {
        return Err(bad());
    }
    Ok(Some((kernel.to_string(), threads, blocks)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = ".visible .global .align 4 .b8 __lockstep_launch_bounds__k[8] = {0, 1, 0, 0, 6};\n\
                          .visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\tret;\n}\n\
                          .visible .entry other()\n{\n\tret;\n}\n";

    #[test]
    fn bounds_become_directives_of_their_kernel_only() {
        let out = apply(MODULE).unwrap();
        assert!(!out.contains(PREFIX), "{out}");
        assert!(
            out.contains(".visible .entry k(\n\t.param .u32 k_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 6\n{\n"),
            "{out}"
        );
        assert_eq!(out.matches(".maxntid").count(), 1, "{out}");
        assert_eq!(apply(&out).unwrap(), out, "a module without symbols is left as it is");
    }

    #[test]
    fn unreadable_or_orphan_bounds_are_refused() {
        let orphan = MODULE.replace("__k[8]", "__gone[8]");
        assert!(apply(&orphan).unwrap_err().to_string().contains("`gone`: no such kernel"));
        for bad in ["{0, 1, 0, 0}", "{0, 0, 0, 0, 6}", "{0, 1, 0, 0, 0}", "{0, 5, 0, 0, 1}", "{0, 1, x}"] {
            let m = MODULE.replace("{0, 1, 0, 0, 6}", bad);
            assert!(apply(&m).unwrap_err().to_string().contains("cannot read"), "{bad}");
        }
    }
}
