//! relay away from WhatsApp and back, end to end on the sandbox with the
//! real binary: what contacts write meanwhile is held and handed over by
//! the catch-up when relay comes back; a catch-up cut short leaves the
//! conversations that were live marked as maybe missing messages, in
//! `relay get`, `relay status` and `relay doctor`.

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::CONTACT;
use crate::support::model::with_model;

#[test]
fn what_contacts_write_while_relay_is_away_comes_in_the_catch_up_and_a_cut_short_one_is_marked() {
    let (relay, _model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
        Reply::Text(String::new()),
        Reply::tool("send_message", json!({"text": "Friday, noted."})),
        Reply::Text(String::new()),
    ]));
    let id = relay.ok(&["create", "--objective", "Agree on the day", "--contact", CONTACT, "--todo", "Day"]);
    let id = id.trim();
    relay.wait_for_state(id, "WAITING_FOR_REPLY");

    assert!(relay.ok(&["sandbox", "offline"]).contains("relay is offline from WhatsApp"));
    assert!(relay.ok(&["status"]).contains("offline (simulated"));
    let held = relay.ok(&["sandbox", "say", CONTACT, "Friday works"]);
    assert!(held.contains("WhatsApp holds it until `relay sandbox online`"), "{held}");
    assert_eq!(relay.get(id)["last_contact_message"], Value::Null, "not yet with relay");
    let back = relay.ok(&["sandbox", "online"]);
    assert!(relay.ok(&["sandbox", "online"]).contains("handed over 0"), "online twice is no harm");
    assert!(back.contains("the catch-up handed over 1 message(s)"), "{back}");
    relay.wait_for(id, "the held message", |i| i["last_contact_message"]["untrusted_contact_text"] == "Friday works");
    assert_eq!(relay.get(id)["messages_may_be_missing"], Value::Null);

    relay.ok(&["sandbox", "offline"]);
    relay.ok(&["sandbox", "say", CONTACT, "Actually, Saturday"]);
    let cut = relay.ok(&["sandbox", "online", "--cut-short"]);
    assert!(cut.contains("the catch-up was cut short: 1 message(s) lost"), "{cut}");
    let marked = relay.wait_for(id, "the mark", |i| i["messages_may_be_missing"].is_object());
    let span = &marked["messages_may_be_missing"];
    assert!(span["from"].is_string() && span["to"].is_string(), "{span}");
    assert!(relay.ok(&["get", id]).contains("missing     the contact's messages from "), "relay get says so");
    assert!(relay.ok(&["status"]).contains("the last catch-up did not finish: messages from "));
    let (_, doctor) = {
        let run = relay.run(&["doctor", "--json"]);
        (run.code, serde_json::from_str::<Value>(&run.stdout).unwrap())
    };
    let channel = doctor["checks"].as_array().unwrap().iter().find(|c| c["name"] == "channel").unwrap().clone();
    assert_eq!(channel["status"], "warning", "{channel}");
    assert!(channel["detail"].as_str().unwrap().contains("may be missing"), "{channel}");

    // Wrong input: a cut-short catch-up is for relay's own link.
    let refused = relay.fails(&["sandbox", "online", CONTACT, "--cut-short"], 2);
    assert!(refused.contains("--cut-short is for relay's own link"), "{refused}");
}

/// A message written at 23:50 and handed over by a catch-up at 00:10 is
/// read as written at 23:50: "mañana" is the day after it was written, not
/// after it arrived.
#[tokio::test(start_paused = true)]
async fn a_late_message_is_read_as_of_when_it_was_written() {
    use std::sync::{Arc, Mutex};

    use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
    use relay::api::{AnswerSchema, CreateInstanceRequest, NewTodo, State, TodoStatus};
    use relay::channel::InboundMessage;
    use relay::contact::Contact;

    use crate::support::engine::{SandboxWorld, any_hour, until};
    use crate::support::test_agent::TestAgent;

    // 00:10 in Santiago (UTC-3 in January).
    relay::clock::pretend("2026-01-16T03:10:00Z".parse().unwrap());
    let said = Arc::new(Mutex::new(Vec::new()));
    let seen = said.clone();
    let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> relay::util::BoxFuture<'static, _> {
        let seen = seen.clone();
        Box::pin(async move {
            if turn.kind == TurnKind::Reply {
                let mark = ToolCall::MarkTodoItem {
                    todo_id: "1".into(),
                    status: TodoStatus::Completed,
                    answer: Some("mañana".into()),
                    value: Some(json!("2026-01-16")),
                    quote: Some("mañana".into()),
                    media: None,
                };
                let result = tools.call(mark).await;
                seen.lock().unwrap().push(result);
            }
            tools.call(ToolCall::SendMessage { text: "Noted".into() }).await.ok();
            Ok(())
        })
    });
    let w = SandboxWorld::start(Arc::new(agent), any_hour());
    let request = CreateInstanceRequest {
        objective: "Agree on the day".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo { text: "The day".into(), answer_schema: Some(AnswerSchema::shorthand("date").unwrap()) }],
        time_zone: Some("America/Santiago".into()),
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    let written = "2026-01-16T02:50:00Z".parse().unwrap();
    let late = InboundMessage {
        written_at: Some(written),
        ..InboundMessage::new(Contact::parse(CONTACT).unwrap(), "mañana")
    };
    w.engine.deliver(late).await;
    until(&w.engine, id, |_| !said.lock().unwrap().is_empty()).await;
    let result = said.lock().unwrap()[0].clone();
    assert!(result.is_ok(), "{result:?}");
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript.iter().find(|m| m.content == "mañana").unwrap().written_at, Some(written));
}
