//! `cargo xtask setup`: the pinned toolchain, `ptxas`, and (where no CUDA
//! toolkit is installed) a `libcuda.so` link stub. Idempotent and quick when
//! everything is present, so every other subcommand runs it first.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::runtime;
use crate::util::{self, Repo};

/// The ptxas wheel: 13.0.88 matches driver 580 (see shared/TOOLCHAIN.md).
const NVCC_WHEEL: &str = "nvidia-cuda-nvcc==13.0.88";
const NVCC_DIST_INFO: &str = "nvidia_cuda_nvcc-13.0.88.dist-info";
/// CUDA_ERROR_STUB_LIBRARY: what every function of the stub returns.
const CUDA_ERROR_STUB_LIBRARY: u32 = 34;
/// Written next to the stub once it is complete; its presence means done.
const STUB_STAMP: &str = "STUB";

/// What setup found or made; later steps use the paths.
#[derive(Debug, Clone)]
pub struct Setup {
    pub ptxas: PathBuf,
}

pub fn run(repo: &Repo) -> Result<Setup> {
    toolchain(repo).context("setup: installing the pinned toolchain")?;
    let ptxas = ptxas(repo).context("setup: installing ptxas")?;
    cuda_stub(repo).context("setup: providing libcuda.so for linking")?;
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
        .filter(|want| !installed.iter().any(|have| component_matches(have, want)))
        .cloned()
        .collect();
    Ok(Some(missing))
}

/// rustup lists components with the host triple (`clippy-x86_64-unknown-linux-gnu`),
/// except target-independent ones (`rust-src`).
fn component_matches(listed: &str, wanted: &str) -> bool {
    match listed.strip_prefix(wanted) {
        Some("") => true,
        // "-<arch>-<vendor>-<os>[-<env>]": at least three dashes.
        Some(rest) => rest.starts_with('-') && rest.matches('-').count() >= 3,
        None => false,
    }
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

// ---------------------------------------------------------------------------
// (c) libcuda.so link stub

/// Where the stub's link-time library lives: `$CUDA_LIBRARY_PATH/lib64`, as
/// `.cargo/config.toml` points cust's build script there.
pub fn stub_dir(repo: &Repo) -> PathBuf {
    repo.target().join("cuda-stub")
}

/// Link-time directory: holds only `libcuda.so`. cust's build script passes
/// it as `-L`, and since it is inside target/, cargo and nextest put it on
/// the test binaries' LD_LIBRARY_PATH (and nextest archives it), so it must
/// NOT contain `libcuda.so.1`, or it would shadow a real driver. NVIDIA's own
/// `lib64/stubs` is laid out the same way.
pub fn stub_link_dir(repo: &Repo) -> PathBuf {
    stub_dir(repo).join("lib64")
}

/// Run-time directory: `libcuda.so.1` -> the stub, added to LD_LIBRARY_PATH
/// by [`crate::runtime`] only on machines that have no libcuda.so.1.
pub fn stub_runtime_dir(repo: &Repo) -> PathBuf {
    stub_dir(repo).join("runtime")
}

fn cuda_stub(repo: &Repo) -> Result<()> {
    // The stub serves two purposes: linking (where no toolkit provides a
    // libcuda.so) and starting cust-linked binaries (where no driver provides
    // libcuda.so.1). Only a machine with both can do without it.
    let toolkit = toolkit_libcuda(repo);
    let driver = runtime::system_libcuda(repo);
    let why = match (&toolkit, &driver) {
        (Some(toolkit), Some(driver)) => {
            println!(
                "setup: CUDA toolkit's libcuda.so at {} and driver's libcuda.so.1 at {}; no stub needed",
                toolkit.display(),
                driver.display()
            );
            return Ok(());
        }
        (None, None) => "no CUDA toolkit, no driver".to_string(),
        (None, Some(_)) => "no CUDA toolkit to link against".to_string(),
        (Some(t), None) => format!("toolkit at {} but no driver libcuda.so.1 to run with", t.display()),
    };
    let link_dir = stub_link_dir(repo);
    let runtime_dir = stub_runtime_dir(repo);
    let stamp = stub_dir(repo).join(STUB_STAMP);
    if stamp.is_file() && link_dir.join("libcuda.so").is_file() && runtime_dir.join("libcuda.so.1").exists() {
        println!("setup: libcuda.so stub present at {} ({why})", repo.rel(&link_dir));
        return Ok(());
    }
    println!("setup: {why}; building a libcuda.so stub");
    build_stub(repo)
}

/// A CUDA toolkit's `libcuda.so` where cust's build script (find_cuda_helper)
/// looks: a user-set CUDA_LIBRARY_PATH, /usr/local/cuda*, /opt/cuda.
fn toolkit_libcuda(repo: &Repo) -> Option<PathBuf> {
    let ours = stub_dir(repo);
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(v) = env::var_os("CUDA_LIBRARY_PATH") {
        // .cargo/config.toml sets it to our stub dir unless the user set it.
        let canon = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let ours = canon(&ours);
        bases.extend(env::split_paths(&v).filter(|p| !p.as_os_str().is_empty() && canon(p) != ours));
    }
    bases.push("/usr/local/cuda".into());
    bases.push("/opt/cuda".into());
    if let Ok(entries) = fs::read_dir("/usr/local") {
        let mut versioned: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("cuda-"))
            .map(|e| e.path())
            .collect();
        versioned.sort();
        bases.extend(versioned);
    }
    bases.into_iter().find_map(|base| {
        ["lib64", "lib64/stubs", "targets/x86_64-linux/lib", "targets/x86_64-linux/lib/stubs"]
            .iter()
            .map(|sub| base.join(sub).join("libcuda.so"))
            .find(|p| p.exists())
    })
}

