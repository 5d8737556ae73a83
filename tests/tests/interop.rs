//! gpuprim as a dependency: any thread, several contexts, borrowed views of
//! the library's and the caller's memory, streams and events, cudarc's
//! types, and bad input as typed errors.

use gpuprim::{BackendKind, Context, DeviceSlice, DeviceSliceMut, Error};
use gpuprim_tests::{backend_test, draw};
use proptest::prelude::*;

fn ints(n: usize) -> Vec<i32> {
    draw(proptest::collection::vec(-1000i32..1000, n))
}

fn prefix(x: &[i32]) -> Vec<i32> {
    x.iter()
        .scan(0i32, |a, &v| {
            *a = a.wrapping_add(v);
            Some(*a)
        })
        .collect()
}

backend_test!(eight_threads_sum_and_scan_on_one_cloned_context, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 20 } else { 3000 };
    let rounds = if ctx.backend() == BackendKind::Cuda { 20 } else { 2 };
    std::thread::scope(|s| {
        for t in 0..8 {
            let ctx = ctx.clone();
            s.spawn(move || {
                for r in 0..rounds {
                    let data = ints(n - t * 7 - r);
                    let x = ctx.upload(&data).unwrap();
                    assert_eq!(ctx.sum(&x).unwrap(), data.iter().sum::<i32>(), "thread {t} round {r}");
                    let mut y = ctx.alloc::<i32>(data.len()).unwrap();
                    y.poison().unwrap();
                    ctx.inclusive_scan(&x, &mut y).unwrap();
                    assert_eq!(y.to_vec().unwrap(), prefix(&data), "thread {t} round {r}");
                }
            });
        }
    });
});

backend_test!(a_context_made_on_another_thread_works_here, |ctx| {
    let made = std::thread::spawn({
        let kind = ctx.backend();
        move || match kind {
            BackendKind::Cuda => Context::cuda().unwrap(),
            BackendKind::Emulator => Context::emulator(),
        }
    })
    .join()
    .unwrap();
    let data = ints(777);
    let x = made.upload(&data).unwrap();
    assert_eq!(made.sum(&x).unwrap(), data.iter().sum::<i32>());
});

backend_test!(views_reduce_and_scan_parts_of_a_buffer, |ctx| {
    let data = ints(1000);
    let buf = ctx.upload(&data).unwrap();
    for (a, b) in [(0, 1000), (1, 999), (250, 251), (300, 300), (17, 800)] {
        let view = buf.slice(a..b).unwrap();
        assert_eq!(view.len(), b - a);
        assert_eq!(ctx.sum(view).unwrap(), data[a..b].iter().sum::<i32>(), "{a}..{b}");
        assert_eq!(ctx.max(view).unwrap(), data[a..b].iter().copied().max().unwrap_or(i32::MIN), "{a}..{b}");
    }
    // Scan into the middle of a larger, poisoned output; the rest untouched.
    let mut out = ctx.alloc::<i32>(1200).unwrap();
    out.poison().unwrap();
    let view = buf.slice(100..900).unwrap();
    ctx.inclusive_scan(&view, &mut out.slice_mut(150..950).unwrap()).unwrap();
    let got = out.to_vec().unwrap();
    assert_eq!(&got[150..950], &prefix(&data[100..900])[..]);
    assert!(got[..150].iter().chain(&got[950..]).all(|&v| v == -1), "the scan wrote outside its view");
    // In place on a view.
    let mut inplace = ctx.upload(&data).unwrap();
    ctx.scan().inclusive_in_place(&mut inplace.slice_mut(10..20).unwrap(), gpuprim::scan::Sum).unwrap();
    let got = inplace.to_vec().unwrap();
    assert_eq!(&got[10..20], &prefix(&data[10..20])[..]);
    assert_eq!(&got[..10], &data[..10]);
    assert_eq!(&got[20..], &data[20..]);
});

backend_test!(empty_views_give_the_identity_or_nothing, |ctx| {
    let buf = ctx.upload(&ints(10)).unwrap();
    let empty = buf.slice(4..4).unwrap();
    assert_eq!(ctx.sum(empty).unwrap(), 0);
    assert_eq!(ctx.min(empty).unwrap(), i32::MAX);
    assert_eq!(ctx.argmax(empty).unwrap(), None);
    let mut out = ctx.alloc::<i32>(0).unwrap();
    ctx.inclusive_scan(&empty, &mut out).unwrap();
    ctx.exclusive_scan(&empty, &mut out.as_slice_mut(), 5).unwrap();
});

