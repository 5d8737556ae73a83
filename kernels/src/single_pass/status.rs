//! Per-tile status of the single-pass scans: a ticket counter and, for
//! every tile, a flag with a value.
//!
//! Flags: [`INVALID`] (nothing yet; zeroed memory), [`AGGREGATE`] (the
//! tile's own total is known), [`PREFIX`] (the inclusive prefix through
//! this tile, from tile 0, is known). A tile's flag only moves forward,
//! `INVALID -> AGGREGATE -> PREFIX` (or straight to `PREFIX`), and each
//! (tile, flag) is published once, by one thread.
//!
//! Layout of the temporary storage (the ticket counter and the flags must
//! start at 0: cleared by the `scan_clear` kernel before the launch, or,
//! in double-buffered storage, by the previous launch — see
//! [`clear_words`]):
//!
//! ```text
//! byte 0    ticket counter (u32), padding to 16 bytes
//! byte 16   status[tiles][W]   u64 = flag << 32 | 32-bit chunk of the value
//!           (W = size_of::<T>() / 4: one word for 4-byte types, two for
//!           8-byte, four for 16-byte)
//! ```
//!
//! **Memory ordering, without fences.** Every 32-bit chunk of a value
//! travels in the same 64-bit word as the flag, so no word's meaning
//! depends on the order in which *other* addresses become visible:
//! * The writer publishes each word with a relaxed device-scope atomic
//!   compare-and-swap (`atom.relaxed.gpu.cas.b64`; it knows the word's
//!   current content, its own earlier publication or zero). An aligned
//!   64-bit atomic is single-copy atomic: a reader sees a word's old or new
//!   content, never a mix.
//! * The reader loads each word with `ld.relaxed.gpu` (a strong load that
//!   reads L2, never a stale L1 line; it orders nothing else, and needs
//!   not: an acquire load would add an L1 invalidation, `CCTL.IVALL`, to
//!   every spin) and accepts the value only when all `W` words carry the
//!   same non-INVALID flag: each flag is written into each word exactly
//!   once, so equal flags mean every chunk comes from that one
//!   publication. A mix (the writer is between words) is read again.
//!
//! The obvious alternative, a plain store of the value followed by a
//! `st.release.gpu` of a separate flag, compiles to `MEMBAR.ALL.GPU`
//! before the flag: the publishing thread then waits for *all* its
//! outstanding loads and stores — its prefetched next tile, its previous
//! tile's stores — before the flag leaves, and every successor's
//! look-back waits with it.

use crate::gpu::{self, Shared, atomic, global};
use crate::ops::Item;
use core::marker::PhantomData;
use core::mem::size_of;

/// No information about the tile yet.
pub const INVALID: u32 = 0;
/// The tile's own total is published.
pub const AGGREGATE: u32 = 1;
/// The inclusive prefix through the tile is published.
pub const PREFIX: u32 = 2;

/// Bytes before the per-tile status (the ticket counter, padded).
pub const HEADER_BYTES: u64 = 16;

/// Status words per tile for values of `T` (one per 32-bit chunk).
pub const fn words_per_tile<T>() -> usize {
    size_of::<T>().div_ceil(4)
}

/// Bytes of temporary storage for `tiles` tiles of `T`.
pub const fn status_bytes<T>(tiles: u64) -> u64 {
    HEADER_BYTES + 8 * words_per_tile::<T>() as u64 * tiles
}

/// Copy the first `size_of::<T>()` bytes of `words` into a `T`
/// (`T` at most 16 bytes of plain data).
#[inline(always)]
pub fn from_words<T: Item>(words: [u64; 2]) -> T {
    const { assert!(size_of::<T>() <= 16, "values travel in at most 16 bytes") };
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: 16 readable bytes, at most 16 written; `Item` types are
    // plain data valid for any bit pattern (the `Shuffle` contract).
    unsafe {
        core::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size_of::<T>());
        out.assume_init()
    }
}

