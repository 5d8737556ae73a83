//! Compiles `kernels/` to PTX with rustc's own nvptx64 backend and embeds it.
//!
//! The nested build uses the toolchain that builds this crate (the pinned
//! nightly: `-Zbuild-std=core` needs `rust-src`), its own target directory
//! (`target/ptx-build`), `panic=immediate-abort` (so bounds checks become a
//! PTX `trap` rather than calls into `core::panicking`) and no debug info
//! (ptxas cannot parse rustc's DWARF sections). See shared/TOOLCHAIN.md.
//!
//! Environment:
//! * `GPUPRIM_PTX_ARCH` — the `-C target-cpu` (default `sm_90`).
//! * `GPUPRIM_PTX` — a prebuilt PTX file to embed instead of building one.
//! * `GPUPRIM_CUBIN_ARCH` — also assemble the PTX with `ptxas` for this GPU
//!   (e.g. `sm_90`) and embed the machine code, so a context on such a GPU
//!   loads in milliseconds instead of JIT-compiling hundreds of kernels.
//!   `ptxas` comes from `GPUPRIM_PTXAS`, the wheel `cargo xtask setup`
//!   installs, or `PATH`. `cargo xtask gpu-bundle` sets it.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=GPUPRIM_PTX_ARCH");
    println!("cargo:rerun-if-env-changed=GPUPRIM_PTX");
    println!("cargo:rerun-if-env-changed=GPUPRIM_CUBIN_ARCH");
    println!("cargo:rerun-if-env-changed=GPUPRIM_PTXAS");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("host/ lives inside the workspace").to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    let ptx = match env::var("GPUPRIM_PTX") {
        Ok(path) => {
            println!("cargo:rerun-if-changed={path}");
            fs::read_to_string(&path).unwrap_or_else(|e| fail(&format!("cannot read GPUPRIM_PTX={path}: {e}")))
        }
        Err(_) => build_ptx(&root),
    };
    check_resolved(&ptx);
    fs::write(out.join("kernels.ptx"), &ptx).unwrap_or_else(|e| fail(&format!("cannot write PTX: {e}")));
    let (arch, cubin) = match env::var("GPUPRIM_CUBIN_ARCH") {
        Ok(arch) if !arch.is_empty() => {
            let cubin = assemble(&root, &out.join("kernels.ptx"), &out.join("kernels.cubin"), &arch);
            (arch, cubin)
        }
        _ => (String::new(), Vec::new()),
    };
    fs::write(out.join("kernels.cubin"), &cubin).unwrap_or_else(|e| fail(&format!("cannot write cubin: {e}")));
    fs::write(out.join("cubin_arch.txt"), &arch).unwrap_or_else(|e| fail(&format!("cannot write cubin arch: {e}")));
    // A copy at a fixed place for `cargo xtask ptx` and for reading.
    let target = env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let copy_dir = target.join("ptx");
    if fs::create_dir_all(&copy_dir).is_ok() {
        let _ = fs::write(copy_dir.join("gpuprim-kernels.ptx"), &ptx);
    }
}

fn build_ptx(root: &Path) -> String {
    let kernels = root.join("kernels");
    println!("cargo:rerun-if-changed={}", kernels.join("src").display());
    println!("cargo:rerun-if-changed={}", kernels.join("Cargo.toml").display());
    let arch = env::var("GPUPRIM_PTX_ARCH").unwrap_or_else(|_| "sm_90".to_string());
    let target_dir = root.join("target").join("ptx-build");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());

    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["rustc", "-p", "gpuprim-kernels", "--release", "--target", "nvptx64-nvidia-cuda"])
        .args(["-Zbuild-std=core", "--config", "profile.release.debug=false"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "--emit=asm"])
        .env("RUSTFLAGS", format!("-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu={arch}"));
    // Do not let this build's settings (clippy's wrapper, flags for the host
    // target, the jobserver) leak into the nested one.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let output = cmd.output().unwrap_or_else(|e| fail(&format!("cannot run cargo for the PTX build: {e}")));
    if !output.status.success() {
        fail(&format!(
            "compiling kernels/ to PTX failed. This needs the pinned nightly with rust-src \
             (run `cargo +stable xtask setup`).\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let deps = target_dir.join("nvptx64-nvidia-cuda").join("release").join("deps");
    let newest = fs::read_dir(&deps)
        .unwrap_or_else(|e| fail(&format!("no PTX output in {}: {e}", deps.display())))
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("gpuprim_kernels-") && name.ends_with(".s")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| fail(&format!("the PTX build wrote no gpuprim_kernels-*.s in {}", deps.display())));
    fs::read_to_string(&newest).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", newest.display())))
}

/// Assemble the PTX for `arch` with ptxas.
fn assemble(root: &Path, ptx: &Path, cubin: &Path, arch: &str) -> Vec<u8> {
    let wheel = root.join("target/tools/cuda-nvcc/nvidia/cu13/bin/ptxas");
    let ptxas = env::var("GPUPRIM_PTXAS")
        .map(PathBuf::from)
        .ok()
        .or_else(|| wheel.exists().then_some(wheel))
        .unwrap_or_else(|| PathBuf::from("ptxas"));
    let status = Command::new(&ptxas)
        .arg("--gpu-name")
        .arg(arch)
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .status()
        .unwrap_or_else(|e| fail(&format!("GPUPRIM_CUBIN_ARCH is set but {} cannot run: {e}", ptxas.display())));
    if !status.success() {
        fail(&format!("ptxas --gpu-name {arch} failed on the kernels' PTX"));
    }
    fs::read(cubin).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", cubin.display())))
}

/// Fail the build if the PTX calls or declares a function it does not
/// define: the driver would reject the module at load time.
fn check_resolved(ptx: &str) {
    let mut defined = Vec::new();
    let mut external = Vec::new();
    let mut called = Vec::new();
    for line in ptx.lines() {
        let l = line.trim();
        if l.starts_with(".extern .func") {
            external.push(l.to_string());
        } else if let Some(rest) = l.strip_prefix(".visible .func").or_else(|| l.strip_prefix(".func")) {
            defined.push(func_name(rest));
        } else if l.starts_with("call") {
            // call.uni (ret), name, (args);  or  call.uni name, (args);
            if let Some(name) = l.split([',', ' ', '\t', '(', ')', ';']).filter(|s| !s.is_empty()).nth(1) {
                called.push(name.to_string());
            }
        }
    }
    let unresolved: Vec<&String> = called.iter().filter(|c| !defined.iter().any(|d| d == *c)).collect();
    if !external.is_empty() || !unresolved.is_empty() {
        fail(&format!(
            "the kernels' PTX references functions it does not define (the driver would refuse to load it). \
             Usually a panic path or a float intrinsic that nvptx64 cannot lower.\nextern: {external:?}\ncalled: {unresolved:?}"
        ));
    }
}

fn func_name(rest: &str) -> String {
    // ` (.param .b32 ret) name(` or ` name(`
    let rest = rest.trim();
    let rest = if rest.starts_with('(') { rest.split_once(')').map(|(_, r)| r).unwrap_or(rest) } else { rest };
    rest.trim().split(['(', ' ']).next().unwrap_or("").to_string()
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1)
}
