//! A channel's catch-up after relay was away: while the contacts' messages
//! of the gap are still coming, follow-ups and first messages wait. A
//! catch-up that does not end within [`BOUND`] is cut short: relay goes on,
//! and the span in which messages may be missing is kept, for the engine to
//! mark the conversations that were live then.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::InboundSink;
use crate::api::MissedSpan;

/// How long a catch-up may take before relay goes on without the rest
/// (whatsapp-rust 0.7 gives up on its own after 60 s, saying nothing).
pub const BOUND: Duration = Duration::from_secs(50);

#[derive(Default)]
pub struct CatchUp {
    running: AtomicBool,
    /// Bumped at each start: a bound's timer acts only on its own catch-up.
    generation: AtomicU64,
    /// The last time relay heard from the channel: where a gap begins.
    in_touch: Mutex<Option<DateTime<Utc>>>,
    /// The last catch-up cut short, if any.
    missed: Mutex<Option<MissedSpan>>,
}

impl CatchUp {
    /// A catch-up starts; unless it ends first, it is cut short after
    /// `bound` and `sink` is told.
    pub fn start(self: &Arc<Self>, sink: Arc<dyn InboundSink>, bound: Duration) {
        self.running.store(true, Ordering::SeqCst);
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(bound).await;
            if me.cut_short(generation) {
                sink.channel_changed();
            }
        });
    }

    /// A catch-up is under way with no bound yet (relay's start, before
    /// WhatsApp is even reached: nothing can be missed while it is not).
    pub fn begin(&self) {
        self.running.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The catch-up ended; whether one was running (then the engine is to be told).
    pub fn finish(&self) -> bool {
        let was = self.running.swap(false, Ordering::SeqCst);
        self.heard();
        was
    }

    /// Ends catch-up `generation`, if it still runs, as cut short: the span
    /// from when relay was last in touch until now may miss messages.
    pub fn cut_short(&self, generation: u64) -> bool {
        let current = self.generation.load(Ordering::SeqCst) == generation;
        if !current || !self.running.swap(false, Ordering::SeqCst) {
            return false;
        }
        let from = *self.in_touch.lock().expect("catch-up lock");
        let span = MissedSpan { from, to: crate::clock::now() };
        tracing::warn!(from = ?span.from, to = %span.to, "the catch-up did not finish: messages of the gap may be missing");
        *self.missed.lock().expect("catch-up lock") = Some(span);
        true
    }

    /// Cuts the running catch-up short now (the sandbox's `online --cut-short`).
    pub fn cut_short_now(&self) -> bool {
        self.cut_short(self.generation.load(Ordering::SeqCst))
    }

    /// relay heard from the channel just now.
    pub fn heard(&self) {
        *self.in_touch.lock().expect("catch-up lock") = Some(crate::clock::now());
    }

    /// relay was in touch with the channel until `at` (a session's end).
    pub fn in_touch_until(&self, at: DateTime<Utc>) {
        *self.in_touch.lock().expect("catch-up lock") = Some(at);
    }

    pub fn running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// The last catch-up cut short, if any.
    pub fn missed(&self) -> Option<MissedSpan> {
        *self.missed.lock().expect("catch-up lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{InboundMessage, InboundOutcome, SentUpdate};
    use crate::util::BoxFuture;

    #[derive(Default)]
    struct Told(std::sync::atomic::AtomicUsize, tokio::sync::Notify);

    impl InboundSink for Told {
        fn deliver(&self, _: InboundMessage) -> BoxFuture<'_, InboundOutcome> {
            Box::pin(async { InboundOutcome::NoConversation })
        }
        fn sent_update(&self, _: String, _: SentUpdate) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn channel_changed(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.notify_one();
        }
    }

    /// A catch-up that ends in time leaves nothing missing; one that does
    /// not is cut short at its bound, once, with the span since relay was
    /// last in touch; a later one's timer does not cut a newer one short.
    #[tokio::test(start_paused = true)]
    async fn a_catch_up_that_does_not_end_in_time_is_cut_short_with_its_span() {
        let catch_up = Arc::new(CatchUp::default());
        let told = Arc::new(Told::default());
        catch_up.heard();
        let in_touch = crate::clock::now();
        catch_up.start(told.clone(), BOUND);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(catch_up.finish(), "it ended in time");
        tokio::time::sleep(BOUND).await;
        assert_eq!((catch_up.missed(), told.0.load(Ordering::SeqCst)), (None, 0));

        catch_up.start(told.clone(), BOUND);
        told.1.notified().await;
        let span = catch_up.missed().expect("cut short");
        assert!(span.from.is_some_and(|from| from >= in_touch) && span.to > span.from.unwrap(), "{span:?}");
        assert!(!catch_up.running() && !catch_up.finish(), "nothing to tell at its end");
        assert_eq!(told.0.load(Ordering::SeqCst), 1);
    }
}
