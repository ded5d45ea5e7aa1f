//! `relay get`: one conversation in full.

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{ConversationInstance, State, TodoStatus, ZoneSource};
use crate::client::InstanceId;

pub async fn run(ctx: &Context, id: &str) -> Result<(), CliError> {
    let id = InstanceId::parse(id)?;
    let instance = ctx.client()?.get(&id).await?;
    if ctx.json {
        output::json(&instance);
    } else {
        print(&instance);
    }
    Ok(())
}

pub fn print(i: &ConversationInstance) {
    print_what(i);
    print_clock(i);
    print_attention(i);
    print_outcome(i);
    print_todos(i);
    print_history(i);
}

/// What it is for, with whom, and what it may use.
fn print_what(i: &ConversationInstance) {
    let state = match i.previous_state {
        Some(previous) => format!("{} (resumes to {previous})", i.state),
        None => i.state.to_string(),
    };
    say!("id          {}", i.id);
    say!("state       {state}");
    say!("contact     {}", i.target_contact);
    say!("objective   {}", output::hang(&i.objective, 12));
    for fact in &i.private_context {
        say!("private     {}", output::hang(fact, 12));
    }
    for file in &i.attachments {
        say!("attachment  {}", output::hang(&crate::media::label::attachment(file), 12));
    }
    let hb = &i.heartbeat_config;
    let interval = crate::duration::format(std::time::Duration::from_millis(hb.interval_ms));
    say!(
        "heartbeat   every {interval}, at most {} ({} sent since the contact last wrote)",
        output::count(hb.max_followups, "follow-up"),
        i.follow_up_count
    );
}

/// Its follow-ups' clock: the contact's zone and quiet hours, what the next
/// message waits for, delivery.
fn print_clock(i: &ConversationInstance) {
    if let Some(time) = &i.contact_time {
        let from = match time.zone_source {
            ZoneSource::Given => "given",
            ZoneSource::Country => "the number's country",
            ZoneSource::Default => "courtesy.default_tz, as the number's country keeps several times",
        };
        let quiet = time.quiet_hours.map_or("no quiet hours".to_string(), |q| format!("quiet hours {q}"));
        say!("zone        {} ({from}); {quiet}", time.time_zone);
    }
    if let Some(start) = crate::api::StartTime::of(i) {
        say!("start at    {} on the contact's clock ({})", start.local, output::time(start.at));
    }
    if let (Some(reason), Some(at)) = (i.waiting_for.filter(|_| !i.state.is_terminal()), i.next_send_at) {
        let what = if i.state == State::WaitingForReply { "the next follow-up" } else { "the next message" };
        say!("waiting     {what} waits for {}: until {} ({})", reason.words(), output::time(at), output::relative(at));
    }
    match i.awaiting_delivery.as_ref().filter(|_| !i.state.is_terminal()) {
        Some(awaiting) => {
            let sent = output::time(awaiting.sent_at);
            if awaiting.overdue {
                say!(
                    "delivery    NOT DELIVERED: relay's last message (sent {sent}) has not reached the contact's phone"
                );
            } else {
                say!("delivery    waiting: relay's last message (sent {sent}) has not reached the contact's phone yet");
            }
            if i.state == State::WaitingForReply {
                say!("            the next follow-up waits until it has");
            }
        }
        None => {
            if let Some(at) = i.next_heartbeat_at {
                say!("next        follow-up {} ({})", output::relative(at), output::time(at));
            }
        }
    }
    if let Some(first) = i.first_delivered_at {
        let read = i.last_read_at.map(|at| format!("; last read {}", output::time(at))).unwrap_or_default();
        say!("delivered   first {}{read}", output::time(first));
    }
    if let Some(span) = &i.messages_may_be_missing {
        let said = format!(
            "the contact's messages {} may not have reached relay (a catch-up did not finish)",
            span.describe()
        );
        say!("missing     {}", output::hang(&said, 12));
    }
}

