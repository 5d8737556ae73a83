//! The CPU emulator: runs the kernels' host build on emulated blocks, warps
//! and threads.
//!
//! * Every kernel thread is a stackful coroutine. A seeded random scheduler
//!   picks which runnable thread goes next, and threads give way at every
//!   barrier, shuffle, atomic and acquire load, and at random shared-memory
//!   accesses: lanes of a warp do not run in lockstep, as on sm_70 and later.
//! * Up to [`EmuConfig::resident_blocks`] blocks are resident at once and
//!   blocks start in a seeded random order, so a kernel that waits on
//!   another block must arrange its own forward progress (ticket counters).
//! * Each block has its own dynamic shared memory, sized at launch, with a
//!   shadow that records the last writer and reader of every 2-byte unit
//!   (so that neighbouring threads' `u16` slots are not one location).
//!   An access that conflicts with another thread's access, with no barrier
//!   (block or warp) completed in between, is a data race and an error; so
//!   are accesses beyond the launch size or outside any device allocation.
//! * `sync_threads` is a real barrier of the block's live threads: threads
//!   waiting at different call sites, or a barrier some threads exit
//!   without reaching, are errors, not hangs. Shuffles exchange values among
//!   the lanes named in the mask once all of them have arrived.
//! * A kernel that spins on an acquire load which no running thread will
//!   ever satisfy is reported after [`EmuConfig::spin_limit`] spins.
//!
//! The same seed gives the same schedule, so every failure reproduces.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use gpuprim_kernels::gpu::emu::{self as hooks, Hooks, Ids};
use gpuprim_kernels::gpu::warp::ShflMode;
use gpuprim_kernels::{Arg, HostKernel};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, Location};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Settings of the emulator.
#[derive(Clone, Debug)]
pub struct EmuConfig {
    /// Seed of the scheduler; the same seed gives the same interleaving.
    /// Default: `GPUPRIM_EMU_SEED` from the environment, else a fixed value.
    pub seed: u64,
    /// Blocks resident at once (default 4).
    pub resident_blocks: u32,
    /// A shared-memory access gives way to another thread with probability
    /// 1 in this (default 4; 0 never).
    pub preempt_one_in: u32,
    /// Spins on acquire loads without other progress before the launch is
    /// declared stuck (default 2^22).
    pub spin_limit: u64,
    /// Stack bytes per emulated thread (default 128 KiB).
    pub stack_bytes: usize,
}

impl Default for EmuConfig {
    fn default() -> Self {
        let seed = std::env::var("GPUPRIM_EMU_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_CAFE);
        EmuConfig { seed, resident_blocks: 4, preempt_one_in: 4, spin_limit: 1 << 22, stack_bytes: 128 * 1024 }
    }
}

/// What went wrong inside an emulated launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Two threads touched the same shared location (2-byte unit) with no
    /// barrier between.
    DataRace { first: String, second: String, offset: usize },
    /// Shared-memory access outside the dynamic size of the launch.
    SharedOutOfBounds { offset: isize, bytes: usize, size: usize },
    /// Global access outside every live allocation.
    GlobalOutOfBounds { addr: usize, bytes: usize },
    /// Access not aligned to its size.
    Misaligned { addr: usize, bytes: usize },
    /// Threads of a block wait at different `sync_threads` calls.
    BarrierMismatch { first: String, second: String },
    /// Some threads wait at a barrier that others exited without reaching.
    BarrierDivergence { waiting: u32, exited: u32, site: String },
    /// A shuffle or warp barrier whose named lanes do not all take part.
    WarpCollective { detail: String },
    /// Threads spin on a value no running thread will write.
    Stuck { spins: u64 },
    /// The kernel panicked (a bounds check, an assertion).
    Panic { message: String },
}

