//! Long calls: a long wait reports progress and a cancelled one frees the
//! daemon; a client of the tasks extension follows a conversation as a task
//! (input required, then the result); one without it gets plain results.

use std::time::{Duration, Instant};

use crate::support::{CONTACT, Relay};
use serde_json::{Value, json};

use super::client::*;

/// A long wait tells a client that gave a progressToken where the
/// conversation stands, with rising progress; a cancelled wait
/// (`notifications/cancelled`) ends the daemon's long poll behind it at
/// once and is not answered; and so does a client that goes away.
#[test]
fn a_long_wait_reports_progress_and_a_cancelled_one_frees_the_daemon() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect_with(&relay, &["--progress-every", "1s"], json!({}));
    // No model: the conversation soon needs a human, and never completes.
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let wait = json!({
        "name": "wait_for_conversation",
        "arguments": {"id": id, "until": "COMPLETED", "timeout_seconds": 600},
        "_meta": {"progressToken": "wait-1"},
    });
    let call = mcp.start("tools/call", wait);
    let mut last = -1.0;
    for _ in 0..2 {
        let notice = mcp.notice("notifications/progress");
        let params = &notice["params"];
        assert_eq!(params["progressToken"], "wait-1", "{notice}");
        assert_eq!(params["total"], 600.0, "{notice}");
        assert!(params["message"].as_str().unwrap().contains("NEEDS_HUMAN_INTERVENTION"), "{notice}");
        let progress = params["progress"].as_f64().unwrap();
        assert!(progress > last, "progress rises: {notice}");
        last = progress;
    }
    relay.until_waiting(1);

    mcp.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": call, "reason": "the user moved on"},
    }));
    relay.until_waiting(0);
    // The cancelled call gets no answer: the next one to arrive is a ping's.
    let ping = mcp.start("ping", json!({}));
    let answer = mcp.answer(ping, "ping");
    assert!(answer.get("error").is_none(), "{answer}");

    // A client that goes away frees its wait too.
    mcp.start("tools/call", json!({"name": "wait_for_conversation", "arguments": {"id": id, "until": "COMPLETED"}}));
    relay.until_waiting(1);
    assert_eq!(mcp.close(), Some(0));
    relay.until_waiting(0);
}

/// `tasks/get` until the task's status is `status`: a client of the tasks
/// extension polls (relay asks it to every 15 s; a test may ask sooner).
fn task_until(mcp: &mut McpClient, task: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = mcp.request("tasks/get", json!({"taskId": task}));
        let result = got["result"].clone();
        assert!(result.is_object(), "{got}");
        if result["status"] == status {
            return result;
        }
        assert!(started.elapsed() < ANSWER_TIMEOUT, "the task never became {status}: {result:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client that declares the tasks extension gets each conversation it
/// creates as a task: working, then input_required with the agent's
/// question as an elicitation, answered with tasks/update (the answer
/// reaches relay's agent), then completed with the conversation as the
/// result. tasks/cancel cancels a conversation; a task that has ended
/// cannot be cancelled, and an input request that is not outstanding
/// cannot be answered.
#[test]
fn a_tasks_client_sees_a_question_as_input_required_then_the_result() {
    use crate::support::model::*;
    use relay::scripted_model::Reply;

    let (relay, model) = with_model(each_turn(|n| match n {
        0 => Reply::tool(
            "request_human_intervention",
            json!({"reason": "the contact asks for a discount", "question": "May I offer 10% off?"}),
        ),
        _ => Reply::Tools(vec![
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "note": "up to 10%"})),
            ("end_conversation".into(), json!({"reason": "agreed", "outcome": "achieved", "summary": "Agreed."})),
        ]),
    }));
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (mut mcp, initialized) = McpClient::connect_with(&relay, &[], tasks);
    assert!(initialized["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{initialized}");

    let create = json!({"objective": "Agree a price", "contact": CONTACT, "todos": ["Agree the discount"]});
    let created = mcp.request("tools/call", json!({"name": "create_conversation", "arguments": create}));
    let seed = &created["result"];
    assert_eq!((&seed["resultType"], &seed["status"]), (&json!("task"), &json!("working")), "{created}");
    assert_eq!(seed["pollIntervalMs"], 15_000, "{created}");
    let task = seed["taskId"].as_str().unwrap().to_string();
    assert_eq!(relay.get(&task)["objective"], "Agree a price", "the task's id is the conversation's");

    let asking = task_until(&mut mcp, &task, "input_required");
    let request = &asking["inputRequests"]["q1"];
    assert_eq!(request["method"], "elicitation/create", "{asking:#}");
    assert!(request["params"]["message"].as_str().unwrap().contains("May I offer 10% off?"), "{asking:#}");
    assert_eq!(asking["statusMessage"], "NEEDS_HUMAN_INTERVENTION", "{asking:#}");

    let wrong = mcp.request(
        "tasks/update",
        json!({"taskId": task, "inputResponses": {"q9": {"action": "accept", "content": {"answer": "no"}}}}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    assert!(wrong["error"]["message"].as_str().unwrap().contains("\"q1\""), "{wrong}");
    let answer = json!({"q1": {"action": "accept", "content": {"answer": "Yes, up to 10%; never more."}}});
    let ack = mcp.request("tasks/update", json!({"taskId": task, "inputResponses": answer}));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");

    let done = task_until(&mut mcp, &task, "completed");
    let conversation = &done["result"]["structuredContent"];
    assert_eq!(
        (&conversation["state"], &conversation["outcome"]),
        (&json!("COMPLETED"), &json!("achieved")),
        "{done:#}"
    );
    assert_eq!(conversation["earlier_questions"][0]["answer"], "Yes, up to 10%; never more.", "{done:#}");
    let next = instructions(model.requests().last().unwrap());
    assert!(next.contains("The operator answered: Yes, up to 10%; never more."), "{next}");
    // The result is what get_conversation answers, and conforms to its outputSchema.
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let schema = &tools.iter().find(|t| t["name"] == "get_conversation").unwrap()["outputSchema"];
    conforms(conversation, schema, schema, "").unwrap();
    let ended = mcp.request("tasks/cancel", json!({"taskId": task}));
    assert_eq!(ended["error"]["code"], -32602, "{ended}");

    // tasks/cancel is cancel_conversation.
    let create = json!({"objective": "Another", "contact": crate::support::OTHER_CONTACT, "todos": ["x"]});
    let created = mcp.request("tools/call", json!({"name": "create_conversation", "arguments": create}));
    let other = created["result"]["taskId"].as_str().unwrap().to_string();
    let ack = mcp.request("tasks/cancel", json!({"taskId": other}));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    task_until(&mut mcp, &other, "cancelled");
    assert_eq!(relay.state(&other), "FAILED");
    let unknown = mcp.request("tasks/get", json!({"taskId": "00000000-0000-4000-8000-000000000000"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// A client that did not declare the extension gets no tasks: the tools
/// answer as they always did, and tasks/* say the capability is missing.
#[test]
fn a_client_without_tasks_gets_plain_results() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let created =
        document(&mcp.call("create_conversation", json!({"objective": "x", "contact": CONTACT, "todos": ["y"]})));
    let refused = mcp.request("tasks/get", json!({"taskId": created["id"]}));
    assert!(refused["error"]["code"].is_i64(), "{refused}");
}
