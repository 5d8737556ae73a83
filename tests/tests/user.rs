//! `Context::load_kernels`: what it refuses, and that a loaded kernel is
//! found and launched (on CUDA from its own PTX module). The whole flow
//! with a real kernels crate built by gpuprim-builder is
//! `examples/user-ops`, run by `cargo xtask consumer` and the GPU bundle.

use gpuprim::{Arg, BackendKind, Context, Error, LaunchConfig, UserKernels};
use gpuprim_kernels::{HostKernel, ParamKind};
use gpuprim_tests::*;

/// A context of its own (loading changes the device's table).
fn fresh(ctx: &Context) -> Context {
    match ctx.backend() {
        BackendKind::Emulator => Context::emulator(),
        BackendKind::Cuda => Context::cuda().expect("a CUDA context, as the test's"),
    }
}

/// Adds one to each of `n` `i32`s at `p`, one element per thread.
unsafe fn add_one(args: &[Arg]) {
    let (Arg::Ptr(p), Arg::U64(n)) = (args[0], args[1]) else { unreachable!("checked by launch") };
    let i = gpuprim_kernels::gpu::block_idx() as u64 * 32 + gpuprim_kernels::gpu::thread_idx() as u64;
    if i < n {
        // SAFETY: the caller passes `n` elements at `p`.
        unsafe { *(p as *mut i32).add(i as usize) += 1 };
    }
}

const ADD_ONE: HostKernel = HostKernel {
    name: "user_test_add_one_b32",
    family: "user_test_add_one",
    op: "",
    key: "",
    ty: "",
    params: &[ParamKind::Ptr, ParamKind::U64],
    block_size: 32,
    func: add_one,
};

/// The same kernel in PTX, written out (what rustc would emit, shortened).
const ADD_ONE_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64

.visible .entry user_test_add_one_b32(
	.param .u64 p_0,
	.param .u64 p_1
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<7>;

	ld.param.u64 %rd1, [p_0];
	ld.param.u64 %rd2, [p_1];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.s32 %r3, %r1, 32, %r2;
	cvt.u64.u32 %rd3, %r3;
	setp.ge.u64 %p1, %rd3, %rd2;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd4, %rd1;
	shl.b64 %rd5, %rd3, 2;
	add.s64 %rd6, %rd4, %rd5;
	ld.global.u32 %r4, [%rd6];
	add.s32 %r5, %r4, 1;
	st.global.u32 [%rd6], %r5;
DONE:
	ret;
}
";

fn register_add_one(out: &mut Vec<HostKernel>) {
    out.push(ADD_ONE);
}

backend_test!(a_loaded_kernel_is_found_and_launched_from_its_own_module, |ctx| {
    let ctx = fresh(ctx);
    let launch = |ctx: &Context, buf: &mut gpuprim::DeviceBuffer<i32>| {
        let n = buf.len() as u64;
        let cfg = LaunchConfig { grid: n.div_ceil(32) as u32, block: 32, shared_bytes: 0 };
        // SAFETY: `n` elements at the buffer's address, which the kernel
        // reads and writes.
        unsafe { ctx.launch("user_test_add_one_b32", cfg, &[Arg::Ptr(buf.addr()), n.into()]) }
    };
    let data: Vec<i32> = draw(proptest::collection::vec(-1000i32..1000, 1..3000));
    let mut buf = ctx.upload(&data).unwrap();
    assert!(matches!(launch(&ctx, &mut buf), Err(Error::UnknownKernel { .. })), "before loading");
    ctx.load_kernels(&UserKernels::new("add_one", ADD_ONE_PTX, register_add_one)).unwrap();
    assert_eq!(ctx.kernel("user_test_add_one_b32").unwrap().block_size, 32);
    launch(&ctx, &mut buf).unwrap();
    // A context on another stream of the device shares what was loaded.
    // Its stream is not ordered with this one's: wait for it before the
    // download (this one's stream) reads the buffer.
    let other = ctx.fork().unwrap();
    launch(&other, &mut buf).unwrap();
    other.synchronize().unwrap();
    ctx.synchronize().unwrap();
    let want: Vec<i32> = data.iter().map(|v| v + 2).collect();
    assert_eq!(buf.to_vec().unwrap(), want);
});

fn register_nothing(_: &mut Vec<HostKernel>) {}

fn register_a_shipped_name(out: &mut Vec<HostKernel>) {
    out.push(HostKernel { name: "scan_lookback_sum_i32_b256", ..ADD_ONE });
}

fn register_two(out: &mut Vec<HostKernel>) {
    out.push(ADD_ONE);
    out.push(HostKernel { name: "user_test_absent_b32", ..ADD_ONE });
}

backend_test!(load_kernels_refuses_what_it_cannot_use, |ctx| {
    let ctx = fresh(ctx);
    let refused = |k: UserKernels, says: &str| {
        let got = ctx.load_kernels(&k);
        assert!(
            matches!(&got, Err(Error::UserKernels { krate, reason }) if krate == k.name() && reason.contains(says)),
            "{}: expected an error saying {says:?}, got {got:?}",
            k.name()
        );
    };
    refused(UserKernels::new("empty", ADD_ONE_PTX, register_nothing), "lists no kernels");
    // PTX from other sources than the crate linked in.
    refused(UserKernels::new("stale", ADD_ONE_PTX, register_two), "user_test_absent_b32");
    refused(UserKernels::new("stale", ".version 7.0\n", register_add_one), "not in its PTX");
    // A name the library uses already.
    let shipped_ptx = ".visible .entry scan_lookback_sum_i32_b256(\n)\n{\n}\n";
    refused(UserKernels::new("clash", shipped_ptx, register_a_shipped_name), "already in use");
    // Nothing of the refused ones was taken.
    assert!(ctx.kernel("user_test_add_one_b32").is_err());
    // A second crate with a name the first one loaded.
    ctx.load_kernels(&UserKernels::new("first", ADD_ONE_PTX, register_add_one)).unwrap();
    let again = String::from(ADD_ONE_PTX).leak();
    refused(UserKernels::new("second", again, register_add_one), "of `first`");
    // PTX the driver cannot compile: refused on CUDA when loaded; the
    // emulator runs the host half and never reads the PTX's code.
    let broken = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry user_test_broken_b32(\n)\n{\n\tnot an instruction;\n}\n";
    fn register_broken(out: &mut Vec<HostKernel>) {
        out.push(HostKernel { name: "user_test_broken_b32", params: &[], ..ADD_ONE });
    }
    let k = UserKernels::new("broken", broken, register_broken);
    match ctx.backend() {
        BackendKind::Cuda => refused(k, "the driver refused its PTX"),
        BackendKind::Emulator => ctx.load_kernels(&k).unwrap(),
    }
});
