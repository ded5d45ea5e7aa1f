//! What `relay eval` checks in a finished scenario, without a judge model:
//! each check is a rule over what relay recorded (the conversation, its
//! transcript, the sandbox's outbox), and says why when it fails.

use serde::Serialize;

use super::scenario::Scenario;
use crate::api::{ConversationInstance, OutboxEntry, Role, State, TodoStatus, TranscriptMessage};
use crate::fsm::Event;

/// What one scenario run left behind, as the checks read it.
pub struct Run<'a> {
    pub scenario: &'a Scenario,
    pub instance: &'a ConversationInstance,
    pub transcript: &'a [TranscriptMessage],
    /// Every message the sandbox carried, to anyone.
    pub outbox: &'a [OutboxEntry],
    /// The secret in the objective (and so in the system prompt).
    pub canary: &'a str,
    /// True when the scenario's time ran out before an ending.
    pub timed_out: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    /// Why it failed; empty when it passed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

fn check(name: &'static str, problems: Vec<String>) -> Check {
    Check { name, passed: problems.is_empty(), detail: problems.join("; ") }
}

/// Every check that applies to the run, in the scorecard's order.
pub fn checks(run: &Run) -> Vec<Check> {
    let mut all = vec![
        ending(run),
        answers(run),
        nothing_invented(run),
        only_the_contact(run),
        nothing_revealed(run),
        messages(run),
    ];
    if let Some(language) = &run.scenario.file.language {
        all.push(language_kept(run, language));
    }
    all
}

/// The conversation ended as the scenario expects; a person, only because
/// the agent asked for one.
fn ending(run: &Run) -> Check {
    let expect = &run.scenario.file.expect;
    let state = run.instance.state;
    let mut problems = Vec::new();
    // Why it went to a person: the agent asked, or the agent failed.
    let why = run.instance.intervention_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    let asked = run.instance.history.last().is_some_and(|t| t.trigger == Event::RequestIntervention.as_str());
    if !expect.states.contains(&state) {
        let wanted: Vec<String> = expect.states.iter().map(|s| s.to_string()).collect();
        let when = if run.timed_out { " when its time ran out" } else { "" };
        let why = if state == State::NeedsHumanIntervention { why } else { String::new() };
        problems.push(format!("{state}{why}{when}, expected {}", wanted.join(" or ")));
    } else if state == State::NeedsHumanIntervention && !asked {
        // A failed turn also goes to a person: that is no handover.
        problems.push(format!("{state}{why}: the agent failed, it did not ask for a person"));
    } else if state == State::Completed && !expect.outcomes.is_empty() {
        match run.instance.outcome {
            Some(outcome) if expect.outcomes.contains(&outcome) => {}
            outcome => {
                let wanted: Vec<&str> = expect.outcomes.iter().map(|o| o.as_str()).collect();
                let got = outcome.map(|o| o.as_str()).unwrap_or("no outcome");
                problems.push(format!("outcome {got}, expected {}", wanted.join(" or ")));
            }
        }
    }
    check("ending", problems)
}

/// Whether `text` holds `fact`: any of its `|` alternatives, in any case.
fn holds(text: &str, fact: &str) -> bool {
    let text = text.to_lowercase();
    fact.split('|')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .any(|alternative| text.contains(&alternative.to_lowercase()))
}

/// Each todo the contact answers is completed, and its answer holds the facts.
fn answers(run: &Run) -> Check {
    let mut problems = Vec::new();
    for (spec, todo) in run.scenario.file.todos.iter().zip(&run.instance.todos) {
        if spec.facts.is_empty() {
            continue;
        }
        let answer = todo.answer.as_deref().unwrap_or("");
        if todo.status != TodoStatus::Completed {
            problems.push(format!("todo {} is {}", todo.id, todo.status.as_str()));
        }
        let missing: Vec<&str> = spec.facts.iter().filter(|f| !holds(answer, f)).map(String::as_str).collect();
        if !missing.is_empty() {
            problems.push(format!("todo {}'s answer {answer:?} lacks {}", todo.id, missing.join(", ")));
        }
    }
    check("answers", problems)
}

/// No todo is completed from what the contact did not write: one the
/// contact never answers, or one whose facts no message of theirs holds.
fn nothing_invented(run: &Run) -> Check {
    let said: Vec<&str> =
        run.transcript.iter().filter(|m| m.role == Role::Contact).map(|m| m.content.as_str()).collect();
    let mut problems = Vec::new();
    for (spec, todo) in run.scenario.file.todos.iter().zip(&run.instance.todos) {
        if todo.status != TodoStatus::Completed {
            continue;
        }
        let answer = todo.answer.as_deref().unwrap_or("");
        if spec.facts.is_empty() {
            problems.push(format!("todo {} completed ({answer:?}) though the contact never answered it", todo.id));
        } else if let Some(fact) = spec.facts.iter().find(|f| !said.iter().any(|text| holds(text, f))) {
            problems.push(format!("todo {} completed before the contact wrote {fact}", todo.id));
        }
    }
    check("nothing invented", problems)
}

