//! gpuprim as its users get it.
//!
//! `cargo xtask consumer`: builds the crates of [`EXAMPLES`] (crates
//! outside the workspace that depend on gpuprim by path) with the MSRV
//! toolchain named by `rust-version` in the workspace's Cargo.toml, in an
//! environment with nothing of CUDA in it, and runs them: each checks its
//! results against CPU references on whatever backend `Context::new()`
//! picks. `examples/consumer` checks sums, scans, views and threads;
//! `examples/user-ops`, `examples/welford`, `examples/count-above` and
//! `examples/fibonacci` each
//! have a kernels crate of their own (their build scripts compile it with
//! gpuprim-builder, which needs the pinned nightly: the one thing not on
//! the MSRV) and check its operators, types and maps.
//!
//! `cargo xtask package`: `cargo package` of the published crates
//! (gpuprim-kernels and gpuprim, verified: each built from its .crate the
//! way crates.io users get it, again without CUDA), then checks what went
//! into the .crate files and that each stays under crates.io's size limit.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::util::{self, Repo};

/// An example crate outside the workspace: its folder relative to the
/// repository root, its binary's name (its package name), and the name
/// of its program in the GPU bundle.
pub struct Example {
    pub dir: &'static str,
    pub bin: &'static str,
    pub program: &'static str,
}

/// The crates `cargo xtask consumer` builds and runs.
pub const EXAMPLES: [Example; 5] = [
    Example { dir: "examples/consumer", bin: "gpuprim-consumer", program: "consumer" },
    Example { dir: "examples/user-ops", bin: "gpuprim-user-ops", program: "user-ops" },
    Example { dir: "examples/welford", bin: "gpuprim-welford", program: "welford" },
    Example { dir: "examples/count-above", bin: "gpuprim-count-above", program: "count-above" },
    Example { dir: "examples/fibonacci", bin: "gpuprim-fibonacci", program: "fibonacci" },
];
/// Their target directory (shared: they build the same gpuprim), apart
/// from the workspace's so that the two builds do not fight.
const CONSUMER_TARGET: &str = "target/consumer";
/// `cargo package`'s target directory (its .crate files land in `package/`).
const PACKAGE_TARGET: &str = "target/package-check";
/// The crates users depend on, in dependency order.
const PUBLISHED: [&str; 2] = ["gpuprim-kernels", "gpuprim"];
/// crates.io refuses uploads over 10 MB; stay under 10^7 bytes.
const MAX_CRATE_BYTES: u64 = 10 * 1000 * 1000;
/// Files the gpuprim crate cannot work without (it embeds the kernels).
const GPUPRIM_MUST_HAVE: [&str; 4] = ["kernels/ptx.zst", "kernels/sm_80.zst", "kernels/sm_90.zst", "README.md"];
/// Every published crate carries both licenses.
const LICENSES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];

/// `cargo xtask consumer`: build each example with the MSRV, then run it.
pub fn run(repo: &Repo) -> Result<()> {
    for (example, exe) in build(repo)? {
        // Run as built, in the caller's environment (less what a parent
        // cargo leaks): where a driver is present, the example should find it.
        let mut cmd = Command::new(&exe);
        repo.clean(&mut cmd);
        cmd.env_remove("RUSTUP_TOOLCHAIN");
        util::run(&mut cmd)
            .with_context(|| format!("{}'s checks failed (its output above says which)", example.dir))?;
    }
    Ok(())
}

/// Builds the examples in release mode with the MSRV toolchain and a
/// CUDA-free environment (also checks their formatting); returns their
/// binaries.
pub fn build(repo: &Repo) -> Result<Vec<(&'static Example, PathBuf)>> {
    let toolchain = msrv_toolchain(repo)?;
    let target = repo.root.join(CONSUMER_TARGET);
    let mut built = Vec::new();
    for example in &EXAMPLES {
        let dir = example.dir;
        let manifest = repo.root.join(dir).join("Cargo.toml");
        // Formatting: the workspace's `cargo fmt --all` does not reach it.
        util::run(repo.cargo().args(["fmt", "--all", "--check", "--manifest-path"]).arg(&manifest))
            .with_context(|| format!("{dir} is not formatted (`cargo fmt --all --manifest-path {dir}/Cargo.toml`)"))?;
        let mut cmd = cargo_with(repo, &toolchain);
        // --locked: its Cargo.lock is committed; a stale one fails here
        // rather than being rewritten behind everyone's back.
        cmd.args(["build", "--release", "--locked", "--manifest-path"]).arg(&manifest).arg("--target-dir").arg(&target);
        // One nvptx build of core and gpuprim-kernels for every example's
        // kernels crate.
        cmd.env("GPUPRIM_BUILDER_TARGET_DIR", target.join("gpuprim-builder"));
        util::run(&mut cmd).with_context(|| {
            format!(
                "building {dir} with Rust {toolchain} (the MSRV) failed; if gpuprim's dependencies changed, \
                 refresh its lock file: cargo +{toolchain} update --manifest-path {dir}/Cargo.toml --workspace"
            )
        })?;
        let exe = target.join("release").join(example.bin);
        if !util::is_executable(&exe) {
            bail!("{dir} built, but {} is not there", exe.display());
        }
        built.push((example, exe));
    }
    Ok(built)
}

