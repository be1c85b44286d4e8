//! The instruction census: per function, the PTX instructions exact kernels are held to.
//!
//! - `fma`: fused multiply-adds (`fma.rn.f32/f64`). Exact kernels have none unless the shared
//!   code asks for `mul_add` on purpose.
//! - `approx`: approximate instructions (`sin.approx`, `rsqrt.approx`, `div.approx`, …).
//! - `ftz`: flush-to-zero arithmetic (breaks parity on subnormals).
//! - `local`: instructions touching local memory (`ld.local`/`st.local`: spills or stack arrays),
//!   plus the declared local depot in bytes.

/// One function of a PTX module and its counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionCensus {
    /// The PTX name.
    pub name: String,
    /// `true` for a kernel (`.entry`), `false` for a device function (`.func`).
    pub is_entry: bool,
    /// Instructions in the body.
    pub instructions: usize,
    /// `fma.*` instructions.
    pub fma: usize,
    /// Instructions with an `.approx` modifier.
    pub approx: usize,
    /// Instructions with an `.ftz` modifier.
    pub ftz: usize,
    /// The distinct mnemonics of those (`rsqrt.approx.ftz.f32`, …), sorted: what a rule that
    /// allows one flushing instruction checks. Counted from PTX only: empty in rows read back
    /// by [`read_census`] (the census file holds counts).
    pub ftz_mnemonics: Vec<String>,
    /// Instructions that access the `.local` state space.
    pub local: usize,
    /// Bytes of `__local_depot` declared.
    pub local_depot_bytes: usize,
}

/// Splits a module into functions and counts their instructions.
pub fn functions(ptx: &str) -> Vec<FunctionCensus> {
    let mut out = Vec::new();
    let mut current: Option<FunctionCensus> = None;
    let mut in_body = false;
    for line in ptx.lines() {
        let t = line.trim();
        if current.is_none() {
            if let Some((is_entry, name)) = function_header(t)
                && !t.ends_with(';')
            {
                current = Some(FunctionCensus { name, is_entry, ..Default::default() });
                in_body = false;
            }
            continue;
        }
        let f = current.as_mut().expect("checked above");
        if !in_body {
            if t == "{" {
                in_body = true;
            } else if t.ends_with(';') {
                // a multi-line declaration (prototype) without body: `)` closing the
                // parameters, or a trailing attribute such as `.noreturn;` (without this, the
                // next function's body was counted under the prototype's name)
                current = None;
            }
            continue;
        }
        if line.starts_with('}') {
            out.push(current.take().expect("checked above"));
            continue;
        }
        if t.starts_with(".local") && t.contains("__local_depot") {
            f.local_depot_bytes += depot_bytes(t);
            continue;
        }
        if t.is_empty() || t.starts_with("//") || t.starts_with('.') || t.starts_with('$') || t == "{" || t == "}" {
            continue;
        }
        // skip a guard predicate (`@%p1 bra ...`)
        let op =
            if t.starts_with('@') { t.split_once(char::is_whitespace).map_or("", |(_, r)| r.trim_start()) } else { t };
        let mnemonic = op.split_whitespace().next().unwrap_or("");
        f.instructions += 1;
        if mnemonic.starts_with("fma.") {
            f.fma += 1;
        }
        if mnemonic.contains(".approx") {
            f.approx += 1;
        }
        if mnemonic.contains(".ftz") {
            f.ftz += 1;
            if let Err(at) = f.ftz_mnemonics.binary_search_by(|m| m.as_str().cmp(mnemonic)) {
                f.ftz_mnemonics.insert(at, mnemonic.to_string());
            }
        }
        if mnemonic.contains(".local") {
            f.local += 1;
        }
    }
    out
}

