//! Compile the kernels crate to PTX: `$OUT_DIR/welford_kernels.ptx`,
//! which `gpuprim::user_kernels!(welford_kernels)` embeds.

fn main() {
    if let Err(e) = gpuprim_builder::Builder::new("kernels").build() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
