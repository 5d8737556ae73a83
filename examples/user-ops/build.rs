//! Compile the kernels crate to PTX: `$OUT_DIR/user_ops_kernels.ptx`,
//! which `gpuprim::user_kernels!(user_ops_kernels)` embeds.

fn main() {
    if let Err(e) = gpuprim_builder::Builder::new("kernels").build() {
        // The error says what to do (install the toolchain, the function
        // that could not be resolved, the compiler's output).
        eprintln!("{e}");
        std::process::exit(1);
    }
}
