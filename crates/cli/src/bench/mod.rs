//! Benchmark programs, one module per kernel family. Each prints CUDA-event medians after
//! warm-up, the GPU's name and the bound it is measured against, and can append its result
//! to a file under `bench/results/` (`--record`).

mod bridge;
mod himeno;
mod histogram;
mod mg;
mod nbody;
mod smoke;

use clap::Subcommand;

/// `lockstep bench <which>`.
#[derive(Subcommand)]
pub enum Which {
    /// saxpy f32 (read x, read y, write y) against a device-to-device copy, same run.
    Smoke(smoke::Args),
    /// N-body throughput and the seed's grid, and the integer matrix product (issue #5).
    Nbody(nbody::Args),
    /// Brownian bridge: the paper's problem, every variant, against copy and memset bandwidth.
    Bridge(bridge::Args),
    /// Histograms of 10^7 uniform f64 by every atomic method, k = 1 … 10^7 (issue #4).
    Histogram(histogram::Args),
    /// The Himeno benchmark (Jacobi, f32) with gosa by plain, aggregated and tree reductions.
    Himeno(himeno::Args),
    /// Minority Game agent-steps per second (standalone, distributed, scale) vs the paper.
    Mg(mg::Args),
}

pub fn run(which: Which) -> anyhow::Result<()> {
    match which {
        Which::Smoke(args) => smoke::run(args),
        Which::Nbody(args) => nbody::run(args),
        Which::Bridge(args) => bridge::run(args),
        Which::Histogram(args) => histogram::run(args),
        Which::Himeno(args) => himeno::run(args),
        Which::Mg(args) => mg::run(args),
    }
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let days =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0)
            as i64;
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Appends a row to the Markdown table in `path`: the date (UTC) and `gpu`'s name, the columns
/// every bench opens with, then `row` under `header`. The row joins the table the file ends
/// with when that table has these columns; otherwise (a new file, prose last, a table of other
/// columns — an older bench's) a new table starts, header first.
pub fn record_row(path: &std::path::Path, gpu: &lockstep::Gpu, header: &[&str], row: &[String]) -> anyhow::Result<()> {
    use std::io::Write;
    let header: Vec<&str> = ["date (UTC)", "GPU"].iter().chain(header).copied().collect();
    let row: Vec<String> = [today(), gpu.name().to_string()].into_iter().chain(row.iter().cloned()).collect();
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("--record {}: {e}", path.display()),
    };
    let head = format!("| {} |", header.join(" | "));
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    if trailing_table_header(&existing) != Some(head.as_str()) {
        if !existing.is_empty() {
            // End the last line, then a blank line: a table must start a block.
            if !existing.ends_with('\n') {
                writeln!(file)?;
            }
            writeln!(file)?;
        }
        writeln!(file, "{head}")?;
        writeln!(file, "|{}", "---|".repeat(header.len()))?;
    }
    writeln!(file, "| {} |", row.join(" | "))?;
    Ok(())
}

/// The header line of the Markdown table `text` ends with (its last line a table row), if any.
fn trailing_table_header(text: &str) -> Option<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let rows = lines.iter().rev().take_while(|l| l.starts_with('|')).count();
    let table = &lines[lines.len() - rows..];
    (table.len() >= 2 && table[1].starts_with("|-")).then(|| table[0])
}

#[cfg(test)]
mod tests {
    use super::trailing_table_header;

    #[test]
    fn a_row_joins_only_the_table_the_file_ends_with() {
        let t = "prose\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(trailing_table_header(t), Some("| a | b |"));
        assert_eq!(trailing_table_header("| a | b |\n|---|---|\n"), Some("| a | b |"));
        assert_eq!(trailing_table_header(""), None);
        assert_eq!(trailing_table_header("| a | b |\n|---|---|\n| 1 | 2 |\n\nprose after\n"), None);
        assert_eq!(trailing_table_header("| a | b |\n|---|---|\n| 1 | 2 |\n\n"), None);
        assert_eq!(trailing_table_header("| not a table |\n"), None);
    }
}
