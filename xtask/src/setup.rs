//! `cargo xtask setup`: the pinned toolchain and `ptxas`, which only the
//! kernels' artifact build needs (users of the library need neither: the
//! CUDA driver is loaded at run time). Idempotent and quick when everything
//! is present, so every other subcommand runs it first.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::util::{self, Repo};

/// The ptxas wheel: 13.0.88 matches driver 580 (see shared/TOOLCHAIN.md).
const NVCC_WHEEL: &str = "nvidia-cuda-nvcc==13.0.88";
const NVCC_DIST_INFO: &str = "nvidia_cuda_nvcc-13.0.88.dist-info";

/// What setup found or made; later steps use the paths.
#[derive(Debug, Clone)]
pub struct Setup {
    pub ptxas: PathBuf,
}

pub fn run(repo: &Repo) -> Result<Setup> {
    toolchain(repo).context("setup: installing the pinned toolchain")?;
    let ptxas = ptxas(repo).context("setup: installing ptxas")?;
    Ok(Setup { ptxas })
}

// ---------------------------------------------------------------------------
// (a) toolchain

fn toolchain(repo: &Repo) -> Result<()> {
    let ch = &repo.channel;
    let missing = missing_components(repo)?;
    match &missing {
        Some(missing) if missing.is_empty() => {
            println!("setup: toolchain {ch} present (components: {})", repo.components.join(", "));
            return Ok(());
        }
        Some(missing) => println!("setup: toolchain {ch} lacks {}; installing", missing.join(", ")),
        None => println!("setup: toolchain {ch} not installed; installing"),
    }
    let mut cmd = Command::new("rustup");
    repo.clean(&mut cmd);
    cmd.args(["toolchain", "install", ch, "--profile", "minimal"]);
    for c in &repo.components {
        cmd.args(["-c", c]);
    }
    util::run(&mut cmd)?;
    match missing_components(repo)? {
        Some(m) if m.is_empty() => {
            println!("setup: toolchain {ch} installed");
            Ok(())
        }
        Some(m) => bail!("toolchain {ch} still lacks {} after `rustup toolchain install`", m.join(", ")),
        None => bail!("toolchain {ch} still not listed by rustup after installing it"),
    }
}

/// `None` when the toolchain is not installed, else the missing components.
fn missing_components(repo: &Repo) -> Result<Option<Vec<String>>> {
    let mut cmd = Command::new("rustup");
    repo.clean(&mut cmd);
    cmd.args(["component", "list", "--installed", "--toolchain", &repo.channel]);
    let out = util::capture(&mut cmd).context("is rustup installed and on PATH?")?;
    if !out.status.success() {
        // rustup says "toolchain '...' is not installed" and exits non-zero.
        return Ok(None);
    }
    let listed = String::from_utf8_lossy(&out.stdout);
    let installed: Vec<&str> = listed.lines().map(str::trim).collect();
    let missing = repo
        .components
        .iter()
        .filter(|want| !installed.iter().any(|have| gpuprim_builder::component_matches(have, want)))
        .cloned()
        .collect();
    Ok(Some(missing))
}

// ---------------------------------------------------------------------------
// (b) ptxas

fn ptxas(repo: &Repo) -> Result<PathBuf> {
    let dir = repo.target().join("tools").join("cuda-nvcc");
    let present = dir.join(NVCC_DIST_INFO).is_dir();
    let found = if present { find_file(&dir, "ptxas")? } else { None };
    let ptxas = match found {
        Some(p) => {
            make_executable(&p)?;
            println!("setup: ptxas present at {}", repo.rel(&p));
            p
        }
        None => {
            println!("setup: installing ptxas ({NVCC_WHEEL}) into {}", repo.rel(&dir));
            if dir.exists() {
                fs::remove_dir_all(&dir).with_context(|| format!("removing stale {}", dir.display()))?;
            }
            let mut cmd = Command::new("python3");
            repo.clean(&mut cmd);
            cmd.env("PIP_ROOT_USER_ACTION", "ignore");
            cmd.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
                .args(["--no-deps", "--target"])
                .arg(&dir)
                .arg(NVCC_WHEEL);
            util::run(&mut cmd).context("pip could not install the ptxas wheel (needs PyPI)")?;
            let p = find_file(&dir, "ptxas")?
                .with_context(|| format!("no `ptxas` inside {} after pip install", dir.display()))?;
            make_executable(&p)?;
            println!("setup: ptxas installed at {}", repo.rel(&p));
            p
        }
    };
    Ok(ptxas)
}

/// Depth-first search for a regular file called `name` under `dir`.
fn find_file(dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", d.display()))?;
            let path = entry.path();
            let ty = entry.file_type().with_context(|| format!("stat {}", path.display()))?;
            if ty.is_dir() {
                stack.push(path);
            } else if ty.is_file() && entry.file_name() == name {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}

fn make_executable(path: &Path) -> Result<()> {
    let meta = fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
    let mode = meta.permissions().mode();
    if mode & 0o111 != 0o111 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode | 0o755))
            .with_context(|| format!("chmod +x {}", path.display()))?;
    }
    Ok(())
}
