use super::*;
use std::collections::HashSet;

proptest::proptest! {
    /// A client that writes a list of states as the schema's pattern
    /// says is never refused, and gets each state once.
    #[test]
    fn every_list_the_pattern_matches_parses(text in proptest::string::string_regex(&State::list_regex()).unwrap()) {
        proptest::prop_assert!(regex::Regex::new(&State::list_pattern()).unwrap().is_match(&text), "{}", text);
        let states = State::parse_list(&text).unwrap();
        let once: HashSet<State> = states.iter().copied().collect();
        proptest::prop_assert_eq!(once.len(), states.len(), "{}", text);
    }
}

#[test]
fn a_list_of_states_takes_terminal_and_any_case_and_names_a_wrong_one() {
    assert_eq!(State::parse_list("terminal").unwrap(), [S::Completed, S::Abandoned, S::Failed]);
    assert_eq!(State::parse_list(" paused, waiting-for-reply ,PAUSED").unwrap(), [S::Paused, S::WaitingForReply]);
    assert!(State::parse_list("paused,DONE").unwrap_err().contains("unknown state 'DONE'"));
    assert!(State::parse_list(" , ").unwrap_err().contains("at least one state"));
}

/// The seeds' table (design document, "Full State Transition Table", plus
/// ADR-006's NEEDS_HUMAN_INTERVENTION -> PAUSED), written out again by hand
/// so that a change to [`TABLE`] that drops a seed row fails here.
const SEED_ROWS: &[(State, Event, Target)] = &[
    (S::Created, E::AgentSendsFirstMessage, To(S::Active)),
    (S::Created, E::ContactHasActiveInstance, To(S::Queued)),
    (S::Created, E::Pause, To(S::Paused)),
    (S::Created, E::Cancel, To(S::Failed)),
    (S::Queued, E::PriorInstanceTerminal, To(S::Created)),
    (S::Queued, E::Pause, To(S::Paused)),
    (S::Queued, E::Cancel, To(S::Failed)),
    (S::Active, E::MessageSent, To(S::WaitingForReply)),
    (S::Active, E::EndConversation, To(S::Completed)),
    (S::Active, E::RequestIntervention, To(S::NeedsHumanIntervention)),
    (S::Active, E::UnrecoverableError, To(S::Failed)),
    (S::Active, E::Pause, To(S::Paused)),
    (S::Active, E::Cancel, To(S::Failed)),
    (S::WaitingForReply, E::ContactReplies, To(S::WaitingForAgent)),
    (S::WaitingForReply, E::HeartbeatFires, To(S::HeartbeatScheduled)),
    (S::WaitingForReply, E::EndConversation, To(S::Completed)),
    (S::WaitingForReply, E::Pause, To(S::Paused)),
    (S::WaitingForReply, E::Cancel, To(S::Failed)),
    (S::WaitingForAgent, E::AgentProcessesReply, To(S::Active)),
    (S::WaitingForAgent, E::EndConversation, To(S::Completed)),
    (S::WaitingForAgent, E::Pause, To(S::Paused)),
    (S::WaitingForAgent, E::Cancel, To(S::Failed)),
    (S::HeartbeatScheduled, E::FollowupSent, To(S::WaitingForReply)),
    (S::HeartbeatScheduled, E::MaxFollowupsExceeded, To(S::Abandoned)),
    (S::HeartbeatScheduled, E::Pause, To(S::Paused)),
    (S::HeartbeatScheduled, E::Cancel, To(S::Failed)),
    (S::Paused, E::Resume, Previous),
    (S::Paused, E::Cancel, To(S::Failed)),
    (S::NeedsHumanIntervention, E::Resume, To(S::Active)),
    (S::NeedsHumanIntervention, E::ManualSend, To(S::Active)),
    (S::NeedsHumanIntervention, E::Pause, To(S::Paused)),
    (S::NeedsHumanIntervention, E::Cancel, To(S::Failed)),
];

#[test]
fn every_state_event_pair_matches_the_table() {
    let mut allowed = 0;
    for state in State::ALL {
        for event in Event::ALL {
            let row = TABLE.iter().find(|(s, e, _)| *s == state && *e == event);
            let got = next(state, event, Some(State::WaitingForReply));
            match row {
                Some((_, _, target)) => {
                    allowed += 1;
                    assert_eq!(got, Ok(*target), "{state} + {event}");
                }
                None => assert_eq!(got, Err(InvalidTransition { state, event }), "{state} + {event}"),
            }
        }
    }
    assert_eq!(allowed, TABLE.len());
}