fn build_stub(repo: &Repo) -> Result<()> {
    util::run(repo.cargo().arg("fetch")).context("`cargo fetch` (downloads cust_raw)")?;
    let metadata =
        util::stdout_of(repo.cargo().args(["metadata", "--format-version", "1"]).stdout(std::process::Stdio::piped()))?;
    let crate_dir = cust_raw_dir(&metadata)?;
    println!("setup: cust_raw source at {}", crate_dir.display());

    let names = cu_function_names(&crate_dir.join("src"))?;
    if names.len() < 100 || !names.contains("cuInit") {
        bail!(
            "found only {} `pub fn cu*` names in {} (expected the driver API incl. cuInit)",
            names.len(),
            crate_dir.display()
        );
    }

    let dir = stub_dir(repo);
    let link_dir = stub_link_dir(repo);
    let runtime_dir = stub_runtime_dir(repo);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(&link_dir).with_context(|| format!("creating {}", link_dir.display()))?;
    fs::create_dir_all(&runtime_dir).with_context(|| format!("creating {}", runtime_dir.display()))?;

    let c_file = dir.join("libcuda_stub.c");
    fs::write(&c_file, stub_source(&names, &crate_dir)).with_context(|| format!("writing {}", c_file.display()))?;
    let lib = link_dir.join("libcuda.so");
    let mut gcc = Command::new("gcc");
    repo.clean(&mut gcc);
    gcc.args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o"]).arg(&lib).arg(&c_file);
    util::run(&mut gcc).context("compiling the stub (is gcc installed?)")?;

    let link = runtime_dir.join("libcuda.so.1");
    std::os::unix::fs::symlink("../lib64/libcuda.so", &link)
        .with_context(|| format!("symlinking {}", link.display()))?;
    let stamp = dir.join(STUB_STAMP);
    fs::write(
        &stamp,
        format!(
            "libcuda.so stub: {} functions from {}, each returning {CUDA_ERROR_STUB_LIBRARY}\n",
            names.len(),
            crate_dir.display()
        ),
    )
    .with_context(|| format!("writing {}", stamp.display()))?;
    println!(
        "setup: built {} ({} cu* functions returning CUDA_ERROR_STUB_LIBRARY, soname libcuda.so.1); runtime link {}",
        repo.rel(&lib),
        names.len(),
        repo.rel(&link)
    );
    Ok(())
}

/// The source directory of cust_raw (0.11.3 preferred) from `cargo metadata`.
fn cust_raw_dir(metadata: &str) -> Result<PathBuf> {
    let manifests: Vec<PathBuf> = util::json_strs(metadata, "manifest_path")
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| p.parent().and_then(Path::file_name).is_some_and(|d| d.to_string_lossy().starts_with("cust_raw-")))
        .collect();
    let pick = manifests
        .iter()
        .find(|p| p.parent().is_some_and(|d| d.ends_with("cust_raw-0.11.3")))
        .or_else(|| manifests.first())
        .context("package cust_raw is not in `cargo metadata` (does host/ depend on cust?)")?;
    let dir = pick.parent().context("manifest path has no parent")?;
    Ok(dir.to_path_buf())
}

/// Every `pub fn cu...` name in the .rs files under `dir`.
fn cu_function_names(dir: &Path) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let path = entry.with_context(|| format!("listing {}", d.display()))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                names.extend(scan_cu_functions(&text));
            }
        }
    }
    Ok(names)
}

fn scan_cu_functions(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("pub fn cu").filter_map(|(i, _)| {
        let rest = &text[i + "pub fn ".len()..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name = &rest[..end];
        // Must be followed by a parameter list (not a generic or a field).
        rest[end..].trim_start().starts_with('(').then(|| name.to_string())
    })
}

fn stub_source(names: &BTreeSet<String>, from: &Path) -> String {
    let mut c = format!(
        "/* libcuda.so link stub, generated by `cargo xtask setup` from the\n \
         * `pub fn cu*` declarations of {}.\n \
         * Every function returns CUDA_ERROR_STUB_LIBRARY ({CUDA_ERROR_STUB_LIBRARY}) without\n \
         * reading its arguments (the caller's arguments are simply ignored), so\n \
         * cuInit fails and gpuprim falls back to its CPU emulator. */\n",
        from.display()
    );
    for name in names {
        c.push_str(&format!("int {name}(void) {{ return {CUDA_ERROR_STUB_LIBRARY}; }}\n"));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_extern_declarations_only() {
        let src = "extern \"C\" {\n    pub fn cuInit(Flags: ::std::os::raw::c_uint) -> CUresult;\n    pub fn cuMemAlloc_v2(\n        dptr: *mut u64, n: usize) -> CUresult;\n}\npub fn cuda_thing<T>() {}\npub struct cuFoo;\n";
        let names: Vec<String> = scan_cu_functions(src).collect();
        assert_eq!(names, ["cuInit", "cuMemAlloc_v2"]);
    }

    #[test]
    fn matches_component_names_with_and_without_triple() {
        assert!(component_matches("rust-src", "rust-src"));
        assert!(component_matches("clippy-x86_64-unknown-linux-gnu", "clippy"));
        assert!(!component_matches("rust-src", "rust"));
        assert!(!component_matches("rustfmt-x86_64-unknown-linux-gnu", "rust"));
    }

    #[test]
    fn finds_cust_raw_in_metadata() {
        let md = r#"{"packages":[{"name":"cust","manifest_path":"/r/cust-0.3.2/Cargo.toml"},{"name":"cust_raw","manifest_path":"/r/cust_raw-0.11.3/Cargo.toml"}]}"#;
        assert_eq!(cust_raw_dir(md).expect("found"), PathBuf::from("/r/cust_raw-0.11.3"));
    }
}
