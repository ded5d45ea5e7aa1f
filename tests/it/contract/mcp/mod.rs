//! `relay mcp`, end to end: the real binary speaks MCP (JSON-RPC 2.0, one
//! message a line) on stdin/stdout to this test, which plays the MCP client,
//! against a real sandbox daemon.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::support::{CONTACT, OTHER_CONTACT, Relay};
use serde_json::{Value, json};

/// How long any one answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// `relay mcp` as a child process, and this test as its MCP client.
struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    /// stdout, one line per message, read by a helper thread.
    lines: Receiver<String>,
    /// Notifications read while looking for an answer, oldest first.
    notices: VecDeque<Value>,
    next_id: u64,
}

impl McpClient {
    /// Spawns `relay mcp` and completes the handshake; returns the client
    /// and the `initialize` result.
    fn connect(relay: &Relay) -> (McpClient, Value) {
        McpClient::connect_with(relay, &[], json!({}))
    }

    /// [`McpClient::connect`], with more arguments to `relay mcp` and the
    /// client's capabilities.
    fn connect_with(relay: &Relay, args: &[&str], capabilities: Value) -> (McpClient, Value) {
        let mut command = vec!["mcp"];
        command.extend_from_slice(args);
        let mut child = relay
            .command(&command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn relay mcp");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = McpClient { child, stdin, lines, notices: VecDeque::new(), next_id: 1 };
        let initialized = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "relay-tests", "version": "0"}
            }),
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, initialized["result"].clone())
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to relay mcp");
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.answer(id, method)
    }

    /// Sends a request and returns its id, without waiting for the answer.
    fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The answer to request `id` (keeping the notifications that come first).
    fn answer(&mut self, id: u64, method: &str) -> Value {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let message = self.next_message(deadline, &format!("an answer to {method} (id {id})"));
            if message["id"] == id && message.get("method").is_none() {
                check_error_code(method, &message);
                return message;
            }
            assert!(message["id"].is_null(), "an answer to a request not waited for: {message}");
            self.notices.push_back(message);
        }
    }

    /// The next notification named `method` (the ones before it are dropped).
    fn notice(&mut self, method: &str) -> Value {
        if let Some(at) = self.notices.iter().position(|n| n["method"] == method) {
            self.notices.drain(..at);
            return self.notices.pop_front().unwrap();
        }
        self.notices.clear();
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let message = self.next_message(deadline, &format!("a {method} notification"));
            assert!(message["id"].is_null() || message.get("method").is_some(), "an answer not waited for: {message}");
            if message["method"] == method {
                return message;
            }
        }
    }

    /// The next message on stdout, which carries protocol messages and nothing else.
    fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match self.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no {what} within {ANSWER_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("relay mcp closed stdout before {what}"),
        };
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON-RPC message on stdout ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        message
    }

    /// `tools/call`; returns its result, failing on a JSON-RPC error, and
    /// on a successful result whose structured content does not conform to
    /// the tool's outputSchema (every call of every test checks it).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{tool}: a protocol error instead of a result: {response}");
        let result = response["result"].clone();
        if result["isError"] != true {
            let listed = self.request("tools/list", json!({}));
            let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
            let schema = &tools.iter().find(|t| t["name"] == tool).unwrap()["outputSchema"];
            assert!(schema.is_object(), "{tool} has no outputSchema");
            let structured = &result["structuredContent"];
            if let Err(wrong) = conforms(structured, schema, schema, "") {
                panic!("{tool}'s result does not conform to its outputSchema: {wrong}\n{structured:#}");
            }
        }
        result
    }

    /// Closes stdin and waits for the server to exit; returns its exit code.
    fn close(&mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("relay mcp did not exit after its stdin closed");
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one text block of a tool result.
fn text(result: &Value) -> &str {
    let content = result["content"].as_array().unwrap_or_else(|| panic!("no content: {result}"));
    assert_eq!(content.len(), 1, "{result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    content[0]["text"].as_str().unwrap()
}

/// The JSON document of a successful tool result: structured content (an
/// object), and the same document as compact JSON text.
fn document(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let document: Value = serde_json::from_str(text(result)).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"));
    assert!(document.is_object(), "{result}");
    assert_eq!(result["structuredContent"], document, "{result}");
    assert_eq!(text(result), document.to_string(), "compact JSON");
    document
}

/// Whether `value` conforms to `schema` (a tool's outputSchema, whose
/// `$defs` are in `root`), by a real JSON Schema validator (draft 2020-12,
/// formats checked).
fn conforms(value: &Value, schema: &Value, root: &Value, at: &str) -> Result<(), String> {
    let mut whole = schema.clone();
    if let (Some(whole), Some(defs)) = (whole.as_object_mut(), root.get("$defs")) {
        whole.insert("$defs".into(), defs.clone());
    }
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&whole)
        .unwrap_or_else(|e| panic!("{at}: the schema does not compile: {e}"));
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    if errors.is_empty() { Ok(()) } else { Err(format!("{at}: {}", errors.join("; "))) }
}

/// The JSON-RPC error codes an answer may carry: the protocol's own, and
/// "method not found" only for a method relay does not serve.
fn check_error_code(method: &str, response: &Value) {
    let Some(code) = response["error"]["code"].as_i64() else { return };
    const SERVED: [&str; 8] =
        ["initialize", "ping", "tools/list", "tools/call", "tasks/get", "tasks/cancel", "tasks/update", "tasks/list"];
    match code {
        // -32021: the tasks extension's "missing required client capability".
        -32700 | -32600 | -32602 | -32603 | -32021 => {}
        -32601 => assert!(!SERVED.contains(&method), "{method} is served, yet answered method not found: {response}"),
        other => panic!("{method}: {other} is no JSON-RPC error code relay gives: {response}"),
    }
}

/// Every node of a schema, depth first.
fn nodes<'a>(value: &'a Value, each: &mut impl FnMut(&'a serde_json::Map<String, Value>)) {
    match value {
        Value::Object(object) => {
            each(object);
            object.values().for_each(|child| nodes(child, each));
        }
        Value::Array(items) => items.iter().for_each(|item| nodes(item, each)),
        _ => {}
    }
}

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

/// Arguments that do not fit a tool's inputSchema are the client's mistake
/// in the protocol's terms: JSON-RPC invalid params (-32602), for every
/// tool, whatever the shape (not an object, a property of the wrong type,
/// a property the tool does not have, a required one missing), and never
/// "method not found".
#[test]
fn malformed_arguments_are_invalid_params_for_every_tool() {
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let mut malformed = vec![json!([1, 2]), json!("id"), json!(5), json!(true), json!({"bogus": 1})];
        // Each property given a value of another type than its own.
        for (property, declared) in &properties {
            let wrong = match declared["type"].as_str() {
                Some("string") => json!(5),
                Some("integer" | "number" | "boolean") => json!("five"),
                Some("array") => json!({"not": "a list"}),
                Some("object") => json!(["not", "an", "object"]),
                other => panic!("{name}.{property}: a type this test does not know: {other:?}"),
            };
            malformed.push(json!({ property: wrong }));
            // Optional or not, no argument is nullable.
            malformed.push(json!({ property: null }));
        }
        if schema["required"].as_array().is_some_and(|r| !r.is_empty()) {
            malformed.push(json!({}));
        }
        for arguments in malformed {
            let response = mcp.request("tools/call", json!({"name": name, "arguments": arguments}));
            assert_eq!(response["error"]["code"], -32602, "{name} with {arguments}: {response}");
            let message = response["error"]["message"].as_str().unwrap();
            assert!(message.contains(name) || message.starts_with("tools/call"), "{name}: {message}");
        }
    }
    // An unknown tool is invalid params too (the spec's example).
    let unknown = mcp.request("tools/call", json!({"name": "create", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(mcp.close(), Some(0));
}

/// With the tasks extension declared, tasks/* whose params do not have the
/// method's shape are invalid params (-32602), never "method not found".
#[test]
fn malformed_task_requests_are_invalid_params() {
    let relay = Relay::sandbox();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (mut mcp, _) = McpClient::connect_with(&relay, &[], tasks);
    let malformed = [
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": 123})),
        ("tasks/cancel", json!({})),
        ("tasks/cancel", json!({"taskId": null})),
        ("tasks/update", json!({"taskId": "00000000-0000-4000-8000-000000000000"})),
        ("tasks/update", json!({"inputResponses": {}})),
    ];
    for (method, params) in malformed {
        let response = mcp.request(method, params.clone());
        assert_eq!(response["error"]["code"], -32602, "{method} {params}: {response}");
        assert!(response["error"]["message"].as_str().unwrap().starts_with(method), "{response}");
    }
    assert_eq!(mcp.close(), Some(0));
}

/// A null where the input schema says a type names the argument and is
/// invalid params, at any depth; leaving it out takes the default.
#[test]
fn a_null_argument_is_refused_by_name() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let cases = [
        ("list_conversations", json!({"limit": null}), "limit is null"),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t"], "max_followups": null}),
            "max_followups is null",
        ),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t"], "time_zone": null}),
            "time_zone is null",
        ),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t", null]}),
            "todos[1] is null",
        ),
    ];
    for (tool, arguments, says) in cases {
        let response = mcp.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(response["error"]["code"], -32602, "{tool} {arguments}: {response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains(says) && message.contains("leave an argument out"), "{message}");
    }
    let listed = mcp.call("list_conversations", json!({}));
    assert_eq!(listed["isError"], false, "{listed}");
    // A cursor of the right shape that relay did not give is refused, not an empty page.
    let cursor = "1.00000000000000000000000000000000";
    let refused = mcp.call("list_conversations", json!({"cursor": cursor}));
    assert!(refused["isError"] == true && text(&refused).contains("is not a cursor relay gave"), "{refused}");
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

/// The tools' input schemas, by tool name, as `tools/list` gives them.
fn input_schemas(mcp: &mut McpClient) -> serde_json::Map<String, Value> {
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    tools.iter().map(|t| (t["name"].as_str().unwrap().to_string(), t["inputSchema"].clone())).collect()
}

/// The string arguments that carry no limit, enum or pattern, because the
/// daemon has none to state there (durations, zones and quiet hours are
/// read by their own parsers; an answer kind may be a JSON schema).
const FREE_TEXT: [(&str, &str); 4] = [
    ("create_conversation", "heartbeat_interval"),
    ("create_conversation", "time_zone"),
    ("create_conversation", "quiet_hours"),
    ("create_conversation", "expires_in"),
];

/// Every input schema states the limits the daemon enforces, from the
/// constants it enforces them with (`relay::api::limits`, the contact's
/// pattern, the state names): a limit that disappears from a schema, or
/// drifts from the daemon's, fails here. Every `id` is an id (pattern and
/// shortest prefix), every `contact` a phone number (the pattern), and a
/// new text argument without a limit must be named in `FREE_TEXT`.
#[test]
fn input_schemas_carry_the_daemons_limits() {
    use relay::api::limits;
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let schemas = input_schemas(&mut mcp);
    let contact = json!(relay::contact::pattern());
    let key = json!(limits::IDEMPOTENCY_KEY_PATTERN);
    let table: Vec<(&str, &str, &str, Value)> = vec![
        ("create_conversation", "objective", "minLength", json!(1)),
        ("create_conversation", "objective", "maxLength", json!(limits::MAX_OBJECTIVE_CHARS)),
        ("create_conversation", "contact", "pattern", contact.clone()),
        ("create_conversation", "todos", "minItems", json!(1)),
        ("create_conversation", "todos", "maxItems", json!(limits::MAX_TODOS)),
        ("create_conversation", "todos/items", "minLength", json!(1)),
        ("create_conversation", "todos/items", "maxLength", json!(limits::MAX_TODO_CHARS)),
        ("create_conversation", "answers", "maxProperties", json!(limits::MAX_TODOS)),
        ("create_conversation", "max_followups", "maximum", json!(limits::MAX_FOLLOWUPS)),
        ("create_conversation", "override_opt_out", "minLength", json!(1)),
        ("create_conversation", "override_opt_out", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("create_conversation", "max_turns", "minimum", json!(1)),
        ("create_conversation", "max_tokens", "minimum", json!(1)),
        ("create_conversation", "expires_at", "format", json!("date-time")),
        ("create_conversation", "attach", "maxItems", json!(limits::MAX_ATTACHMENTS)),
        ("create_conversation", "attach/items", "minLength", json!(1)),
        ("create_conversation", "idempotency_key", "minLength", json!(1)),
        ("create_conversation", "idempotency_key", "maxLength", json!(limits::MAX_IDEMPOTENCY_KEY_CHARS)),
        ("create_conversation", "idempotency_key", "pattern", key.clone()),
        ("send_to_contact", "message", "minLength", json!(1)),
        ("send_to_contact", "message", "maxLength", json!(limits::MAX_MESSAGE_CHARS)),
        ("send_to_contact", "idempotency_key", "minLength", json!(1)),
        ("send_to_contact", "idempotency_key", "maxLength", json!(limits::MAX_IDEMPOTENCY_KEY_CHARS)),
        ("send_to_contact", "idempotency_key", "pattern", key),
        ("answer_question", "answer", "minLength", json!(1)),
        ("answer_question", "answer", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("add_opt_out", "contact", "pattern", contact.clone()),
        ("add_opt_out", "reason", "minLength", json!(1)),
        ("add_opt_out", "reason", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("remove_opt_out", "contact", "pattern", contact.clone()),
        ("list_conversations", "contact", "pattern", contact.clone()),
        ("list_conversations", "state", "pattern", json!(relay::fsm::State::list_pattern())),
        ("list_conversations", "limit", "maximum", json!(relay::api::paging::MAX_LIMIT)),
        ("wait_for_conversation", "timeout_seconds", "maximum", json!(limits::MAX_WAIT.as_secs())),
        ("wait_for_conversation", "until", "pattern", json!(relay::engine::wait::Until::pattern())),
    ];
    let property = |tool: &str, path: &str| -> Value {
        let mut at = &schemas.get(tool).unwrap_or_else(|| panic!("no tool {tool}"))["properties"];
        for step in path.split('/') {
            at = &at[step];
        }
        at.clone()
    };
    for (tool, path, keyword, expected) in &table {
        assert_eq!(&property(tool, path)[keyword], expected, "{tool}.{path}: {keyword}");
    }
    // answers' keys: the todo ids, 1 to MAX_TODOS, and nothing else.
    let keys = property("create_conversation", "answers")["propertyNames"]["pattern"].clone();
    let keys = regex::Regex::new(keys.as_str().expect("answers' keys have a pattern")).unwrap();
    for n in 1..=limits::MAX_TODOS {
        assert!(keys.is_match(&n.to_string()), "todo {n}");
    }
    for wrong in ["0", "01", "a", "", " 1", &(limits::MAX_TODOS * 10).to_string()] {
        assert!(!keys.is_match(wrong), "{wrong:?}");
    }

    // The rules for every tool: ids, contacts, and text with a limit.
    for (tool, schema) in &schemas {
        for (name, declared) in schema["properties"].as_object().into_iter().flatten() {
            let at = format!("{tool}.{name}");
            match name.as_str() {
                "id" => {
                    assert_eq!(declared["minLength"], json!(limits::MIN_ID_PREFIX), "{at}");
                    assert_eq!(declared["pattern"], json!(limits::ID_PATTERN), "{at}");
                }
                "contact" => assert_eq!(declared["pattern"], contact, "{at}"),
                _ => {}
            }
            let text = if declared["type"] == "array" { &declared["items"] } else { declared };
            if text["type"] == "string" && !FREE_TEXT.contains(&(tool.as_str(), name.as_str())) {
                let bounded = ["maxLength", "pattern", "enum", "format"].iter().any(|k| text.get(*k).is_some());
                assert!(bounded, "{at}: text with no limit, enum, pattern or format (or name it in FREE_TEXT)");
            }
        }
    }
    assert_eq!(mcp.close(), Some(0));
}

/// Whether relay refused the arguments for their form: a tool error with
/// the daemon's `invalid_request` or MCP's own `invalid_arguments`.
fn refused_for_form(result: &Value) -> bool {
    result["isError"] == true
        && (text(result).contains("code: invalid_request") || text(result).contains("code: invalid_arguments"))
}

/// The words of `Contact::parse`'s refusals of a number's country (code or
/// length), which no pattern can foresee.
const COUNTRY_REFUSALS: [&str; 4] = [
    "no country code starts its digits",
    "digits after the country code",
    "too short to be a phone number",
    "do not read back",
];

/// What the schemas declare, the daemon does, both ways: arguments that
/// break a declared maxLength, maxItems, maximum, minimum, pattern or enum
/// are refused, and arguments within them are taken (a tool error that is
/// not about their form counts as taken: no question to answer, an id
/// nothing has). The limits are read from `tools/list`, so a schema that
/// promises more than the daemon takes fails here, as does one that is
/// looser. Generated by proptest: text of any length around each limit
/// (with characters outside the BMP, counted as one as both sides count
/// them), contacts written from the schema's pattern, real numbers written
/// with separators, and numbers spoilt by a character or a digit too many.
#[test]
fn arguments_outside_the_schemas_are_refused_and_inside_taken() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestRunner};
    use relay::api::limits;

    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let schemas = input_schemas(&mut mcp);
    let declared = |tool: &str, path: &str, keyword: &str| -> Value {
        let mut at = &schemas[tool]["properties"];
        for step in path.split('/') {
            at = &at[step];
        }
        at[keyword].clone()
    };
    let conversation = json!({"objective": "Confirm the delivery date", "contact": CONTACT, "todos": ["Ask the day"]});
    let id = document(&mcp.call("create_conversation", conversation.clone()))["id"].as_str().unwrap().to_string();
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let config = |cases| ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(26),
        ..ProptestConfig::default()
    };

    // Text: each limited argument, with a base call it fits in.
    let texts: Vec<(&str, Value, &str, &str)> = vec![
        ("create_conversation", conversation.clone(), "/objective", "objective"),
        ("create_conversation", conversation.clone(), "/todos/0", "todos/items"),
        ("create_conversation", conversation.clone(), "/override_opt_out", "override_opt_out"),
        ("send_to_contact", json!({"id": id, "message": "m"}), "/message", "message"),
        ("answer_question", json!({"id": id, "answer": "a"}), "/answer", "answer"),
        ("add_opt_out", json!({"contact": OTHER_CONTACT, "reason": "r"}), "/reason", "reason"),
    ];
    let mcp = std::cell::RefCell::new(mcp);
    let call = |tool: &str, arguments: Value| mcp.borrow_mut().call(tool, arguments);
    // `base` with `value` at `pointer` (set, or added to its object).
    let with = |base: &Value, pointer: &str, value: Value| {
        let mut arguments = base.clone();
        let (parent, last) = pointer.rsplit_once('/').unwrap();
        match arguments.pointer_mut(parent).unwrap_or_else(|| panic!("{parent} in {base}")) {
            Value::Object(object) => _ = object.insert(last.to_string(), value),
            Value::Array(items) => items[last.parse::<usize>().unwrap()] = value,
            other => panic!("{pointer}: {other}"),
        }
        arguments
    };
    // The edges themselves, then around them.
    for (tool, base, pointer, path) in &texts {
        let max = declared(tool, path, "maxLength").as_u64().unwrap_or_else(|| panic!("{tool}.{path}")) as usize;
        for filler in ["x", "🙂"] {
            let taken = call(tool, with(base, pointer, json!(filler.repeat(max))));
            assert!(!refused_for_form(&taken), "{tool}{pointer} of {max} characters: {taken}");
            let refused = call(tool, with(base, pointer, json!(filler.repeat(max + 1))));
            assert!(refused_for_form(&refused), "{tool}{pointer} of {} characters: {refused}", max + 1);
        }
    }
    let mut runner = TestRunner::new(config(48));
    let filler = prop::sample::select(vec!['x', 'é', '日', '🙂']);
    runner
        .run(&(prop::sample::select((0..texts.len()).collect::<Vec<_>>()), filler, 0usize..40), |(n, filler, by)| {
            let (tool, base, pointer, path) = &texts[n];
            let max = declared(tool, path, "maxLength").as_u64().unwrap_or_else(|| panic!("{tool}.{path}")) as usize;
            let within = filler.to_string().repeat(max.saturating_sub(by).max(1));
            let taken = call(tool, with(base, pointer, json!(within)));
            prop_assert!(
                !refused_for_form(&taken),
                "{tool}{pointer} of {} characters: {taken}",
                within.chars().count()
            );
            let beyond = filler.to_string().repeat(max + 1 + by);
            let refused = call(tool, with(base, pointer, json!(beyond)));
            prop_assert!(refused_for_form(&refused), "{tool}{pointer} of {} characters: {refused}", max + 1 + by);
            Ok(())
        })
        .unwrap();
    // And text of spaces alone, which minLength 1 lets through, is refused
    // (it is trimmed first: the schemas' descriptions of the API say so).
    assert!(refused_for_form(&call("send_to_contact", json!({"id": id, "message": " "}))));

    // Contacts. The schema's own pattern, as a client reads it.
    let pattern = declared("list_conversations", "contact", "pattern");
    let pattern = pattern.as_str().unwrap().to_string();
    let matcher = regex::Regex::new(&pattern).unwrap();
    let body = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).unwrap().to_string();
    let listed = |contact: &str| call("list_conversations", json!({"contact": contact}));
    let mut runner = TestRunner::new(config(64));
    runner
        .run(&proptest::string::string_regex(&body).unwrap(), |contact| {
            prop_assert!(matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            let country = COUNTRY_REFUSALS.iter().any(|words| text(&result).contains(words));
            prop_assert!(result["isError"] == false || country, "{contact:?} matches the pattern: {result}");
            Ok(())
        })
        .unwrap();
    let numbers = [CONTACT, OTHER_CONTACT, "+14155552671", "+4915123456789", "+5511987654321", "+819012345678"];
    let written = (prop::sample::select(numbers.to_vec()), prop::collection::vec((1usize..15, "[ .()-]{1,2}"), 0..5));
    let mut runner = TestRunner::new(config(32));
    runner
        .run(&written, |(number, separators)| {
            let mut contact = String::from("+");
            for (i, digit) in number[1..].chars().enumerate() {
                separators.iter().filter(|(at, _)| *at == i).for_each(|(_, s)| contact.push_str(s));
                contact.push(digit);
            }
            prop_assert!(matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            prop_assert!(result["isError"] == false, "{contact:?}: {result}");
            Ok(())
        })
        .unwrap();
    let spoilt = prop_oneof![
        (prop::sample::select(numbers.to_vec()), 1usize..12, "[a-zA-Z*#,;/+_x]").prop_map(|(number, at, bad)| format!(
            "{}{bad}{}",
            &number[..at],
            &number[at..]
        )),
        prop::sample::select(numbers.to_vec()).prop_map(|number| number[1..].to_string()),
        // More digits than E.164's 15.
        (prop::sample::select(numbers.to_vec()), 1usize..4, "[0-9]")
            .prop_map(|(number, more, digit)| format!("{number}{}", digit.repeat(16 - (number.len() - 1) + more - 1))),
    ];
    let mut runner = TestRunner::new(config(32));
    runner
        .run(&spoilt, |contact| {
            prop_assert!(!matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            prop_assert!(refused_for_form(&result), "{contact:?}: {result}");
            prop_assert!(!COUNTRY_REFUSALS.iter().any(|words| text(&result).contains(words)), "{result}");
            Ok(())
        })
        .unwrap();

    // Numbers, enums and the rest, at their edges.
    let todos = |n: usize| json!((1..=n).map(|i| format!("todo {i}")).collect::<Vec<_>>());
    let max_todos = declared("create_conversation", "todos", "maxItems").as_u64().unwrap() as usize;
    let max_followups = declared("create_conversation", "max_followups", "maximum").as_u64().unwrap();
    let max_wait = declared("wait_for_conversation", "timeout_seconds", "maximum").as_u64().unwrap();
    let min_id = declared("get_conversation", "id", "minLength").as_u64().unwrap() as usize;
    let any_state = relay::api::State::ALL.map(|s| s.as_str()).join(",");
    let create = |field: &str, value: Value| with(&conversation, &format!("/{field}"), value);
    let mut inside_and_outside: Vec<(&str, Value, Value)> = vec![
        ("create_conversation", create("todos", todos(max_todos)), create("todos", todos(max_todos + 1))),
        ("create_conversation", create("todos", todos(1)), create("todos", todos(0))),
        (
            "create_conversation",
            {
                let mut c = create("max_followups", json!(max_followups));
                c["heartbeat_interval"] = json!("1h");
                c
            },
            create("max_followups", json!(max_followups + 1)),
        ),
        ("create_conversation", create("max_turns", json!(1)), create("max_turns", json!(0))),
        ("create_conversation", create("max_tokens", json!(1)), create("max_tokens", json!(0))),
        ("create_conversation", create("answers", json!({"1": "date"})), create("answers", json!({"0": "date"}))),
        (
            "create_conversation",
            create("idempotency_key", json!("k".repeat(limits::MAX_IDEMPOTENCY_KEY_CHARS))),
            create("idempotency_key", json!("k".repeat(limits::MAX_IDEMPOTENCY_KEY_CHARS + 1))),
        ),
        (
            "create_conversation",
            create("idempotency_key", json!("order-1042!")),
            create("idempotency_key", json!("order 1042")),
        ),
        (
            "create_conversation",
            create("expires_at", json!((chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339())),
            create("expires_at", json!("tomorrow")),
        ),
        (
            "wait_for_conversation",
            // Any state at all: reached at once, whatever the conversation is doing.
            json!({"id": id, "until": any_state, "timeout_seconds": max_wait}),
            json!({"id": id, "timeout_seconds": max_wait + 1}),
        ),
        (
            "wait_for_conversation",
            json!({"id": id, "until": "terminal,NEEDS_HUMAN_INTERVENTION", "timeout_seconds": 0}),
            json!({"id": id, "until": "DONE"}),
        ),
        ("get_conversation", json!({"id": id[..min_id]}), json!({"id": id[..min_id - 1]})),
        ("get_conversation", json!({"id": id}), json!({"id": "zzzz"})),
    ];
    for state in relay::fsm::State::ALL.map(|s| s.as_str()).into_iter().chain(["terminal,PAUSED"]) {
        inside_and_outside.push(("list_conversations", json!({"state": state}), json!({"state": "DONE"})));
    }
    inside_and_outside.push(("list_conversations", json!({"limit": 1000}), json!({"limit": 1001})));
    inside_and_outside.push(("list_conversations", json!({"limit": 1}), json!({"limit": 0})));
    for (tool, inside, outside) in inside_and_outside {
        let taken = call(tool, inside.clone());
        assert!(!refused_for_form(&taken), "{tool} {inside}: {taken}");
        let refused = call(tool, outside.clone());
        assert!(refused_for_form(&refused), "{tool} {outside}: {refused}");
    }
    assert_eq!(mcp.borrow_mut().close(), Some(0));
}