backend_test!(views_past_the_end_are_errors, |ctx| {
    let mut buf = ctx.upload(&ints(10)).unwrap();
    assert!(matches!(buf.slice(5..11), Err(Error::OutOfRange { start: 5, end: 11, len: 10, .. })));
    assert!(matches!(buf.slice(11..), Err(Error::OutOfRange { .. })));
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = buf.slice(6..5);
    assert!(matches!(backwards, Err(Error::OutOfRange { .. })));
    assert!(matches!(buf.slice_mut(0..=10), Err(Error::OutOfRange { .. })));
    assert!(matches!(buf.slice(usize::MAX..), Err(Error::OutOfRange { .. })));
    let view = buf.slice(2..8).unwrap();
    assert!(matches!(view.slice(0..7), Err(Error::OutOfRange { .. })));
    let mut short = [0i32; 3];
    assert!(matches!(buf.copy_to_host_at(9, &mut short), Err(Error::OutOfRange { .. })));
    assert!(matches!(buf.copy_from_host_at(8, &[1, 2, 3]), Err(Error::OutOfRange { .. })));
});

backend_test!(raw_pointer_views_are_checked, |ctx| {
    let data = ints(64);
    let owned = ctx.upload(&data).unwrap();
    let base = owned.addr();
    // SAFETY: `owned` outlives every view below and nothing else writes it.
    unsafe {
        let view = DeviceSlice::<i32>::from_raw_parts(ctx, base + 8, 60).unwrap();
        assert_eq!(ctx.sum(view).unwrap(), data[2..62].iter().sum::<i32>());
        assert!(matches!(
            DeviceSlice::<i32>::from_raw_parts(ctx, base + 2, 4),
            Err(Error::Misaligned { align: 4, .. })
        ));
        assert!(matches!(DeviceSlice::<i32>::from_raw_parts(ctx, base + 8, 63), Err(Error::OutOfRange { .. })));
        assert!(matches!(DeviceSlice::<i32>::from_raw_parts(ctx, base, usize::MAX / 2), Err(Error::TooLarge { .. })));
        let host = [0u64; 16];
        assert!(matches!(
            DeviceSlice::<u64>::from_raw_parts(ctx, host.as_ptr() as u64, 16),
            Err(Error::ForeignMemory { .. })
        ));
        let mut out = ctx.alloc::<i32>(64).unwrap();
        out.poison().unwrap();
        let mut dst = DeviceSliceMut::<i32>::from_raw_parts(ctx, out.addr(), 64).unwrap();
        ctx.inclusive_scan(&owned, &mut dst).unwrap();
        assert_eq!(out.to_vec().unwrap(), prefix(&data));
        // Zero-length views are valid anywhere inside, or at the end.
        let none = DeviceSlice::<i32>::from_raw_parts(ctx, base + 256, 0).unwrap();
        assert_eq!(ctx.sum(none).unwrap(), 0);
    }
});

backend_test!(allocation_overflow_is_an_error_not_a_panic, |ctx| {
    assert!(matches!(ctx.alloc::<f32>(usize::MAX / 8), Err(Error::TooLarge { .. } | Error::OutOfMemory { .. })));
    assert!(matches!(ctx.alloc::<f64>(usize::MAX / 4), Err(Error::TooLarge { .. })));
    assert!(matches!(ctx.alloc::<u64>(usize::MAX), Err(Error::TooLarge { .. })));
    assert!(matches!(ctx.alloc::<u8>(1 << 52), Err(Error::OutOfMemory { .. })));
});

