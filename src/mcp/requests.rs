//! The daemon requests behind the tools that do more than one call:
//! create (attachments first), events (a bounded page), wait (with progress).

use std::path::PathBuf;

use super::*;
use crate::client::request::{self, NewConversation, Problem};

impl RelayTools {
    /// A client for this request: built anew each time, so a daemon started
    /// (or restarted on another port) after the server is found.
    pub(super) fn client(&self) -> Result<Client, ApiErrorResponse> {
        Client::new(&self.home, self.port)
    }

    pub(super) async fn create_request(&self, args: CreateArgs) -> Result<CreateInstanceResponse, ApiErrorResponse> {
        let mut todos: Vec<NewTodo> = args.todos.into_iter().map(NewTodo::new).collect();
        for (id, kind) in args.answers.unwrap_or_default() {
            let count = todos.len();
            let Some(todo) = request::todo_by_id(&mut todos, &id) else {
                return Err(usage(format!("answers: there is no todo {id:?}; the todo ids are 1 to {count}")));
            };
            let schema = crate::api::AnswerSchema::shorthand(&kind).map_err(|e| usage(format!("answers.{id}: {e}")))?;
            todo.answer_schema = Some(schema);
        }
        let new = NewConversation {
            objective: args.objective,
            contact: args.contact,
            todos,
            heartbeat_interval_ms: duration_ms(args.heartbeat_interval.as_deref(), "heartbeat_interval")?,
            max_followups: args.max_followups,
            time_zone: args.time_zone,
            quiet_hours: args.quiet_hours,
            // The tool's description says it is a human's call; the daemon
            // records the reason in the conversation and the list.
            override_opt_out: args.override_opt_out,
            budget: BudgetRequest {
                max_turns: args.max_turns,
                max_tokens: args.max_tokens,
                expires_in_ms: duration_ms(args.expires_in.as_deref(), "expires_in")?,
                expires_at: args
                    .expires_at
                    .as_deref()
                    .map(crate::engine::budget::parse_time)
                    .transpose()
                    .map_err(|e| usage(format!("expires_at: {e}")))?,
            },
            private_context: args.private_context.unwrap_or_default(),
            attach: args.attach.unwrap_or_default().into_iter().map(PathBuf::from).collect(),
            start_at: args.start_at,
        };
        let ready = new.read_files().map_err(refusal)?;
        ready.create(&self.client()?.with_idempotency_key(args.idempotency_key)?).await
    }

    pub(super) async fn events_request(&self, args: EventsArgs) -> Result<Events, ApiErrorResponse> {
        let id = InstanceId::parse(&args.id)?;
        let query = EventsQuery { after: args.after, instance: Some(id.as_str().to_string()), follow: Some(false) };
        let mut events = Vec::new();
        let mut more = false;
        // One event past the page says whether there is more, without a
        // second request.
        let end = self
            .client()?
            .events(&query, |event| {
                if events.len() == EVENTS_PER_CALL {
                    more = true;
                    return false;
                }
                events.push(event);
                true
            })
            .await?;
        if let StreamEnd::Cut(error) = end {
            let message = format!("the daemon's answer was cut: {}", crate::client::chain(&error));
            return Err(ApiErrorResponse::new(crate::api::ErrorCode::Failure, message));
        }
        Ok(Events { events, more })
    }

    /// One long poll of the daemon; meanwhile, when the client gave a
    /// progress token, a `notifications/progress` every `progress_every`
    /// with the conversation's state (read with a short request beside the
    /// wait, so the wait itself never restarts and misses a change).
    pub(super) async fn wait_request(
        &self,
        args: WaitArgs,
        progress: Option<(ProgressToken, Peer<RoleServer>)>,
    ) -> Result<Waited, ApiErrorResponse> {
        let seconds = args.timeout_seconds.unwrap_or(DEFAULT_WAIT.as_secs());
        let max = MAX_WAIT.as_secs();
        if seconds > max {
            return Err(usage(format!("timeout_seconds is at most {max} (got {seconds})")));
        }
        let query = WaitQuery { until: args.until, timeout_ms: Some(seconds * 1000) };
        let id = InstanceId::parse(&args.id)?;
        let client = self.client()?;
        let wait = client.wait(&id, &query);
        tokio::pin!(wait);
        let started = tokio::time::Instant::now();
        let mut ticks = tokio::time::interval_at(started + self.progress_every, self.progress_every);
        let answer = loop {
            tokio::select! {
                answer = &mut wait => break answer?,
                _ = ticks.tick(), if progress.is_some() => {
                    let Some((token, peer)) = &progress else { continue };
                    // A failed look is no reason to end the wait; the
                    // notice says so instead.
                    let message = match client.get(&id).await {
                        Ok(instance) => format!("{}: still waiting", instance.state),
                        Err(error) => format!("could not look at the conversation: {}", error.error),
                    };
                    let elapsed = started.elapsed().as_secs_f64().floor();
                    let notice = ProgressNotificationParam::new(token.clone(), elapsed)
                        .with_total(seconds as f64)
                        .with_message(message);
                    // A client that went away is noticed by the service,
                    // which cancels this call.
                    let _ = peer.notify_progress(notice).await;
                }
            }
        };
        let WaitResponse { reached, instance } = answer;
        Ok(Waited {
            reached,
            id: instance.id,
            state: instance.state,
            updated_at: instance.updated_at,
            instance: reached.then_some(instance),
        })
    }
}

/// A duration the tool takes as text ("30m"), in milliseconds; a problem
/// names the argument.
fn duration_ms(text: Option<&str>, argument: &str) -> Result<Option<u64>, ApiErrorResponse> {
    let duration = text.map(crate::duration::parse).transpose();
    Ok(duration.map_err(|e| usage(format!("{argument}: {e}")))?.map(request::millis))
}

/// A problem with the conversation to create or the file to send, in the
/// tools' words (their arguments' names).
pub(super) fn refusal(problem: Problem) -> ApiErrorResponse {
    match problem {
        Problem::TooManyFiles { .. } => {
            usage(format!("attach: at most {} files per conversation", limits::MAX_ATTACHMENTS))
        }
        Problem::Unreadable(why) => usage(format!("attach: {why}")),
        Problem::Daemon(error) => error,
    }
}
