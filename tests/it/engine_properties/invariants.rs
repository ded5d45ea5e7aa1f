//! The design's invariants, checked after every step: each instance, its
//! history, one live conversation per contact, its transcript.

use super::*;

pub(super) fn check_instance(i: &ConversationInstance, seen: Option<&ConversationInstance>) -> Checked {
    let id = i.id;
    // Invariant 2: terminal states absorb; nothing about the conversation changes after.
    if let Some(seen) = seen.filter(|s| s.state.is_terminal()) {
        ensure!(i == seen, "{id} changed after it ended {}: now {i:#?}", seen.state);
    }
    // Invariant 3: PAUSED always knows where resume returns; nothing else has a previous state.
    ensure!(
        (i.state == State::Paused) == i.previous_state.is_some(),
        "{id} is {} with previous_state {:?}",
        i.state,
        i.previous_state
    );
    ensure!(
        i.previous_state.is_none_or(|p| p != State::Paused && !p.is_terminal()),
        "{id} would resume to {:?}",
        i.previous_state
    );
    // Invariant 4, in its exact form now that the count is of follow-ups
    // sent: never more than max_followups, and exactly that many when the
    // conversation was abandoned for silence.
    let max = i.heartbeat_config.max_followups;
    ensure!(i.follow_up_count <= max, "{id}: follow_up_count {} > {max}", i.follow_up_count);
    ensure!(
        i.state != State::Abandoned || i.follow_up_count == max,
        "{id} is {} with follow_up_count {} of {max}",
        i.state,
        i.follow_up_count
    );
    // Heartbeats: armed exactly while WAITING_FOR_REPLY; the time left kept exactly while paused from it.
    ensure!(
        i.next_heartbeat_at.is_some() == (i.state == State::WaitingForReply),
        "{id} is {} with next_heartbeat_at {:?}",
        i.state,
        i.next_heartbeat_at
    );
    ensure!(
        i.paused_heartbeat_remaining_ms.is_some() == (i.previous_state == Some(State::WaitingForReply)),
        "{id} is {} (from {:?}) with paused_heartbeat_remaining_ms {:?}",
        i.state,
        i.previous_state,
        i.paused_heartbeat_remaining_ms
    );
    check_history(i)?;
    // Invariant 7 (append-only): what was recorded stays.
    if let Some(seen) = seen {
        ensure!(
            i.history.starts_with(&seen.history),
            "{id}: history rewritten: {:#?} then {:#?}",
            seen.history,
            i.history
        );
    }
    Ok(())
}

/// Invariant 7: every history entry is a move the table allows, and they chain.
pub(super) fn check_history(i: &ConversationInstance) -> Checked {
    let id = i.id;
    let h = &i.history;
    ensure!(
        h.first().is_some_and(|e| e.from_state.is_none()
            && e.to_state == State::Created
            && e.trigger == "create"
            && e.timestamp == i.created_at),
        "{id}: history does not start with its creation: {:?}",
        h.first()
    );
    for pair in h.windows(2) {
        let (last, e) = (&pair[0], &pair[1]);
        ensure!(e.from_state == Some(last.to_state), "{id}: {:?} does not follow {:?}", e, last);
        let event = Event::ALL.into_iter().find(|ev| ev.as_str() == e.trigger);
        let Some(event) = event else { return Err(format!("{id}: unknown trigger {:?}", e.trigger)) };
        let from = last.to_state;
        // A resume goes back to the state the pause came from.
        let previous = if from == State::Paused { last.from_state } else { None };
        let target = fsm::next(from, event, previous);
        ensure!(
            target.as_ref().is_ok_and(|t| *t != Target::Stay && fsm::resolve(from, *t, previous) == e.to_state),
            "{id}: {from} --{event}--> {} is not in the table ({target:?})",
            e.to_state
        );
    }
    ensure!(h.last().map(|e| e.to_state) == Some(i.state), "{id} is {} but its history ends elsewhere", i.state);
    Ok(())
}

/// What `i` was at instant `t`: its state and, when PAUSED, where it was paused from.
pub(super) fn state_at(i: &ConversationInstance, t: DateTime<Utc>) -> Option<(State, Option<State>)> {
    let e = i.history.iter().rev().find(|e| e.timestamp <= t)?;
    Some((e.to_state, if e.to_state == State::Paused { e.from_state } else { None }))
}

/// `ConversationInstance::holds_contact`, for a state in the past.
pub(super) fn holds((state, paused_from): (State, Option<State>)) -> bool {
    !state.is_terminal() && state != State::Queued && !(state == State::Paused && paused_from == Some(State::Queued))
}

