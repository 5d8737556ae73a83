//! The builder against a real kernels crate (`tests/fixture`): PTX out,
//! with the entry; and the error that names the install command when the
//! toolchain is missing.

use gpuprim_builder::{BuildError, Builder};
use std::path::PathBuf;

/// Whether rustup runs here. The GPU machine runs the test archive with no
/// Rust installed: there these tests skip and say so; in CI they must run.
fn have_rustup(test: &str) -> bool {
    let ok = std::process::Command::new("rustup").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("CI").is_err(), "{test}: no rustup in CI");
        eprintln!("{test}: skipped, no rustup on this machine (the builder runs the nightly through it)");
    }
    ok
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds the fixture with the pinned nightly (as gpuprim's own kernels
/// are built: `cargo xtask setup` installs it). Takes a minute or two the
/// first time (`core` is built from source), seconds after.
#[test]
fn the_fixture_builds_to_ptx_with_its_kernel() {
    if !have_rustup("the_fixture_builds_to_ptx_with_its_kernel") {
        return;
    }
    let out = scratch("fixture-out");
    let built = Builder::new("tests/fixture").out_dir(&out).build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.name, "fixture_kernels");
    assert_eq!(built.ptx, out.join("fixture_kernels.ptx"));
    let ptx = std::fs::read_to_string(&built.ptx).unwrap();
    assert!(ptx.contains(".target sm_70"), "{ptx}");
    assert!(ptx.contains(".visible .entry fixture_scale_i32("), "{ptx}");
    // Built again for another architecture.
    let built = Builder::new("tests/fixture").out_dir(&out).arch("sm_80").build().unwrap_or_else(|e| panic!("{e}"));
    assert!(std::fs::read_to_string(built.ptx).unwrap().contains(".target sm_80"));
}

#[test]
fn a_missing_toolchain_names_the_command_that_installs_it() {
    if !have_rustup("a_missing_toolchain_names_the_command_that_installs_it") {
        return;
    }
    let err =
        Builder::new("tests/fixture").toolchain("nightly-1999-01-01").out_dir(scratch("none")).build().unwrap_err();
    match &err {
        BuildError::MissingToolchain { toolchain, install } => {
            assert_eq!(toolchain, "nightly-1999-01-01");
            assert_eq!(install, "rustup toolchain install nightly-1999-01-01 --profile minimal --component rust-src");
        }
        other => panic!("expected MissingToolchain, got {other}"),
    }
    assert!(err.to_string().contains("rustup toolchain install nightly-1999-01-01"), "{err}");
}

#[test]
fn a_path_without_a_crate_is_a_typed_error() {
    let err = Builder::new("tests/no-such-crate").build().unwrap_err();
    assert!(matches!(err, BuildError::NoCrate { .. }), "{err}");
}

#[test]
fn a_call_to_an_undefined_function_is_named() {
    if !have_rustup("a_call_to_an_undefined_function_is_named") {
        return;
    }
    let err = Builder::new("tests/fixture").feature("unresolved").out_dir(scratch("unresolved")).build().unwrap_err();
    match &err {
        BuildError::Unresolved { krate, functions } => {
            assert_eq!(krate, "fixture-kernels");
            assert_eq!(functions, &["fixture_missing"]);
        }
        other => panic!("expected Unresolved, got {other}"),
    }
}

/// A user's crate instantiating gpuprim's generic reduction for its own
/// operator through `gpuprim_kernels::entries!`: the host half is a
/// `HostKernel` named and typed as the library's own instances are.
#[test]
fn a_user_crate_instantiates_the_library_kernels_on_the_host() {
    let mut table = Vec::new();
    user_kernels::register(&mut table);
    assert_eq!(table.len(), 1);
    let k = &table[0];
    assert_eq!(
        (k.name, k.family, k.op, k.key, k.ty, k.block_size),
        ("reduce_vectorized_maxabs_i32_b256", "reduce_vectorized", "maxabs", "", "i32", 256)
    );
    assert_eq!(k.params.len(), 7);
}

/// The same crate built to PTX: the user's instance is an entry, and every
/// call it makes into gpuprim-kernels was inlined (the builder refuses a
/// call it cannot resolve). Builds gpuprim-kernels for nvptx64 first (a
/// few minutes the first time).
#[test]
fn a_user_crate_instantiating_the_library_kernels_builds_to_ptx() {
    if !have_rustup("a_user_crate_instantiating_the_library_kernels_builds_to_ptx") {
        return;
    }
    let out = scratch("user-kernels-out");
    let built = Builder::new("tests/user_kernels").out_dir(&out).build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.name, "user_kernels");
    let ptx = std::fs::read_to_string(&built.ptx).unwrap();
    assert!(ptx.contains(".visible .entry reduce_vectorized_maxabs_i32_b256("), "{ptx}");
}
