//! The tools as a Main Agent uses them: every tool's schemas plain enough
//! for strict clients; a conversation created, read and answered; the
//! do-not-contact list; typed todos; files attached and sent by path; and
//! a call with no daemon told to start it.

use crate::support::{CONTACT, OTHER_CONTACT, Relay};
use serde_json::{Value, json};

use super::client::*;

/// Every tool's schemas are JSON Schema strict clients accept: an input
/// property is of one type (no `["string", "null"]` for an optional one),
/// formats are JSON Schema's own, and every tool has an outputSchema whose
/// root is an object (structured content is one).
#[test]
fn every_tool_has_plain_schemas_and_an_output_schema() {
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    let standard = ["date-time", "date", "time", "duration", "email", "uri", "uuid", "regex", "hostname"];
    for tool in &tools {
        let name = &tool["name"];
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}: {tool}");
        nodes(&tool["inputSchema"], &mut |node| {
            assert!(node.get("type").is_none_or(Value::is_string), "{name}: a type that is not one: {node:?}");
            assert!(node.get("default").is_none_or(|d| !d.is_null()), "{name}: a null default: {node:?}");
        });
        for schema in [&tool["inputSchema"], &tool["outputSchema"]] {
            nodes(schema, &mut |node| {
                if let Some(format) = node.get("format").and_then(Value::as_str) {
                    assert!(standard.contains(&format), "{name}: format {format}");
                }
            });
        }
    }
    assert_eq!(mcp.close(), Some(0));
}