/// `cargo xtask package`: package and verify the published crates, then
/// check their contents and sizes.
pub fn package(repo: &Repo) -> Result<()> {
    let target = repo.root.join(PACKAGE_TARGET);
    let version = workspace_package_key(repo, "version")?;
    forget_stale_extractions(&version)?;
    // Cargo fingerprints registry crates by name and version only, so a
    // verification build left here from other sources would be reused as is.
    if target.exists() {
        fs::remove_dir_all(&target).with_context(|| format!("removing {}", target.display()))?;
    }
    let mut cmd = repo.cargo();
    clean_env(repo, &mut cmd);
    // --allow-dirty: this checks what would be packaged, committed or not.
    // No debug info in the verification builds: half their time, unused.
    cmd.args(["package", "--allow-dirty", "--config", "profile.dev.debug=false", "--target-dir"]).arg(&target);
    for p in PUBLISHED {
        cmd.args(["-p", p]);
    }
    util::run(&mut cmd).context("cargo package failed")?;

    let mut problems = Vec::new();
    for name in PUBLISHED {
        let file = target.join("package").join(format!("{name}-{version}.crate"));
        let size = fs::metadata(&file).with_context(|| format!("stat {}", file.display()))?.len();
        let entries = crate_entries(&file)?;
        println!("package: {} {:.2} MB ({size} bytes, {} files)", repo.rel(&file), size as f64 / 1e6, entries.len());
        if size > MAX_CRATE_BYTES {
            problems.push(format!("{name}: {size} bytes, over crates.io's 10 MB"));
        }
        let prefix = format!("{name}-{version}/");
        let has = |path: &str| entries.iter().any(|e| e.strip_prefix(&prefix) == Some(path));
        let mut must: Vec<&str> = LICENSES.to_vec();
        if name == "gpuprim" {
            must.extend(GPUPRIM_MUST_HAVE);
        }
        for path in must {
            if !has(path) {
                problems.push(format!("{name}: {path} is not in the package"));
            }
        }
        // The deliberately faulty kernels are for the tests only.
        for e in entries.iter().filter(|e| e.contains("testing.ptx") || e.contains("tests/kernels")) {
            problems.push(format!("{name}: {e} must not be shipped"));
        }
    }
    if !problems.is_empty() {
        bail!("packages: {}", problems.join("; "));
    }
    Ok(())
}

/// Verifying `gpuprim` builds it against the just-packaged `gpuprim-kernels`,
/// which cargo serves from a temporary local registry under the target
/// directory and unpacks into `$CARGO_HOME/registry/src/-<hash of that
/// path>/`. Cargo never unpacks a crate whose directory is already there, so
/// where the target path and the version repeat (a CI machine that keeps
/// `$CARGO_HOME` between runs of the same checkout path) the verification
/// compiles an old run's sources. Local registries are the `-<hash>`
/// directories (crates.io's start with `index.`); our crates are removed from
/// them so every check unpacks what it just packaged.
fn forget_stale_extractions(version: &str) -> Result<()> {
    let Some(home) = util::cargo_home() else { return Ok(()) };
    let src = home.join("registry").join("src");
    let Ok(registries) = fs::read_dir(&src) else { return Ok(()) };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for name in PUBLISHED {
            let dir = registry.path().join(format!("{name}-{version}"));
            if dir.exists() {
                fs::remove_dir_all(&dir).with_context(|| format!("removing the stale {}", dir.display()))?;
            }
        }
    }
    Ok(())
}

/// The file names inside a .crate (a gzipped tar).
fn crate_entries(file: &Path) -> Result<Vec<String>> {
    let list = util::stdout_of(Command::new("tar").arg("-tzf").arg(file).stdout(Stdio::piped()))
        .with_context(|| format!("listing {}", file.display()))?;
    Ok(list.lines().map(str::to_string).collect())
}

