//! `lockstep`: run every kernel (demo), benchmarks, and device information.
//!
//! ```text
//! lockstep demo                     every kernel on the GPU (or the CPU references), checked
//! lockstep bench smoke [--record F] saxpy f32 at 2^28 elements vs a device-to-device copy
//! lockstep bench histogram [...]    10^7 f64 into k = 1..10^7 bins by every atomic method (--plot)
//! lockstep bench himeno [...]       Himeno Jacobi (f32), gosa by plain/aggregated atomics or a tree
//! lockstep mg [--model M] [--plot F] Minority Game, winner ratio per step (paper Fig. 1)
//! lockstep info                     the GPU, its memory and the embedded PTX
//! lockstep nbody [--n N --steps S …] N-body RK4 with a progress bar, --out traj.npy, --plot energy.png
//! lockstep bridge [--paths N …]     Brownian bridge paths to .npy / PNG (see --help)
//! ```

mod bench;
mod bridge;
mod bridge_chunks;
mod common;
mod demo;
mod limits;
mod mg;
mod nbody;
mod npy;
mod output;
mod plot;
mod ranks;
mod resume;
mod run;
mod sidecar;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "lockstep", version, about = "Bit-exact GPU kernels in Rust, with CPU twins")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Run only if this lockstep produces stream version N (the `stream_version` of a file's
    /// .json sidecar): within one stream version a run's bits never change; otherwise refused.
    #[arg(long, global = true, value_name = "N")]
    stream_version: Option<u32>,
}

#[derive(Subcommand)]
enum Command {
    /// Run every kernel on the GPU if one is present (else the CPU references) and check parity.
    Demo {
        /// Elements per foundation kernel (the other families run fixed small cases; ≥ 1).
        #[arg(long, default_value = "1048576", value_parser = common::count)]
        n: usize,
    },
    /// Benchmarks (programs, not tests): CUDA-event medians after warm-up, next to a bound.
    Bench {
        #[command(subcommand)]
        which: bench::Which,
    },
    /// The Minority Game in any model; winner ratio per step averaged over trials (--plot PNG).
    Mg(mg::Args),
    /// The GPU, its memory and the embedded PTX module.
    Info,
    /// N-body with RK4 (GPU exact/fast, global/shared, f32/f64; or the CPU twin).
    Nbody(nbody::Args),
    /// Brownian bridge paths or increments (GPU, or CPU), to .npy and a PNG plot.
    Bridge(bridge::Args),
    /// Start a run of several ranks (processes) on this host, one per GPU or on the CPU, and
    /// wait for them: `lockstep run --gpus 4 mg …`; one rank failing stops the others.
    Run(run::Args),
    /// Joins the run a launcher describes and checks a few collectives (for testing `run`).
    #[command(hide = true)]
    Probe(run::ProbeArgs),
}

/// Parses the command line and runs it. Every error is one line on stderr (`error: …`, the
/// causes joined with `: `) and exit status 1 (2 for a command line clap refuses).
fn main() -> std::process::ExitCode {
    if std::env::args_os().len() <= 1 {
        // A bare `lockstep`: the list of subcommands (clap's help), and exit 2 (no work done).
        let _ = <Cli as clap::CommandFactory>::command().print_help();
        println!();
        return std::process::ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.render().to_string();
            // One line: the message, the accepted values and clap's tip, without the usage.
            let parts: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let first = if parts.is_empty() { "error: invalid command line".to_string() } else { parts.join(" ") };
            let tip = match e.kind() {
                clap::error::ErrorKind::InvalidSubcommand
                | clap::error::ErrorKind::MissingSubcommand
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => " (see lockstep --help)",
                _ => " (see --help)",
            };
            eprintln!("{first}{tip}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(v) = cli.stream_version {
        lockstep::check_stream(v)?;
    }
    match cli.command {
        Command::Demo { n } => demo::run(n),
        Command::Bench { which } => bench::run(which),
        Command::Mg(args) => mg::run(args),
        Command::Info => info(),
        Command::Nbody(args) => nbody::run(args),
        Command::Bridge(args) => bridge::run(args),
        Command::Run(args) => run::run(args),
        Command::Probe(args) => run::probe(args),
    }
}

fn info() -> anyhow::Result<()> {
    use lockstep::ptx;
    let images: Vec<String> = ptx::IMAGES.iter().map(|i| i.describe()).collect();
    println!("embedded device code: {} (portable PTX built for {})", images.join(", "), ptx::ARCH);
    println!("{} kernels in every image:", ptx::KERNELS.len());
    for k in ptx::KERNELS {
        println!("  {k}");
    }
    for image in ptx::IMAGES.iter().filter(|i| !i.own_kernels().is_empty()) {
        println!("only in the {}: {}", image.describe(), image.own_kernels().join(", "));
    }
    let started = std::time::Instant::now();
    match lockstep::Gpu::new() {
        Ok(gpu) => {
            let (free, total) = gpu.memory_info()?;
            println!(
                "GPU 0: {} ({:.1} GiB free of {:.1} GiB)",
                gpu.name(),
                free as f64 / (1u64 << 30) as f64,
                total as f64 / (1u64 << 30) as f64
            );
            let loaded = gpu.loaded();
            println!(
                "loaded module: {} ({}={}; decode + load {:.1} ms, first Gpu::new {:.1} ms)",
                loaded.what,
                ptx::MODULE_VAR,
                std::env::var(ptx::MODULE_VAR).unwrap_or_else(|_| "auto".into()),
                loaded.load_time.as_secs_f64() * 1e3,
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        Err(e) => println!("no GPU: {e}"),
    }
    Ok(())
}
