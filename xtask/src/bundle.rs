//! `cargo xtask gpu-bundle`: everything needed to run the tests, the
//! sanitizers and the benchmarks on a machine with an NVIDIA GPU and no Rust
//! toolchain, in `target/gpu-bundle/`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::util::{self, Repo};

const RUN_SH: &str = include_str!("../templates/run.sh");
/// The bundle travels to the GPU machine; keep it small.
const MAX_BYTES: u64 = 60 * 1000 * 1000;
/// The folder of staged programs, and the stem of their archive.
const PROGRAMS: &str = "programs";

pub fn run(repo: &Repo, keep_debug: bool) -> Result<()> {
    let dir = repo.target().join("gpu-bundle");
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing old {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    // The shipped artifact carries sm_80 and sm_90 machine code: no special
    // build for the GPU machine.
    let cargo = || repo.cargo();

    // (a) test archive (xtask's own tests stay home: they need cargo)
    let nextest = util::which("cargo-nextest")
        .context("cargo-nextest is not installed (needed to archive the tests and to run them on the GPU machine)")?;
    let archive = dir.join("tests.tar.zst");
    util::run(
        cargo()
            .args(["nextest", "archive", "--workspace", "--exclude", "xtask", "--release", "--archive-file"])
            .arg(&archive),
    )
    .context("archiving the tests")?;
    repack_archive(repo, &archive, !keep_debug)?;

    // (b) the bench binary
    let bench_json = util::stdout_of(
        cargo()
            .args(["bench", "-p", "gpuprim", "--bench", "bench", "--no-run"])
            .arg("--message-format=json-render-diagnostics")
            .stdout(Stdio::piped()),
    )
    .context("building the bench binary")?;
    let bench = artifact_executable(&bench_json, "bench", "bench")
        .context("no executable for bench target `bench` in cargo's JSON output")?;
    add_program(&dir, "bench", &bench, keep_debug)?;

    // (c) examples: demo (required), sanitize (if the package has one)
    let examples_json = util::stdout_of(
        cargo()
            .args(["build", "--release", "-p", "gpuprim", "--examples"])
            .arg("--message-format=json-render-diagnostics")
            .stdout(Stdio::piped()),
    )
    .context("building gpuprim's examples")?;
    let demo = artifact_executable(&examples_json, "example", "demo")
        .context("gpuprim has no `demo` example (host/examples/demo.rs)")?;
    add_program(&dir, "demo", &demo, keep_debug)?;
    // What a program pays before its first result, and gpuprim beside the
    // caller's own kernel on one stream.
    for name in ["startup", "own_kernel"] {
        let exe = artifact_executable(&examples_json, "example", name)
            .with_context(|| format!("gpuprim has no `{name}` example (host/examples/{name}.rs)"))?;
        add_program(&dir, name, &exe, keep_debug)?;
    }
    match artifact_executable(&examples_json, "example", "sanitize") {
        Some(sanitize) => add_program(&dir, "sanitize", &sanitize, keep_debug)?,
        None => {
            println!("gpu-bundle: no `sanitize` example; run.sh sanitize will use ./demo --small")
        }
    }

    // (c2) the examples outside the workspace (gpuprim as a dependency, and
    // user operators from a kernels crate of their own), built as `cargo
    // xtask consumer` builds them: MSRV toolchain, no CUDA around.
    for (example, exe) in crate::consumer::build(repo).context("building the examples outside the workspace")? {
        add_program(&dir, example.program, &exe, keep_debug)?;
    }

    // (d) cargo-nextest itself, in the same archive (23 MB -> 8 MB).
    add_program(&dir, "cargo-nextest", &nextest, true)?;
    pack_programs(&dir)?;

    // (e) run.sh
    let commit = git_describe(repo);
    let script = RUN_SH.replace("@BUILT@", &format!("commit {commit}, toolchain {}", repo.channel));
    let run_sh = dir.join("run.sh");
    fs::write(&run_sh, script).with_context(|| format!("writing {}", run_sh.display()))?;
    fs::set_permissions(&run_sh, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod +x {}", run_sh.display()))?;

    // Size.
    let mut du = Command::new("du");
    du.arg("-sh").arg(&dir);
    if let Ok(out) = util::capture(&mut du) {
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
    let mut files = Vec::new();
    let total = dir_size(&dir, &mut files)?;
    files.sort();
    for (path, size) in &files {
        println!("  {:>8.1} MB  {}", *size as f64 / 1e6, repo.rel(path));
    }
    if total > MAX_BYTES {
        bail!("bundle is {:.1} MB, over the {} MB limit", total as f64 / 1e6, MAX_BYTES / 1_000_000);
    }
    println!(
        "gpu-bundle: {} ({:.1} MB). On the GPU machine, from the repository root:\n  ./target/gpu-bundle/run.sh [tests|consumer|sanitize|bench|all] [OUTDIR]",
        repo.rel(&dir),
        total as f64 / 1e6
    );
    Ok(())
}

/// The `executable` of the compiler-artifact message whose target has kind
/// `kind` and name `name`.
fn artifact_executable(messages: &str, kind: &str, name: &str) -> Option<PathBuf> {
    let kind_pat = format!("\"kind\":[\"{kind}\"]");
    messages
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter(|l| {
            // The target object comes first; its name is the first "name".
            let target = l.split("\"target\":{").nth(1).unwrap_or("");
            target.contains(&kind_pat) && util::json_str(target, "name").as_deref() == Some(name)
        })
        .filter_map(|l| util::json_str(l, "executable"))
        .map(PathBuf::from)
        .next_back()
}

/// `strip --strip-debug`: the release profile keeps debug info (debug = 1),
/// which is most of each binary's size. Symbols stay, so backtraces still
/// name functions.
fn strip_debug(path: &Path) -> Result<()> {
    let mut cmd = Command::new("strip");
    cmd.arg("--strip-debug").arg(path);
    let out = util::capture(&mut cmd).context("running strip (binutils)")?;
    if !out.status.success() {
        bail!("`{}` failed: {}", util::display(&cmd), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Re-packs the nextest archive (same entries, same order): with debug info
/// stripped from its binaries when `strip`, and with zstd's long window,
/// which stores the kernels' PTX (embedded in every test binary) about once.
/// nextest reads such archives. Skipped, with a note, where GNU tar, zstd or
/// strip is missing here.
fn repack_archive(repo: &Repo, archive: &Path, strip: bool) -> Result<()> {
    let tools = ["tar", "zstd", "strip"];
    if let Some(missing) = tools.iter().find(|t| util::which(t).is_none()) {
        println!("gpu-bundle: `{missing}` not found; the test archive stays as nextest wrote it");
        return Ok(());
    }
    let before = fs::metadata(archive).with_context(|| format!("stat {}", archive.display()))?.len();
    let work = repo.target().join("gpu-bundle-repack");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    let tree = work.join("tree");
    fs::create_dir_all(&tree).with_context(|| format!("creating {}", tree.display()))?;
    let list = util::stdout_of(Command::new("tar").arg("--zstd").arg("-tf").arg(archive).stdout(Stdio::piped()))?;
    util::run(Command::new("tar").arg("--zstd").arg("-xf").arg(archive).arg("-C").arg(&tree))?;
    let entries: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    let mut stripped = 0;
    if strip {
        for entry in &entries {
            let path = tree.join(entry);
            // Test binaries (and bundled .so files): ELF files outside
            // nextest's metadata directory.
            // Not build-script outputs: the embedded kernels' cubin is a CUDA
            // ELF that binutils cannot read.
            if !entry.starts_with("target/nextest/") && !entry.contains("/build/") && is_elf(&path) {
                strip_debug(&path)?;
                stripped += 1;
            }
        }
    }
    let list_file = work.join("entries");
    fs::write(&list_file, entries.join("\n") + "\n").with_context(|| format!("writing {}", list_file.display()))?;
    let tar = work.join("tests.tar");
    util::run(
        Command::new("tar").arg("-cf").arg(&tar).arg("-C").arg(&tree).arg("--no-recursion").arg("-T").arg(&list_file),
    )?;
    let zst = work.join("tests.tar.zst");
    util::run(Command::new("zstd").args(["-q", "-19", "--long=27", "-T0", "-o"]).arg(&zst).arg(&tar))?;
    fs::rename(&zst, archive).with_context(|| format!("replacing {}", archive.display()))?;
    fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    let after = fs::metadata(archive).with_context(|| format!("stat {}", archive.display()))?.len();
    println!(
        "gpu-bundle: test archive re-packed ({stripped} binaries stripped of debug info): {:.1} MB -> {:.1} MB",
        before as f64 / 1e6,
        after as f64 / 1e6
    );
    Ok(())
}

/// Stages a program for the bundle's `programs.tar.xz` (stripped of debug
/// info unless `keep_debug`).
fn add_program(dir: &Path, name: &str, from: &Path, keep_debug: bool) -> Result<()> {
    let staged = dir.join(PROGRAMS);
    fs::create_dir_all(&staged).with_context(|| format!("creating {}", staged.display()))?;
    let raw = staged.join(name);
    copy_exe(from, &raw)?;
    if !keep_debug {
        strip_debug(&raw)?;
    }
    Ok(())
}

/// Packs the staged programs into `programs.tar.xz`. Every gpuprim program
/// embeds the kernels (4 MB, already zstd-compressed, so gzip of each
/// program kept all six copies: 66 MB of bundle). One tar under xz with a
/// dictionary larger than a program stores them once. run.sh unpacks it
/// with `tar -xJf` (xz-utils is in every Debian/Ubuntu base image), or
/// with python3's tarfile.
fn pack_programs(dir: &Path) -> Result<()> {
    let staged = dir.join(PROGRAMS);
    let mut names: Vec<String> = fs::read_dir(&staged)
        .with_context(|| format!("listing {}", staged.display()))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    let tar = dir.join(format!("{PROGRAMS}.tar"));
    util::run(Command::new("tar").arg("-cf").arg(&tar).arg("-C").arg(&staged).args(&names))
        .context("tar of the programs")?;
    util::run(Command::new("xz").args(["-q", "-T0", "-9"]).arg(&tar)).context("compressing the programs with xz")?;
    fs::remove_dir_all(&staged).with_context(|| format!("removing {}", staged.display()))?;
    Ok(())
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

fn copy_exe(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(0o755)).with_context(|| format!("chmod +x {}", to.display()))?;
    println!("gpu-bundle: {} <- {}", to.display(), from.display());
    Ok(())
}

fn git_describe(repo: &Repo) -> String {
    let mut git = Command::new("git");
    git.current_dir(&repo.root).args(["describe", "--always", "--dirty", "--abbrev=12"]);
    match util::capture(&mut git) {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => "unknown".to_string(),
    }
}

fn dir_size(dir: &Path, files: &mut Vec<(PathBuf, u64)>) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let meta = entry.metadata().with_context(|| format!("stat {}", entry.path().display()))?;
        if meta.is_dir() {
            total += dir_size(&entry.path(), files)?;
        } else {
            total += meta.len();
            files.push((entry.path(), meta.len()));
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_executable_of_the_named_target() {
        let json = concat!(
            r#"{"reason":"compiler-artifact","package_id":"x","manifest_path":"/r/host/Cargo.toml","target":{"kind":["custom-build"],"crate_types":["bin"],"name":"build-script-build","src_path":"/r/host/build.rs"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","package_id":"x","manifest_path":"/r/host/Cargo.toml","target":{"kind":["bench"],"crate_types":["bin"],"name":"bench","src_path":"/r/host/benches/bench.rs"},"executable":"/r/target/release/deps/bench-0123"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(
            artifact_executable(json, "bench", "bench"),
            Some(PathBuf::from("/r/target/release/deps/bench-0123"))
        );
        assert_eq!(artifact_executable(json, "example", "demo"), None);
    }
}