/// A fault with the thread that hit it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub block: u32,
    pub thread: u32,
    /// Source location in the kernel, where known.
    pub site: Option<String>,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::DataRace { first, second, offset } => write!(
                f,
                "data race on shared memory at byte {offset}: {first}, then {second}, with no barrier between"
            ),
            FaultKind::SharedOutOfBounds { offset, bytes, size } => {
                write!(f, "shared-memory access of {bytes} bytes at offset {offset} outside the launch's {size} bytes")
            }
            FaultKind::GlobalOutOfBounds { addr, bytes } => {
                write!(f, "global access of {bytes} bytes at {addr:#x} outside every device allocation")
            }
            FaultKind::Misaligned { addr, bytes } => write!(f, "misaligned {bytes}-byte access at {addr:#x}"),
            FaultKind::BarrierMismatch { first, second } => {
                write!(f, "threads of one block wait at different sync_threads calls ({first} and {second})")
            }
            FaultKind::BarrierDivergence { waiting, exited, site } => write!(
                f,
                "{waiting} threads wait at sync_threads ({site}) that {exited} threads of the block exited without reaching"
            ),
            FaultKind::WarpCollective { detail } => write!(f, "warp collective: {detail}"),
            FaultKind::Stuck { spins } => write!(
                f,
                "no progress after {spins} spins on acquire loads: the kernel waits for a value no running thread will write"
            ),
            FaultKind::Panic { message } => write!(f, "kernel panicked: {message}"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (block {}, thread {}", self.kind, self.block, self.thread)?;
        if let Some(site) = &self.site {
            write!(f, ", at {site}")?;
        }
        write!(f, ")")
    }
}

/// The emulated device: its allocations and a pool of coroutine stacks.
pub struct Emulator {
    config: EmuConfig,
    allocs: Mutex<BTreeMap<usize, usize>>,
    stacks: Mutex<Vec<DefaultStack>>,
    launches: AtomicU64,
}

/// Memory of the emulated device. 16-byte aligned; registered with the
/// emulator while alive, so kernels' global accesses can be checked.
pub struct EmuAlloc {
    mem: Box<[u128]>,
    bytes: usize,
}

impl EmuAlloc {
    pub fn addr(&self) -> u64 {
        if self.bytes == 0 { 0 } else { self.mem.as_ptr() as u64 }
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: u128 storage viewed as its bytes, within the allocation.
        unsafe { std::slice::from_raw_parts(self.mem.as_ptr() as *const u8, self.bytes) }
    }
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.mem.as_mut_ptr() as *mut u8, self.bytes) }
    }
}