#[test]
fn an_agent_lists_the_tools_creates_a_conversation_and_reads_it() {
    let relay = Relay::started();
    let (mut mcp, initialized) = McpClient::connect(&relay);
    assert_eq!(initialized["protocolVersion"], "2025-06-18", "{initialized}");
    assert_eq!(initialized["serverInfo"]["name"], "relay", "{initialized}");
    let instructions = initialized["instructions"].as_str().unwrap();
    assert!(instructions.contains("untrusted_contact_text"), "{instructions}");
    assert!(initialized["capabilities"]["tools"].is_object(), "{initialized}");

    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add_opt_out",
            "answer_question",
            "cancel_conversation",
            "create_conversation",
            "get_conversation",
            "get_transcript",
            "list_conversations",
            "list_events",
            "list_opt_outs",
            "pause_conversation",
            "remove_opt_out",
            "resume_conversation",
            "send_to_contact",
            "wait_for_conversation"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 40), "{tool}");
    }
    let create = tools.iter().find(|t| t["name"] == "create_conversation").unwrap();
    let mut required: Vec<&str> =
        create["inputSchema"]["required"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    required.sort_unstable();
    assert_eq!(required, ["contact", "objective", "todos"], "{create}");
    for untrusted in ["create_conversation", "get_conversation", "list_events"] {
        let tool = tools.iter().find(|t| t["name"] == untrusted).unwrap();
        assert!(tool["description"].as_str().unwrap().contains("untrusted_contact_text"), "{tool}");
    }

    let created = document(&mcp.call(
        "create_conversation",
        json!({
            "objective": "Confirm the delivery date",
            "contact": CONTACT,
            "todos": ["Ask which day suits"],
            "heartbeat_interval": "30m",
        }),
    ));
    let id = created["id"].as_str().unwrap_or_else(|| panic!("no id: {created}")).to_string();

    let got = document(&mcp.call("get_conversation", json!({"id": id})));
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["objective"], "Confirm the delivery date");
    assert_eq!(got["target_contact"], CONTACT);
    assert_eq!(got["heartbeat_config"]["interval_ms"], 30 * 60 * 1000);

    // wait goes to the daemon's long poll (with no model, the conversation
    // soon needs a human; the default waits for that).
    let waited = document(&mcp.call("wait_for_conversation", json!({"id": id, "timeout_seconds": 20})));
    assert_eq!(waited["reached"], true, "{waited}");
    assert_eq!(waited["instance"]["state"], "NEEDS_HUMAN_INTERVENTION", "{waited}");
    assert_eq!((&waited["id"], &waited["state"]), (&json!(id), &json!("NEEDS_HUMAN_INTERVENTION")), "{waited}");
    // Nothing reached: where it stands, not the whole conversation again.
    let pending =
        document(&mcp.call("wait_for_conversation", json!({"id": id, "until": "COMPLETED", "timeout_seconds": 1})));
    let mut keys: Vec<&String> = pending.as_object().unwrap().keys().collect();
    keys.sort_unstable();
    assert_eq!(keys, ["id", "reached", "state", "updated_at"], "{pending}");
    assert_eq!(pending["reached"], false, "{pending}");

    // No model, so no question to answer (its success shares get_conversation's schema).
    let unasked = mcp.call("answer_question", json!({"id": id, "answer": "Tuesday suits us"}));
    assert!(text(&unasked).contains("asked no question"), "{unasked}");
    let sent = document(&mcp.call("send_to_contact", json!({"id": id, "message": "Hola, soy yo"})));
    assert_eq!((&sent["role"], &sent["content"]), (&json!("manual"), &json!("Hola, soy yo")), "{sent}");

    // What the report refers to: the messages (only the one sent above:
    // with no model, relay's agent wrote nothing) and the history, from its
    // creation on.
    let transcript = document(&mcp.call("get_transcript", json!({"id": id})));
    // (By id: the sandbox's receipts move its send_status on meanwhile.)
    let ids: Vec<&Value> = transcript["messages"].as_array().unwrap().iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&sent["id"]], "{transcript}");
    let events = document(&mcp.call("list_events", json!({"id": id})));
    assert_eq!((&events["events"][0]["type"], &events["more"]), (&json!("created"), &json!(false)), "{events}");
    let first = events["events"][0]["seq"].as_u64().unwrap();
    let later = document(&mcp.call("list_events", json!({"id": id, "after": first})));
    assert_eq!(later["events"].as_array().unwrap().len(), events["events"].as_array().unwrap().len() - 1, "{later}");

    // A daemon error is a tool error the agent reads, not a protocol error...
    let missing = mcp.call("get_conversation", json!({"id": "00000000-0000-4000-8000-000000000000"}));
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(text(&missing).contains("not_found"), "{missing}");

    // ...and so are arguments the daemon (or relay) refuses.
    let refused = mcp.call("wait_for_conversation", json!({"id": id, "timeout_seconds": 7200}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("3600"), "{refused}");

    // The server keeps answering.
    let listed = document(&mcp.call("list_conversations", json!({"contact": CONTACT})));
    assert_eq!(listed["conversations"].as_array().map(Vec::len), Some(1), "{listed}");
    let paused = document(&mcp.call("pause_conversation", json!({"id": id})));
    assert_eq!(paused["state"], "PAUSED", "{paused}");
    let listed = document(&mcp.call("list_conversations", json!({"state": "PAUSED"})));
    assert_eq!(listed["conversations"][0]["id"], id.as_str(), "{listed}");
    let resumed = document(&mcp.call("resume_conversation", json!({"id": id})));
    assert_ne!(resumed["state"], "PAUSED", "{resumed}");

    // An ended conversation answers a wait at once (the daemon's rule, as for
    // `relay wait`): a wait of 3000 s that held would miss ANSWER_TIMEOUT.
    mcp.call("cancel_conversation", json!({"id": id}));
    let ended = mcp.call("wait_for_conversation", json!({"id": id, "until": "PAUSED", "timeout_seconds": 3000}));
    assert_eq!(ended["isError"], true, "{ended}");
    assert!(text(&ended).contains("has ended in FAILED") && text(&ended).contains("code: ended"), "{ended}");
    let failed =
        document(&mcp.call("wait_for_conversation", json!({"id": id, "until": "FAILED", "timeout_seconds": 3000})));
    assert_eq!((&failed["reached"], &failed["instance"]["state"]), (&json!(true), &json!("FAILED")), "{failed}");

    assert_eq!(mcp.close(), Some(0), "relay mcp exits cleanly when its client goes away");
}

#[test]
fn without_a_daemon_a_tool_call_says_to_start_it() {
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let result = mcp.call("list_conversations", json!({}));
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(&result).contains("relay start"), "{result}");
    // An id the CLI would refuse is refused the same way, before any request.
    let result = mcp.call("get_conversation", json!({"id": "../status"}));
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(&result).contains("is not a conversation id"), "{result}");
}

