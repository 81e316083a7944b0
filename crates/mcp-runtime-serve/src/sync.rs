//! Poison-tolerant locking for the gateway's short critical sections: each one
//! completes a whole update or makes none, so a poisoned lock is taken as it is
//! rather than spreading a panic of one request to every later one.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, recovering from poisoning.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