#[test]
fn the_table_has_no_duplicate_pairs() {
    let mut seen = HashSet::new();
    for (state, event, _) in TABLE {
        assert!(seen.insert((state, event)), "duplicate row {state} + {event}");
    }
}

/// The rows relay adds, each explained in docs/state-machine.md.
const ADDITIONS: &[(State, Event, Target)] = &[
    (S::Active, E::AgentWaits, To(S::WaitingForReply)),
    (S::Active, E::AgentError, To(S::NeedsHumanIntervention)),
    (S::Active, E::ManualSend, Stay),
    (S::WaitingForReply, E::UnrecoverableError, To(S::Failed)),
    (S::WaitingForReply, E::ManualSend, Stay),
    (S::WaitingForAgent, E::UnrecoverableError, To(S::Failed)),
    (S::WaitingForAgent, E::ManualSend, Stay),
    (S::HeartbeatScheduled, E::AgentWaits, To(S::WaitingForReply)),
    (S::HeartbeatScheduled, E::EndConversation, To(S::Completed)),
    (S::HeartbeatScheduled, E::RequestIntervention, To(S::NeedsHumanIntervention)),
    (S::HeartbeatScheduled, E::AgentError, To(S::NeedsHumanIntervention)),
    (S::HeartbeatScheduled, E::UnrecoverableError, To(S::Failed)),
    (S::HeartbeatScheduled, E::ManualSend, Stay),
    (S::Paused, E::ManualSend, Stay),
    (S::NeedsHumanIntervention, E::OperatorAnswers, To(S::Active)),
    (S::WaitingForReply, E::NotDelivered, To(S::NeedsHumanIntervention)),
    // The operator writing on their own phone takes the conversation over.
    (S::Created, E::OperatorWrites, To(S::Paused)),
    (S::Active, E::OperatorWrites, To(S::Paused)),
    (S::WaitingForReply, E::OperatorWrites, To(S::Paused)),
    (S::WaitingForAgent, E::OperatorWrites, To(S::Paused)),
    (S::HeartbeatScheduled, E::OperatorWrites, To(S::Paused)),
    (S::Paused, E::OperatorWrites, Stay),
    (S::NeedsHumanIntervention, E::OperatorWrites, Stay),
    // An opt-out ends every conversation with the contact, wherever it is.
    (S::Created, E::OptedOut, To(S::Abandoned)),
    (S::Queued, E::OptedOut, To(S::Abandoned)),
    (S::Active, E::OptedOut, To(S::Abandoned)),
    (S::WaitingForReply, E::OptedOut, To(S::Abandoned)),
    (S::WaitingForAgent, E::OptedOut, To(S::Abandoned)),
    (S::HeartbeatScheduled, E::OptedOut, To(S::Abandoned)),
    (S::Paused, E::OptedOut, To(S::Abandoned)),
    (S::NeedsHumanIntervention, E::OptedOut, To(S::Abandoned)),
    // WhatsApp refused the first message (463): it has not started yet.
    (S::WaitingForReply, E::FirstMessageRefused, To(S::Created)),
    // A spent budget ends the conversation where the next turn would
    // start: before a reply or a follow-up, or before a turn the
    // operator's answer or resume would start.
    (S::Active, E::BudgetExhausted, To(S::Abandoned)),
    (S::WaitingForReply, E::BudgetExhausted, To(S::Abandoned)),
    (S::WaitingForAgent, E::BudgetExhausted, To(S::Abandoned)),
    (S::HeartbeatScheduled, E::BudgetExhausted, To(S::Abandoned)),
    // A deadline ends the conversation wherever it is.
    (S::Created, E::Expired, To(S::Abandoned)),
    (S::Queued, E::Expired, To(S::Abandoned)),
    (S::Active, E::Expired, To(S::Abandoned)),
    (S::WaitingForReply, E::Expired, To(S::Abandoned)),
    (S::WaitingForAgent, E::Expired, To(S::Abandoned)),
    (S::HeartbeatScheduled, E::Expired, To(S::Abandoned)),
    (S::Paused, E::Expired, To(S::Abandoned)),
    (S::NeedsHumanIntervention, E::Expired, To(S::Abandoned)),
];

#[test]
fn the_table_is_exactly_the_seed_rows_and_the_documented_additions() {
    for row in SEED_ROWS {
        assert!(TABLE.contains(row), "seed row missing: {row:?}");
    }
    for row in TABLE {
        assert!(SEED_ROWS.contains(row) || ADDITIONS.contains(row), "undocumented row: {row:?}");
    }
    assert_eq!(TABLE.len(), SEED_ROWS.len() + ADDITIONS.len());
}

