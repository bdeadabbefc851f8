//! [`read_after_refresh`]: a page a server serves from a cache for a while (VictoriaMetrics'
//! `/metrics`, about a second), read as it stands after a given moment, without waiting
//! the whole cache period each time.

use std::future::Future;
use std::time::Duration;

/// How often the page is asked again while it is unchanged.
const POLL: Duration = Duration::from_millis(100);

/// The page as the server makes it after `first` (an earlier read of it) was asked: read
/// every [`POLL`] until it differs from `first`, or once `period` (the server's cache
/// period, with a margin) has passed since this call.
///
/// Why that is enough: if `first` came from the cache, a different page is a new one,
/// made on a request after the cached one expired, which was after `first` was asked; if
/// `first` was new itself, any later page is newer still. And a page read `period` after
/// this call is at most `period` old, so it too was made after `first` was asked. A page
/// of counters read this way counts every write answered before `first` was asked,
/// usually well within the period (waiting it whole cost each run a second before and
/// after its load).
pub async fn read_after_refresh<F, Fut, E>(
    first: &str,
    period: Duration,
    mut read: F,
) -> Result<String, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<String, E>>,
{
    let deadline = tokio::time::Instant::now() + period;
    loop {
        tokio::time::sleep(POLL).await;
        let page = read().await?;
        if page != first || tokio::time::Instant::now() >= deadline {
            return Ok(page);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A page made anew every `period_polls` reads.
    async fn read_page(reads: &AtomicU32, period_polls: u32) -> Result<String, ()> {
        let n = reads.fetch_add(1, Ordering::SeqCst);
        Ok(format!("page {}", n / period_polls))
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_changed_page_is_taken_without_waiting_the_period() {
        let reads = AtomicU32::new(1);
        let started = tokio::time::Instant::now();
        let page = read_after_refresh("page 0", Duration::from_millis(1_200), || {
            read_page(&reads, 3)
        })
        .await
        .unwrap();
        assert_eq!(page, "page 1");
        assert_eq!(
            reads.load(Ordering::SeqCst),
            4,
            "two unchanged reads, then the new one"
        );
        assert_eq!(started.elapsed(), 3 * POLL);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unchanging_page_is_read_once_the_period_has_passed() {
        let started = tokio::time::Instant::now();
        let page = read_after_refresh("same", Duration::from_millis(1_200), || async {
            Ok::<_, ()>("same".to_string())
        })
        .await
        .unwrap();
        assert_eq!(page, "same");
        assert!(started.elapsed() >= Duration::from_millis(1_200));
        assert!(started.elapsed() < Duration::from_millis(1_300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_read_is_the_answer() {
        let result = read_after_refresh("x", Duration::from_secs(1), || async {
            Err::<String, _>("refused")
        })
        .await;
        assert_eq!(result, Err("refused"));
    }
}