impl Emulator {
    pub fn new(config: EmuConfig) -> Self {
        Emulator {
            config,
            allocs: Mutex::new(BTreeMap::new()),
            stacks: Mutex::new(Vec::new()),
            launches: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &EmuConfig {
        &self.config
    }

    /// Allocate `bytes` of device memory, filled with a poison pattern; an
    /// error (never an abort) when the host cannot provide it.
    pub fn alloc(&self, bytes: usize) -> Result<EmuAlloc, String> {
        let words = bytes.div_ceil(16);
        let mut mem: Vec<u128> = Vec::new();
        mem.try_reserve_exact(words).map_err(|e| format!("the host cannot provide it ({e})"))?;
        mem.resize(words, 0xA5A5_A5A5_A5A5_A5A5_A5A5_A5A5_A5A5_A5A5u128);
        let a = EmuAlloc { mem: mem.into_boxed_slice(), bytes };
        if bytes > 0 {
            self.allocs.lock().unwrap_or_else(|e| e.into_inner()).insert(a.addr() as usize, bytes);
        }
        Ok(a)
    }

    /// The live allocation `(start, bytes)` that holds all of
    /// `addr .. addr + bytes`, if one does.
    pub fn allocation_of(&self, addr: u64, bytes: usize) -> Option<(u64, usize)> {
        let allocs = self.allocs.lock().unwrap_or_else(|e| e.into_inner());
        let (&start, &len) = allocs.range(..=addr as usize).next_back()?;
        let end = (addr as usize).checked_add(bytes)?;
        (end <= start + len).then_some((start as u64, len))
    }

    /// This emulator's identity: memory of one emulator is foreign to
    /// another.
    pub fn id(&self) -> u64 {
        self as *const Emulator as u64
    }

    /// Return an allocation.
    pub fn free(&self, a: &EmuAlloc) {
        if a.bytes > 0 {
            self.allocs.lock().unwrap_or_else(|e| e.into_inner()).remove(&(a.addr() as usize));
        }
    }

    /// Run `kernel` to completion on a grid of `grid` blocks of `block`
    /// threads with `shared_bytes` of dynamic shared memory.
    pub fn launch(
        &self,
        kernel: &HostKernel,
        grid: u32,
        block: u32,
        shared_bytes: usize,
        args: &[Arg],
    ) -> Result<(), Fault> {
        let n = self.launches.fetch_add(1, Ordering::Relaxed);
        let allocs: Vec<(usize, usize)> =
            self.allocs.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(&s, &l)| (s, s + l)).collect();
        let mut stacks = std::mem::take(&mut *self.stacks.lock().unwrap_or_else(|e| e.into_inner()));
        let mut run = Launch {
            cfg: &self.config,
            rng: Cell::new(splitmix(self.config.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15))),
            allocs,
            fault: RefCell::new(None),
            spins: Cell::new(0),
        };
        let result = run.run(kernel, grid, block, shared_bytes, args, &mut stacks);
        self.stacks.lock().unwrap_or_else(|e| e.into_inner()).append(&mut stacks);
        result
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Why a thread gave way.
enum Event {
    Barrier(&'static Location<'static>),
    Collective,
    Preempt,
    Spin,
    Fault,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    AtBarrier,
    InCollective,
    Done,
}

/// One lane's part in a warp collective.
#[derive(Clone, Copy)]
struct Request {
    mask: u32,
    shuffle: Option<(ShflMode, u32)>,
    words: [u32; 8],
    len: usize,
    site: &'static Location<'static>,
}

/// Shadow of one 4-byte shared word: who last wrote and read it, and the
/// barrier generations at that time.
#[derive(Clone, Copy, Default)]
struct Shadow {
    writer: u16,
    /// The last reader, or [`MANY`] when several threads read since the
    /// last write.
    reader: u16,
    /// With several readers: the warp they all belong to, or `u16::MAX`.
    readers_warp: u16,
    write_gen: (u32, u32),
    read_gen: (u32, u32),
}
const NOBODY: u16 = 0;
const MANY: u16 = u16::MAX;

/// Bytes per race-tracking unit of shared memory: the smallest store the
/// kernels make to slots that neighbouring threads own (`u16` indices).
const SHADOW_UNIT: usize = 2;

struct Block {
    idx: u32,
    dim: u32,
    shared: Box<[u128]>,
    shared_bytes: usize,
    shadow: RefCell<Vec<Shadow>>,
    /// Completed block barriers.
    bar_gen: Cell<u32>,
    /// Completed collectives per warp.
    warp_gen: Vec<Cell<u32>>,
    states: Vec<Cell<State>>,
    barrier_site: Cell<Option<&'static Location<'static>>>,
    waiting: Cell<u32>,
    done: Cell<u32>,
    requests: RefCell<Vec<Option<Request>>>,
}

struct Thread {
    co: Option<Coroutine<(), Event, (), DefaultStack>>,
    ctx: Box<ThreadCtx>,
}

/// What kernel code sees of the emulator through [`Hooks`].
struct ThreadCtx {
    tid: u32,
    block: *const Block,
    launch: *const Launch<'static>,
    yielder: Cell<*const Yielder<(), Event>>,
    last_alloc: Cell<(usize, usize)>,
}

struct Launch<'a> {
    cfg: &'a EmuConfig,
    rng: Cell<u64>,
    allocs: Vec<(usize, usize)>,
    fault: RefCell<Option<Fault>>,
    spins: Cell<u64>,
}

impl Launch<'_> {
    fn next_rand(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    fn run(
        &mut self,
        kernel: &HostKernel,
        grid: u32,
        dim: u32,
        shared_bytes: usize,
        args: &[Arg],
        stacks: &mut Vec<DefaultStack>,
    ) -> Result<(), Fault> {
        // Blocks start in a seeded random order.
        let mut order: Vec<u32> = (0..grid).collect();
        for i in (1..order.len()).rev() {
            let j = (self.next_rand() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        let mut pending = order.into_iter();
        let slots = self.cfg.resident_blocks.max(1) as usize;
        let mut resident: Vec<Option<(Box<Block>, Vec<Thread>)>> = (0..slots).map(|_| None).collect();
        let mut runnable: Vec<(usize, u32)> = Vec::new();
        let launch_ptr = (self as *const Launch<'_>).cast::<Launch<'static>>();
        let ids_of = |b: &Block, t: u32| Ids { thread: t, block: b.idx, block_dim: b.dim, grid_dim: grid };

        let result = (|| -> Result<(), Fault> {
            loop {
                // Fill free slots with the next blocks.
                for (slot, entry) in resident.iter_mut().enumerate() {
                    if entry.is_none() {
                        let Some(idx) = pending.next() else { break };
                        let (b, threads) =
                            self.start_block(kernel, idx, dim, shared_bytes, args, stacks, launch_ptr)?;
                        for t in 0..dim {
                            runnable.push((slot, t));
                        }
                        *entry = Some((b, threads));
                    }
                }
                if runnable.is_empty() {
                    if resident.iter().all(Option::is_none) {
                        return Ok(());
                    }
                    return Err(self.stuck_without_runnable(&resident));
                }
                let pick = (self.next_rand() % runnable.len() as u64) as usize;
                let (slot, t) = runnable.swap_remove(pick);
                let Some((block, threads)) = resident[slot].as_mut() else { continue };
                let block: &Block = block;
                let th = &mut threads[t as usize];
                let Some(co) = th.co.as_mut() else { continue };
                // SAFETY: the context outlives this resume; `leave` follows.
                unsafe { hooks::enter(ids_of(block, t), &*th.ctx as &dyn Hooks) };
                let res = std::panic::catch_unwind(AssertUnwindSafe(|| co.resume(())));
                hooks::leave();
                match res {
                    Err(payload) => {
                        return Err(Fault {
                            kind: FaultKind::Panic { message: panic_message(&*payload) },
                            block: block.idx,
                            thread: t,
                            site: None,
                        });
                    }
                    Ok(CoroutineResult::Return(())) => {
                        block.states[t as usize].set(State::Done);
                        block.done.set(block.done.get() + 1);
                        self.spins.set(0);
                        if let Some(co) = th.co.take() {
                            stacks.push(co.into_stack());
                        }
                        if block.done.get() == block.dim {
                            resident[slot] = None;
                            continue;
                        }
                        // A barrier now waited on by all live threads has
                        // been skipped by the one that exited.
                        self.check_barrier(block, slot, &mut runnable)?;
                        self.check_collectives(block, slot, t / 32, None, &mut runnable)?;
                    }
                    Ok(CoroutineResult::Yield(ev)) => match ev {
                        Event::Preempt => {
                            self.spins.set(0);
                            runnable.push((slot, t));
                        }
                        Event::Spin => {
                            let s = self.spins.get() + 1;
                            self.spins.set(s);
                            if s > self.cfg.spin_limit {
                                return Err(Fault {
                                    kind: FaultKind::Stuck { spins: s },
                                    block: block.idx,
                                    thread: t,
                                    site: None,
                                });
                            }
                            runnable.push((slot, t));
                        }
                        Event::Barrier(site) => {
                            self.spins.set(0);
                            match block.barrier_site.get() {
                                Some(first) if first != site => {
                                    return Err(Fault {
                                        kind: FaultKind::BarrierMismatch {
                                            first: first.to_string(),
                                            second: site.to_string(),
                                        },
                                        block: block.idx,
                                        thread: t,
                                        site: Some(site.to_string()),
                                    });
                                }
                                _ => block.barrier_site.set(Some(site)),
                            }
                            block.states[t as usize].set(State::AtBarrier);
                            block.waiting.set(block.waiting.get() + 1);
                            self.check_barrier(block, slot, &mut runnable)?;
                        }
                        Event::Collective => {
                            self.spins.set(0);
                            block.states[t as usize].set(State::InCollective);
                            self.check_collectives(block, slot, t / 32, Some(t % 32), &mut runnable)?;
                        }
                        Event::Fault => {
                            let f = self.fault.borrow_mut().take();
                            return Err(f.unwrap_or(Fault {
                                kind: FaultKind::Panic { message: "unknown emulator fault".into() },
                                block: block.idx,
                                thread: t,
                                site: None,
                            }));
                        }
                    },
                }
            }
        })();

        // Unfinished coroutines unwind their stacks when dropped; keep the
        // stacks of finished ones.
        // Threads that never started are done once their closure is
        // dropped (`force_unwind` does that too); a stack whose coroutine
        // could not be finished is dropped rather than reused.
        for (_, threads) in resident.into_iter().flatten() {
            for th in threads {
                if let Some(mut co) = th.co {
                    if !co.done() {
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| co.force_unwind()));
                    }
                    if co.done() {
                        stacks.push(co.into_stack());
                    }
                }
            }
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn start_block(
        &self,
        kernel: &HostKernel,
        idx: u32,
        dim: u32,
        shared_bytes: usize,
        args: &[Arg],
        stacks: &mut Vec<DefaultStack>,
        launch: *const Launch<'static>,
    ) -> Result<(Box<Block>, Vec<Thread>), Fault> {
        let warps = dim.div_ceil(32) as usize;
        let block = Box::new(Block {
            idx,
            dim,
            shared: vec![0x5A5A_5A5A_5A5A_5A5A_5A5A_5A5A_5A5A_5A5Au128; shared_bytes.div_ceil(16)].into_boxed_slice(),
            shared_bytes,
            shadow: RefCell::new(vec![Shadow::default(); shared_bytes.div_ceil(SHADOW_UNIT)]),
            bar_gen: Cell::new(0),
            warp_gen: (0..warps).map(|_| Cell::new(0)).collect(),
            states: (0..dim).map(|_| Cell::new(State::Runnable)).collect(),
            barrier_site: Cell::new(None),
            waiting: Cell::new(0),
            done: Cell::new(0),
            requests: RefCell::new(vec![None; dim as usize]),
        });
        let func = kernel.func;
        let args_ptr = args as *const [Arg];
        let mut threads = Vec::with_capacity(dim as usize);
        for t in 0..dim {
            let ctx = Box::new(ThreadCtx {
                tid: t,
                block: &*block as *const Block,
                launch,
                yielder: Cell::new(std::ptr::null()),
                last_alloc: Cell::new((0, 0)),
            });
            let ctx_ptr = &*ctx as *const ThreadCtx;
            let stack = match stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(self.cfg.stack_bytes).map_err(|e| Fault {
                    kind: FaultKind::Panic { message: format!("cannot allocate an emulated thread's stack: {e}") },
                    block: idx,
                    thread: t,
                    site: None,
                })?,
            };
            let co = Coroutine::with_stack(stack, move |y: &Yielder<(), Event>, ()| {
                // SAFETY: the context and the arguments outlive the launch,
                // and every coroutine ends or is unwound before it returns.
                unsafe {
                    (*ctx_ptr).yielder.set(y as *const _);
                    func(&*args_ptr);
                }
            });
            threads.push(Thread { co: Some(co), ctx });
        }
        Ok((block, threads))
    }

    /// Release the barrier if every live thread waits at it; report one that
    /// exited threads will never reach.
    fn check_barrier(&self, b: &Block, slot: usize, runnable: &mut Vec<(usize, u32)>) -> Result<(), Fault> {
        let waiting = b.waiting.get();
        if waiting == 0 {
            return Ok(());
        }
        let live = b.dim - b.done.get();
        if waiting < live {
            return Ok(());
        }
        if b.done.get() > 0 {
            let t = (0..b.dim).find(|&t| b.states[t as usize].get() == State::AtBarrier).unwrap_or(0);
            return Err(Fault {
                kind: FaultKind::BarrierDivergence {
                    waiting,
                    exited: b.done.get(),
                    site: b.barrier_site.get().map(|s| s.to_string()).unwrap_or_default(),
                },
                block: b.idx,
                thread: t,
                site: b.barrier_site.get().map(|s| s.to_string()),
            });
        }
        b.bar_gen.set(b.bar_gen.get() + 1);
        b.waiting.set(0);
        b.barrier_site.set(None);
        for t in 0..b.dim {
            if b.states[t as usize].get() == State::AtBarrier {
                b.states[t as usize].set(State::Runnable);
                runnable.push((slot, t));
            }
        }
        Ok(())
    }

    /// Complete the collective of warp `w` that lane `arrived` joined (or,
    /// after a lane exited, any collective of that warp) once all its named
    /// lanes are there; report one that cannot complete.
    fn check_collectives(
        &self,
        b: &Block,
        slot: usize,
        w: u32,
        arrived: Option<u32>,
        runnable: &mut Vec<(usize, u32)>,
    ) -> Result<(), Fault> {
        {
            let base = w * 32;
            let lanes_in_block = (b.dim - base).min(32);
            let mut reqs = b.requests.borrow_mut();
            let lanes = match arrived {
                Some(l) => l..l + 1,
                None => 0..lanes_in_block,
            };
            for lane in lanes {
                let t = base + lane;
                if b.states[t as usize].get() != State::InCollective {
                    continue;
                }
                let Some(r) = reqs[t as usize] else { continue };
                let fault = |detail: String| Fault {
                    kind: FaultKind::WarpCollective { detail },
                    block: b.idx,
                    thread: t,
                    site: Some(r.site.to_string()),
                };
                if r.mask & (1 << lane) == 0 {
                    return Err(fault(format!("lane {lane} calls with mask {:#010x}, which does not name it", r.mask)));
                }
                let mut complete = true;
                for other in 0..32 {
                    if r.mask & (1 << other) == 0 {
                        continue;
                    }
                    if other >= lanes_in_block {
                        return Err(fault(format!(
                            "mask {:#010x} names lane {other}, which the block does not have",
                            r.mask
                        )));
                    }
                    let ot = (base + other) as usize;
                    match b.states[ot].get() {
                        State::Done => {
                            return Err(fault(format!(
                                "mask {:#010x} names lane {other}, which exited without taking part",
                                r.mask
                            )));
                        }
                        State::InCollective => {
                            let o = reqs[ot].as_ref().map(|o| (o.mask, o.shuffle.is_some(), o.len));
                            if o != Some((r.mask, r.shuffle.is_some(), r.len)) {
                                return Err(fault(format!(
                                    "lanes {lane} and {other} meet in different warp collectives (mask, kind or size differ)"
                                )));
                            }
                        }
                        _ => complete = false,
                    }
                }
                if !complete {
                    continue;
                }
                // Everyone is here: exchange.
                let before: Vec<Option<Request>> =
                    (0..32).map(|l| if l < lanes_in_block { reqs[(base + l) as usize] } else { None }).collect();
                for other in 0..32u32 {
                    if r.mask & (1 << other) == 0 {
                        continue;
                    }
                    let ot = (base + other) as usize;
                    let Some(mut me) = before[other as usize] else { continue };
                    if let Some((mode, arg)) = me.shuffle {
                        // `shfl.sync` uses the low five bits of the offset
                        // or lane (PTX `bval = b[4:0]`; seen on an H200:
                        // `down` by 33 reads lane + 1).
                        let bval = arg & 31;
                        let src = match mode {
                            ShflMode::Down => Some(other + bval).filter(|&s| s < 32).unwrap_or(other),
                            ShflMode::Up => other.checked_sub(bval).unwrap_or(other),
                            ShflMode::Xor => other ^ bval,
                            ShflMode::Idx => bval,
                        };
                        if r.mask & (1 << src) == 0 {
                            return Err(Fault {
                                kind: FaultKind::WarpCollective {
                                    detail: format!(
                                        "lane {other} reads lane {src}, which mask {:#010x} does not name",
                                        r.mask
                                    ),
                                },
                                block: b.idx,
                                thread: ot as u32,
                                site: Some(me.site.to_string()),
                            });
                        }
                        if let Some(s) = before[src as usize] {
                            me.words = s.words;
                        }
                    }
                    reqs[ot] = Some(me);
                    b.states[ot].set(State::Runnable);
                    runnable.push((slot, ot as u32));
                }
                b.warp_gen[w as usize].set(b.warp_gen[w as usize].get() + 1);
                break;
            }
        }
        Ok(())
    }

    fn stuck_without_runnable(&self, resident: &[Option<(Box<Block>, Vec<Thread>)>]) -> Fault {
        for (b, _) in resident.iter().flatten() {
            for t in 0..b.dim {
                match b.states[t as usize].get() {
                    State::InCollective => {
                        return Fault {
                            kind: FaultKind::WarpCollective {
                                detail: "a shuffle or warp barrier waits for lanes that never arrive".into(),
                            },
                            block: b.idx,
                            thread: t,
                            site: b.requests.borrow()[t as usize].map(|r| r.site.to_string()),
                        };
                    }
                    State::AtBarrier => {
                        return Fault {
                            kind: FaultKind::BarrierDivergence {
                                waiting: b.waiting.get(),
                                exited: b.done.get(),
                                site: b.barrier_site.get().map(|s| s.to_string()).unwrap_or_default(),
                            },
                            block: b.idx,
                            thread: t,
                            site: b.barrier_site.get().map(|s| s.to_string()),
                        };
                    }
                    _ => {}
                }
            }
        }
        Fault {
            kind: FaultKind::Panic { message: "emulator scheduler lost track of threads".into() },
            block: 0,
            thread: 0,
            site: None,
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl ThreadCtx {
    fn block(&self) -> &Block {
        // SAFETY: the block outlives its threads' coroutines.
        unsafe { &*self.block }
    }
    fn launch(&self) -> &Launch<'static> {
        // SAFETY: the launch outlives every coroutine it runs.
        unsafe { &*self.launch }
    }
    fn suspend(&self, ev: Event) {
        // SAFETY: set when the coroutine started; valid while it runs.
        let y = unsafe { &*self.yielder.get() };
        y.suspend(ev);
    }
    /// Record a fault and stop this thread for good.
    fn fault(&self, kind: FaultKind, site: &'static Location<'static>) -> ! {
        *self.launch().fault.borrow_mut() =
            Some(Fault { kind, block: self.block().idx, thread: self.tid, site: Some(site.to_string()) });
        self.suspend(Event::Fault);
        // The scheduler never resumes a faulted thread; it unwinds it.
        unreachable!("a faulted emulated thread was resumed")
    }
    fn gens(&self, b: &Block, tid: u32) -> (u32, u32) {
        (b.bar_gen.get(), b.warp_gen[(tid / 32) as usize].get())
    }
    /// Whether an access by `other` stamped `stamp` happens before now.
    fn ordered(&self, b: &Block, other: u16, stamp: (u32, u32)) -> bool {
        let other = (other - 1) as u32;
        b.bar_gen.get() > stamp.0 || (other / 32 == self.tid / 32 && b.warp_gen[(other / 32) as usize].get() > stamp.1)
    }
}

fn describe(tid: u16, write: bool) -> String {
    if tid == MANY {
        "several threads read".to_string()
    } else {
        format!("thread {} {}", tid - 1, if write { "wrote" } else { "read" })
    }
}

impl Hooks for ThreadCtx {
    fn sync_threads(&self, site: &'static Location<'static>) {
        self.suspend(Event::Barrier(site));
    }

    fn sync_warp(&self, mask: u32, site: &'static Location<'static>) {
        let b = self.block();
        b.requests.borrow_mut()[self.tid as usize] = Some(Request { mask, shuffle: None, words: [0; 8], len: 0, site });
        self.suspend(Event::Collective);
    }

    fn shuffle(&self, mask: u32, mode: ShflMode, arg: u32, words: &mut [u32], site: &'static Location<'static>) {
        let b = self.block();
        let mut w = [0u32; 8];
        w[..words.len()].copy_from_slice(words);
        b.requests.borrow_mut()[self.tid as usize] =
            Some(Request { mask, shuffle: Some((mode, arg)), words: w, len: words.len(), site });
        self.suspend(Event::Collective);
        let got = b.requests.borrow_mut()[self.tid as usize].take();
        if let Some(r) = got {
            words.copy_from_slice(&r.words[..words.len()]);
        }
    }

    fn shared_base(&self) -> *mut u8 {
        self.block().shared.as_ptr() as *mut u8
    }

    fn shared_access(&self, addr: *const u8, bytes: usize, write: bool, site: &'static Location<'static>) {
        let b = self.block();
        let base = b.shared.as_ptr() as usize;
        let offset = (addr as isize).wrapping_sub(base as isize);
        if offset < 0 || offset as usize + bytes > b.shared_bytes {
            self.fault(FaultKind::SharedOutOfBounds { offset, bytes, size: b.shared_bytes }, site);
        }
        let offset = offset as usize;
        if bytes.is_power_of_two() && !offset.is_multiple_of(bytes.min(16)) {
            self.fault(FaultKind::Misaligned { addr: addr as usize, bytes }, site);
        }
        let me = (self.tid + 1) as u16;
        let now = self.gens(b, self.tid);
        let mut race = None;
        {
            let mut shadow = b.shadow.borrow_mut();
            for word in offset / SHADOW_UNIT..(offset + bytes).div_ceil(SHADOW_UNIT) {
                let s = &mut shadow[word];
                if s.writer != NOBODY && s.writer != me && !self.ordered(b, s.writer, s.write_gen) {
                    race = Some((describe(s.writer, true), word));
                    break;
                }
                if write {
                    if s.reader != NOBODY && s.reader != me && !self.reads_ordered(b, s) {
                        race = Some((describe(s.reader, false), word));
                        break;
                    }
                    *s = Shadow { writer: me, reader: NOBODY, readers_warp: 0, write_gen: now, read_gen: (0, 0) };
                } else if s.reader == NOBODY || s.reader == me || self.reads_ordered(b, s) {
                    s.reader = me;
                    s.readers_warp = (self.tid / 32) as u16;
                    s.read_gen = now;
                } else {
                    // Several readers since the last ordering point: keep
                    // the latest stamp (the binding one) and whether they
                    // all share a warp.
                    let w = (self.tid / 32) as u16;
                    if s.readers_warp != w {
                        s.readers_warp = u16::MAX;
                    }
                    s.reader = MANY;
                    s.read_gen = now;
                }
            }
        }
        if let Some((first, word)) = race {
            let second = format!("thread {} {}", self.tid, if write { "writes" } else { "reads" });
            self.fault(FaultKind::DataRace { first, second, offset: word * SHADOW_UNIT }, site);
        }
        let p = self.launch().cfg.preempt_one_in;
        if p != 0 && self.launch().next_rand().is_multiple_of(p as u64) {
            self.suspend(Event::Preempt);
        }
    }

    fn global_access(&self, addr: *const u8, bytes: usize, _write: bool, site: &'static Location<'static>) {
        let a = addr as usize;
        let (lo, hi) = self.last_alloc.get();
        if a >= lo && a + bytes <= hi && bytes > 0 {
            if !a.is_multiple_of(bytes.min(16)) && bytes.is_power_of_two() {
                self.fault(FaultKind::Misaligned { addr: a, bytes }, site);
            }
            return;
        }
        let allocs = &self.launch().allocs;
        let i = allocs.partition_point(|&(s, _)| s <= a);
        if i > 0 {
            let (s, e) = allocs[i - 1];
            if a + bytes <= e {
                self.last_alloc.set((s, e));
                if bytes.is_power_of_two() && !a.is_multiple_of(bytes.min(16)) {
                    self.fault(FaultKind::Misaligned { addr: a, bytes }, site);
                }
                return;
            }
        }
        self.fault(FaultKind::GlobalOutOfBounds { addr: a, bytes }, site);
    }

    fn atomic_point(&self) {
        if self.launch().next_rand().is_multiple_of(2) {
            self.suspend(Event::Preempt);
        }
    }

    fn spin_point(&self) {
        self.suspend(Event::Spin);
    }
}

impl ThreadCtx {
    /// Whether every read recorded in `s` happens before now: a block
    /// barrier since the latest one, or a barrier of the readers' warp when
    /// they and this thread share it.
    fn reads_ordered(&self, b: &Block, s: &Shadow) -> bool {
        if s.reader != MANY {
            return self.ordered(b, s.reader, s.read_gen);
        }
        let mine = (self.tid / 32) as u16;
        b.bar_gen.get() > s.read_gen.0 || (s.readers_warp == mine && b.warp_gen[mine as usize].get() > s.read_gen.1)
    }
}