#[test]
fn terminal_states_absorb_every_event() {
    for state in State::ALL.into_iter().filter(|s| s.is_terminal()) {
        for event in Event::ALL {
            assert!(next(state, event, None).is_err(), "{state} + {event} must be refused");
        }
    }
}

#[test]
fn every_non_terminal_state_can_be_cancelled_to_failed() {
    for state in State::ALL.into_iter().filter(|s| !s.is_terminal()) {
        assert_eq!(next(state, E::Cancel, None), Ok(To(S::Failed)), "{state}");
    }
}

#[test]
fn every_non_terminal_state_but_paused_can_be_paused() {
    for state in State::ALL.into_iter().filter(|s| !s.is_terminal() && *s != S::Paused) {
        assert_eq!(next(state, E::Pause, None), Ok(To(S::Paused)), "{state}");
    }
    assert!(next(S::Paused, E::Pause, None).is_err());
}

#[test]
fn resume_returns_exactly_to_the_previous_state() {
    for previous in State::ALL.into_iter().filter(|s| !s.is_terminal() && *s != S::Paused) {
        let target = next(S::Paused, E::Resume, Some(previous)).unwrap();
        assert_eq!(resolve(S::Paused, target, Some(previous)), previous);
    }
    assert!(next(S::Paused, E::Resume, None).is_err(), "PAUSED without previous_state");
}

#[test]
fn every_state_is_reachable_from_created() {
    let mut reached = HashSet::from([S::Created]);
    loop {
        let before = reached.len();
        for (from, _, target) in TABLE {
            if reached.contains(from)
                && let To(s) = target
            {
                reached.insert(*s);
            }
        }
        if reached.len() == before {
            break;
        }
    }
    assert_eq!(reached.len(), State::ALL.len());
}

/// Refusals read in the operator's words, never an event's internal name.
#[test]
fn refusals_name_the_operators_words_not_event_names() {
    let said = |state, event| InvalidTransition { state, event }.to_string();
    assert_eq!(said(S::Active, E::OperatorAnswers), "cannot answer: the conversation is ACTIVE, not waiting for you");
    assert_eq!(said(S::Paused, E::Pause), "cannot pause: the conversation is PAUSED already");
    assert_eq!(said(S::Completed, E::ManualSend), "cannot send: the conversation is COMPLETED, which has ended");
    assert_eq!(
        said(S::WaitingForReply, E::Resume),
        "cannot resume: the conversation is WAITING_FOR_REPLY, not paused or waiting for you"
    );
    for state in State::ALL {
        for event in Event::ALL {
            let text = said(state, event);
            assert!(!text.contains('_') || text.contains(state.as_str()), "{text}");
            assert!(!text.contains(event.as_str()) || !event.as_str().contains('_'), "{text}");
        }
    }
}

#[test]
fn states_parse_in_any_case_and_separator() {
    assert_eq!("waiting-for-reply".parse::<State>(), Ok(S::WaitingForReply));
    assert_eq!("PAUSED".parse::<State>(), Ok(S::Paused));
    assert!("SLEEPING".parse::<State>().unwrap_err().contains("expected one of"));
}

#[test]
fn serde_names_match_display_names() {
    for state in State::ALL {
        assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
    }
    for event in Event::ALL {
        assert_eq!(serde_json::to_value(event).unwrap(), event.as_str());
    }
}

/// A trigger is written as its name and read back as itself; a name no
/// version of relay wrote is refused, naming those it could be; the
/// published schema lists exactly the names.
#[test]
fn a_trigger_is_its_name_on_the_wire() {
    let all: Vec<Trigger> = std::iter::once(Trigger::Create).chain(Event::ALL.map(Trigger::Event)).collect();
    for trigger in &all {
        let wire = serde_json::to_value(trigger).unwrap();
        assert_eq!(wire, serde_json::json!(trigger.as_str()));
        assert_eq!(serde_json::from_value::<Trigger>(wire).unwrap(), *trigger);
    }
    let refused = serde_json::from_value::<Trigger>(serde_json::json!("teleport")).unwrap_err().to_string();
    assert!(refused.contains("unknown trigger \"teleport\"") && refused.contains("heartbeat_fires"), "{refused}");
    let schema = serde_json::to_value(<Trigger as utoipa::PartialSchema>::schema()).unwrap();
    let names: Vec<&str> = all.iter().map(|t| t.as_str()).collect();
    assert_eq!(schema["enum"], serde_json::json!(names));
}
