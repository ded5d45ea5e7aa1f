//! Waiting for a conversation (`relay wait`, `GET /instances/{id}/wait`).
//!
//! A waiter holds a receiver of its conversation's change counter and
//! sleeps until it moves: no polling, and nothing at all while idle. The
//! counter exists only while someone waits on that conversation.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use super::{Engine, EngineError, Shared};
use crate::api::{ConversationInstance, State};

/// What a waiter waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Until {
    /// Any change after the wait starts.
    Change,
    /// Any of these states (already being in one counts).
    States(Vec<State>),
}

impl Until {
    /// The default: until the conversation ends or needs the operator.
    pub fn settled() -> Until {
        let mut states: Vec<State> = State::ALL.into_iter().filter(|s| s.is_terminal()).collect();
        states.push(State::NeedsHumanIntervention);
        Until::States(states)
    }

    /// The JSON Schema `pattern` of what [`Until::parse`] reads, in its
    /// plainest form: `change` alone, or `terminal` and state names
    /// (upper case, as the API writes them) separated by commas. The parser
    /// takes more (any case, `-` for `_`, spaces); every string the pattern
    /// matches it takes.
    pub fn pattern() -> String {
        format!("^(?: *{} *|{})$", crate::fsm::any_case("change"), State::list_regex())
    }

    /// Parses `terminal`, `change` or state names, comma-separated
    /// (`change` cannot be mixed with states).
    pub fn parse(text: &str) -> Result<Until, String> {
        let mut states = Vec::new();
        let mut change = false;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "change" => change = true,
                _ => states.extend(State::parse_group(word).map_err(|e| format!("{e} or `change` (any change)"))?),
            }
        }
        match (change, states.is_empty()) {
            (true, true) => Ok(Until::Change),
            (false, false) => Ok(Until::States(states)),
            (true, false) => Err("wait for `change` or for states, not both".into()),
            (false, true) => Err("say what to wait for: state names, `terminal` or `change`".into()),
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// The conversation got where the waiter wanted (or changed, for `change`).
    Reached(ConversationInstance),
    /// The timeout passed first.
    TimedOut(ConversationInstance),
    /// The conversation has ended in a state the waiter did not ask for: it
    /// will never get there, so waiting out the timeout would only hide that.
    Ended(ConversationInstance),
}

