//! Keeping the daemon's memory what it uses. Every change to a conversation
//! replaces the whole instance (history included) with a new copy, so the
//! heap sees a steady churn of growing blocks. glibc's malloc keeps freed
//! memory for reuse, spread over one arena per thread, and a long-running
//! daemon's RSS drifts far above what it holds. Two arenas and a periodic
//! trim keep it close to the live data. Other allocators and platforms:
//! nothing to do.

use std::time::Duration;

/// How often freed memory is handed back to the system.
const TRIM_EVERY: Duration = Duration::from_secs(30);

/// Call before any thread starts.
pub fn tune() {
    crate::sys::limit_malloc_arenas();
}

pub async fn trim_periodically() {
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + TRIM_EVERY, TRIM_EVERY);
    loop {
        every.tick().await;
        let _ = tokio::task::spawn_blocking(crate::sys::trim_heap).await;
    }
}