/// The Main Agent reaches the do-not-contact list: `add_opt_out` ends the
/// number's conversations and lists it (written any way), `create_conversation` is then
/// refused unless it carries a human's `override_opt_out` (recorded),
/// `remove_opt_out` takes it off. The tools that change the list, and the
/// override, say it is a human's call.
#[test]
fn an_agent_keeps_the_do_not_contact_list() {
    let relay = Relay::started();
    let (mut mcp, initialized) = McpClient::connect(&relay);
    assert!(initialized["instructions"].as_str().unwrap().contains("opted_out"), "{initialized}");
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no {name}")).clone();
    assert_eq!(tool("list_opt_outs")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("remove_opt_out")["annotations"]["destructiveHint"], true);
    assert!(tool("remove_opt_out")["description"].as_str().unwrap().contains("human"));
    let create = tool("create_conversation");
    let override_field = &create["inputSchema"]["properties"]["override_opt_out"];
    assert!(override_field["description"].as_str().unwrap().contains("human"), "{create}");

    let conversation = json!({"objective": "Confirm the delivery date", "contact": CONTACT, "todos": ["Ask the day"]});
    let live = document(&mcp.call("create_conversation", conversation.clone()))["id"].as_str().unwrap().to_string();

    let added = document(&mcp.call("add_opt_out", json!({"contact": "+56 9 1234 5678", "reason": "asked by email"})));
    assert_eq!((&added["contact"], &added["added"]), (&json!(CONTACT), &json!(true)), "{added}");
    let ended = relay.wait_for_state(&live, "ABANDONED");
    assert_eq!((&ended["outcome"], &ended["ended_by"]), (&json!("opted_out"), &json!("operator")), "{ended:#}");

    let refused = mcp.call("create_conversation", conversation.clone());
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("+56912345678 was listed by the operator on "), "{refused}");
    assert!(text(&refused).contains("code: opted_out"), "{refused}");
    // Overriding is a person's call, named as this caller gives it.
    let words = "a person's decision (the operator's), not an agent's: only on their word does create_conversation \
                 with override_opt_out: \"<their reason>\" write to them";
    assert!(text(&refused).contains(words) && !text(&refused).contains("--override-opt-out"), "{refused}");

    let mut anyway = conversation.clone();
    anyway["override_opt_out"] = json!("the operator says she asked us to write");
    let id = document(&mcp.call("create_conversation", anyway))["id"].as_str().unwrap().to_string();
    assert_eq!(relay.get(&id)["opt_out_override"], "the operator says she asked us to write");

    let list = &document(&mcp.call("list_opt_outs", json!({})))["opt_outs"];
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!((&list[0]["contact"], &list[0]["source"]), (&json!(CONTACT), &json!("operator")), "{list}");
    assert_eq!(list[0]["overrides"][0]["instance_id"], id.as_str(), "{list}");

    let removed = document(&mcp.call("remove_opt_out", json!({"contact": "+56-9-1234-5678"})));
    assert_eq!(removed["contact"], CONTACT, "{removed}");
    let missing = mcp.call("remove_opt_out", json!({"contact": CONTACT}));
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(text(&missing).contains("is not on the do-not-contact list (code: not_found)"), "{missing}");
    let wrong = mcp.call("remove_opt_out", json!({"contact": "../status"}));
    assert!(text(&wrong).contains("is not a phone number"), "{wrong}");
    assert_eq!(document(&mcp.call("list_opt_outs", json!({}))), json!({"opt_outs": []}));
    assert_eq!(mcp.close(), Some(0));
}

