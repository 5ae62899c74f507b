//! Live heap bytes, for figures that compare with a JVM's heap in use (the
//! cache's memory per node): a wrapper around the system allocator that
//! counts the bytes asked for and not yet given back. The only `unsafe` in
//! this crate, allowed here in plain sight: `GlobalAlloc` is an unsafe
//! trait, and each method only forwards to `System` and counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes allocated and not freed, over the whole process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The process's allocator: the system's, counted.
pub struct Counting;

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` with the caller's arguments, so
// the contract `System` keeps is the one kept here; the counter is a side
// effect that never touches the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// The live heap bytes now.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_kept_allocation_is_counted_and_a_freed_one_is_not() {
        let before = super::live_bytes();
        let kept = vec![0u8; 1 << 20];
        let with = super::live_bytes();
        assert!(with >= before + (1 << 20) - 4096, "{before} -> {with}");
        drop(kept);
        assert!(super::live_bytes() < with);
    }
}