impl Engine {
    /// Waits until conversation `id_or_prefix` is as `until` says, at most
    /// `timeout`, or until `stop` resolves (the daemon is stopping: an
    /// error). A conversation that has ended (or ends meanwhile) in a state
    /// not waited for answers at once: this is the one place that rule lives,
    /// so `relay wait`, the API and MCP's `wait` all agree.
    pub async fn wait(
        &self,
        id_or_prefix: &str,
        until: &Until,
        timeout: Duration,
        stop: impl Future<Output = ()>,
    ) -> Result<Waited, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        // Watch first, then look: a change in between is not missed.
        let mut watcher = Watcher::new(&self.shared, id);
        let current = self.get(&id.to_string())?;
        if let Some(outcome) = settled(until, current, false) {
            return Ok(outcome);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        tokio::pin!(stop);
        loop {
            tokio::select! {
                changed = watcher.rx.changed() => {
                    if changed.is_err() {
                        return Err(EngineError::ShuttingDown);
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return Ok(Waited::TimedOut(self.get(&id.to_string())?)),
                _ = &mut stop => return Err(EngineError::ShuttingDown),
            }
            if let Some(outcome) = settled(until, self.get(&id.to_string())?, true) {
                return Ok(outcome);
            }
        }
    }
}

/// Whether a wait for `until` is over with the conversation in `state`
/// (`changed`: it has changed since the wait began), and how.
fn verdict(until: &Until, state: State, changed: bool) -> Option<Verdict> {
    let reached = match until {
        Until::Change => changed,
        Until::States(states) => states.contains(&state),
    };
    if reached {
        Some(Verdict::Reached)
    } else if state.is_terminal() {
        Some(Verdict::Ended)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Reached,
    Ended,
}

fn settled(until: &Until, now: ConversationInstance, changed: bool) -> Option<Waited> {
    verdict(until, now.state, changed).map(|verdict| match verdict {
        Verdict::Reached => Waited::Reached(now),
        Verdict::Ended => Waited::Ended(now),
    })
}

impl Engine {
    /// How many waits are under way.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::Relaxed)
    }
}

/// One waiter's view of a conversation's change counter; the last one to go
/// removes the counter.
struct Watcher {
    shared: Arc<Shared>,
    id: Uuid,
    rx: watch::Receiver<u64>,
}

impl Watcher {
    fn new(shared: &Arc<Shared>, id: Uuid) -> Watcher {
        let mut watched = shared.watched.lock().expect("watched lock");
        let rx = watched.entry(id).or_insert_with(|| watch::Sender::new(0)).subscribe();
        shared.waiting.fetch_add(1, Ordering::Relaxed);
        Watcher { shared: shared.clone(), id, rx }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.waiting.fetch_sub(1, Ordering::Relaxed);
        let mut watched = self.shared.watched.lock().expect("watched lock");
        // Our receiver still counts until this function returns.
        if watched.get(&self.id).is_some_and(|tx| tx.receiver_count() <= 1) {
            watched.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn until_parses_states_terminal_and_change() {
        assert_eq!(Until::parse("change"), Ok(Until::Change));
        assert_eq!(
            Until::parse("terminal"),
            Ok(Until::States(vec![State::Completed, State::Abandoned, State::Failed]))
        );
        assert_eq!(
            Until::parse("waiting_for_reply, PAUSED"),
            Ok(Until::States(vec![State::WaitingForReply, State::Paused]))
        );
        assert!(Until::parse("change,PAUSED").unwrap_err().contains("not both"));
        assert!(Until::parse("").is_err());
        assert!(Until::parse("DONE").unwrap_err().contains("unknown state 'DONE'"));
    }

    proptest! {
        /// A client that writes `until` as the schema's pattern says is
        /// never refused.
        #[test]
        fn every_string_the_pattern_matches_parses(
            text in proptest::string::string_regex(Until::pattern().trim_start_matches('^').trim_end_matches('$'))
                .unwrap(),
        ) {
            prop_assert!(regex::Regex::new(&Until::pattern()).unwrap().is_match(&text), "{}", text);
            prop_assert!(Until::parse(&text).is_ok(), "{}: {:?}", text, Until::parse(&text));
        }
    }

    #[test]
    fn the_until_pattern_refuses_what_parse_refuses() {
        let pattern = regex::Regex::new(&Until::pattern()).unwrap();
        for refused in ["", "change,PAUSED", "DONE", "terminal,change"] {
            assert!(!pattern.is_match(refused) && Until::parse(refused).is_err(), "{refused}");
        }
        for accepted in [
            "change",
            "Change",
            "terminal",
            "COMPLETED,PAUSED",
            "paused, waiting-for-reply",
            "terminal,NEEDS_HUMAN_INTERVENTION",
        ] {
            assert!(pattern.is_match(accepted) && Until::parse(accepted).is_ok(), "{accepted}");
        }
    }

    fn any_until() -> impl Strategy<Value = Until> {
        prop_oneof![
            Just(Until::Change),
            proptest::sample::subsequence(State::ALL.to_vec(), 1..=State::ALL.len()).prop_map(Until::States),
        ]
    }

    proptest! {
        /// An ended conversation never keeps a waiter waiting: whatever was
        /// asked for, its end state settles the wait (reached if asked for,
        /// ended otherwise); a live one settles only on what was asked for.
        #[test]
        fn only_a_live_conversation_can_keep_a_waiter(
            until in any_until(),
            state in proptest::sample::select(State::ALL.to_vec()),
            changed in any::<bool>(),
        ) {
            let asked = match &until {
                Until::Change => changed,
                Until::States(states) => states.contains(&state),
            };
            let expected = match (asked, state.is_terminal()) {
                (true, _) => Some(Verdict::Reached),
                (false, true) => Some(Verdict::Ended),
                (false, false) => None,
            };
            prop_assert_eq!(verdict(&until, state, changed), expected);
        }
    }
}
