//! Compile a `#![no_std]` Rust kernels crate to PTX from a build script.
//!
//! This is the build step gpuprim's own kernels go through (`cargo xtask
//! artifact`), for a crate of yours: rustc's `nvptx64-nvidia-cuda` backend
//! on the nightly toolchain gpuprim pins ([`PINNED_TOOLCHAIN`]), `core`
//! built from source (`-Zbuild-std=core`, which needs the `rust-src`
//! component), code for `sm_70` and up, panics as traps. Your own crate
//! and its build script stay on stable: only the kernels crate is built
//! with the nightly, in a separate `cargo` run.
//!
//! ```no_run
//! // In the build.rs of the crate that launches the kernels, whose
//! // kernels crate is in its `kernels/` folder:
//! let built = gpuprim_builder::Builder::new("kernels").build().unwrap_or_else(|e| panic!("{e}"));
//! // The PTX is `built.ptx`, in OUT_DIR: embed it with
//! // include_str!(concat!(env!("OUT_DIR"), "/<crate name>.ptx")).
//! println!("cargo:rustc-env=KERNELS_PTX={}", built.ptx.display());
//! ```
//!
//! The kernels crate is an `rlib` whose kernels are `#[unsafe(no_mangle)]
//! pub unsafe extern "ptx-kernel" fn`s (feature `abi_ptx`, on nvptx64
//! only, so that the same crate also builds for the host).
//!
//! **What it checks, with errors that say what to do:** the pinned nightly
//! and `rust-src` are installed ([`BuildError::MissingToolchain`] and
//! [`BuildError::MissingComponent`] carry the `rustup` command that
//! installs them); the build succeeded ([`BuildError::Compile`], with
//! cargo's output); the PTX calls no function it does not define
//! ([`BuildError::Unresolved`] names them: the driver would refuse the
//! module, usually over a panic path or a float function nvptx64 cannot
//! lower).
//!
//! **What it changes:** a kernel that calls
//! `gpuprim_kernels::gpu::max_registers::<N>()` (as gpuprim's argmin and
//! argmax segmented reductions do, and so your instances of them) gets
//! `.maxnreg N` on its entry, and one that calls
//! `gpuprim_kernels::gpu::min_blocks_per_sm::<B, N>()` (gpuprim's chunked
//! argmin and argmax of 4-byte elements, its by-key kernels that write
//! runs) `.maxntid B, 1, 1` and
//! `.minnctapersm N` ([`apply_register_caps`];
//! [`BuildError::MisplacedRegisterCap`] where the call ended up in a
//! function that is not a kernel). Nothing else in the PTX is touched.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nightly gpuprim's kernels are built and tested with (the channel of
/// its `rust-toolchain.toml`).
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-05-20";

/// The GPU architecture the PTX targets by default: Volta and later (the
/// driver compiles the PTX for the GPU it loads on).
pub const DEFAULT_ARCH: &str = "sm_70";

/// An environment variable naming a target directory for every build that
/// sets none ([`Builder::target_dir`]).
pub const TARGET_DIR_VAR: &str = "GPUPRIM_BUILDER_TARGET_DIR";