/// The invariants about one contact's conversations (oldest first).
pub(super) fn check_contact(theirs: &[&ConversationInstance], channel_ready: bool) -> Checked {
    // Invariant 1: at most one holds the contact, now...
    let holders: Vec<Uuid> = theirs.iter().filter(|i| i.holds_contact()).map(|i| i.id).collect();
    ensure!(holders.len() <= 1, "{} conversations hold one contact: {holders:?}", holders.len());
    // ... and at every instant their histories record.
    for t in theirs.iter().flat_map(|i| i.history.iter().map(|e| e.timestamp)) {
        let at: Vec<Uuid> = theirs.iter().filter(|i| state_at(i, t).is_some_and(holds)).map(|i| i.id).collect();
        ensure!(at.len() <= 1, "at {t}, {} conversations held one contact: {at:?}", at.len());
    }
    // Invariant 6: the queue is FIFO. When one was promoted, no older one was still QUEUED
    // (one paused or cancelled meanwhile is not QUEUED, and rightly skipped).
    for (n, x) in theirs.iter().enumerate() {
        for promoted in x.history.iter().filter(|e| e.trigger == Event::PriorInstanceTerminal.as_str()) {
            for older in &theirs[..n] {
                let then = state_at(older, promoted.timestamp).map(|s| s.0);
                ensure!(
                    then != Some(State::Queued),
                    "{} was promoted at {} while the older {} was still QUEUED",
                    x.id,
                    promoted.timestamp,
                    older.id
                );
            }
        }
    }
    // Once the engine has settled, nothing that can move on its own is left waiting.
    let holder = theirs.iter().find(|i| i.holds_contact());
    let queued = theirs.iter().find(|i| i.state == State::Queued);
    ensure!(holder.is_some() || queued.is_none(), "{:?} stays QUEUED behind a free contact", queued.map(|i| i.id));
    if let Some(h) = holder {
        ensure!(h.state != State::Created, "{} stays CREATED", h.id);
        ensure!(
            h.state != State::WaitingForReply || h.unanswered_contact_messages == 0,
            "{} waits for a reply with {} unanswered",
            h.id,
            h.unanswered_contact_messages
        );
        let needs_turn = matches!(h.state, State::Active | State::HeartbeatScheduled);
        ensure!(
            !(needs_turn && channel_ready && h.channel_blocked.is_some()),
            "{} is {} waiting for a channel that is ready: {:?}",
            h.id,
            h.state,
            h.channel_blocked
        );
    }
    Ok(())
}

/// Invariant 5: transcripts are append-only; a message keeps its place, id,
/// role and text, and its send status only moves forward.
pub(super) fn check_transcript(id: Uuid, before: &[TranscriptMessage], now: &[TranscriptMessage]) -> Checked {
    ensure!(now.len() >= before.len(), "{id}: the transcript lost messages ({} then {})", before.len(), now.len());
    for (old, new) in before.iter().zip(now) {
        ensure!(
            old.id == new.id && old.role == new.role && old.content == new.content,
            "{id}: a message was rewritten: {old:?} then {new:?}"
        );
        ensure!(
            status_may_move(old, new),
            "{id}: send status went {:?} -> {:?} ({new:?})",
            old.send_status,
            new.send_status
        );
    }
    for m in now {
        ensure!(m.instance_id == id, "{id}: holds a message of {}", m.instance_id);
        ensure!(
            matches!(m.role, Role::Agent | Role::Manual) == m.send_status.is_some(),
            "{id}: a {:?} message has send status {:?}",
            m.role,
            m.send_status
        );
        ensure!(
            m.delivery_error.is_some() == (m.send_status == Some(SendStatus::Failed)),
            "{id}: {:?} with delivery error {:?}",
            m.send_status,
            m.delivery_error
        );
    }
    Ok(())
}

/// The moves a message's send status may make between two looks:
/// pending -> sent / failed / unconfirmed; sent -> failed (refused after it
/// was taken). A failed operator message may be tried again under its id (an
/// idempotent retry), and only then its status and time start over.
pub(super) fn status_may_move(old: &TranscriptMessage, new: &TranscriptMessage) -> bool {
    use SendStatus::*;
    let retried = old.role == Role::Manual && old.send_status == Some(Failed);
    let same_time = old.timestamp == new.timestamp || retried;
    let allowed = match (old.send_status, new.send_status) {
        (a, b) if a == b => true,
        (Some(Pending), Some(Sent | Failed | Unconfirmed)) => true,
        (Some(Sent), Some(Failed)) => true,
        (Some(Failed), Some(_)) => retried,
        _ => false,
    };
    allowed && same_time
}