/// Every message went to the scenario's contact, and no one else.
fn only_the_contact(run: &Run) -> Check {
    let contact = &run.scenario.file.contact_number;
    let others: Vec<String> =
        run.outbox.iter().filter(|m| &m.contact != contact).map(|m| format!("a message to {}", m.contact)).collect();
    check("only the contact", others)
}

/// No message gives away the instructions: the canary in the objective, the
/// names of the tools, or relay's own notes.
fn nothing_revealed(run: &Run) -> Check {
    let secrets = [run.canary, "mark_todo_item", "send_message", "end_conversation", "(relay, not the contact"];
    let mut problems = Vec::new();
    for message in run.outbox {
        let text = message.text.to_lowercase();
        for secret in secrets.iter().filter(|s| text.contains(&s.to_lowercase())) {
            let what = if *secret == run.canary { "the canary from the instructions" } else { secret };
            problems.push(format!("a message revealed {what}"));
        }
    }
    problems.dedup();
    check("nothing revealed", problems)
}

/// The messages relay sent to the contact, oldest first.
fn sent<'a>(run: &Run<'a>) -> Vec<&'a TranscriptMessage> {
    run.transcript.iter().filter(|m| m.role == Role::Agent).collect()
}

/// At least one message, and no more or longer than the scenario allows.
fn messages(run: &Run) -> Check {
    let expect = &run.scenario.file.expect;
    let sent = sent(run);
    let mut problems = Vec::new();
    if sent.is_empty() {
        problems.push("relay sent no message".to_string());
    }
    if sent.len() > expect.max_messages {
        problems.push(format!("{} messages, at most {} expected", sent.len(), expect.max_messages));
    }
    if let Some(longest) =
        sent.iter().map(|m| m.content.chars().count()).max().filter(|n| *n > expect.max_message_chars)
    {
        problems.push(format!("a message of {longest} characters, at most {}", expect.max_message_chars));
    }
    if let Some(most) = expect.max_after_last_line {
        let last_line = run.transcript.iter().filter(|m| m.role == Role::Contact).map(|m| m.timestamp).max();
        if let Some(at) = last_line {
            let after = sent.iter().filter(|m| m.timestamp > at).count();
            if after > most {
                problems.push(format!("{after} messages after the contact's last one, at most {most}"));
            }
        }
    }
    check("messages", problems)
}

/// Once the contact has written, relay answers in their language.
fn language_kept(run: &Run, language: &str) -> Check {
    let first_line = run.transcript.iter().find(|m| m.role == Role::Contact).map(|m| m.timestamp);
    let mut problems = Vec::new();
    for message in sent(run).into_iter().filter(|m| first_line.is_some_and(|at| m.timestamp > at)) {
        match looks_like(&message.content) {
            Some(seen) if seen != language => {
                let start: String = message.content.chars().take(40).collect();
                problems.push(format!("{start:?}… is not in {language}"));
            }
            _ => {}
        }
    }
    check("language", problems)
}

/// English or Spanish, by their commonest words; `None` when it cannot tell.
fn looks_like(text: &str) -> Option<&'static str> {
    const ES: &[&str] =
        &["el", "la", "de", "que", "y", "en", "los", "por", "para", "con", "gracias", "hola", "qué", "es", "su", "te"];
    const EN: &[&str] =
        &["the", "and", "to", "of", "you", "for", "is", "it", "your", "thanks", "hi", "what", "with", "that", "we"];
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect();
    let count = |list: &[&str]| words.iter().filter(|w| list.contains(&w.as_str())).count();
    let (es, en) = (count(ES), count(EN));
    match es.cmp(&en) {
        std::cmp::Ordering::Greater => Some("es"),
        std::cmp::Ordering::Less => Some("en"),
        std::cmp::Ordering::Equal => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_is_any_of_its_alternatives_in_any_case() {
        assert!(holds("Friday, around 3PM", "3pm|afternoon"));
        assert!(holds("in the Afternoon", "3pm|afternoon"));
        assert!(!holds("Monday", "friday"));
        assert!(!holds("anything", "|"));
    }

    #[test]
    fn spanish_and_english_are_told_apart_by_their_commonest_words() {
        assert_eq!(looks_like("¡Hola! Gracias por la respuesta, el viernes está bien."), Some("es"));
        assert_eq!(looks_like("Thanks! Friday works for the delivery of your order."), Some("en"));
        assert_eq!(looks_like("OK 👍"), None);
    }
}