/// The rustc target of the build.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No `Cargo.toml` at the crate path.
    #[error("no kernels crate at {path}: there is no Cargo.toml there")]
    NoCrate { path: PathBuf },
    /// The crate's manifest has no `[package]` name.
    #[error("cannot read the package name of {manifest}")]
    NoPackageName { manifest: PathBuf },
    /// rustup could not be run.
    #[error("cannot run rustup ({source}); gpuprim-builder needs rustup to reach the {toolchain} toolchain")]
    NoRustup { toolchain: String, source: std::io::Error },
    /// The toolchain is not installed.
    #[error("the {toolchain} toolchain is not installed; install it with:\n    {install}")]
    MissingToolchain { toolchain: String, install: String },
    /// A component of the toolchain is missing.
    #[error("the {toolchain} toolchain lacks {component}; add it with:\n    {install}")]
    MissingComponent { toolchain: String, component: String, install: String },
    /// cargo could not be started.
    #[error("cannot run cargo for the kernels crate: {0}")]
    Spawn(std::io::Error),
    /// The build failed.
    #[error("compiling {krate} to PTX failed:\n{output}")]
    Compile { krate: String, output: String },
    /// The build wrote no PTX for the crate.
    #[error("the build of {krate} wrote no PTX ({krate_file}-*.s) in {dir}")]
    NoOutput { krate: String, krate_file: String, dir: PathBuf },
    /// The PTX references functions it does not define.
    #[error(
        "the PTX of {krate} calls functions it does not define, so the driver would refuse to load it: {functions:?}. \
         Usually a panic path (an index or arithmetic check) or a float function nvptx64 cannot lower."
    )]
    Unresolved { krate: String, functions: Vec<String> },
    /// A register cap (`gpuprim_kernels::gpu::max_registers`) sits in a
    /// function the compiler did not inline into a kernel, where it would
    /// cap nothing.
    #[error(
        "the PTX of {krate} caps the registers of {functions:?}, which are not kernels: call `max_registers` \
         from the kernel body or from functions marked #[inline(always)]"
    )]
    MisplacedRegisterCap { krate: String, functions: Vec<String> },
    /// Reading or writing a file failed.
    #[error("{what} {path}: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// What [`Builder::build`] produced.
#[derive(Debug, Clone)]
pub struct Built {
    /// The PTX file: `<out dir>/<crate name>.ptx`.
    pub ptx: PathBuf,
    /// The crate's name with `-` as `_` (the file's stem).
    pub name: String,
}

/// A build of one kernels crate to PTX.
#[derive(Debug, Clone)]
pub struct Builder {
    krate: PathBuf,
    toolchain: String,
    arch: String,
    features: Vec<String>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
}