/// Why it is paused or waits on someone, and what it asks.
fn print_attention(i: &ConversationInstance) {
    // Paused by their own message on their phone, not by `relay pause`: say so.
    if i.state == State::Paused && i.history.last().is_some_and(|t| t.trigger == crate::fsm::Event::OperatorWrites) {
        say!("paused      you wrote to the contact on your phone; `relay resume` lets the agent go on");
    }
    if i.state == State::NeedsHumanIntervention
        && let Some(reason) = &i.intervention_reason
    {
        say!("needs       {}", output::hang(reason, 12));
    }
    if let Some(q) = &i.pending_question {
        let asked = q.question.as_deref().unwrap_or(&q.reason);
        say!("question    {} asks: {}", q.id, output::hang(asked, 12));
        say!("            answer it with `relay answer {} \"...\"`", output::short_id(&i.id));
    }
    if let Some(reason) = &i.opt_out_override {
        say!("override    written although the number is on the do-not-contact list: {}", output::hang(reason, 12));
    }
    if let Some(reason) = &i.channel_blocked {
        say!("waiting     {}", output::hang(reason, 12));
    }
}

/// How it ended, and what it cost.
fn print_outcome(i: &ConversationInstance) {
    if let (Some(outcome), Some(by)) = (i.outcome, i.ended_by) {
        say!("outcome     {} (ended by {})", outcome.as_str(), by.as_str());
    }
    if let Some(summary) = &i.summary {
        say!("summary     {}", output::hang(summary, 12));
    }
    if let Some(reason) = i.failure_reason.as_ref().filter(|_| i.outcome.is_none()) {
        say!("failed      {}", output::hang(reason, 12));
    }
    if i.usage.model_calls > 0 {
        // Cached input is said only when the provider reported some.
        let cached = match i.usage.cached_input_tokens {
            0 => String::new(),
            n => format!(" ({n} cached)"),
        };
        say!(
            "usage       {}, {} input{cached} + {} output tokens",
            output::count(i.usage.model_calls, "model call"),
            i.usage.input_tokens,
            i.usage.output_tokens
        );
    }
    if let Some(line) = budget_line(i) {
        say!("budget      {}", output::hang(&line, 12));
    }
    say!("created     {}", output::time(i.created_at));
}

/// Each todo, its answer and typed value.
fn print_todos(i: &ConversationInstance) {
    say!("todos");
    for todo in &i.todos {
        let mark = match todo.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Skipped => "[-]",
        };
        match &todo.answer {
            Some(note) => say!("  {mark} {}. {}: {}", todo.id, output::hang(&todo.text, 6), output::hang(note, 6)),
            None => say!("  {mark} {}. {}", todo.id, output::hang(&todo.text, 6)),
        }
        match (&todo.value, &todo.answer_schema) {
            (Some(value), _) => match todo.check {
                Some(check) => say!("        value {value} ({})", check.describe()),
                None => say!("        value {value}"),
            },
            (None, Some(schema)) => say!("        value expected: {}", schema.describe()),
            (None, None) => {}
        }
    }
}

/// The contact's last message and every change of state.
fn print_history(i: &ConversationInstance) {
    if let Some(last) = &i.last_contact_message {
        say!(
            "contact     last wrote \"{}\" ({})",
            output::truncate(&last.untrusted_contact_text, 60),
            output::time(last.at)
        );
    }
    say!("history");
    for t in &i.history {
        let from = t.from_state.map(|s| format!("{s} -> ")).unwrap_or_default();
        let reason = t.reason.as_deref().map(|r| format!(": {}", output::hang(r, 4))).unwrap_or_default();
        say!("  {}  {from}{} ({}){reason}", output::time(t.timestamp), t.to_state, t.trigger);
    }
}

/// The conversation's limits and what is spent of each: "2 of 10 turns,
/// 440 of 1000 tokens; expires in 2d (2026-...)". None when it has none.
fn budget_line(i: &ConversationInstance) -> Option<String> {
    let budget = &i.budget;
    if budget.is_unlimited() {
        return None;
    }
    let mut spent = Vec::new();
    if let Some(max) = budget.max_turns {
        spent.push(format!("{} of {}", i.turns_taken, output::count(max, "turn")));
    }
    if let Some(max) = budget.max_tokens {
        spent.push(format!("{} of {max} tokens", i.usage.total_tokens()));
    }
    let mut line = spent.join(", ");
    if let Some(at) = budget.expires_at {
        let when = match i.state.is_terminal() {
            true => format!("deadline {}", output::time(at)),
            false => format!("expires {} ({})", output::relative(at), output::time(at)),
        };
        line = if line.is_empty() { when } else { format!("{line}; {when}") };
    }
    if let Some(limit) = budget.reached {
        line.push_str(&format!(" (reached: {})", limit.as_str()));
    }
    Some(line)
}