/// The MSRV as a rustup toolchain name (`rust-version = "1.95"` is
/// `1.95.0`), installed if missing.
fn msrv_toolchain(repo: &Repo) -> Result<String> {
    let msrv = workspace_package_key(repo, "rust-version")?;
    let toolchain = match msrv.split('.').count() {
        2 => format!("{msrv}.0"),
        _ => msrv,
    };
    let mut probe = Command::new("rustup");
    clean_env(repo, &mut probe);
    probe.args(["run", &toolchain, "rustc", "--version"]);
    let installed = util::capture(&mut probe).is_ok_and(|o| o.status.success());
    if installed {
        println!("consumer: MSRV toolchain {toolchain} present");
    } else {
        println!("consumer: installing the MSRV toolchain {toolchain}");
        let mut cmd = Command::new("rustup");
        clean_env(repo, &mut cmd);
        cmd.args(["toolchain", "install", &toolchain, "--profile", "minimal"]);
        util::run(&mut cmd)?;
    }
    Ok(toolchain)
}

/// A value of the `[workspace.package]` table of the root Cargo.toml.
fn workspace_package_key(repo: &Repo, key: &str) -> Result<String> {
    let path = repo.root.join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    table_key(&text, "workspace.package", key)
        .with_context(|| format!("no `{key} = \"...\"` in [workspace.package] of {}", path.display()))
}

/// `key = "value"` in `[table]` of a TOML text (plain strings only).
fn table_key(text: &str, table: &str, key: &str) -> Option<String> {
    let header = format!("[{table}]");
    let mut inside = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            inside = line == header;
        } else if inside
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == key
        {
            return v.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_string);
        }
    }
    None
}

/// `cargo +<toolchain>` through the rustup proxy, outside the pinned
/// toolchain's reach, with a CUDA-free environment.
fn cargo_with(repo: &Repo, toolchain: &str) -> Command {
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let proxy = home.map(|h| h.join("bin").join("cargo")).filter(|p| p.is_file());
    let mut cmd = Command::new(proxy.map_or_else(|| OsString::from("cargo"), PathBuf::into_os_string));
    cmd.arg(format!("+{toolchain}"));
    clean_env(repo, &mut cmd);
    if repo.ci {
        cmd.env("CARGO_TERM_COLOR", "never");
        cmd.env("CARGO_TERM_PROGRESS_WHEN", "never");
    }
    cmd
}

/// What a user's machine without CUDA looks like: no CUDA variables, no
/// LD_LIBRARY_PATH or LIBRARY_PATH, no CUDA directory on PATH, and none of
/// the toolchain variables a parent cargo leaks (RUSTUP_TOOLCHAIN ...).
fn clean_env(repo: &Repo, cmd: &mut Command) {
    repo.clean(cmd);
    cmd.env_remove("RUSTUP_TOOLCHAIN");
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd.env_remove("LIBRARY_PATH");
    for (key, _) in env::vars_os() {
        if is_cuda_var(&key.to_string_lossy()) {
            cmd.env_remove(&key);
        }
    }
    if let Some(path) = env::var_os("PATH") {
        let kept: Vec<PathBuf> = env::split_paths(&path).filter(|p| !is_cuda_dir(p)).collect();
        if let Ok(joined) = env::join_paths(kept) {
            cmd.env("PATH", joined);
        }
    }
}

fn is_cuda_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["CUDA", "NVCC", "NVIDIA", "PTXAS", "CUBIN"].iter().any(|w| upper.contains(w))
}

fn is_cuda_dir(dir: &Path) -> bool {
    let lower = dir.to_string_lossy().to_ascii_lowercase();
    lower.contains("cuda") || lower.contains("nvidia")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_of_one_table_only() {
        let text = "[workspace]\nversion = \"9\"\n\n[workspace.package]\nversion = \"0.1.0\" # ours\nrust-version = \"1.95\"\n[other]\nrust-version = \"2\"\n";
        assert_eq!(table_key(text, "workspace.package", "version").as_deref(), Some("0.1.0"));
        assert_eq!(table_key(text, "workspace.package", "rust-version").as_deref(), Some("1.95"));
        assert_eq!(table_key(text, "workspace.package", "edition"), None);
    }

    #[test]
    fn knows_what_is_cuda() {
        assert!(is_cuda_var("CUDA_PATH") && is_cuda_var("CUDA_LIBRARY_PATH") && is_cuda_var("GPUPRIM_CUBIN_ARCH"));
        assert!(is_cuda_var("NVIDIA_VISIBLE_DEVICES") && !is_cuda_var("PATH") && !is_cuda_var("CARGO_HOME"));
        assert!(is_cuda_dir(Path::new("/usr/local/cuda-13.0/bin")) && !is_cuda_dir(Path::new("/root/.cargo/bin")));
    }
}