/// `(is_entry, name)` when `line` opens a function (`.visible .entry k(`,
/// `.func (.param .b64 r) f(`, `.extern .func … f(…);`).
fn function_header(line: &str) -> Option<(bool, String)> {
    let mut rest = line;
    for keyword in [".visible", ".weak", ".extern"] {
        rest = rest.strip_prefix(keyword).unwrap_or(rest).trim_start();
    }
    let (is_entry, rest) =
        if let Some(r) = rest.strip_prefix(".entry") { (true, r) } else { (false, rest.strip_prefix(".func")?) };
    let mut rest = rest.trim_start();
    if rest.starts_with('(') {
        // the return-value list of a `.func`
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest.chars().take_while(|c| !c.is_whitespace() && *c != '(' && *c != ';').collect();
    (!name.is_empty()).then_some((is_entry, name))
}

fn depot_bytes(decl: &str) -> usize {
    decl.split('[').nth(1).and_then(|s| s.split(']').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The census as a table, kernels first, with the registers and spills ptxas reported for each
/// architecture in `ptxas` (`(sm, report)` pairs; empty when ptxas was not run).
pub fn table(funcs: &[FunctionCensus], ptxas: &[(&str, Vec<crate::ptxas::PtxasFunction>)]) -> String {
    let mut rows: Vec<&FunctionCensus> = funcs.iter().collect();
    rows.sort_by_key(|f| (!f.is_entry, f.name.clone()));
    let mut s = format!(
        "{:<28} {:>5} {:>6} {:>4} {:>6} {:>4} {:>6} {:>6}",
        "function", "kind", "instrs", "fma", "approx", "ftz", "local", "depotB"
    );
    for (sm, _) in ptxas {
        s += &format!(" | {:>11} {:>11}", format!("{sm} regs"), "spill st/ld");
    }
    s.push('\n');
    for f in rows {
        let name = if f.name.len() <= 28 { f.name.clone() } else { format!("{}…", &f.name[..27]) };
        s += &format!(
            "{:<28} {:>5} {:>6} {:>4} {:>6} {:>4} {:>6} {:>6}",
            name,
            if f.is_entry { "entry" } else { "func" },
            f.instructions,
            f.fma,
            f.approx,
            f.ftz,
            f.local,
            f.local_depot_bytes
        );
        for (_, report) in ptxas {
            match report.iter().find(|p| p.name == f.name) {
                Some(p) => {
                    let regs = p.registers.map_or("-".to_string(), |r| r.to_string());
                    s += &format!(" | {:>11} {:>11}", regs, format!("{}/{}", p.spill_stores, p.spill_loads));
                }
                None => s += &format!(" | {:>11} {:>11}", "-", "-"),
            }
        }
        s.push('\n');
    }
    s
}

/// The committed census (`census.txt` beside the shipped images): one line per kernel, sorted by
/// name, whitespace-separated so a build script can read its first two columns — the kernel and
/// the images that hold it (`all`, or the one architecture of an architecture-specific kernel)
/// — and aligned so a reviewer reads a kernel change as a one-line diff. `rows` are the kernels
/// with their image column; `reports` ptxas's report per architecture (`sm_80`, `sm_90`).
pub fn kernel_lines(
    rows: &[(FunctionCensus, String)],
    reports: &[(String, Vec<crate::ptxas::PtxasFunction>)],
) -> String {
    let mut rows: Vec<&(FunctionCensus, String)> = rows.iter().filter(|(f, _)| f.is_entry).collect();
    rows.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let width = rows.iter().map(|(f, _)| f.name.len()).max().unwrap_or(6).max(7);
    let mut s = format!(
        "# {:<w$} {:>5} {:>6} {:>4} {:>6} {:>4} {:>5} {:>6}",
        "kernel",
        "in",
        "instrs",
        "fma",
        "approx",
        "ftz",
        "local",
        "depotB",
        w = width - 2
    );
    for (sm, _) in reports {
        s += &format!(" | {:>10} {:>6} {:>9}", format!("{sm} regs"), "stackB", "spill s/l");
    }
    s.push('\n');
    for (f, images) in rows {
        s += &format!(
            "{:<width$} {:>5} {:>6} {:>4} {:>6} {:>4} {:>5} {:>6}",
            f.name, images, f.instructions, f.fma, f.approx, f.ftz, f.local, f.local_depot_bytes
        );
        for (_, report) in reports {
            match report.iter().find(|p| p.name == f.name) {
                Some(p) => {
                    let regs = p.registers.map_or("-".to_string(), |r| r.to_string());
                    s += &format!(
                        " | {:>10} {:>6} {:>9}",
                        regs,
                        p.stack_bytes,
                        format!("{}/{}", p.spill_stores, p.spill_loads)
                    );
                }
                None => s += &format!(" | {:>10} {:>6} {:>9}", "-", "-", "-"),
            }
        }
        s.push('\n');
    }
    s
}

/// Reads the first two columns of [`kernel_lines`]' rows back: `(kernel, images)` for every
/// line that is not a comment.
pub fn read_kernel_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

/// Reads [`kernel_lines`]' rows back with their counts: `(census, images)` per kernel, the
/// census's `is_entry` set (every row is a kernel). An error names a row whose counted columns
/// do not parse, so a reader never skips a kernel.
pub fn read_census(text: &str) -> Result<Vec<(FunctionCensus, String)>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n =
                |i: usize| w.get(i).and_then(|c| c.parse::<usize>().ok()).ok_or_else(|| format!("bad census row: {l}"));
            let f = FunctionCensus {
                name: w[0].to_string(),
                is_entry: true,
                instructions: n(2)?,
                fma: n(3)?,
                approx: n(4)?,
                ftz: n(5)?,
                local: n(6)?,
                local_depot_bytes: n(7)?,
                ftz_mnemonics: Vec::new(),
            };
            Ok((f, w.get(1).ok_or_else(|| format!("bad census row: {l}"))?.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.func (.param .b64 func_retval0) helper(
	.param .b64 helper_param_0
)
{
	.local .align 8 .b8 	__local_depot0[16];
	.reg .b64 	%rd<3>;
	ld.param.b64 	%rd1, [helper_param_0];
	st.local.b64 	[%rd2], %rd1;
	sin.approx.ftz.f32 	%r1, %r2;
	ret;

}
.visible .entry axpy(
	.param .u32 axpy_param_0
)
{
	.reg .b32 	%r<9>;
	ld.param.b32 	%r2, [axpy_param_0];
	@%p1 bra 	$L__BB0_2;
	mul.rn.f32 	%r5, %r3, %r4;
	fma.rn.f32 	%r6, %r3, %r4, %r5;
$L__BB0_2:
	ret;

}
"#;

    #[test]
    fn counts_per_function() {
        let f = functions(MODULE);
        assert_eq!(f.len(), 2);
        let helper = &f[0];
        assert_eq!((helper.name.as_str(), helper.is_entry), ("helper", false));
        assert_eq!((helper.local, helper.approx, helper.ftz, helper.fma, helper.local_depot_bytes), (1, 1, 1, 0, 16));
        assert_eq!(helper.ftz_mnemonics, ["sin.approx.ftz.f32"]);
        let axpy = &f[1];
        assert_eq!((axpy.name.as_str(), axpy.is_entry), ("axpy", true));
        assert_eq!((axpy.fma, axpy.approx, axpy.local, axpy.instructions), (1, 0, 0, 5));
    }

    #[test]
    fn a_noreturn_prototype_does_not_swallow_the_next_kernel() {
        let ptx = ".extern .func panic\n()\n.noreturn;\n.global .align 4 .b8 t[1] = {0};\n\n\
                   .visible .entry first(\n\t.param .u32 n\n)\n{\n\tret;\n\n}\n";
        let f = functions(ptx);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].name.as_str(), f[0].is_entry, f[0].instructions), ("first", true, 1));
    }

    #[test]
    fn kernel_lines_read_back() {
        let f = functions(MODULE);
        let rows: Vec<(FunctionCensus, String)> = f.into_iter().map(|f| (f, "all".to_string())).collect();
        let report = crate::ptxas::PtxasFunction { name: "axpy".into(), registers: Some(12), ..Default::default() };
        let text = kernel_lines(&rows, &[("sm_90".into(), vec![report])]);
        assert_eq!(read_kernel_lines(&text), vec![("axpy".to_string(), "all".to_string())], "{text}");
        let axpy = rows.iter().find(|(f, _)| f.is_entry).unwrap().clone();
        assert_eq!(read_census(&text), Ok(vec![axpy]), "{text}");
        assert!(read_census("axpy all 3 x 0 0 0 0\n").is_err());
        let line = text.lines().nth(1).unwrap();
        assert!(line.contains(" 12 ") && line.contains("0/0"), "{text}");
    }

    #[test]
    fn table_lists_kernels_first() {
        let t = table(&functions(MODULE), &[]);
        let axpy = t.find("axpy").unwrap();
        let helper = t.find("helper").unwrap();
        assert!(axpy < helper, "{t}");
        let report = crate::ptxas::PtxasFunction { name: "axpy".into(), registers: Some(12), ..Default::default() };
        let t = table(&functions(MODULE), &[("sm_90", vec![report])]);
        assert!(t.contains("sm_90 regs") && t.lines().any(|l| l.starts_with("axpy") && l.contains(" 12 ")), "{t}");
    }
}
