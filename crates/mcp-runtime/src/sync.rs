//! Poison-tolerant locking for the runtime's short critical sections.
//!
//! Every value the runtime guards with a standard lock stays valid at every point a
//! panic could unwind from (each critical section either completes a whole update or
//! makes none), so a poisoned lock is taken as it is instead of spreading the panic to
//! every later caller: a host that survives a panic in one task keeps a working
//! runtime.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering from poisoning.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read-locks `lock`, recovering from poisoning.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Write-locks `lock`, recovering from poisoning.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
