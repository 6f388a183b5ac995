//! The one way the library takes a lock: a lock that another thread panicked while holding is
//! taken anyway. Every critical section of the library leaves its state whole at each step (none
//! unwinds halfway through an update it cannot finish), so the data behind a poisoned lock is as
//! good as any; refusing it would turn one panicking handler into a server that fails every
//! later request.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`], poisoned or not (see the module's doc).
pub(crate) trait Locked<T: ?Sized> {
    /// The mutex's guard, whether or not a holder panicked.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// [`RwLock::read`] and [`RwLock::write`], poisoned or not (see the module's doc).
pub(crate) trait RwLocked<T: ?Sized> {
    /// A read guard, whether or not a writer panicked.
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, whether or not a writer panicked.
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLocked<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