/// The bytes of `v` in two 64-bit words (zero beyond `size_of::<T>()`).
#[inline(always)]
pub fn to_words<T: Item>(v: T) -> [u64; 2] {
    const { assert!(size_of::<T>() <= 16, "values travel in at most 16 bytes") };
    let mut words = [0u64; 2];
    // SAFETY: reads size_of::<T>() bytes of `v`, writes as many into 16.
    unsafe {
        core::ptr::copy_nonoverlapping(&v as *const T as *const u8, words.as_mut_ptr() as *mut u8, size_of::<T>())
    };
    words
}

/// 32-bit chunk `i` of `v`'s bytes.
#[inline(always)]
fn chunk<T: Item>(v: T, i: usize) -> u64 {
    let w = to_words(v);
    (w[i / 2] >> (32 * (i % 2))) & 0xFFFF_FFFF
}

/// The status of every tile of one single-pass launch, in the temporary
/// storage at `temp`.
#[derive(Clone, Copy)]
pub struct TileStatus<T> {
    temp: *mut u64,
    _t: PhantomData<T>,
}

impl<T: Item> TileStatus<T> {
    /// The status of the tiles in the storage at `temp`
    /// ([`status_bytes`] long for the launch's tile count).
    #[inline(always)]
    pub fn new(temp: *mut u64) -> Self {
        TileStatus { temp, _t: PhantomData }
    }

    /// The ticket counter.
    #[inline(always)]
    pub fn counter(&self) -> *mut u32 {
        self.temp as *mut u32
    }

