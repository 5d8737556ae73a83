//! `cargo xtask test`: every test of the workspace (nextest) plus gpuprim's
//! doc tests, then a per-backend summary of what ran and what was skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use anyhow::{Context, Result, bail};

use crate::util::{self, Repo};

/// Where the tests log `ran <backend> <test>` / `skip <backend> <test> <reason>`.
pub const TEST_LOG: &str = "target/test-log/backends.log";

pub struct TestOptions {
    /// Extra arguments for nextest (a filter, `--no-capture`, ...).
    pub extra: Vec<String>,
    /// Run every test even after failures.
    pub no_fail_fast: bool,
}

pub fn run(repo: &Repo, opts: &TestOptions) -> Result<()> {
    let log = repo.root.join(TEST_LOG);
    let log_dir = log.parent().context("test log path has no parent")?;
    fs::create_dir_all(log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    fs::write(&log, "").with_context(|| format!("truncating {}", log.display()))?;

    let nextest = util::which("cargo-nextest").is_some();
    let mut cmd = repo.cargo();
    if nextest {
        cmd.args(["nextest", "run", "--workspace", "--release"]);
    } else {
        println!("test: cargo-nextest not found; falling back to `cargo test`");
        cmd.args(["test", "--workspace", "--release"]);
    }
    if opts.no_fail_fast {
        cmd.arg("--no-fail-fast");
    }
    cmd.args(&opts.extra);
    cmd.env("GPUPRIM_TEST_LOG", &log);
    let tests_ok = util::status(&mut cmd)?.success();

    // `cargo test --workspace` already ran the doc tests; nextest cannot.
    let doc_ok = if !nextest {
        true
    } else if !opts.extra.is_empty() {
        println!("test: doc tests skipped (extra arguments given: {:?})", opts.extra);
        true
    } else {
        let mut doc = repo.cargo();
        doc.args(["test", "--doc", "-p", "gpuprim", "--release"]);
        doc.env("GPUPRIM_TEST_LOG", &log);
        util::status(&mut doc)?.success()
    };

    let text = fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
    print!("{}", summarize(&text, &repo.rel(&log)));

    match (tests_ok, doc_ok) {
        (true, true) => Ok(()),
        (false, true) => bail!("tests failed"),
        (true, false) => bail!("doc tests failed"),
        (false, false) => bail!("tests and doc tests failed"),
    }
}

#[derive(Default)]
struct Backend {
    ran: BTreeSet<String>,
    skipped: BTreeMap<String, String>,
}

/// The per-backend summary of a backends.log (same format as run.sh prints).
pub fn summarize(log: &str, log_name: &str) -> String {
    let mut backends: BTreeMap<String, Backend> = BTreeMap::new();
    let mut malformed = 0usize;
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(backend), Some(test)) = (words.next(), words.next(), words.next()) else {
            malformed += 1;
            continue;
        };
        let b = backends.entry(backend.to_string()).or_default();
        match kind {
            "ran" => {
                b.ran.insert(test.to_string());
            }
            "skip" => {
                let reason = words.collect::<Vec<_>>().join(" ");
                let reason = if reason.is_empty() { "no reason given".into() } else { reason };
                b.skipped.entry(test.to_string()).or_insert(reason);
            }
            _ => malformed += 1,
        }
    }
    let mut out = format!("backends (from {log_name}):\n");
    if backends.is_empty() {
        out.push_str("  no backend lines logged (did the tests write to GPUPRIM_TEST_LOG?)\n");
    }
    let mut names: Vec<&String> = backends.keys().collect();
    // emu first, cuda second, anything else after.
    names.sort_by_key(|n| (n.as_str() != "emu", n.as_str() != "cuda", n.to_string()));
    for name in names {
        let b = &backends[name];
        // A test that ran on a backend is not also counted as skipped there.
        let skipped: Vec<&String> = b.skipped.iter().filter(|(t, _)| !b.ran.contains(*t)).map(|(_, r)| r).collect();
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &skipped {
            *reasons.entry(r.as_str()).or_default() += 1;
        }
        out.push_str(&format!("  {name}: {} ran, {} skipped", b.ran.len(), skipped.len()));
        match reasons.len() {
            0 => {}
            1 => out.push_str(&format!(" ({})", skipped[0])),
            _ => {
                let parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n}x {r}")).collect();
                out.push_str(&format!(" ({})", parts.join("; ")));
            }
        }
        out.push('\n');
    }
    if malformed > 0 {
        out.push_str(&format!("  ({malformed} unrecognised lines in the log)\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizes_ran_and_skipped_per_backend() {
        let log = "ran emu reduce_a\nran emu reduce_b\nskip cuda reduce_a no CUDA driver: CUDA_ERROR_STUB_LIBRARY\nskip cuda reduce_b no CUDA driver: CUDA_ERROR_STUB_LIBRARY\nran emu reduce_a\n";
        let s = summarize(log, "log");
        assert_eq!(
            s,
            "backends (from log):\n  emu: 2 ran, 0 skipped\n  cuda: 0 ran, 2 skipped (no CUDA driver: CUDA_ERROR_STUB_LIBRARY)\n"
        );
    }

    #[test]
    fn lists_several_reasons_with_counts() {
        let log = "skip cuda a no driver\nskip cuda b no driver\nskip cuda c too large\nbogus\n";
        let s = summarize(log, "log");
        assert!(s.contains("cuda: 0 ran, 3 skipped (2x no driver; 1x too large)"), "{s}");
        assert!(s.contains("1 unrecognised"), "{s}");
    }
}

#[cfg(test)]
mod run_sh_agrees {
    use super::summarize;
    use std::process::Command;

    /// run.sh's awk summary (for the GPU machine) prints what `summarize` prints.
    #[test]
    fn awk_summary_in_run_sh_matches() {
        let script = include_str!("../templates/run.sh");
        let start = script.find("\nsummarize() {").expect("run.sh defines summarize");
        let end = script[start + 1..].find("\n}\n").expect("summarize ends") + start + 3;
        let func = &script[start + 1..end];
        let log = "ran emu a\nran emu b\nskip cuda a no CUDA driver: CUDA_ERROR_STUB_LIBRARY\n\
                   skip cuda b no CUDA driver: CUDA_ERROR_STUB_LIBRARY\nskip cuda c too large\n\
                   ran zeta q\nran emu a\nskip emu a dup\nbogus line\nran alpha x\n\n";
        let path = std::env::temp_dir().join(format!("xtask-summary-{}.log", std::process::id()));
        std::fs::write(&path, log).expect("write temp log");
        let out =
            Command::new("bash").arg("-c").arg(format!("{func}\nsummarize \"$1\"",)).arg("bash").arg(&path).output();
        let _ = std::fs::remove_file(&path);
        let Ok(out) = out else {
            eprintln!("bash not available; skipping");
            return;
        };
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let awk = String::from_utf8_lossy(&out.stdout);
        assert_eq!(awk, summarize(log, &path.to_string_lossy()));
    }
}
