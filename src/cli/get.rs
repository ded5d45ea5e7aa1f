//! `relay get`: one conversation in full.

use super::client::Client;
use super::{CliError, Context, instance_path, output};
use crate::api::{ConversationInstance, State, TodoStatus};

pub async fn run(ctx: &Context, id: &str) -> Result<(), CliError> {
    let instance: ConversationInstance = Client::new(ctx)?.get(&instance_path(id)?).await?;
    if ctx.json {
        output::json(&instance);
    } else {
        print(&instance);
    }
    Ok(())
}

pub fn print(i: &ConversationInstance) {
    let state = match i.previous_state {
        Some(previous) => format!("{} (resumes to {previous})", i.state),
        None => i.state.to_string(),
    };
    println!("id          {}", i.id);
    println!("state       {state}");
    println!("contact     {}", i.target_contact);
    println!("objective   {}", i.objective);
    let hb = &i.heartbeat_config;
    let interval = crate::duration::format(std::time::Duration::from_millis(hb.interval_ms));
    println!(
        "heartbeat   every {interval}, at most {} follow-ups ({} sent since the contact last wrote)",
        hb.max_followups, i.follow_up_count
    );
    if let Some(at) = i.next_heartbeat_at {
        println!("next        follow-up {} ({})", output::relative(at), output::time(at));
    }
    if let Some(ms) = i.paused_heartbeat_remaining_ms {
        let left = crate::duration::format(std::time::Duration::from_millis(ms));
        println!("paused      {left} left on the heartbeat");
    }
    if i.state == State::NeedsHumanIntervention
        && let Some(reason) = &i.intervention_reason
    {
        println!("needs       {reason}");
    }
    if let Some(q) = &i.pending_question {
        let asked = q.question.as_deref().unwrap_or(&q.reason);
        println!("question    {} asks: {asked}", q.id);
        println!("            answer it with `relay answer {} \"...\"`", output::short_id(&i.id));
    }
    if let Some(reason) = &i.channel_blocked {
        println!("waiting     {reason}");
    }
    if let (Some(outcome), Some(by)) = (i.outcome, i.ended_by) {
        println!("outcome     {} (ended by {})", outcome.as_str(), by.as_str());
    }
    if let Some(summary) = &i.summary {
        println!("summary     {summary}");
    }
    if let Some(reason) = i.failure_reason.as_ref().filter(|_| i.outcome.is_none()) {
        println!("failed      {reason}");
    }
    if i.usage.model_calls > 0 {
        println!(
            "usage       {} model calls, {} input + {} output tokens",
            i.usage.model_calls, i.usage.input_tokens, i.usage.output_tokens
        );
    }
    println!("created     {}", output::time(i.created_at));
    println!("todos");
    for todo in &i.todos {
        let mark = match todo.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Skipped => "[-]",
        };
        match &todo.answer {
            Some(note) => println!("  {mark} {}. {}: {note}", todo.id, todo.text),
            None => println!("  {mark} {}. {}", todo.id, todo.text),
        }
    }
    if let Some(last) = &i.last_contact_message {
        println!(
            "contact     last wrote {:?} ({})",
            output::truncate(&last.untrusted_contact_text, 60),
            output::time(last.at)
        );
    }
    println!("history");
    for t in &i.history {
        let from = t.from_state.map(|s| format!("{s} -> ")).unwrap_or_default();
        let reason = t.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        println!("  {}  {from}{} ({}){reason}", output::time(t.timestamp), t.to_state, t.trigger);
    }
}