    /// This block's tile index: thread 0 takes the next ticket from the
    /// counter and hands it to the block through `slot` (one `u32` of
    /// shared memory). Relaxed is enough: the counter only hands out
    /// indices; data moves through the status words. Ends with a barrier,
    /// except in a launch of one block, which takes tile 0 at once.
    ///
    /// # Safety
    /// The storage is live; `slot` lies inside the launch's shared memory;
    /// every thread of the block calls it.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn take_ticket(&self, slot: Shared<u32>) -> u32 {
        // A launch of one block has one tile: no round trip to the counter.
        // Uniform over the block, so no thread waits at a barrier alone.
        if gpu::grid_dim() == 1 {
            return 0;
        }
        if gpu::thread_idx() == 0 {
            // SAFETY: the counter is the storage's first word; slot 0 is
            // inside shared memory (caller).
            let ticket = unsafe { atomic::add(self.counter(), 1u32) };
            unsafe { slot.store(0, ticket) };
        }
        gpu::sync_threads();
        // SAFETY: written before the barrier.
        unsafe { slot.load(0) }
    }

    /// Word `i` of `tile`'s status.
    #[inline(always)]
    fn word(&self, tile: u32, i: usize) -> *mut u64 {
        self.temp.wrapping_add(HEADER_BYTES as usize / 8 + tile as usize * words_per_tile::<T>() + i)
    }

    /// Publish `flag` (`AGGREGATE` or `PREFIX`) with value `v` for `tile`;
    /// `earlier` is the aggregate this thread published for it before, if
    /// any (the words' current content).
    ///
    /// # Safety
    /// `tile` is below the launch's tile count, the storage is live; each
    /// (tile, flag) is published once, by one thread.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn publish(&self, tile: u32, flag: u32, v: T, earlier: Option<T>) {
        for i in 0..words_per_tile::<T>() {
            let old = match earlier {
                Some(a) => (AGGREGATE as u64) << 32 | chunk(a, i),
                None => 0,
            };
            let new = (flag as u64) << 32 | chunk(v, i);
            // Relaxed CAS: the word carries its own flag, so nothing else
            // needs ordering (see the module docs). It cannot fail: only
            // this thread writes the word, and `old` is what it holds.
            // SAFETY: inside the status array.
            unsafe { atomic::cas_u64(self.word(tile, i), old, new) };
        }
    }

    /// One strong read of every word of `tile`'s status (relaxed: see the
    /// module docs), without waiting; [`Self::decode`] tells whether it is
    /// complete. Split from the decoding so that a thread can have several
    /// tiles' reads in flight at once.
    ///
    /// # Safety
    /// `tile` is below the launch's tile count, the storage is live.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read(&self, tile: u32) -> [u64; 4] {
        let mut raw = [0u64; 4];
        let w = words_per_tile::<T>();
        if w != 2 && w != 4 {
            for (i, word) in raw.iter_mut().enumerate().take(w) {
                // SAFETY: inside the status array (caller).
                *word = unsafe { atomic::load_relaxed_u64(self.word(tile, i)) };
            }
        } else {
            // Pairs of words in one 16-byte load: a warp reading 32 tiles'
            // status then asks for whole sectors, not every other 8 bytes
            // of them (ncu counted the 8-byte loads' waste at 6% of all the
            // sectors of a 2^28 f64 scan). A tile's words start 16-byte
            // aligned: the header is 16 bytes, each tile 16 or 32.
            for pair in 0..w / 2 {
                // SAFETY: inside the status array (caller), aligned as above.
                let [a, b] = unsafe { atomic::load_relaxed_u64x2(self.word(tile, 2 * pair)) };
                raw[2 * pair] = a;
                raw[2 * pair + 1] = b;
            }
        }
        raw
    }

    /// The flag and value of a [`Self::read`], or `None` while the tile is
    /// INVALID or its words carry different flags (the writer was between
    /// words): read it again.
    #[inline(always)]
    pub fn decode(raw: [u64; 4]) -> Option<(u32, T)> {
        let flag = (raw[0] >> 32) as u32;
        let mut same = flag != INVALID;
        let mut bytes = [0u64; 2];
        for i in 0..4 {
            if i < words_per_tile::<T>() {
                same &= (raw[i] >> 32) as u32 == flag;
                bytes[i / 2] |= (raw[i] & 0xFFFF_FFFF) << (32 * (i % 2));
            }
        }
        if same { Some((flag, from_words(bytes))) } else { None }
    }

    /// Spin until `tile` has a flag other than `INVALID` in all its words;
    /// return the flag and its value. In a launch of at least
    /// [`SLEEP_MIN_BLOCKS`] blocks the thread sleeps `POLL_NS` nanoseconds
    /// between reads (0: not at all), so that fewer reads that find
    /// nothing new compete at L2 with the reads and publishes that do
    /// (CUB's look-back does the same, with a delay tuned per primitive;
    /// small launches, where the look-back's latency is the launch's, poll
    /// without a pause).
    ///
    /// # Safety
    /// `tile` is below the launch's tile count, the storage is live, and
    /// the tile's block is running or done (else this never returns).
    #[inline(always)]
    #[track_caller]
    pub unsafe fn wait<const POLL_NS: u32>(&self, tile: u32) -> (u32, T) {
        loop {
            // SAFETY: the caller's contract.
            if let Some(got) = Self::decode(unsafe { self.read(tile) }) {
                return got;
            }
            if POLL_NS > 0 && gpu::grid_dim() >= SLEEP_MIN_BLOCKS {
                gpu::nanosleep(POLL_NS);
            }
        }
    }
}

/// The launches whose look-backs sleep (before the first status read, and
/// between reads of an INVALID status): those of at least this many
/// blocks, as CUB's. In smaller ones the look-back's latency is the
/// launch's, and there are too few tiles for the reads to crowd L2.
pub const SLEEP_MIN_BLOCKS: u32 = 500;

/// Zero `words` 64-bit words at `p`, grid-stride: a scan's status region
/// before a launch (the `scan_clear` kernel), or, from inside a
/// single-pass launch, the *other* region of double-buffered temporary
/// storage, which the next launch will use (nothing reads it during this
/// one, so no ordering is needed; the launch boundary makes the zeros
/// visible to the next launch).
///
/// # Safety
/// `p` holds `words` words of device memory that no other thread of the
/// launch accesses.
#[inline(always)]
pub unsafe fn clear_words<const B: u32>(p: *mut u64, words: u64) {
    let stride = B as u64 * gpu::grid_dim() as u64;
    let mut i = gpu::block_idx() as u64 * B as u64 + gpu::thread_idx() as u64;
    while i < words {
        // SAFETY: i < words.
        unsafe { global::store(p.add(i as usize), 0) };
        i += stride;
    }
}