impl Builder {
    /// A build of the crate at `path` (relative paths are taken from the
    /// calling package's directory in a build script, else from the
    /// current directory), with the pinned toolchain, for [`DEFAULT_ARCH`].
    pub fn new(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let krate = if path.is_relative() {
            env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| path.to_path_buf(), |d| PathBuf::from(d).join(path))
        } else {
            path.to_path_buf()
        };
        Builder {
            krate,
            toolchain: PINNED_TOOLCHAIN.to_string(),
            arch: DEFAULT_ARCH.to_string(),
            features: Vec::new(),
            out_dir: None,
            target_dir: None,
        }
    }

    /// Another toolchain than [`PINNED_TOOLCHAIN`] (a nightly with the
    /// `nvptx64-nvidia-cuda` backend and `rust-src`).
    pub fn toolchain(mut self, toolchain: impl Into<String>) -> Self {
        self.toolchain = toolchain.into();
        self
    }

    /// Another PTX architecture than [`DEFAULT_ARCH`] (`sm_80`, `sm_90`, ...).
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// Enable a cargo feature of the kernels crate.
    pub fn feature(mut self, feature: impl Into<String>) -> Self {
        self.features.push(feature.into());
        self
    }

    /// Where the PTX goes (default: `OUT_DIR`, as set for build scripts).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// cargo's target directory for the build (default: the environment
    /// variable `GPUPRIM_BUILDER_TARGET_DIR` where it is set, which lets
    /// several crates share the build of `core` and `gpuprim-kernels`, else
    /// `gpuprim-builder/` under the out dir); each toolchain, architecture
    /// and feature set builds in its own subdirectory.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Build the crate to PTX and check it; in a build script, also ask
    /// cargo to rerun it when the crate's sources change.
    pub fn build(self) -> Result<Built, BuildError> {
        let manifest = self.krate.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(BuildError::NoCrate { path: self.krate });
        }
        let text = read(&manifest, "reading")?;
        let package = package_name(&text).ok_or_else(|| BuildError::NoPackageName { manifest: manifest.clone() })?;
        let name = package.replace('-', "_");
        check_toolchain(&self.toolchain, "rust-src")?;
        let out_dir = match (&self.out_dir, env::var_os("OUT_DIR")) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => PathBuf::from(d),
            (None, None) => self.krate.join("target"),
        };
        // One directory per configuration: cargo keeps each one's output
        // apart only by its fingerprint, and the newest `.s` must be this
        // configuration's.
        let mut config = format!("{}-{}", self.toolchain, self.arch);
        for f in &self.features {
            config.push('+');
            config.push_str(f);
        }
        let shared = env::var_os(TARGET_DIR_VAR).filter(|d| !d.is_empty()).map(PathBuf::from);
        let target_dir =
            self.target_dir.clone().or(shared).unwrap_or_else(|| out_dir.join("gpuprim-builder")).join(config);
        let mut cmd = Command::new("rustup");
        clean_build_env(&mut cmd, &[&target_dir]);
        cmd.args(["run", &self.toolchain, "cargo", "rustc", "--manifest-path"])
            .arg(&manifest)
            .args(["--lib", "--release", "--target", TARGET, "-Zbuild-std=core"])
            .args(["--config", "profile.release.debug=false", "--target-dir"])
            .arg(&target_dir);
        if !self.features.is_empty() {
            cmd.args(["--features", &self.features.join(",")]);
        }
        cmd.args(["--", "--emit=asm"])
            .env("RUSTFLAGS", format!("-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu={}", self.arch));
        let output = cmd.output().map_err(BuildError::Spawn)?;
        if !output.status.success() {
            let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stdout));
            return Err(BuildError::Compile { krate: package, output: text });
        }
        let deps = target_dir.join(TARGET).join("release").join("deps");
        let ptx_in = newest_asm(&deps, &name).ok_or_else(|| BuildError::NoOutput {
            krate: package.clone(),
            krate_file: name.clone(),
            dir: deps.clone(),
        })?;
        let ptx = read(&ptx_in, "reading")?;
        let functions = unresolved_calls(&ptx);
        if !functions.is_empty() {
            return Err(BuildError::Unresolved { krate: package, functions });
        }
        let ptx = apply_register_caps(&ptx)
            .map_err(|functions| BuildError::MisplacedRegisterCap { krate: package.clone(), functions })?;
        fs::create_dir_all(&out_dir).map_err(|source| BuildError::Io {
            what: "creating",
            path: out_dir.clone(),
            source,
        })?;
        let dest = out_dir.join(format!("{name}.ptx"));
        fs::write(&dest, &ptx).map_err(|source| BuildError::Io { what: "writing", path: dest.clone(), source })?;
        if env::var_os("OUT_DIR").is_some() {
            println!("cargo:rerun-if-changed={}", manifest.display());
            println!("cargo:rerun-if-changed={}", self.krate.join("src").display());
            println!("cargo:rerun-if-env-changed={TARGET_DIR_VAR}");
        }
        Ok(Built { ptx: dest, name })
    }
}

fn read(path: &Path, what: &'static str) -> Result<String, BuildError> {
    fs::read_to_string(path).map_err(|source| BuildError::Io { what, path: path.to_path_buf(), source })
}

/// The `name` of the `[package]` table of a manifest.
pub fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            let Some((key, value)) = line.split_once('=') else { continue };
            if key.trim() == "name" {
                return Some(value.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty());
            }
        }
    }
    None
}

/// Fails unless `toolchain` is installed with `component`.
pub fn check_toolchain(toolchain: &str, component: &str) -> Result<(), BuildError> {
    let mut cmd = Command::new("rustup");
    clean_env(&mut cmd, &[]);
    cmd.args(["component", "list", "--installed", "--toolchain", toolchain]);
    let out = cmd.output().map_err(|source| BuildError::NoRustup { toolchain: toolchain.to_string(), source })?;
    if !out.status.success() {
        return Err(BuildError::MissingToolchain {
            toolchain: toolchain.to_string(),
            install: format!("rustup toolchain install {toolchain} --profile minimal --component {component}"),
        });
    }
    let listed = String::from_utf8_lossy(&out.stdout);
    if !listed.lines().any(|l| component_matches(l.trim(), component)) {
        return Err(BuildError::MissingComponent {
            toolchain: toolchain.to_string(),
            component: component.to_string(),
            install: format!("rustup component add {component} --toolchain {toolchain}"),
        });
    }
    Ok(())
}