/// `create_conversation` takes each todo's answer kind by todo id, as the
/// CLI's `--answer` does: the conversation's todos are typed; an unknown
/// todo or kind is a tool error that says which.
#[test]
fn an_agent_creates_typed_todos() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let typed = json!({"objective": "Confirm the delivery", "contact": CONTACT, "todos": ["Day", "Home?"],
        "answers": {"1": "date", "2": "yes-no"}});
    let id = document(&mcp.call("create_conversation", typed))["id"].as_str().unwrap().to_string();
    let todos = relay.get(&id)["todos"].clone();
    assert_eq!(todos[0]["answer_schema"], json!({"type": "string", "format": "date"}));
    assert_eq!(todos[1]["answer_schema"], json!({"type": "boolean"}));
    for (answers, says) in [(json!({"3": "date"}), "there is no todo \"3\""), (json!({"1": "weekday"}), "answers.1:")] {
        let wrong = json!({"objective": "o", "contact": CONTACT, "todos": ["Day", "Home?"], "answers": answers});
        let refused = mcp.call("create_conversation", wrong);
        assert_eq!(refused["isError"], true, "{refused}");
        assert!(text(&refused).contains(says), "{refused}");
    }
    assert_eq!(mcp.close(), Some(0));
}

/// An agent sets a conversation to start later: the answer says when, on
/// the contact's clock and in which zone; a time it cannot be is refused
/// with the reason, and nothing is created.
#[test]
fn an_agent_creates_a_conversation_that_starts_later() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let later = json!({"objective": "Remind them of the visit", "contact": CONTACT, "todos": ["Confirm"],
        "time_zone": "America/Santiago", "start_at": "tomorrow 10:00"});
    let created = document(&mcp.call("create_conversation", later));
    assert_eq!(created["state"], "CREATED", "{created}");
    assert_eq!(
        (&created["start"]["time_zone"], &created["start"]["zone_source"]),
        (&json!("America/Santiago"), &json!("given"))
    );
    assert!(created["start"]["local"].as_str().unwrap().contains(" 10:00 -0"), "{created}");
    let id = created["id"].as_str().unwrap();
    let held = relay.wait_for(id, "the hold", |i| i["waiting_for"] == "start_at");
    assert_eq!(held["next_send_at"], held["start_at"]);
    let past = json!({"objective": "o", "contact": OTHER_CONTACT, "todos": ["t"], "start_at": "2020-01-01 10:00"});
    let refused = mcp.call("create_conversation", past);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("has already passed"), "{refused}");
    assert_eq!(relay.instances().len(), 1, "nothing more was created");
    assert_eq!(mcp.close(), Some(0));
}

/// Files on the agent's machine become the conversation's attachments,
/// read and given to relay before it is created (a path that cannot be read
/// is a clear error, and nothing is created), or go to the contact with
/// `send_to_contact`.
#[test]
fn an_agent_attaches_and_sends_files_by_path() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let dir = tempfile::tempdir().unwrap();
    let invoice = dir.path().join("factura marzo.pdf");
    std::fs::write(&invoice, b"%PDF-1.4\n1 0 obj\n").unwrap();
    let with_file = json!({"objective": "Send the invoice", "contact": CONTACT, "todos": ["Send it"],
        "attach": [invoice.to_str().unwrap()]});
    let id = document(&mcp.call("create_conversation", with_file))["id"].as_str().unwrap().to_string();
    let attachments = relay.get(&id)["attachments"].clone();
    assert_eq!(attachments[0]["name"], "factura marzo.pdf", "{attachments}");
    assert_eq!(attachments[0]["kind"], "document", "{attachments}");
    let missing = dir.path().join("nowhere.pdf");
    let wrong = json!({"objective": "o", "contact": CONTACT, "todos": ["t"], "attach": [missing.to_str().unwrap()]});
    let refused = mcp.call("create_conversation", wrong);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("attach: cannot read") && text(&refused).contains("nowhere.pdf"), "{refused}");
    assert_eq!(relay.instances().len(), 1, "nothing more was created");
    // The agent sends a file itself, with its message as the caption.
    let sent = json!({"id": id, "file": invoice.to_str().unwrap(), "message": "Here it is"});
    let sent = document(&mcp.call("send_to_contact", sent));
    assert_eq!((sent["role"].as_str(), sent["media"]["kind"].as_str()), (Some("manual"), Some("document")), "{sent}");
    assert_eq!(sent["media"]["caption"], "Here it is", "{sent}");
    let neither = mcp.call("send_to_contact", json!({"id": id}));
    assert_eq!(neither["isError"], true, "{neither}");
    assert!(text(&neither).contains("give message, or file"), "{neither}");
    assert_eq!(mcp.close(), Some(0));
}
