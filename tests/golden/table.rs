//! The golden tables' file format and rules, shared by the library's table
//! (`tests/golden.rs`, `tests/golden/golden.txt`) and the CLI's
//! (`crates/cli/tests/golden_cli.rs`, `crates/cli/tests/golden/cli.txt`).
//!
//! A table is text: `#` comment lines, then one line per canonical run,
//!
//! ```text
//! <name> <stream> <sha256> <description …>
//! ```
//!
//! separated by spaces: the run's name (no spaces), the stream version its bits were defined in
//! (`lockstep::STREAM_VERSION` when the row was written or last changed), the SHA-256 of its
//! output bytes (64 lowercase hex digits), and the rest of the line describing the run.
//!
//! **Checking** ([`check`]) fails, naming the row, when a run's hash differs from its row, when a
//! run has no row, when a row has no run, or when a row claims a stream version newer than this
//! build's. **Blessing** (`LOCKSTEP_BLESS=1`, [`bless`]) rewrites the table from the runs: rows
//! whose hash is unchanged keep their stream version, new rows take the current one, and a
//! changed hash is accepted only when the row's stream version is older than the current one
//! (the change was announced by bumping `lockstep::STREAM_VERSION`); otherwise blessing refuses
//! and says so.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// One line of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The run's name.
    pub name: String,
    /// The stream version its bits were defined in.
    pub stream: u32,
    /// SHA-256 of its output bytes, lowercase hex.
    pub sha256: String,
    /// What the run is (parameters).
    pub about: String,
}

/// A run as computed now: its name, the hash of its output and its description.
#[derive(Clone, Debug)]
pub struct Computed {
    /// The run's name.
    pub name: String,
    /// SHA-256 of its output bytes, lowercase hex.
    pub sha256: String,
    /// What the run is (parameters).
    pub about: String,
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the table should be rewritten (`LOCKSTEP_BLESS=1`).
pub fn bless_requested() -> bool {
    std::env::var("LOCKSTEP_BLESS").is_ok_and(|v| v == "1")
}

/// The rows of `text`; an error names the malformed line.
pub fn parse(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, stream, sha, about @ ..] = &words[..] else {
            return Err(format!("line {}: want `<name> <stream> <sha256> <description>`: {line}", i + 1));
        };
        let (name, stream, sha) = (*name, *stream, *sha);
        let stream: u32 = stream.parse().map_err(|_| format!("line {}: stream version `{stream}`", i + 1))?;
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(format!("line {}: `{sha}` is not a lowercase SHA-256", i + 1));
        }
        if !seen.insert(name.to_string()) {
            return Err(format!("line {}: row `{name}` appears twice", i + 1));
        }
        rows.push(Row { name: name.into(), stream, sha256: sha.into(), about: about.join(" ") });
    }
    Ok(rows)
}

/// The table's text: `header` (each line prefixed with `# `), then the rows, columns aligned.
pub fn format(header: &str, rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out: String =
        header.lines().map(|l| if l.is_empty() { "#\n".into() } else { format!("# {l}\n") }).collect();
    for r in rows {
        out.push_str(&format!("{:<width$} {} {} {}\n", r.name, r.stream, r.sha256, r.about));
    }
    out
}

/// Every way `computed` (of this build, stream version `stream`) departs from `table`, one
/// message per row; empty when they agree.
pub fn check(table: &[Row], computed: &[Computed], stream: u32) -> Vec<String> {
    let rows: BTreeMap<&str, &Row> = table.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut failures = Vec::new();
    for c in computed {
        match rows.get(c.name.as_str()) {
            None => failures.push(format!("run `{}` has no row in the table ({})", c.name, c.about)),
            Some(r) if r.sha256 != c.sha256 => failures.push(format!(
                "row `{}` (stream {}): SHA-256 {} in the table, {} now — its output bits changed ({})",
                c.name, r.stream, r.sha256, c.sha256, c.about
            )),
            Some(_) => {}
        }
    }
    let names: BTreeSet<&str> = computed.iter().map(|c| c.name.as_str()).collect();
    for r in table {
        if !names.contains(r.name.as_str()) {
            failures.push(format!("row `{}` has no run (a run was removed or renamed)", r.name));
        }
        if r.stream > stream {
            failures.push(format!("row `{}` claims stream {}, newer than this build's {stream}", r.name, r.stream));
        }
    }
    failures
}

/// The rewritten rows (in the order of `computed`) and a line per change, or the rows whose
/// bits changed without a new stream version.
pub fn bless(table: &[Row], computed: &[Computed], stream: u32) -> Result<(Vec<Row>, Vec<String>), String> {
    let rows: BTreeMap<&str, &Row> = table.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut out = Vec::new();
    let mut changes = Vec::new();
    let mut refused = Vec::new();
    for c in computed {
        let row_stream = match rows.get(c.name.as_str()) {
            None => {
                changes.push(format!("new row `{}` (stream {stream})", c.name));
                stream
            }
            Some(r) if r.sha256 == c.sha256 => r.stream,
            Some(r) if r.stream < stream => {
                changes.push(format!("row `{}`: bits changed, stream {} -> {stream}", c.name, r.stream));
                stream
            }
            Some(r) => {
                refused.push(format!("`{}` (stream {})", c.name, r.stream));
                r.stream
            }
        };
        out.push(Row { name: c.name.clone(), stream: row_stream, sha256: c.sha256.clone(), about: c.about.clone() });
    }
    let names: BTreeSet<&str> = computed.iter().map(|c| c.name.as_str()).collect();
    for r in table.iter().filter(|r| !names.contains(r.name.as_str())) {
        changes.push(format!("removed row `{}`", r.name));
    }
    if !refused.is_empty() {
        return Err(format!(
            "the output bits of {} changed, but lockstep::STREAM_VERSION is still {stream}: a deliberate change of \
             canonical bits bumps STREAM_VERSION (crates/host/src/stream.rs) and adds a CHANGELOG.md entry \
             before blessing (README, \"Stable outputs\"); otherwise it is a regression",
            refused.join(", ")
        ));
    }
    Ok((out, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, sha: char) -> Computed {
        Computed { name: name.into(), sha256: sha.to_string().repeat(64), about: "x".into() }
    }

    #[test]
    fn table_rules() {
        let table = parse(&format("h", &bless(&[], &[c("a", '1'), c("b", '2')], 1).unwrap().0)).unwrap();
        assert_eq!(table.len(), 2);
        assert!(check(&table, &[c("a", '1'), c("b", '2')], 1).is_empty());
        let f = check(&table, &[c("a", '3'), c("z", '2')], 1);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].contains("`a`") && f[1].contains("`z`") && f[2].contains("`b`"));
        assert!(bless(&table, &[c("a", '3')], 1).is_err(), "changed bits refused without a new stream");
        let (rows, changes) = bless(&table, &[c("a", '3'), c("b", '2')], 2).unwrap();
        assert_eq!((rows[0].stream, rows[1].stream), (2, 1));
        assert_eq!(changes.len(), 1);
        assert!(
            parse("a 1 xyz d").is_err()
                && parse(&format!("a 1 {} d\na 1 {} d", "0".repeat(64), "0".repeat(64))).is_err()
        );
    }
}