/// Whether a line of `rustup component list --installed` is `wanted`:
/// rustup lists components with the host triple
/// (`clippy-x86_64-unknown-linux-gnu`), except target-independent ones
/// (`rust-src`).
pub fn component_matches(listed: &str, wanted: &str) -> bool {
    match listed.strip_prefix(wanted) {
        Some("") => true,
        // "-<arch>-<vendor>-<os>[-<env>]": at least three dashes.
        Some(rest) => rest.starts_with('-') && rest.matches('-').count() >= 3,
        None => false,
    }
}

/// Environment variables that a parent cargo or rustup (`cargo +stable
/// ...`, a build script's cargo) leaks into a process and that would make
/// a child cargo or rustc use the wrong toolchain, the wrong target
/// directory, or confuse it about which package it builds.
pub const LEAKED_VARS: &[&str] = &[
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_TOOLCHAIN_SOURCE",
    "RUST_RECURSION_COUNT",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTDOC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "OUT_DIR",
];

/// What else a nested build for another target must not inherit: the
/// parent's flags, wrappers, target and jobserver.
pub const BUILD_VARS: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "CARGO_PRIMARY_PACKAGE",
];

/// Remove from `cmd`'s environment what a parent leaks ([`LEAKED_VARS`],
/// `CARGO_PKG_*`) and the entries of `LD_LIBRARY_PATH` under a rustup
/// toolchain or under `drop_dirs` (cargo puts the parent toolchain's and
/// target's libraries there, and they would shadow the child's).
pub fn clean_env(cmd: &mut Command, drop_dirs: &[&Path]) {
    for var in LEAKED_VARS {
        cmd.env_remove(var);
    }
    for (key, _) in env::vars_os() {
        if key.to_string_lossy().starts_with("CARGO_PKG_") {
            cmd.env_remove(key);
        }
    }
    if let Some(paths) = env::var_os("LD_LIBRARY_PATH") {
        let toolchains = rustup_home().map(|h| h.join("toolchains"));
        let kept: Vec<PathBuf> = env::split_paths(&paths)
            .filter(|p| !p.as_os_str().is_empty())
            .filter(|p| !drop_dirs.iter().any(|d| p.starts_with(d)))
            .filter(|p| toolchains.as_ref().is_none_or(|t| !p.starts_with(t)))
            .collect();
        if kept.is_empty() {
            cmd.env_remove("LD_LIBRARY_PATH");
        } else if let Ok(joined) = env::join_paths(kept) {
            cmd.env("LD_LIBRARY_PATH", joined);
        }
    }
}

/// [`clean_env`], and [`BUILD_VARS`] and a build script's own variables
/// (`CARGO_FEATURE_*`, `CARGO_CFG_*`) removed: for a nested build for
/// another target.
pub fn clean_build_env(cmd: &mut Command, drop_dirs: &[&Path]) {
    clean_env(cmd, drop_dirs);
    for var in BUILD_VARS {
        cmd.env_remove(var);
    }
    for (key, _) in env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CARGO_FEATURE_") || k.starts_with("CARGO_CFG_") {
            cmd.env_remove(&key);
        }
    }
}

fn rustup_home() -> Option<PathBuf> {
    env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
}

/// The newest `<name>-*.s` in `dir` (one configuration builds there, so
/// normally the only one; after a toolchain change the newest is current).
fn newest_asm(dir: &Path, name: &str) -> Option<PathBuf> {
    let prefix: OsString = format!("{name}-").into();
    fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let f = e.file_name();
            let f = f.to_string_lossy();
            f.starts_with(&*prefix.to_string_lossy()) && f.ends_with(".s")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
}

/// What `gpuprim_kernels::gpu::max_registers::<N>()` leaves in a kernel's
/// PTX body (an inline-assembly comment), followed by `N`.
pub const REGISTER_CAP_MARKER: &str = "// gpuprim: .maxnreg ";

