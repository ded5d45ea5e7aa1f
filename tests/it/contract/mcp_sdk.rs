//! `relay mcp` as the official Rust MCP SDK's client (rmcp) sees it: a
//! client nobody here wrote, negotiating its own protocol version, parsing
//! relay's answers with its own types. What `mcp/` checks message by
//! message, this checks as a host's agent lives it: a long wait survives a
//! short client timeout because progress keeps it alive, a cancelled call
//! frees the daemon, and a conversation is a task the SDK can follow.

use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, ClientRequest,
    DetailedTask, GetTaskParams, Implementation, JsonObject, ProgressNotificationParam, ServerResult, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::model::*;
use crate::support::{CONTACT, Relay};
use relay::scripted_model::Reply;

/// The host's side: it declares the tasks extension when asked to, and
/// hands on the progress notices it gets.
struct Host {
    tasks: bool,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("relay-tests-sdk", "0"))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.progress.send(params);
    }
}

/// `relay mcp` (with progress every second) and the SDK's client of it.
struct Session {
    service: RunningService<RoleClient, Host>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    _child: tokio::process::Child,
}

async fn connect(relay: &Relay, tasks: bool) -> Session {
    let mut command = tokio::process::Command::from(relay.command(&["mcp", "--progress-every", "1s"]));
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    let mut child = command.spawn().expect("spawn relay mcp");
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let (sender, progress) = mpsc::unbounded_channel();
    let service = Host { tasks, progress: sender }.serve((stdout, stdin)).await.expect("the SDK's handshake");
    Session { service, progress, _child: child }
}

/// `tasks/get` until `done` holds for the task's status (a client of the
/// extension polls), at most 20 s.
async fn task_until(
    client: &RunningService<RoleClient, Host>,
    task: &str,
    done: impl Fn(&TaskStatus) -> bool,
) -> DetailedTask {
    let poll = async {
        loop {
            let got = client.get_task(GetTaskParams::new(task)).await.unwrap().task;
            if done(&got.status()) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), poll).await.expect("the task never got there")
}

fn arguments(value: Value) -> JsonObject {
    let Value::Object(object) = value else { panic!("arguments are an object") };
    object
}

/// A wait of 8 s under a client timeout of 3 s that progress resets: the
/// SDK's own timeout machinery keeps the call alive only because relay
/// reports progress; then a cancelled wait ends the daemon's long poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_long_wait_alive_and_a_cancelled_wait_frees_the_daemon() {
    let relay = Relay::started();
    let mut session = connect(&relay, false).await;
    let peer = session.service.peer().clone();
    assert!(peer.peer_info().unwrap().capabilities.tools.is_some());
    let tools = session.service.list_all_tools().await.unwrap();
    assert!(tools.iter().all(|tool| tool.output_schema.is_some()), "every tool has an outputSchema");

    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let wait = |seconds: u64| {
        ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
            CallToolRequestParams::new("wait_for_conversation")
                .with_arguments(arguments(json!({"id": id, "until": "COMPLETED", "timeout_seconds": seconds}))),
        ))
    };
    let options = PeerRequestOptions::with_timeout(Duration::from_secs(3)).reset_timeout_on_progress();
    let handle = peer.send_cancellable_request(wait(8), options).await.unwrap();
    let ServerResult::CallToolResult(result) = handle.await_response().await.expect("progress kept the call alive")
    else {
        panic!("not a tool result")
    };
    let waited = result.structured_content.unwrap();
    assert_eq!((&waited["reached"], &waited["state"]), (&json!(false), &json!("NEEDS_HUMAN_INTERVENTION")));
    let notice = session.progress.recv().await.unwrap();
    assert!(notice.message.unwrap().contains("NEEDS_HUMAN_INTERVENTION"));

    let handle = peer.send_cancellable_request(wait(600), PeerRequestOptions::no_options()).await.unwrap();
    tokio::task::block_in_place(|| relay.until_waiting(1));
    handle.cancel(Some("the user moved on".into())).await.unwrap();
    tokio::task::block_in_place(|| relay.until_waiting(0));
    session.service.cancel().await.unwrap();
}

/// A conversation as a task through the SDK's own task calls: created as
/// a task, input_required with the agent's question, answered with
/// tasks/update, completed with the conversation; tasks/cancel cancels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_follows_a_conversation_as_a_task() {
    let (relay, _model) = with_model(each_turn(|n| match n {
        0 => Reply::tool(
            "request_human_intervention",
            json!({"reason": "a discount", "question": "May I offer 10% off?"}),
        ),
        _ => Reply::Tools(vec![
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "note": "up to 10%"})),
            ("end_conversation".into(), json!({"reason": "agreed", "outcome": "achieved", "summary": "Agreed."})),
        ]),
    }));
    let session = connect(&relay, true).await;
    let client = &session.service;
    let create = |contact: &str| {
        CallToolRequestParams::new("create_conversation")
            .with_arguments(arguments(json!({"objective": "Agree a price", "contact": contact, "todos": ["Agree"]})))
    };
    let CallToolResponse::Task(created) = client.call_tool_once(create(CONTACT)).await.unwrap() else {
        panic!("a tasks-capable client gets a task")
    };
    let task = created.task.task_id.clone();
    assert_eq!(created.task.status, TaskStatus::Working);

    let asking = task_until(client, &task, |status| *status != TaskStatus::Working).await;
    let TaskPayload::InputRequired { input_requests } = asking.payload else { panic!("{asking:?}") };
    let key = input_requests.keys().next().unwrap().clone();
    let answer = json!({"action": "accept", "content": {"answer": "Yes, up to 10%"}});
    client.update_task(UpdateTaskParams::new(task.clone(), [(key, answer)].into())).await.unwrap();
    let done = task_until(client, &task, TaskStatus::is_terminal).await;
    let TaskPayload::Completed { result } = done.payload else { panic!("{done:?}") };
    assert_eq!(result["structuredContent"]["state"], "COMPLETED");

    let CallToolResponse::Task(other) = client.call_tool_once(create(crate::support::OTHER_CONTACT)).await.unwrap()
    else {
        panic!("a task")
    };
    client.cancel_task(CancelTaskParams::new(other.task.task_id.clone())).await.unwrap();
    let cancelled = client.get_task(GetTaskParams::new(other.task.task_id)).await.unwrap().task;
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
}
