//! gpuprim beside your own CUDA code, on one stream: your kernel writes a
//! buffer you allocated with cudarc, gpuprim scans it in place and sums a
//! part of it, and your stream sees the results, with no synchronisation in
//! between (stream order does it).
//!
//! ```sh
//! cargo run --release -p gpuprim --example own_kernel
//! ```
//!
//! Your kernel here is a few lines of hand-written PTX (`y = a * x + b`),
//! loaded and launched with cudarc's driver API; it could as well come from
//! nvrtc, a `.ptx` file or another library. Without a GPU the example runs
//! the gpuprim half on the emulator and says so.

use gpuprim::cudarc::driver::{CudaContext, result};
use gpuprim::{BackendKind, Context};
use std::ffi::{CString, c_void};

/// `y[i] = a * x[i] + b` for `i < n`, one thread per element.
const AFFINE_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry affine_i32(.param .u64 x, .param .u64 y, .param .u32 a, .param .u32 b, .param .u64 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    ld.param.u64 %rd3, [n];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mul.wide.u32 %rd4, %r3, %r4;
    cvt.u64.u32 %rd5, %r5;
    add.u64 %rd4, %rd4, %rd5;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd6, %rd1;
    cvta.to.global.u64 %rd7, %rd2;
    shl.b64 %rd8, %rd4, 2;
    add.u64 %rd6, %rd6, %rd8;
    add.u64 %rd7, %rd7, %rd8;
    ld.global.u32 %r6, [%rd6];
    mad.lo.s32 %r7, %r6, %r1, %r2;
    st.global.u32 [%rd7], %r7;
DONE:
    ret;
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = 1 << 20;
    let x: Vec<i32> = (0..n as i64).map(|i| ((i * 2654435761) % 201 - 100) as i32).collect();
    let (a, b) = (3i32, -2i32);
    let y: Vec<i32> = x.iter().map(|&v| v.wrapping_mul(a).wrapping_add(b)).collect();
    let scan: Vec<i32> = y
        .iter()
        .scan(0i32, |s, &v| {
            *s = s.wrapping_add(v);
            Some(*s)
        })
        .collect();
    let part_sum: i32 = scan[1000..2000].iter().fold(0i32, |s, &v| s.wrapping_add(v));

    if Context::device_count() == 0 {
        // No GPU: the same gpuprim calls on the emulator, on host data.
        let ctx = Context::emulator();
        let mut d = ctx.upload(&y)?;
        ctx.scan().inclusive_in_place(&mut d, gpuprim::scan::Sum)?;
        assert_eq!(d.to_vec()?, scan);
        assert_eq!(ctx.sum(d.slice(1000..2000)?)?, part_sum);
        println!("own_kernel: no CUDA device, so no kernel of your own; gpuprim's half ran on the emulator and agrees");
        return Ok(());
    }

    // Your side: a context, a stream, memory and a kernel of your own.
    let cu = CudaContext::new(0)?;
    let stream = cu.new_stream()?;
    let dx = stream.clone_htod(&x)?;
    let mut dy = stream.alloc_zeros::<i32>(n)?;
    cu.bind_to_thread()?;
    let ptx = CString::new(AFFINE_PTX)?;
    // SAFETY: NUL-terminated PTX text; the module lives to the end of main.
    let module = unsafe { result::module::load_data(ptx.as_ptr() as *const c_void) }?;
    // SAFETY: the module defines `affine_i32`.
    let f = unsafe { result::module::get_function(module, CString::new("affine_i32")?) }?;

    // gpuprim on the same stream.
    let ctx = Context::from_cudarc_stream(stream.clone())?;
    assert_eq!(ctx.backend(), BackendKind::Cuda);

    {
        use gpuprim::cudarc::driver::{DevicePtr, DevicePtrMut};
        let (px, _rx) = dx.device_ptr(&stream);
        let (py, _wy) = dy.device_ptr_mut(&stream);
        let (mut px, mut py, mut a, mut b, mut nn) = (px, py, a as u32, b as u32, n as u64);
        let mut params: [*mut c_void; 5] = [
            &mut px as *mut _ as *mut c_void,
            &mut py as *mut _ as *mut c_void,
            &mut a as *mut _ as *mut c_void,
            &mut b as *mut _ as *mut c_void,
            &mut nn as *mut _ as *mut c_void,
        ];
        cu.bind_to_thread()?;
        // SAFETY: the parameters match the kernel's; x and y hold n i32.
        unsafe {
            result::launch_kernel(f, (n.div_ceil(256) as u32, 1, 1), (256, 1, 1), 0, stream.cu_stream(), &mut params)
        }?;
    }
    // Queued behind your kernel: scan y in place, then sum part of it, with
    // the result left on the device for your next kernel.
    ctx.scan().inclusive_in_place(&mut dy, gpuprim::scan::Sum)?;
    let mut total = stream.alloc_zeros::<i32>(1)?;
    ctx.reducer().sum_into(&dy.slice(1000..2000), &mut total)?;
    // Your stream reads both, in order.
    let got_scan = stream.clone_dtoh(&dy)?;
    let got_sum = stream.clone_dtoh(&total)?;
    assert_eq!(got_scan, scan, "scan of your kernel's output");
    assert_eq!(got_sum, [part_sum], "sum of a slice of it");
    // SAFETY: nothing uses the module any more.
    unsafe { result::module::unload(module) }?;
    println!("own_kernel: your kernel, gpuprim's scan and sum on one stream ({}): all agree", ctx.device_name());
    Ok(())
}
