//! Project automation: `cargo xtask <command>`.
//!
//! On a fresh machine use `cargo +stable xtask ...`: the pinned nightly may not
//! be installed yet, and `setup` (run first by every command) installs it.
//! Every child cargo runs as `cargo +<pinned channel>`.

mod artifact;
mod bundle;
mod consumer;
mod ptx;
mod setup;
mod testrun;
mod util;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use crate::util::Repo;

#[derive(Parser, Debug)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about = "gpuprim project tasks", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Install the pinned toolchain and ptxas (for the kernels' artifact
    /// build). Every other command runs it first.
    Setup,
    /// Build the kernels (sm_70 PTX), split them into modules, assemble those
    /// for sm_80 and sm_90 and write the committed files host/kernels/*.zst,
    /// host/kernels/MANIFEST.txt and tests/kernels/testing.ptx.zst.
    Artifact(artifact::ArtifactArgs),
    /// Build the kernels' PTX, assemble it with ptxas and report registers,
    /// stack, spills and shared memory per entry; fail on errors or spills.
    Ptx(ptx::PtxArgs),
    /// Run every test (nextest) and the doc tests, then summarise which
    /// backends ran. Arguments after `--` go to nextest (e.g. a filter).
    Test {
        /// Run all tests even after a failure (implied by CI=true).
        #[arg(long)]
        no_fail_fast: bool,
        #[arg(last = true)]
        extra: Vec<String>,
    },
    /// Run the benchmarks (`cargo bench -p gpuprim --bench bench`), writing
    /// JSON/SVG to target/bench.
    Bench {
        /// Which benchmark group.
        #[arg(value_enum, default_value_t = BenchWhich::All)]
        which: BenchWhich,
        /// Fewer sizes and repetitions.
        #[arg(long)]
        quick: bool,
        /// More arguments for the bench binary.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    /// Run the demo example (`cargo run --release -p gpuprim --example demo`).
    Demo {
        /// Arguments for the demo.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    /// Build target/gpu-bundle/: test archive, bench, demo and consumer
    /// binaries, cargo-nextest and run.sh, for a GPU machine without Rust.
    GpuBundle {
        /// Keep debug info in the bundled binaries (by default it is
        /// stripped: it is most of their size).
        #[arg(long)]
        keep_debug: bool,
    },
    /// Build examples/consumer (gpuprim as a dependency, outside the
    /// workspace) with the MSRV and no CUDA in the environment, and run its
    /// checks.
    Consumer,
    /// `cargo package` gpuprim-kernels and gpuprim (verified), and check
    /// their contents and that each .crate stays under 10 MB.
    Package,
    /// What .ci/run runs: fmt --check, clippy -D warnings, the cust feature,
    /// artifact --check, ptx, test, consumer, package.
    Ci,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum BenchWhich {
    Reduce,
    Scan,
    All,
}

impl BenchWhich {
    fn as_arg(self) -> &'static str {
        match self {
            BenchWhich::Reduce => "reduce",
            BenchWhich::Scan => "scan",
            BenchWhich::All => "all",
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cmd: Cmd) -> Result<()> {
    let repo = Repo::locate()?;
    let setup = setup::run(&repo)?;
    match cmd {
        Cmd::Setup => Ok(()),
        Cmd::Artifact(args) => artifact::run(&repo, &setup, &args),
        Cmd::Ptx(args) => ptx::run(&repo, &setup, &args),
        Cmd::Test { no_fail_fast, extra } => {
            testrun::run(&repo, &testrun::TestOptions { extra, no_fail_fast: no_fail_fast || repo.ci })
        }
        Cmd::Bench { which, quick, extra } => {
            let out = repo.target().join("bench");
            let mut cmd = repo.cargo();
            cmd.args(["bench", "-p", "gpuprim", "--bench", "bench", "--"]).arg(which.as_arg());
            if quick {
                cmd.arg("--quick");
            }
            // Absolute: cargo runs benches in the package directory (host/).
            cmd.args(&extra).arg("--out").arg(&out);
            util::run(&mut cmd)?;
            println!("bench: results in {}", repo.rel(&out));
            Ok(())
        }
        Cmd::Demo { extra } => {
            let mut cmd = repo.cargo();
            cmd.args(["run", "--release", "-p", "gpuprim", "--example", "demo"]);
            if !extra.is_empty() {
                cmd.arg("--").args(&extra);
            }
            util::run(&mut cmd)
        }
        Cmd::GpuBundle { keep_debug } => bundle::run(&repo, keep_debug),
        Cmd::Consumer => consumer::run(&repo),
        Cmd::Package => consumer::package(&repo),
        Cmd::Ci => ci(&repo, &setup),
    }
}

fn ci(repo: &Repo, setup: &setup::Setup) -> Result<()> {
    type Step<'a> = (&'a str, Box<dyn Fn() -> Result<()> + 'a>);
    let steps: Vec<Step> = vec![
        ("fmt", Box::new(|| util::run(repo.cargo().args(["fmt", "--all", "--check"])))),
        (
            "clippy",
            Box::new(|| {
                util::run(repo.cargo().args([
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--release",
                    "--",
                    "-D",
                    "warnings",
                ]))
            }),
        ),
        (
            "cust",
            // The `cust` feature (conversions from cust's buffers) compiles.
            // DOCS_RS makes cust_raw's build script skip its search for a
            // CUDA installation, which only linking needs.
            Box::new(|| {
                util::run(
                    repo.cargo()
                        .args(["check", "--release", "-p", "gpuprim", "--features", "cust"])
                        .env("DOCS_RS", "1"),
                )
            }),
        ),
        ("artifact", Box::new(|| artifact::run(repo, setup, &artifact::ArtifactArgs { check: true, only: None }))),
        ("ptx", Box::new(|| ptx::run(repo, setup, &ptx::PtxArgs { arch: "sm_90".into(), quiet: false }))),
        ("test", Box::new(|| testrun::run(repo, &testrun::TestOptions { extra: Vec::new(), no_fail_fast: true }))),
        ("consumer", Box::new(|| consumer::run(repo))),
        ("package", Box::new(|| consumer::package(repo))),
    ];
    let total = Instant::now();
    let mut results = Vec::new();
    let n = steps.len();
    for (i, (name, step)) in steps.iter().enumerate() {
        println!("\n==> ci [{}/{n}] {name}", i + 1);
        let start = Instant::now();
        let result = step();
        let took = util::secs(start.elapsed());
        match &result {
            Ok(()) => println!("<== ci {name}: ok ({took})"),
            Err(e) => println!("<== ci {name}: FAILED ({took}): {e:#}"),
        }
        results.push((name, result.is_ok(), took));
    }
    println!("\nci summary ({}):", util::secs(total.elapsed()));
    for (name, ok, took) in &results {
        println!("  {:<8} {:<6} {took}", name, if *ok { "ok" } else { "FAILED" });
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.1).map(|r| *r.0).collect();
    if !failed.is_empty() {
        bail!("ci failed: {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod cli_tests {
    use super::*;

    fn parse(args: &[&str]) -> Cmd {
        let argv = std::iter::once("xtask").chain(args.iter().copied());
        match Cli::try_parse_from(argv) {
            Ok(cli) => cli.cmd,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn test_passes_arguments_after_double_dash() {
        let Cmd::Test { extra, no_fail_fast } = parse(&["test", "--", "reduce", "--no-capture"]) else {
            panic!("not test")
        };
        assert_eq!(extra, ["reduce", "--no-capture"]);
        assert!(!no_fail_fast);
    }

    #[test]
    fn bench_takes_a_group_flags_and_extra_arguments() {
        let Cmd::Bench { which, quick, extra } = parse(&["bench", "scan", "--quick", "--sizes", "1,2"]) else {
            panic!("not bench")
        };
        assert_eq!(which.as_arg(), "scan");
        assert!(quick);
        assert_eq!(extra, ["--sizes", "1,2"]);
        let Cmd::Bench { which, quick, extra } = parse(&["bench", "--quick"]) else { panic!("not bench") };
        assert_eq!((which.as_arg(), quick, extra.len()), ("all", true, 0));
    }

    #[test]
    fn ptx_defaults_to_sm_90() {
        let Cmd::Ptx(args) = parse(&["ptx", "--quiet"]) else { panic!("not ptx") };
        assert_eq!(args.arch, "sm_90");
        assert!(args.quiet);
    }
}
