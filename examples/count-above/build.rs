//! Compile the kernels crate to PTX: `$OUT_DIR/count_above_kernels.ptx`,
//! which `gpuprim::user_kernels!(count_above_kernels)` embeds.

fn main() {
    if let Err(e) = gpuprim_builder::Builder::new("kernels").build() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