backend_test!(memory_of_another_context_is_refused_or_shared, |ctx| {
    let data = ints(500);
    match ctx.backend() {
        BackendKind::Emulator => {
            let other = Context::emulator();
            let x = other.upload(&data).unwrap();
            assert!(matches!(ctx.sum(&x), Err(Error::ForeignMemory { .. })));
            let mut y = ctx.alloc::<i32>(500).unwrap();
            assert!(matches!(other.inclusive_scan(&x, &mut y), Err(Error::ForeignMemory { .. })));
        }
        BackendKind::Cuda => {
            // Two contexts on one device share its primary context: memory
            // of one is usable by the other, once ordered (here: synchronised).
            let other = Context::cuda_device(0).unwrap();
            let x = other.upload(&data).unwrap();
            other.synchronize().unwrap();
            assert_eq!(ctx.sum(&x).unwrap(), data.iter().sum::<i32>());
            if Context::device_count() >= 2 {
                let second = Context::cuda_device(1).unwrap();
                let z = second.upload(&data).unwrap();
                assert_eq!(second.sum(&z).unwrap(), data.iter().sum::<i32>());
                assert!(matches!(ctx.sum(&z), Err(Error::ForeignMemory { .. })));
            }
            assert!(matches!(Context::cuda_device(Context::device_count()), Err(Error::NoCuda { .. })));
        }
    }
});

backend_test!(forked_streams_are_ordered_by_events, |ctx| {
    let n = if ctx.backend() == BackendKind::Cuda { 1 << 22 } else { 5000 };
    let data = ints(n);
    let other = ctx.fork().unwrap();
    let x = ctx.upload(&data).unwrap();
    let mut y = ctx.alloc::<i32>(n).unwrap();
    y.poison().unwrap();
    ctx.inclusive_scan(&x, &mut y).unwrap();
    let done = ctx.record_event().unwrap();
    other.wait_event(&done).unwrap();
    let mut total = other.alloc::<i32>(1).unwrap();
    other.reducer().max_into(&y, &mut total).unwrap();
    let want = prefix(&data).into_iter().max().unwrap();
    assert_eq!(total.to_vec().unwrap(), [want]);
});

/// cudarc's memory and streams, as a caller with their own CUDA code has
/// them. CUDA only: cudarc types cannot exist without a device.
#[test]
fn cudarc_slices_and_streams_work_with_gpuprim() {
    let Some(_ctx) = gpuprim_tests::context(BackendKind::Cuda, "interop::cudarc_slices_and_streams_work_with_gpuprim")
    else {
        return;
    };
    let cu = gpuprim::cudarc::driver::CudaContext::new(0).unwrap();
    let stream = cu.new_stream().unwrap();
    let ctx = Context::from_cudarc_stream(stream.clone()).unwrap();
    let data = ints(100_000);
    let x = stream.clone_htod(&data).unwrap();
    assert_eq!(ctx.sum(&x).unwrap(), data.iter().sum::<i32>());
    assert_eq!(ctx.sum(x.slice(10..20)).unwrap(), data[10..20].iter().sum::<i32>());
    let mut y = stream.alloc_zeros::<i32>(data.len()).unwrap();
    ctx.inclusive_scan(&x, &mut y).unwrap();
    ctx.exclusive_scan(&x.slice(0..1000), &mut y.slice_mut(5000..6000), 7).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    let want = prefix(&data);
    assert_eq!(&got[..5000], &want[..5000]);
    let ex: Vec<i32> = std::iter::once(7).chain(prefix(&data[..999]).into_iter().map(|v| v.wrapping_add(7))).collect();
    assert_eq!(&got[5000..6000], &ex[..]);
    assert_eq!(&got[6000..], &want[6000..]);
    // A gpuprim buffer is usable by the caller's stream after an event.
    let mut out = ctx.alloc::<i32>(1).unwrap();
    ctx.sum_into(&x, &mut out).unwrap();
    let event = ctx.record_event().unwrap();
    stream.wait(event.as_cudarc().unwrap()).unwrap();
    assert_eq!(out.to_vec().unwrap(), [data.iter().sum::<i32>()]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    /// Views of any range of a buffer reduce like the same range on the
    /// host, and any range past the end is an error.
    #[test]
    fn any_range_of_a_buffer_sums_like_the_host(len in 0usize..300, a in 0usize..320, b in 0usize..320) {
        let ctx = Context::emulator();
        let data = ints(len);
        let buf = ctx.upload(&data).unwrap();
        match buf.slice(a..b) {
            Ok(v) => {
                prop_assert!(a <= b && b <= len);
                prop_assert_eq!(ctx.sum(v).unwrap(), data[a..b].iter().sum::<i32>());
            }
            Err(Error::OutOfRange { .. }) => prop_assert!(a > b || b > len),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}