/// What `gpuprim_kernels::gpu::min_blocks_per_sm::<B, N>()` leaves in a
/// kernel's PTX body, followed by `B N`: at most `B` threads a block, at
/// least `N` blocks a multiprocessor.
pub const LAUNCH_BOUNDS_MARKER: &str = "// gpuprim: .minnctapersm ";

/// Turns the register caps and launch bounds that kernels left as comments
/// in their bodies ([`REGISTER_CAP_MARKER`], [`LAUNCH_BOUNDS_MARKER`])
/// into directives on those entries: `.maxnreg N` (the smallest `N` where
/// there are several), and `.maxntid B, 1, 1` (unless the entry has one)
/// with `.minnctapersm N` (the largest `N`), which ptxas and the driver's
/// JIT obey. Errs with the names of the functions (`.func`, not inlined
/// into a kernel) that hold a marker: there it would bound nothing.
pub fn apply_register_caps(ptx: &str) -> Result<String, Vec<String>> {
    let lines: Vec<&str> = ptx.lines().collect();
    // Per entry with a marker: the line of its body's opening brace, its
    // register cap and its launch bounds (threads, blocks).
    type Bounds = Option<(u32, u32)>;
    let mut caps: Vec<(usize, Option<u32>, Bounds)> = Vec::new();
    let mut misplaced = Vec::new();
    // The item being read: its name, whether it is an entry, the line of
    // its body's `{` once seen, and the brace depth inside it.
    let mut item: Option<(String, bool, Option<usize>)> = None;
    let mut depth = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let l = line.trim();
        if depth == 0 {
            let entry = l.strip_prefix(".visible .entry").or_else(|| l.strip_prefix(".entry"));
            let func = l.strip_prefix(".visible .func").or_else(|| l.strip_prefix(".func"));
            if let Some(rest) = entry {
                item = Some((func_name(rest), true, None));
            } else if let Some(rest) = func {
                item = Some((func_name(rest), false, None));
            }
        }
        if l.starts_with("//") {
            if let Some((name, is_entry, Some(open))) = &item {
                let cap = l.strip_prefix(REGISTER_CAP_MARKER).map(|n| n.trim().parse::<u32>().ok());
                let bounds = l.strip_prefix(LAUNCH_BOUNDS_MARKER).map(|t| {
                    let mut it = t.split_whitespace().map(|x| x.parse::<u32>().ok());
                    match (it.next().flatten(), it.next().flatten()) {
                        (Some(b), Some(n)) => Some((b, n)),
                        _ => None,
                    }
                });
                let bad = matches!(cap, Some(None)) || matches!(bounds, Some(None));
                if (cap.is_some() || bounds.is_some()) && (bad || !is_entry) {
                    if !misplaced.contains(name) {
                        misplaced.push(name.clone());
                    }
                } else if cap.is_some() || bounds.is_some() {
                    let k = match caps.iter().position(|(at, _, _)| at == open) {
                        Some(k) => k,
                        None => {
                            caps.push((*open, None, None));
                            caps.len() - 1
                        }
                    };
                    if let Some(Some(n)) = cap {
                        caps[k].1 = Some(caps[k].1.map_or(n, |c| c.min(n)));
                    }
                    if let Some(Some((b, n))) = bounds {
                        caps[k].2 = Some(caps[k].2.map_or((b, n), |(b0, n0)| (b0.min(b), n0.max(n))));
                    }
                }
            }
            continue;
        }
        for c in l.chars() {
            match c {
                '{' => {
                    if depth == 0
                        && let Some((_, _, open @ None)) = &mut item
                    {
                        *open = Some(i);
                    }
                    depth += 1;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        item = None;
                    }
                }
                _ => {}
            }
        }
    }
    if !misplaced.is_empty() {
        return Err(misplaced);
    }
    let mut out = String::with_capacity(ptx.len() + 40 * caps.len());
    for (i, line) in lines.iter().enumerate() {
        if let Some((_, cap, bounds)) = caps.iter().find(|(at, _, _)| *at == i) {
            if let Some(n) = cap {
                out.push_str(&format!(".maxnreg {n}\n"));
            }
            if let Some((b, n)) = bounds {
                // The directives between the entry's parameters and its
                // body: a `.maxntid` there already stays the only one.
                let head = lines[..i].iter().rev().take_while(|l| {
                    let l = l.trim_start();
                    !(l.starts_with(".visible .entry") || l.starts_with(".entry"))
                });
                if !head.into_iter().any(|l| l.trim_start().starts_with(".maxntid")) {
                    out.push_str(&format!(".maxntid {b}, 1, 1\n"));
                }
                out.push_str(&format!(".minnctapersm {n}\n"));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// The functions a PTX module declares `.extern` or calls without
/// defining: the driver refuses to load such a module.
pub fn unresolved_calls(ptx: &str) -> Vec<String> {
    let mut defined = Vec::new();
    let mut missing = Vec::new();
    let mut called = Vec::new();
    // A call may span lines (LLVM writes `call.uni (retval0),` and the
    // callee on the next): gather it up to its `;`.
    let mut call = String::new();
    for line in ptx.lines() {
        let l = line.trim();
        if !call.is_empty() || l.starts_with("call") {
            call.push_str(l);
            call.push(' ');
            if l.contains(';') {
                called.extend(callee(&call));
                call.clear();
            }
        } else if let Some(rest) = l.strip_prefix(".extern .func") {
            missing.push(func_name(rest));
        } else if let Some(rest) = l.strip_prefix(".visible .func").or_else(|| l.strip_prefix(".func")) {
            defined.push(func_name(rest));
        }
    }
    for c in called {
        if !defined.contains(&c) && !missing.contains(&c) {
            missing.push(c);
        }
    }
    missing
}

/// The callee of `call[.uni] [(ret),] name, (args);`.
fn callee(call: &str) -> Option<String> {
    let rest = call.split_once(char::is_whitespace)?.1.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(')')?.1.trim_start().strip_prefix(',')?.trim_start(),
        None => rest,
    };
    let name = rest.split([',', ';', '(', ' ', '\t']).next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The name in the text after `.func`: ` (.param .b32 ret) name(` or ` name(`.
fn func_name(rest: &str) -> String {
    let rest = rest.trim_start();
    let rest = if rest.starts_with('(') { rest.split_once(')').map_or("", |(_, r)| r) } else { rest };
    rest.trim_start().split(['(', ' ', ';', '\t']).next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPPED: &str = "\
.visible .entry k_b256(
\t.param .u64 k_param_0
)
{
\t.reg .b32 \t%r<3>;
\t// begin inline asm
\t// gpuprim: .maxnreg 40
\t// end inline asm
\t{ // callseq 0
\t}
\t// begin inline asm
\t// gpuprim: .maxnreg 48
\t// end inline asm
\tret;
}

\t// .globl\tplain_b256
.visible .entry plain_b256(
\t.param .u64 plain_param_0
)
.maxntid 256, 1, 1
{
\tret;
}
";

    #[test]
    fn register_caps_become_directives_on_their_entries_only() {
        let out = apply_register_caps(CAPPED).unwrap();
        // The smallest cap, once, right before the capped entry's body.
        assert!(out.contains(")\n.maxnreg 40\n{\n\t.reg .b32"), "{out}");
        assert_eq!(out.matches(".maxnreg").count(), 1 + 2, "{out}");
        assert!(out.contains(".maxntid 256, 1, 1\n{\n\tret;"), "{out}");
        // Nothing else changes.
        assert_eq!(out.replace(")\n.maxnreg 40\n{", ")\n{"), CAPPED);
        assert_eq!(apply_register_caps("no kernels\n").unwrap(), "no kernels\n");
    }

    #[test]
    fn launch_bounds_become_directives_on_their_entries_only() {
        let marked = CAPPED.replace("// gpuprim: .maxnreg 40", "// gpuprim: .minnctapersm 256 5");
        let out = apply_register_caps(&marked).unwrap();
        assert!(out.contains(")\n.maxnreg 48\n.maxntid 256, 1, 1\n.minnctapersm 5\n{"), "{out}");
        assert_eq!(out.matches(".minnctapersm").count(), 1 + 1, "{out}");
        // An entry with its own `.maxntid` keeps it as the only one.
        let own = "// gpuprim: .minnctapersm 128 4";
        let ptx = format!(".visible .entry k(\n)\n.maxntid 256, 1, 1\n{{\n\t{own}\n\tret;\n}}\n");
        let out = apply_register_caps(&ptx).unwrap();
        assert_eq!(out.matches(".maxntid").count(), 1, "{out}");
        assert!(out.contains(".maxntid 256, 1, 1\n.minnctapersm 4\n{"), "{out}");
        // An entry without `.visible` after one with `.maxntid` gets its own.
        let two = format!("{ptx}.entry j(\n)\n{{\n\t{own}\n\tret;\n}}\n");
        let out = apply_register_caps(&two).unwrap();
        assert!(out.contains(".entry j(\n)\n.maxntid 128, 1, 1\n.minnctapersm 4\n{"), "{out}");
        // Outside a kernel, or unreadable: refused.
        let bad = ".visible .entry k(\n)\n{\n\t// gpuprim: .minnctapersm 256\n\tret;\n}\n";
        assert_eq!(apply_register_caps(bad), Err(vec!["k".to_string()]));
    }

    #[test]
    fn a_register_cap_outside_a_kernel_is_refused() {
        let ptx = ".func (.param .b32 r) helper(\n\t.param .b32 a\n)\n{\n\t// gpuprim: .maxnreg 32\n\tret;\n}\n";
        assert_eq!(apply_register_caps(ptx), Err(vec!["helper".to_string()]));
        let both = format!("{ptx}{CAPPED}");
        assert_eq!(apply_register_caps(&both), Err(vec!["helper".to_string()]));
    }

    #[test]
    fn package_names_come_from_the_package_table_only() {
        let m = "[workspace]\nname = \"no\"\n[package]\n# name = \"comment\"\nversion = \"1\"\nname = \"my-kernels\" # x\n[lib]\nname = \"other\"\n";
        assert_eq!(package_name(m).as_deref(), Some("my-kernels"));
        assert_eq!(package_name("[lib]\nname = \"x\"\n"), None);
    }

    #[test]
    fn components_match_with_or_without_the_host_triple() {
        assert!(component_matches("rust-src", "rust-src"));
        assert!(component_matches("clippy-x86_64-unknown-linux-gnu", "clippy"));
        assert!(!component_matches("rust-src-extra", "rust-src"));
        assert!(!component_matches("rustfmt", "rust-src"));
    }

    #[test]
    fn unresolved_calls_are_named_and_defined_ones_are_not() {
        let ptx = "\
.extern .func abort();
.func (.param .b32 r) helper(.param .b32 a)
{
}
.visible .entry k()
{
\tcall.uni (retval0), helper, (param0);
\tcall.uni fmodf, (param0, param1);
\tcall.uni abort, ();
}";
        assert_eq!(unresolved_calls(ptx), ["abort", "fmodf"]);
        // LLVM's layout: the callee on the line after the return values.
        let split = ".visible .entry k()\n{\n\tcall.uni (retval0),\n\tsinf,\n\t(\n\tparam0\n\t);\n}";
        assert_eq!(unresolved_calls(split), ["sinf"]);
        assert!(unresolved_calls(".func (.param .b32 r) f()\n{\n}\ncall.uni (r), f, ();").is_empty());
    }

    /// The pinned toolchain is the workspace's (where the workspace is
    /// there to compare with: not in the packaged crate).
    #[test]
    fn the_pinned_toolchain_is_the_workspace_channel() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml");
        let Ok(text) = fs::read_to_string(&file) else { return };
        let channel = text.lines().find_map(|l| l.trim().strip_prefix("channel = ")).map(|v| v.trim_matches('"'));
        assert_eq!(channel, Some(PINNED_TOOLCHAIN));
    }
}
