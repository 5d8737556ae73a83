//! Run-time library path for cust-linked programs (tests, demo, bench).
//!
//! A cust-linked binary needs `libcuda.so.1` just to start. Where the system
//! has one (the NVIDIA driver), use it. Where it has none, put the stub's
//! `libcuda.so.1` on LD_LIBRARY_PATH: cuInit then fails with
//! CUDA_ERROR_STUB_LIBRARY and gpuprim falls back to its CPU emulator.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

use crate::setup;
use crate::util::Repo;

/// Directories where distributions and the NVIDIA installers put the driver
/// library, besides what `ldconfig -p` knows.
const DRIVER_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
];

/// The system's `libcuda.so.1`, if any (never our stub).
pub fn system_libcuda(repo: &Repo) -> Option<PathBuf> {
    let target = repo.target();
    let ours = |p: &Path| p.starts_with(&target);
    for ldconfig in ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"] {
        let Ok(out) = Command::new(ldconfig).arg("-p").output() else {
            continue;
        };
        let listing = String::from_utf8_lossy(&out.stdout);
        let hit = listing
            .lines()
            .filter(|l| l.trim_start().starts_with("libcuda.so.1 "))
            .filter_map(|l| l.split("=>").nth(1))
            .map(|p| PathBuf::from(p.trim()))
            .find(|p| !ours(p));
        if let Some(p) = hit {
            return Some(p);
        }
        break;
    }
    let user_dirs: Vec<PathBuf> =
        env::var_os("LD_LIBRARY_PATH").map(|v| env::split_paths(&v).collect()).unwrap_or_default();
    user_dirs
        .into_iter()
        .chain(DRIVER_DIRS.iter().map(PathBuf::from))
        .filter(|d| !d.as_os_str().is_empty() && !ours(d))
        .map(|d| d.join("libcuda.so.1"))
        .find(|p| p.exists())
}

/// Prepares `cmd` (already cleaned by [`Repo::clean`]) to run cust-linked
/// binaries: adds the stub to LD_LIBRARY_PATH only when the system lacks
/// `libcuda.so.1`.
pub fn apply(repo: &Repo, cmd: &mut Command) -> Result<()> {
    if let Some(driver) = system_libcuda(repo) {
        println!("runtime: system libcuda.so.1 at {}; the CUDA backend can run", driver.display());
        return Ok(());
    }
    let stub_dir = setup::stub_runtime_dir(repo);
    if !stub_dir.join("libcuda.so.1").exists() {
        bail!("no libcuda.so.1 on this system and no stub at {} (run `cargo xtask setup`)", stub_dir.display());
    }
    // Keep what `Repo::clean` left and put the stub last, so anything the
    // user points at comes first.
    let current: Vec<PathBuf> = cmd
        .get_envs()
        .find(|(k, _)| *k == "LD_LIBRARY_PATH")
        .map(|(_, v)| v.map(|v| env::split_paths(v).collect()).unwrap_or_default())
        .unwrap_or_else(|| env::var_os("LD_LIBRARY_PATH").map(|v| env::split_paths(&v).collect()).unwrap_or_default());
    let mut paths = current;
    paths.push(stub_dir.clone());
    match env::join_paths(paths) {
        Ok(joined) => {
            cmd.env("LD_LIBRARY_PATH", joined);
        }
        Err(e) => bail!("cannot build LD_LIBRARY_PATH: {e}"),
    }
    println!(
        "runtime: no libcuda.so.1 on this system; using the stub in {} (CUDA backend reports no driver, the emulator runs)",
        repo.rel(&stub_dir)
    );
    Ok(())
}
