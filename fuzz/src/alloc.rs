//! A global allocator that measures, per thread, the largest single
//! allocation made while a probe is on ([`largest_during`]): the checks' proof
//! that a decoder allocates in proportion to its input, never to a length the
//! input declares. Everything else goes straight to `System`. The fuzz
//! target and the regression test install it (`#[global_allocator]`); a check
//! run without it fails ([`installed`]) rather than pass unmeasured.

// A `GlobalAlloc` impl is unsafe by definition; this one only forwards to the
// system allocator and records sizes in plain thread-locals and one atomic
// (no allocation, no destructor), so it cannot break the allocator's contract.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

static SEEN: AtomicBool = AtomicBool::new(false);

/// The system allocator, measured on the threads whose probe is on.
///
/// # Examples
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
///
/// let (v, largest) = zk_fuzz::alloc::largest_during(|| vec![0u8; 1000]);
/// assert_eq!((v.len(), largest), (1000, 1000));
/// assert!(zk_fuzz::alloc::installed());
/// ```
#[derive(Debug)]
pub struct Probe;

fn record(size: usize) {
    let _ = ON.try_with(|on| {
        if on.get() {
            SEEN.store(true, Ordering::Relaxed);
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; `record` only touches `Cell`s and an atomic.
unsafe impl GlobalAlloc for Probe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Runs `f` and returns its result and the largest single allocation (in
/// bytes; 0 for none) this thread made during it.
///
/// # Examples
///
/// ```
/// let ((), largest) = zk_fuzz::alloc::largest_during(|| ());
/// assert_eq!(largest, 0);
/// ```
pub fn largest_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|l| l.set(0));
    ON.with(|on| on.set(true));
    let r = f();
    ON.with(|on| on.set(false));
    (r, LARGEST.with(Cell::get))
}

/// Whether [`Probe`] is the process's global allocator: true once it has
/// measured an allocation (this function makes one under the probe).
///
/// # Examples
///
/// ```
/// // Not installed in this doctest: nothing would be measured.
/// assert!(!zk_fuzz::alloc::installed());
/// ```
pub fn installed() -> bool {
    if !SEEN.load(Ordering::Relaxed) {
        let _ = largest_during(|| std::hint::black_box(vec![0u8; 1]));
    }
    SEEN.load(Ordering::Relaxed)
}
