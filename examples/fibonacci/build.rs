//! Compile the kernels crate to PTX: `$OUT_DIR/fibonacci_kernels.ptx`,
//! which `gpuprim::user_kernels!(fibonacci_kernels)` embeds.

fn main() {
    if let Err(e) = gpuprim_builder::Builder::new("kernels").build() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
