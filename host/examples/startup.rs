//! What a program pays before its first result: `Context::new()`, then the
//! first `sum` (which loads the kernels it needs: shipped machine code where
//! there is some for the GPU, else PTX the driver compiles), then the first
//! inclusive scan, then the same calls again.
//!
//! ```sh
//! cargo run --release -p gpuprim --example startup
//! GPUPRIM_FORCE_PTX=1 CUDA_CACHE_DISABLE=1 cargo run ... # the JIT path, no disk cache
//! ```
//!
//! Prints one `startup:` line with the times in milliseconds.

use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() -> gpuprim::Result<()> {
    let t = Instant::now();
    let ctx = gpuprim::Context::new()?;
    let new = ms(t);
    let n = 1 << 20;
    let data: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect();
    let x = ctx.upload(&data)?;
    let mut y = ctx.alloc::<f32>(n)?;
    ctx.synchronize()?;

    let t = Instant::now();
    let first = ctx.sum(&x)?;
    let first_sum = ms(t);
    let t = Instant::now();
    ctx.inclusive_scan(&x, &mut y)?;
    ctx.synchronize()?;
    let first_scan = ms(t);
    let t = Instant::now();
    let again = ctx.sum(&x)?;
    let second_sum = ms(t);
    let t = Instant::now();
    ctx.inclusive_scan(&x, &mut y)?;
    ctx.synchronize()?;
    let second_scan = ms(t);

    let want: f64 = data.iter().map(|&v| v as f64).sum();
    let ok = ((first as f64) - want).abs() <= 1e-4 * want && first == again;
    println!(
        "startup: backend {} ({}), kernels as {}; Context::new {new:.1} ms, first sum {first_sum:.1} ms, \
         first inclusive_scan {first_scan:.1} ms, second sum {second_sum:.2} ms, second scan {second_scan:.2} ms; \
         sum {}",
        ctx.backend(),
        ctx.device_name(),
        match (ctx.backend(), ctx.has_machine_code()) {
            (gpuprim::BackendKind::Emulator, _) => "host functions",
            (_, true) => "shipped machine code",
            (_, false) => "PTX (JIT)",
        },
        if ok { "correct" } else { "WRONG" },
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
